// Where a batch's Merkle root is committed. Every anchor is idempotent per batch: submitting a
// batch it already has returns the first submission, so a worker that died between the anchor
// and the record of it submits again safely and nothing is anchored twice.

export const ANCHOR_KINDS = ['ledger', 'evm'] as const;
export type AnchorKind = (typeof ANCHOR_KINDS)[number];

export interface BatchToAnchor {
  id: number;
  root: string;
  size: number;
}

/** What the anchor says of a batch: where it is, and the kind-specific facts a verifier needs. */
export interface Submission {
  txHash: string;
  receipt: Record<string, unknown>;
}

export interface FinalReceipt extends Submission {
  anchoredAt: Date;
}

export interface Anchor {
  kind: AnchorKind;
  /** Commits the batch's root (or finds it already committed). */
  submit(batch: BatchToAnchor): Promise<Submission>;
  /** The final receipt of a submitted batch, or undefined while it is not final (confirmations). */
  confirm(batch: BatchToAnchor, submission: Submission): Promise<FinalReceipt | undefined>;
  close?(): Promise<void>;
}

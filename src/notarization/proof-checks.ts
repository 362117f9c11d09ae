// The checks of a notarization proof against its guarantee, on already-parsed JSON: from the
// guarantee to its digest, from the digest up the Merkle path to the root, and from the root to
// the anchor's record of it. Without zod (proof.ts parses), so that the verification page's
// bundle stays small: the page runs exactly these checks, as `cli verify` does.
import { Transaction } from 'ethers/transaction';
import type { GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { guaranteeDigest } from './canonical.js';
import { ledgerEntryHash, type LedgerEntry } from './ledger-entry.js';
import { pathSides, rootFromPath } from './merkle.js';
import type { NotarizationProof } from './proof.js';

/**
 * One check of a proof. `id` names it for machines (the verification page labels it in Italian
 * and English by id); `name` says it in English for the CLI.
 */
export interface Check {
  id: CheckId;
  name: string;
  ok: boolean;
  detail?: string;
}

export type CheckId =
  | 'guarantee-shape'
  | 'proof-shape'
  | 'proof-subject'
  | 'digest'
  | 'path-well-formed'
  | 'merkle-root'
  | 'path-position'
  | 'tx-named'
  | 'ledger-entry-present'
  | 'ledger-root'
  | 'ledger-size'
  | 'ledger-hash'
  | 'evm-tx-present'
  | 'evm-tx-hash'
  | 'evm-tx-root'
  | 'evm-tx-sender';

/** Every check of `proof` against `guarantee`; all must pass. Never throws on well-typed input. */
export function checkProof(guarantee: GuaranteeV2, proof: NotarizationProof): Check[] {
  const checks: Check[] = [];
  const check = (id: CheckId, name: string, ok: boolean, detail?: string) => checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }) });

  check('proof-subject', 'the proof is for this guarantee', proof.guaranteeId === guarantee.id, `proof for ${proof.guaranteeId}, guarantee ${guarantee.id}`);
  const digest = guaranteeDigest(guarantee);
  check('digest', "the guarantee hashes to the proof's digest", digest === proof.digest, `computed ${digest}, proof says ${proof.digest}`);
  let root: string | undefined;
  try {
    root = rootFromPath(proof.digest, proof.path);
  } catch (err) {
    check('path-well-formed', 'the Merkle path is well formed', false, (err as Error).message);
  }
  if (root !== undefined) check('merkle-root', 'the Merkle path leads to the root', root === proof.root, `path leads to ${root}, proof says ${proof.root}`);
  let sides: string[];
  try {
    sides = pathSides(proof.leafIndex, proof.batchSize);
  } catch {
    sides = ['(no such leaf)'];
  }
  check(
    'path-position',
    'the path is the one of leaf leafIndex in a tree of batchSize',
    sides.join() === proof.path.map((p) => p.side).join(),
    `leaf ${proof.leafIndex} of ${proof.batchSize} has sides ${sides.join(',') || 'none'}, the path ${proof.path.map((p) => p.side).join(',') || 'none'}`,
  );
  if (guarantee.txHash !== null)
    check(
      'tx-named',
      'the guarantee names the anchor transaction',
      guarantee.txHash === proof.anchor.txHash,
      `guarantee ${guarantee.txHash}, proof ${proof.anchor.txHash}`,
    );

  if (proof.anchor.kind === 'ledger') {
    const entry = proof.anchor.entry as LedgerEntry | undefined;
    if (!entry) check('ledger-entry-present', 'the proof carries its ledger entry', false);
    else {
      check('ledger-root', 'the ledger entry holds the root', entry.root === proof.root, `entry holds ${entry.root}`);
      check('ledger-size', "the ledger entry names the batch's size", entry.size === proof.batchSize, `entry says ${entry.size}, proof ${proof.batchSize}`);
      const hash = ledgerEntryHash(entry);
      check('ledger-hash', 'the ledger entry hashes to txHash', hash === proof.anchor.txHash, `entry hashes to ${hash}`);
    }
  }
  if (proof.anchor.kind === 'evm') {
    const raw = proof.anchor.rawTransaction;
    // Parsing and recovering the signer both throw on malformed bytes (a signature off the curve).
    let tx: { hash: string | null; data: string; from: string | null; chainId: bigint } | undefined;
    try {
      const parsed = raw ? Transaction.from(raw) : undefined;
      tx = parsed && { hash: parsed.hash, data: parsed.data, from: parsed.from, chainId: parsed.chainId };
    } catch {
      tx = undefined;
    }
    if (!tx) check('evm-tx-present', 'the proof carries its signed transaction', false);
    else {
      check('evm-tx-hash', 'the signed transaction hashes to txHash', tx.hash === proof.anchor.txHash, `it hashes to ${tx.hash ?? 'nothing'}`);
      check('evm-tx-root', 'the signed transaction carries the root', tx.data.toLowerCase() === `0x${proof.root}`, `its data is ${tx.data}`);
      check(
        'evm-tx-sender',
        "the signed transaction is from the proof's sender, on its chain",
        tx.from?.toLowerCase() === proof.anchor.from?.toLowerCase() && Number(tx.chainId) === proof.anchor.chainId,
        `from ${tx.from ?? '?'} on chain ${tx.chainId}`,
      );
    }
  }
  return checks;
}

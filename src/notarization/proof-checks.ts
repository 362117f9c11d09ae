// The checks of a notarization proof against its guarantee, on already-parsed JSON: from the
// guarantee to its digest, from the digest up the Merkle path to the root, and from the root to
// the anchor's record of it. Without zod (proof.ts parses), so that the verification page's
// bundle stays small: the page runs exactly these checks, as `cli verify` does.
import { Transaction } from 'ethers/transaction';
import type { GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { amendmentDigest, guaranteeDigest, type AmendmentOnWire } from './canonical.js';
import { ledgerEntryHash, type LedgerEntry } from './ledger-entry.js';
import { pathSides, rootFromPath } from './merkle.js';
import type { AmendmentProof, NotarizationProof } from './proof.js';

/**
 * One check of a proof. `id` names it for machines (the verification page labels it in Italian
 * and English by id); `name` says it in English for the CLI.
 */
export interface Check {
  id: CheckId;
  name: string;
  ok: boolean;
  detail?: string;
  /** The amendment a check of a chain is about (checkChain), when it is about one. */
  seq?: number;
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
  | 'evm-tx-sender'
  | 'amendment-shape'
  | 'chain-order'
  | 'chain-start'
  | 'chain-link'
  | 'chain-notarized'
  | 'chain-state';

/** What every proof has from its leaf up: the digest, its place in the tree, the root and the anchor. */
type Leaf = Pick<NotarizationProof, 'digest' | 'leafIndex' | 'batchSize' | 'path' | 'root' | 'anchor'>;

/** Every check of `proof` against `guarantee`; all must pass. Never throws on well-typed input. */
export function checkProof(guarantee: GuaranteeV2, proof: NotarizationProof): Check[] {
  const checks: Check[] = [];
  const check = (id: CheckId, name: string, ok: boolean, detail?: string) => checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }) });

  check('proof-subject', 'the proof is for this guarantee', proof.guaranteeId === guarantee.id, `proof for ${proof.guaranteeId}, guarantee ${guarantee.id}`);
  const digest = guaranteeDigest(guarantee);
  check('digest', "the guarantee hashes to the proof's digest", digest === proof.digest, `computed ${digest}, proof says ${proof.digest}`);
  checks.push(...checkLeaf(proof, { what: 'guarantee', txHash: guarantee.txHash }));
  return checks;
}

/** The checks from a leaf's digest up: the Merkle path to the root, its position, and the anchor's record of the root. */
export function checkLeaf(proof: Leaf, named?: { what: string; txHash: string | null }): Check[] {
  const checks: Check[] = [];
  const check = (id: CheckId, name: string, ok: boolean, detail?: string) => checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }) });
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
  if (named && named.txHash !== null)
    check(
      'tx-named',
      `the ${named.what} names the anchor transaction`,
      named.txHash === proof.anchor.txHash,
      `${named.what} ${named.txHash}, proof ${proof.anchor.txHash}`,
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

/** An amendment as served (its wire shape), with what its checks read beyond the projection. */
export type AmendmentJson = AmendmentOnWire & { txHash?: string | null };

/**
 * Every check of an amendment's proof against the amendment: the proof is for it, it hashes
 * (with the proof's two links) to the proof's digest, and the leaf's checks. The links
 * themselves are checked against the guarantee and the previous amendment by checkChain.
 */
export function checkAmendmentProof(amendment: AmendmentJson, proof: AmendmentProof): Check[] {
  const checks: Check[] = [];
  const check = (id: CheckId, name: string, ok: boolean, detail?: string) => checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }) });
  check(
    'proof-subject',
    'the proof is for this amendment',
    proof.amendmentId === amendment.id && proof.guaranteeId === amendment.guaranteeId && proof.seq === amendment.seq,
    `proof for ${proof.guaranteeId} #${proof.seq} (${proof.amendmentId}), amendment ${amendment.guaranteeId} #${amendment.seq} (${amendment.id})`,
  );
  const digest = amendmentDigest(amendment, { guaranteeDigest: proof.guaranteeDigest, previousDigest: proof.previousDigest });
  check(
    'digest',
    "the amendment, with the proof's links, hashes to the proof's digest",
    digest === proof.digest,
    `computed ${digest}, proof says ${proof.digest}`,
  );
  checks.push(...checkLeaf(proof, { what: 'amendment', txHash: amendment.txHash ?? null }));
  return checks;
}

/**
 * What a public verification leaves out of the chain's items: documents not uploaded as public
 * are not listed, so the items that have some cannot be hashed again here. Their digests are
 * then taken from their proofs (each anchored on its own), and the links between them still
 * checked: the chain's order and links hold, only those items' contents are not recomputed.
 */
export interface ChainWithheld {
  /** The guarantee's digest, when the guarantee has documents left out (its proof's). */
  guaranteeDigest?: string;
  /** Whether amendment `seq` has documents left out. */
  amendment?: (seq: number) => boolean;
  /** How many amendments come before the first given (a long history's latest only): the first one's previous digest is its proof's. */
  before?: number;
}

/**
 * A guarantee's whole chain of amendments, recomputed from the guarantee: amendment k's digest
 * covers the guarantee's digest and amendment k - 1's, so an amendment changed, removed,
 * added or moved changes every digest from it on. Checks that the amendments are 1..n in
 * order and of this guarantee, that each proof (by seq) has the recomputed digest and its
 * links (so each proof's own checks, checkAmendmentProof, bind it to this chain), and that
 * every amendment has a proof. `proofs[i]` is the proof of the amendment with seq i + 1, or
 * undefined when it has none. The chain's end is not in it: an amendment recorded after the
 * last one given is not missed by these checks (the state's lastSeq says how many there are).
 * What the public verification withholds (private documents) cannot be hashed again: see
 * ChainWithheld.
 */
export function checkChain(
  guarantee: GuaranteeV2,
  amendments: readonly AmendmentJson[],
  proofs: readonly (AmendmentProof | undefined)[],
  withheld: ChainWithheld = {},
): Check[] {
  const checks: Check[] = [];
  const check = (id: CheckId, name: string, ok: boolean, detail?: string, seq?: number) =>
    checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }), ...(seq !== undefined && { seq }) });
  const order = amendments.map((a) => a.seq);
  const before = withheld.before ?? 0;
  const dense = order.every((seq, i) => seq === before + i + 1);
  const own = amendments.every((a) => a.guaranteeId === guarantee.id);
  check(
    'chain-order',
    'the amendments are 1, 2, 3... in order, of this guarantee',
    dense && own,
    own ? `seqs ${order.join(', ')}` : 'an amendment of another guarantee',
  );
  const start = withheld.guaranteeDigest ?? guaranteeDigest(guarantee);
  let previous: string | null = before > 0 ? (proofs[0]?.previousDigest ?? null) : null;
  amendments.forEach((a, i) => {
    const links = { guaranteeDigest: start, previousDigest: previous };
    const proof = proofs[i];
    const digest = withheld.amendment?.(a.seq) && proof ? proof.digest : amendmentDigest(a, links);
    const at = `amendment ${i + 1}`;
    if (!proof) check('chain-notarized', `${at} has its proof`, false, 'not notarized', a.seq);
    else {
      check(
        'chain-start',
        `${at}'s proof starts from this guarantee`,
        proof.guaranteeDigest === start,
        `proof says ${proof.guaranteeDigest}, guarantee hashes to ${start}`,
        a.seq,
      );
      check(
        'chain-link',
        `${at}'s proof links to the amendment before it, and hashes as recomputed`,
        proof.previousDigest === previous && proof.digest === digest,
        `proof: previous ${proof.previousDigest ?? 'none'}, digest ${proof.digest}; recomputed: previous ${previous ?? 'none'}, digest ${digest}`,
        a.seq,
      );
    }
    previous = digest;
  });
  return checks;
}

// A record's notarization proof as served by GET /api/v2/guarantees/{ID}/proof, and its
// verification, offline: from the guarantee's JSON to its digest, from the digest up the
// Merkle path to the root, and from the root to the anchor's record of it. The CLI's `verify`
// and the tests use this; a third party can redo every step from the README.
import { Transaction } from 'ethers';
import { z } from 'zod';
import { guaranteeV2, type GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { ANCHOR_KINDS } from './anchor.js';
import { CANONICAL_SCHEMA, guaranteeDigest } from './canonical.js';
import { LEDGER_SCHEMA, ledgerEntryHash, type LedgerEntry } from './ledger-entry.js';
import { pathSides, rootFromPath } from './merkle.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits');

const ledgerEntry = z.object({
  schema: z.literal(LEDGER_SCHEMA), seq: z.number().int().positive(), prevHash: hex64, root: hex64, size: z.number().int().positive(), recordedAt: z.string(),
}).meta({ id: 'LedgerEntry', description: 'The ledger entry that holds the root; its RFC 8785 JSON hashes (SHA-256) to txHash.' });

export const notarizationProof = z.object({
  guaranteeId: z.string(),
  notarizationStatus: z.literal('COMPLETE'),
  canonicalization: z.literal(CANONICAL_SCHEMA).meta({ description: 'The projection and serialization the digest is computed over (README "Notarization").' }),
  digest: hex64.meta({ description: 'SHA-256 of the record\'s canonical form.' }),
  leafIndex: z.number().int().nonnegative(),
  batchSize: z.number().int().positive(),
  path: z.array(z.object({ side: z.enum(['left', 'right']), hash: hex64 })).meta({ description: 'Sibling hashes from the leaf up to the root (RFC 6962 tree: leaf = SHA-256(0x00||digest), node = SHA-256(0x01||left||right)).' }),
  root: hex64,
  anchor: z.object({
    kind: z.enum(ANCHOR_KINDS),
    txHash: z.string(),
    anchoredAt: z.string(),
    entry: ledgerEntry.optional(),
    chainId: z.number().int().optional(),
    blockNumber: z.number().int().optional(),
    from: z.string().optional(),
    rawTransaction: z.string().optional().meta({ description: 'EVM: the signed transaction as sent; it hashes to txHash and carries the root as its data, signed by `from`.' }),
  }),
}).meta({ id: 'NotarizationProof' });

export const pendingProof = z.object({
  guaranteeId: z.string(),
  notarizationStatus: z.literal('PENDING'),
  reason: z.string().optional().meta({ description: 'Why the record will never be notarized, when that is so.' }),
}).meta({ id: 'NotarizationPending' });

export type NotarizationProof = z.infer<typeof notarizationProof>;
export type PendingProof = z.infer<typeof pendingProof>;

/**
 * One check of a proof. `id` names it for machines (the verification page labels it in Italian
 * and English by id); `name` says it in English for the CLI.
 */
export interface Check { id: CheckId; name: string; ok: boolean; detail?: string }

export type CheckId =
  | 'guarantee-shape' | 'proof-shape' | 'proof-subject' | 'digest' | 'path-well-formed' | 'merkle-root' | 'path-position' | 'tx-named'
  | 'ledger-entry-present' | 'ledger-root' | 'ledger-size' | 'ledger-hash'
  | 'evm-tx-present' | 'evm-tx-hash' | 'evm-tx-root' | 'evm-tx-sender';

/** The offline checks of a proof against the guarantee's JSON (v2 shape). Every check must pass. */
export function verifyProof(guaranteeJson: unknown, proofJson: unknown): { ok: boolean; checks: Check[]; guarantee?: GuaranteeV2; proof?: NotarizationProof } {
  const g = guaranteeV2.safeParse(guaranteeJson);
  const p = notarizationProof.safeParse(proofJson);
  if (!g.success || !p.success) {
    const checks: Check[] = [];
    if (!g.success) checks.push({ id: 'guarantee-shape', name: 'guarantee JSON is a v2 guarantee', ok: false, detail: g.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
    if (!p.success) checks.push({ id: 'proof-shape', name: 'proof JSON is a notarization proof', ok: false, detail: p.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') });
    return { ok: false, checks };
  }
  const guarantee = g.data;
  const proof = p.data;
  const checks: Check[] = [];
  const check = (id: CheckId, name: string, ok: boolean, detail?: string) => checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }) });

  check('proof-subject', 'the proof is for this guarantee', proof.guaranteeId === guarantee.id, `proof for ${proof.guaranteeId}, guarantee ${guarantee.id}`);
  const digest = guaranteeDigest(guarantee);
  check('digest', 'the guarantee hashes to the proof\'s digest', digest === proof.digest, `computed ${digest}, proof says ${proof.digest}`);
  let root: string | undefined;
  try {
    root = rootFromPath(proof.digest, proof.path);
  } catch (err) {
    check('path-well-formed', 'the Merkle path is well formed', false, (err as Error).message);
  }
  if (root !== undefined) check('merkle-root', 'the Merkle path leads to the root', root === proof.root, `path leads to ${root}, proof says ${proof.root}`);
  let sides: string[];
  try { sides = pathSides(proof.leafIndex, proof.batchSize); } catch { sides = ['(no such leaf)']; }
  check('path-position', 'the path is the one of leaf leafIndex in a tree of batchSize', sides.join() === proof.path.map((p) => p.side).join(),
    `leaf ${proof.leafIndex} of ${proof.batchSize} has sides ${sides.join(',') || 'none'}, the path ${proof.path.map((p) => p.side).join(',') || 'none'}`);
  if (guarantee.txHash !== null) check('tx-named', 'the guarantee names the anchor transaction', guarantee.txHash === proof.anchor.txHash, `guarantee ${guarantee.txHash}, proof ${proof.anchor.txHash}`);

  if (proof.anchor.kind === 'ledger') {
    const entry = proof.anchor.entry as LedgerEntry | undefined;
    if (!entry) check('ledger-entry-present', 'the proof carries its ledger entry', false);
    else {
      check('ledger-root', 'the ledger entry holds the root', entry.root === proof.root, `entry holds ${entry.root}`);
      check('ledger-size', 'the ledger entry names the batch\'s size', entry.size === proof.batchSize, `entry says ${entry.size}, proof ${proof.batchSize}`);
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
    } catch { tx = undefined; }
    if (!tx) check('evm-tx-present', 'the proof carries its signed transaction', false);
    else {
      check('evm-tx-hash', 'the signed transaction hashes to txHash', tx.hash === proof.anchor.txHash, `it hashes to ${tx.hash ?? 'nothing'}`);
      check('evm-tx-root', 'the signed transaction carries the root', tx.data.toLowerCase() === `0x${proof.root}`, `its data is ${tx.data}`);
      check('evm-tx-sender', 'the signed transaction is from the proof\'s sender, on its chain',
        tx.from?.toLowerCase() === proof.anchor.from?.toLowerCase() && Number(tx.chainId) === proof.anchor.chainId, `from ${tx.from ?? '?'} on chain ${tx.chainId}`);
    }
  }
  return { ok: checks.every((c) => c.ok), checks, guarantee, proof };
}

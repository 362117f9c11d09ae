// A record's notarization proof as served by GET /api/v2/guarantees/{ID}/proof, and its
// verification, offline: from the guarantee's JSON to its digest, from the digest up the
// Merkle path to the root, and from the root to the anchor's record of it. The CLI's `verify`
// and the tests use this; a third party can redo every step from docs/api.md ("Notarization and proofs").
import { z } from 'zod';
import { amendmentView } from '../guarantees/amendment.schemas.js';
import { guaranteeV2, type GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { ANCHOR_KINDS } from './anchor.js';
import { AMENDMENT_CANONICAL_SCHEMA, CANONICAL_SCHEMA } from './canonical.js';
import { LEDGER_SCHEMA } from './ledger-entry.js';
import { checkAmendmentProof, checkChain, checkProof, type Check } from './proof-checks.js';

export type { Check, CheckId } from './proof-checks.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits');

const ledgerEntry = z
  .object({
    schema: z.literal(LEDGER_SCHEMA),
    seq: z.number().int().positive(),
    prevHash: hex64,
    root: hex64,
    size: z.number().int().positive(),
    recordedAt: z.string(),
  })
  .meta({ id: 'LedgerEntry', description: 'The ledger entry that holds the root; its RFC 8785 JSON hashes (SHA-256) to txHash.' });

const leafIndex = z.number().int().nonnegative();
const batchSize = z.number().int().positive();
const merklePath = z
  .array(z.object({ side: z.enum(['left', 'right']), hash: hex64 }))
  .meta({ description: 'Sibling hashes from the leaf up to the root (RFC 6962 tree: leaf = SHA-256(0x00||digest), node = SHA-256(0x01||left||right)).' });

const anchorSchema = z.object({
  kind: z.enum(ANCHOR_KINDS),
  txHash: z.string(),
  anchoredAt: z.string(),
  entry: ledgerEntry.optional(),
  chainId: z.number().int().optional(),
  blockNumber: z.number().int().optional(),
  from: z.string().optional(),
  rawTransaction: z
    .string()
    .optional()
    .meta({ description: 'EVM: the signed transaction as sent; it hashes to txHash and carries the root as its data, signed by `from`.' }),
});

/** Where a leaf is in the registry's transparency log, and the proof that a checkpoint holds it. */
export const logInclusion = z
  .object({
    index: z
      .number()
      .int()
      .nonnegative()
      .meta({ description: "The leaf's index in the log; its entry is `record <digest>` (an amendment's, `amendment <digest>`)." }),
    checkpoint: z.string().meta({
      description:
        "The log's checkpoint that holds it: a C2SP signed note (origin, size, root hash), signed by the log's key (GET /log/key) and cosigned by the witnesses that had cosigned it when the proof was read.",
    }),
    inclusion: z.array(hex64).meta({ description: "RFC 9162 inclusion proof, leaf first: from SHA-256(0x00 || entry) to the checkpoint's root hash." }),
  })
  .meta({ id: 'LogInclusion' });

export type LogInclusion = z.infer<typeof logInclusion>;

export const notarizationProof = z
  .object({
    guaranteeId: z.string(),
    notarizationStatus: z.literal('COMPLETE'),
    canonicalization: z
      .literal(CANONICAL_SCHEMA)
      .meta({ description: 'The projection and serialization the digest is computed over (docs/api.md "Notarization and proofs").' }),
    digest: hex64.meta({ description: "SHA-256 of the record's canonical form." }),
    leafIndex,
    batchSize,
    path: merklePath,
    root: hex64,
    anchor: anchorSchema,
    log: logInclusion.optional().meta({ description: "The leaf in the registry's transparency log, once a checkpoint holds it." }),
  })
  .meta({ id: 'NotarizationProof' });

export const pendingProof = z
  .object({
    guaranteeId: z.string(),
    notarizationStatus: z.literal('PENDING'),
    reason: z.string().optional().meta({ description: 'Why the record will never be notarized, when that is so.' }),
  })
  .meta({ id: 'NotarizationPending' });

export const amendmentProof = z
  .object({
    guaranteeId: z.string(),
    amendmentId: z.string(),
    seq: z.number().int().positive(),
    notarizationStatus: z.literal('COMPLETE'),
    canonicalization: z
      .literal(AMENDMENT_CANONICAL_SCHEMA)
      .meta({ description: 'The projection and serialization the digest is computed over (docs/api.md "An amendment\'s proof: the chain").' }),
    digest: hex64.meta({ description: "SHA-256 of the amendment's canonical form, which includes guaranteeDigest and previousDigest." }),
    guaranteeDigest: hex64.meta({ description: "The guarantee's notarization digest (its proof's digest): the chain's start." }),
    previousDigest: hex64.nullable().meta({ description: "The digest of amendment seq - 1 (null for seq 1): the chain's link." }),
    leafIndex,
    batchSize,
    path: merklePath,
    root: hex64,
    anchor: anchorSchema,
    log: logInclusion.optional().meta({ description: "The leaf in the registry's transparency log, once a checkpoint holds it." }),
  })
  .meta({ id: 'AmendmentProof' });

export const pendingAmendmentProof = z
  .object({
    guaranteeId: z.string(),
    amendmentId: z.string(),
    seq: z.number().int().positive(),
    notarizationStatus: z.literal('PENDING'),
    reason: z.string().optional().meta({ description: 'Why the amendment will never be notarized, when that is so.' }),
    digest: hex64
      .optional()
      .meta({ description: "A blocked amendment's digest, when its documents settled: the next amendment's previousDigest (the chain goes on past it)." }),
  })
  .meta({ id: 'AmendmentProofPending' });

export type NotarizationProof = z.infer<typeof notarizationProof>;
export type AmendmentProof = z.infer<typeof amendmentProof>;
export type PendingAmendmentProof = z.infer<typeof pendingAmendmentProof>;
type AmendmentView = z.infer<typeof amendmentView>;
export type PendingProof = z.infer<typeof pendingProof>;

/** The offline checks of a proof against the guarantee's JSON (v2 shape). Every check must pass. */
export function verifyProof(guaranteeJson: unknown, proofJson: unknown): Verification & { guarantee?: GuaranteeV2; proof?: NotarizationProof } {
  const g = guaranteeV2.safeParse(guaranteeJson);
  const p = notarizationProof.safeParse(proofJson);
  if (!g.success || !p.success) {
    const checks: Check[] = [];
    if (!g.success)
      checks.push({
        id: 'guarantee-shape',
        name: 'guarantee JSON is a v2 guarantee',
        ok: false,
        detail: g.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      });
    if (!p.success)
      checks.push({
        id: 'proof-shape',
        name: 'proof JSON is a notarization proof',
        ok: false,
        detail: p.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
      });
    return { ok: false, checks, anchored: [] };
  }
  const guarantee = g.data;
  const proof = p.data;
  const checks = checkProof(guarantee, proof);
  const ok = checks.every((c) => c.ok);
  return { ok, checks, guarantee, proof, anchored: ok ? [{ root: proof.root, anchor: proof.anchor }] : [] };
}

/** A leaf's root and the anchor that holds it: what `cli verify` then checks against the anchor itself. */
export interface Anchored {
  root: string;
  anchor: NotarizationProof['anchor'];
}

export interface Verification {
  ok: boolean;
  checks: Check[];
  /** The anchors the proofs name (one per batch), when every offline check passed. */
  anchored: Anchored[];
}

const issues = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');

function anchoredOf(proofs: readonly Anchored[]): Anchored[] {
  const byTx = new Map<string, Anchored>();
  for (const p of proofs) if (!byTx.has(p.anchor.txHash)) byTx.set(p.anchor.txHash, { root: p.root, anchor: p.anchor });
  return [...byTx.values()];
}

/** The offline checks of an amendment's proof against the amendment's JSON (as GET .../amendments shows it). */
export function verifyAmendmentProof(amendmentJson: unknown, proofJson: unknown): Verification {
  const a = amendmentView.safeParse(amendmentJson);
  const p = amendmentProof.safeParse(proofJson);
  if (!a.success || !p.success) {
    const checks: Check[] = [];
    if (!a.success) checks.push({ id: 'amendment-shape', name: 'amendment JSON is an amendment', ok: false, detail: issues(a.error) });
    if (!p.success) checks.push({ id: 'proof-shape', name: "proof JSON is an amendment's notarization proof", ok: false, detail: issues(p.error) });
    return { ok: false, checks, anchored: [] };
  }
  const checks = checkAmendmentProof(a.data, p.data);
  const ok = checks.every((c) => c.ok);
  return { ok, checks, anchored: ok ? anchoredOf([p.data]) : [] };
}

const chainBundle = z.object({
  guarantee: z.unknown(),
  proof: z.unknown(),
  amendments: z.array(z.unknown()),
  amendmentProofs: z.array(z.unknown()),
});

/**
 * A guarantee's whole history: `{guarantee, proof, amendments, amendmentProofs}` (the
 * guarantee's JSON and proof, its amendments oldest first as GET .../amendments lists them, and
 * their proofs in the same order, PENDING ones included). The record's proof, each amendment's
 * proof, and the chain from the guarantee through every amendment (checkChain) must all pass.
 */
export function verifyChain(bundleJson: unknown): Verification {
  const b = chainBundle.safeParse(bundleJson);
  if (!b.success)
    return {
      ok: false,
      checks: [{ id: 'chain-order', name: 'the file holds guarantee, proof, amendments and amendmentProofs', ok: false, detail: issues(b.error) }],
      anchored: [],
    };
  const record = verifyProof(b.data.guarantee, b.data.proof);
  const checks = [...record.checks];
  if (!record.guarantee || !record.proof) return { ok: false, checks, anchored: [] };
  const amendments: AmendmentView[] = [];
  const proofs: (AmendmentProof | undefined)[] = [];
  const anchored: Anchored[] = [record.proof];
  /** Why an amendment will never be notarized, by seq, as its PENDING proof says. */
  const reasons = new Map<number, string>();
  b.data.amendments.forEach((json, i) => {
    const at = `amendment ${i + 1}: `;
    const a = amendmentView.safeParse(json);
    if (!a.success) {
      checks.push({ id: 'amendment-shape', name: `${at}the JSON is an amendment`, ok: false, detail: issues(a.error) });
      return;
    }
    amendments.push(a.data);
    const given = b.data.amendmentProofs[i];
    const complete = amendmentProof.safeParse(given);
    if (!complete.success) {
      // A PENDING proof (or none: null, as the public verification gives it) is no proof: checkChain says the amendment is not notarized.
      const pending = pendingAmendmentProof.safeParse(given);
      if (pending.success && pending.data.reason) reasons.set(a.data.seq, pending.data.reason);
      if (given !== undefined && given !== null && !pending.success)
        checks.push({ id: 'proof-shape', name: `${at}its proof is an amendment's proof`, ok: false, detail: issues(complete.error) });
      proofs.push(undefined);
      return;
    }
    proofs.push(complete.data);
    anchored.push(complete.data);
    for (const c of checkAmendmentProof(a.data, complete.data)) checks.push({ ...c, name: `${at}${c.name}` });
  });
  if (amendments.length === b.data.amendments.length)
    for (const c of checkChain(record.guarantee, amendments, proofs)) {
      const reason = c.id === 'chain-notarized' && c.seq !== undefined ? reasons.get(c.seq) : undefined;
      checks.push(reason ? { ...c, detail: `never to be: ${reason}` } : c);
    }
  const ok = checks.every((c) => c.ok);
  return { ok, checks, anchored: ok ? anchoredOf(anchored) : [] };
}

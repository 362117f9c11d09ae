// A record's notarization proof as served by GET /api/v2/guarantees/{ID}/proof, and its
// verification, offline: from the guarantee's JSON to its digest, from the digest up the
// Merkle path to the root, and from the root to the anchor's record of it. The CLI's `verify`
// and the tests use this; a third party can redo every step from the README.
import { z } from 'zod';
import { guaranteeV2, type GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { ANCHOR_KINDS } from './anchor.js';
import { CANONICAL_SCHEMA } from './canonical.js';
import { LEDGER_SCHEMA } from './ledger-entry.js';
import { checkProof, type Check } from './proof-checks.js';

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

export const notarizationProof = z
  .object({
    guaranteeId: z.string(),
    notarizationStatus: z.literal('COMPLETE'),
    canonicalization: z
      .literal(CANONICAL_SCHEMA)
      .meta({ description: 'The projection and serialization the digest is computed over (README "Notarization").' }),
    digest: hex64.meta({ description: "SHA-256 of the record's canonical form." }),
    leafIndex: z.number().int().nonnegative(),
    batchSize: z.number().int().positive(),
    path: z
      .array(z.object({ side: z.enum(['left', 'right']), hash: hex64 }))
      .meta({ description: 'Sibling hashes from the leaf up to the root (RFC 6962 tree: leaf = SHA-256(0x00||digest), node = SHA-256(0x01||left||right)).' }),
    root: hex64,
    anchor: z.object({
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
    }),
  })
  .meta({ id: 'NotarizationProof' });

export const pendingProof = z
  .object({
    guaranteeId: z.string(),
    notarizationStatus: z.literal('PENDING'),
    reason: z.string().optional().meta({ description: 'Why the record will never be notarized, when that is so.' }),
  })
  .meta({ id: 'NotarizationPending' });

export type NotarizationProof = z.infer<typeof notarizationProof>;
export type PendingProof = z.infer<typeof pendingProof>;

/** The offline checks of a proof against the guarantee's JSON (v2 shape). Every check must pass. */
export function verifyProof(guaranteeJson: unknown, proofJson: unknown): { ok: boolean; checks: Check[]; guarantee?: GuaranteeV2; proof?: NotarizationProof } {
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
    return { ok: false, checks };
  }
  const guarantee = g.data;
  const proof = p.data;
  const checks = checkProof(guarantee, proof);
  return { ok: checks.every((c) => c.ok), checks, guarantee, proof };
}

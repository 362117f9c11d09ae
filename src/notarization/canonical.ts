// The canonical form of a guarantee: what its notarization digest commits to, computed from the
// record's v2 wire shape so that any client holding the JSON of GET /api/v2/guarantees/{ID}
// can recompute it (README "Notarization"). The projection keeps every field the client
// registered plus id, orgId, createdAt and the docs' checksums; it leaves out what
// notarization itself sets (txHash, notarizationStatus, docs[].notarizedAt).
//
//   - every field present: absent and null are both null; transactionId null when absent
//   - dates: RFC 3339 in UTC with milliseconds (2025-03-01T00:00:00.000Z)
//   - amounts: decimal strings with exactly two decimals ("15000.50"), never binary floats
//   - docs: sorted by key (UTF-16 code units, as RFC 8785 sorts), each {key, type, originalFileName, checksum}
//   - serialized with RFC 8785 (JSON Canonicalization Scheme), hashed with SHA-256 (hex)
// Runs in the browser too (the verification page recomputes the digest).
import canonicalize from 'canonicalize';
import type { GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import { sha256Hex } from '../shared/sha256.js';

/** Names the projection below; a change of projection gets a new name. */
export const CANONICAL_SCHEMA = 'guarantee-registry/notarization/v1';

const date = (v: string | null | undefined): string | null => (v === null || v === undefined ? null : new Date(v).toISOString());
const amount = (v: number | null | undefined): string | null => (v === null || v === undefined ? null : v.toFixed(2));
const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The documented projection of a guarantee (its v2 wire shape) that notarization commits to. */
export function canonicalProjection(g: GuaranteeV2): Record<string, unknown> {
  const d = g.details;
  return {
    schema: CANONICAL_SCHEMA,
    id: g.id,
    orgId: g.orgId,
    createdAt: date(g.createdAt),
    details: {
      transactionId: orNull(d.transactionId),
      policyNumber: orNull(d.policyNumber),
      actType: orNull(d.actType),
      checkCode: orNull(d.checkCode),
      emittedAt: date(d.emittedAt),
      effectiveAt: date(d.effectiveAt),
      expiresAt: date(d.expiresAt),
      isFixedExpiry: orNull(d.isFixedExpiry),
      cig: orNull(d.cig),
      batchCode: orNull(d.batchCode),
    },
    economics: {
      garantedAmount: amount(g.economics.garantedAmount),
      contractAmount: amount(g.economics.contractAmount),
      isAutomaticRenewal: orNull(g.economics.isAutomaticRenewal),
    },
    note: { shared: g.note.shared },
    sign: { emissionAt: date(g.sign.emissionAt) },
    docs: g.docs
      .map((doc) => ({ key: doc.key, type: orNull(doc.type), originalFileName: orNull(doc.originalFileName), checksum: orNull(doc.checksum) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
  };
}

/** The RFC 8785 serialization of the projection: the exact bytes (UTF-8) that are hashed. */
export function canonicalForm(g: GuaranteeV2): string {
  return canonicalize(canonicalProjection(g)) as string;
}

/** SHA-256 (hex) of the canonical form: the record's notarization digest. */
export function guaranteeDigest(g: GuaranteeV2): string {
  return sha256Hex(canonicalForm(g));
}

// The canonical form of a guarantee: what its notarization digest commits to, computed from the
// record's v2 wire shape so that any client holding the JSON of GET /api/v2/guarantees/{ID}
// can recompute it (docs/api.md "Notarization and proofs"). The projection keeps every field the client
// registered plus id, orgId, createdAt and the docs' checksums; it leaves out what
// notarization itself sets (txHash, notarizationStatus, docs[].notarizedAt).
//
//   - every field present: absent and null are both null; transactionId null when absent;
//     details.beneficiaryFiscalCode only when the issuer named a beneficiary
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

/**
 * The documented projection of a guarantee (its v2 wire shape) that notarization commits to.
 * Every object's keys are written in RFC 8785's order (UTF-16 code units), so that
 * JSON.stringify already gives the canonical form (canonicalForm).
 */
export function canonicalProjection(g: GuaranteeV2): Record<string, unknown> {
  const d = g.details;
  return {
    createdAt: date(g.createdAt),
    details: {
      actType: orNull(d.actType),
      batchCode: orNull(d.batchCode),
      // Only when the issuer named one (v2): the projection of every record registered without it is unchanged.
      ...(d.beneficiaryFiscalCode !== undefined && { beneficiaryFiscalCode: d.beneficiaryFiscalCode }),
      checkCode: orNull(d.checkCode),
      cig: orNull(d.cig),
      effectiveAt: date(d.effectiveAt),
      emittedAt: date(d.emittedAt),
      expiresAt: date(d.expiresAt),
      isFixedExpiry: orNull(d.isFixedExpiry),
      policyNumber: orNull(d.policyNumber),
      transactionId: orNull(d.transactionId),
    },
    docs: g.docs
      .map((doc) => ({ checksum: orNull(doc.checksum), key: doc.key, originalFileName: orNull(doc.originalFileName), type: orNull(doc.type) }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    economics: {
      contractAmount: amount(g.economics.contractAmount),
      garantedAmount: amount(g.economics.garantedAmount),
      isAutomaticRenewal: orNull(g.economics.isAutomaticRenewal),
    },
    id: g.id,
    note: { shared: g.note.shared },
    orgId: g.orgId,
    schema: CANONICAL_SCHEMA,
    sign: { emissionAt: date(g.sign.emissionAt) },
  };
}

/** A lone surrogate, as JSON.stringify escapes it (RFC 8785 refuses it: canonicalize throws). */
const ESCAPED_SURROGATE = /\\ud[89a-f]/i;

/**
 * The RFC 8785 serialization of the projection: the exact bytes (UTF-8) that are hashed. The
 * projection holds strings, booleans and nulls only, its keys already in order, and RFC 8785
 * serializes strings as JSON.stringify does: JSON.stringify is the canonical form, at a tenth
 * of `canonicalize`'s cost (it walks every value again), which a verification and every
 * record of a notarized batch pay. `canonicalize` stays the reference: it answers whenever a
 * value might hold a lone surrogate, and the tests hold the two to the same output.
 */
export function canonicalForm(g: GuaranteeV2): string {
  const projection = canonicalProjection(g);
  const json = JSON.stringify(projection);
  return ESCAPED_SURROGATE.test(json) ? (canonicalize(projection) as string) : json;
}

/** SHA-256 (hex) of the canonical form: the record's notarization digest. */
export function guaranteeDigest(g: GuaranteeV2): string {
  return sha256Hex(canonicalForm(g));
}

/** Names the amendments' projection below. */
export const AMENDMENT_CANONICAL_SCHEMA = 'guarantee-registry/amendment/v1';

/** An amendment as GET /api/v2/guarantees/{ID}/amendments shows it (only what the projection reads). */
export interface AmendmentOnWire {
  id: string;
  guaranteeId: string;
  seq: number;
  type: string;
  /** Absent (as before authorities acted) or 'issuer': the issuer's; 'authority': the authority's, actorOrgId naming it. */
  actor?: string | undefined;
  actorOrgId?: string | undefined;
  /** AMENDMENT_RESPONSE's. */
  amendmentSeq?: number | undefined;
  decision?: string | undefined;
  /** Where the authority's consent stands: shown, never projected (it changes when the authority answers). */
  consent?: string | undefined;
  effectiveAt: string;
  expiresAt?: string | undefined;
  garantedAmount?: number | undefined;
  claimedAmount?: number | undefined;
  paidAmount?: number | undefined;
  reason: string | null;
  docs: { key: string; type: string | null; originalFileName: string | null; checksum: string | null }[];
  createdAt: string;
}

/** What an amendment's digest links it to: its guarantee's digest, and the previous amendment's (null for seq 1). */
export interface ChainLinks {
  guaranteeDigest: string;
  previousDigest: string | null;
}

/**
 * The documented projection of an amendment (its wire shape) with its links: every field of
 * the wire shape except what notarization sets (notarizationStatus, txHash), a type's absent
 * fields as null, dates and amounts as for guarantees, docs sorted by key; `actor` and
 * `actorOrgId` only for an authority's act (an issuer's amendment projects without them, as
 * every amendment did before authorities could act), `amendmentSeq` and `decision` only for
 * an answer; never `consent`, which changes when the authority answers.
 */
export function amendmentProjection(a: AmendmentOnWire, links: ChainLinks): Record<string, unknown> {
  return {
    // A contracting authority's act names it; the issuer's amendments project as they always did.
    ...(a.actor !== undefined && a.actor !== 'issuer' && { actor: a.actor, actorOrgId: a.actorOrgId ?? null }),
    ...(a.amendmentSeq !== undefined && { amendmentSeq: a.amendmentSeq, decision: a.decision ?? null }),
    claimedAmount: amount(a.claimedAmount),
    createdAt: date(a.createdAt),
    docs: a.docs
      .map((doc) => ({ checksum: doc.checksum, key: doc.key, originalFileName: doc.originalFileName, type: doc.type }))
      .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0)),
    effectiveAt: date(a.effectiveAt),
    expiresAt: date(a.expiresAt),
    garantedAmount: amount(a.garantedAmount),
    guaranteeDigest: links.guaranteeDigest,
    guaranteeId: a.guaranteeId,
    id: a.id,
    paidAmount: amount(a.paidAmount),
    previousDigest: links.previousDigest,
    reason: a.reason,
    schema: AMENDMENT_CANONICAL_SCHEMA,
    seq: a.seq,
    type: a.type,
  };
}

/** The RFC 8785 serialization of the amendment's projection (`canonicalize`: few amendments are hashed, and only here). */
export function amendmentCanonicalForm(a: AmendmentOnWire, links: ChainLinks): string {
  return canonicalize(amendmentProjection(a, links)) as string;
}

/** SHA-256 (hex) of the amendment's canonical form: its notarization digest, one link of its guarantee's chain. */
export function amendmentDigest(a: AmendmentOnWire, links: ChainLinks): string {
  return sha256Hex(amendmentCanonicalForm(a, links));
}

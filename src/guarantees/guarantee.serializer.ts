// The v1 and v2 wire shapes of one record set. Nullable fields without a value are null;
// fields the seed does not mark nullable are left out when they have no value.
import type { GuaranteeV1, GuaranteeV2 } from './guarantee.schemas.js';
import type { DocRecord, GuaranteeRecord } from './guarantee.types.js';

const isoOrNull = (d: Date | null): string | null => (d ? d.toISOString() : null);

function details(g: GuaranteeRecord): GuaranteeV1['details'] {
  const d = g.details;
  return {
    ...(d.policyNumber !== null && { policyNumber: d.policyNumber }),
    actType: d.actType,
    checkCode: d.checkCode,
    emittedAt: isoOrNull(d.emittedAt),
    effectiveAt: isoOrNull(d.effectiveAt),
    expiresAt: isoOrNull(d.expiresAt),
    isFixedExpiry: d.isFixedExpiry,
    cig: d.cig,
    batchCode: d.batchCode,
  };
}

function docV1(doc: DocRecord): GuaranteeV1['docs'][number] {
  return { ...(doc.type !== null && { type: doc.type }), key: doc.key, checksum: doc.checksum };
}

function docV2(doc: DocRecord): GuaranteeV2['docs'][number] {
  return {
    ...docV1(doc),
    ...(doc.originalFileName !== null && { originalFileName: doc.originalFileName }),
    ...(doc.notarizedAt !== null && { notarizedAt: doc.notarizedAt.toISOString() }),
  };
}

function rest(g: GuaranteeRecord) {
  return {
    economics: { ...g.economics },
    note: { shared: g.noteShared },
    sign: { emissionAt: isoOrNull(g.signEmissionAt) },
    txHash: g.txHash,
    notarizationStatus: g.notarizationStatus,
  };
}

export function toV1(g: GuaranteeRecord): GuaranteeV1 {
  return { details: details(g), ...rest(g), docs: g.docs.map(docV1), createdAt: g.createdAt.toISOString(), id: g.id, orgId: g.orgId };
}

export function toV2(g: GuaranteeRecord): GuaranteeV2 {
  return {
    details: { ...(g.transactionId !== null && { transactionId: g.transactionId }), ...details(g) },
    ...rest(g),
    docs: g.docs.map(docV2),
    createdAt: g.createdAt.toISOString(),
    id: g.id,
    orgId: g.orgId,
  };
}

export type ApiVersion = 1 | 2;
export const serializers = { 1: toV1, 2: toV2 } as const;

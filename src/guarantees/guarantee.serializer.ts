// The v1 and v2 wire shapes of one record set. Nullable fields without a value are null;
// fields the specified API does not mark nullable are left out when they have no value. Objects are
// built by assignment, in the specified field order: this runs for every row of every list.
import type { GuaranteeV1, GuaranteeV2 } from './guarantee.schemas.js';
import type { DocRecord, GuaranteeRecord } from './guarantee.types.js';

type Details = GuaranteeV2['details'];
type DocV2 = GuaranteeV2['docs'][number];

const isoOrNull = (d: Date | null): string | null => (d === null ? null : d.toISOString());

function details(g: GuaranteeRecord, withTransactionId: boolean): Details {
  const d = g.details;
  const out: Partial<Details> = {};
  if (withTransactionId && g.transactionId !== null) out.transactionId = g.transactionId;
  if (d.policyNumber !== null) out.policyNumber = d.policyNumber;
  out.actType = d.actType;
  out.checkCode = d.checkCode;
  out.emittedAt = isoOrNull(d.emittedAt);
  out.effectiveAt = isoOrNull(d.effectiveAt);
  out.expiresAt = isoOrNull(d.expiresAt);
  out.isFixedExpiry = d.isFixedExpiry;
  out.cig = d.cig;
  out.batchCode = d.batchCode;
  if (withTransactionId && d.beneficiaryFiscalCode !== null) out.beneficiaryFiscalCode = d.beneficiaryFiscalCode;
  return out as Details;
}

function doc(d: DocRecord, v2: boolean): DocV2 {
  const out: Partial<DocV2> = {};
  if (d.type !== null) out.type = d.type;
  out.key = d.key;
  out.checksum = d.checksum;
  if (v2 && d.originalFileName !== null) out.originalFileName = d.originalFileName;
  if (v2 && d.notarizedAt !== null) out.notarizedAt = d.notarizedAt.toISOString();
  return out as DocV2;
}

function serialize(g: GuaranteeRecord, v2: boolean): GuaranteeV2 {
  const docs: DocV2[] = new Array<DocV2>(g.docs.length);
  for (let i = 0; i < g.docs.length; i++) docs[i] = doc(g.docs[i] as DocRecord, v2);
  const out: GuaranteeV2 = {
    details: details(g, v2),
    economics: { garantedAmount: g.economics.garantedAmount, contractAmount: g.economics.contractAmount, isAutomaticRenewal: g.economics.isAutomaticRenewal },
    note: { shared: g.noteShared },
    sign: { emissionAt: isoOrNull(g.signEmissionAt) },
    txHash: g.txHash,
    notarizationStatus: g.notarizationStatus,
    docs,
    createdAt: g.createdAt.toISOString(),
    id: g.id,
    orgId: g.orgId,
  };
  // v2 says why a record stays PENDING for ever (docs/api.md "Notarization and proofs").
  if (v2 && g.notarizationReason !== null) out.notarizationReason = g.notarizationReason;
  return out;
}

export const toV1 = (g: GuaranteeRecord): GuaranteeV1 => serialize(g, false);
export const toV2 = (g: GuaranteeRecord): GuaranteeV2 => serialize(g, true);

export type ApiVersion = 1 | 2;
export const serializers = { 1: toV1, 2: toV2 } as const;

// The guarantee as the domain sees it, independent of the v1/v2 wire shapes.
import type { ACT_TYPES, NOTARIZATION_STATUSES } from './guarantee.schemas.js';

export type ActType = (typeof ACT_TYPES)[number];
export type NotarizationStatus = (typeof NOTARIZATION_STATUSES)[number];

export interface GuaranteeDetails {
  policyNumber: string | null;
  actType: ActType | null;
  checkCode: string | null;
  emittedAt: Date | null;
  effectiveAt: Date | null;
  expiresAt: Date | null;
  isFixedExpiry: boolean | null;
  cig: string | null;
  batchCode: string | null;
  /** v2 only: the fiscal code of the contracting authority the issuer names as beneficiary; only that authority may take charge. */
  beneficiaryFiscalCode: string | null;
}

export interface Economics {
  garantedAmount: number | null;
  contractAmount: number | null;
  isAutomaticRenewal: boolean | null;
}

export interface NewDoc {
  type: ActType | null;
  key: string;
  originalFileName: string | null;
}

/** What a client asks to register, normalized (absent and null alike are null). */
export interface NewGuarantee {
  transactionId: string | null;
  details: GuaranteeDetails;
  economics: Economics;
  noteShared: string;
  signEmissionAt: Date | null;
  docs: NewDoc[];
}

export interface DocRecord extends NewDoc {
  /** SHA-256 hex of the stored file, once scanned. */
  checksum: string | null;
  notarizedAt: Date | null;
}

export interface GuaranteeRecord extends NewGuarantee {
  id: string;
  orgId: string;
  createdAt: Date;
  txHash: string | null;
  notarizationStatus: NotarizationStatus | null;
  /** Why the record will never be notarized (a doc ended Infected or Error); null otherwise. */
  notarizationReason: string | null;
  docs: DocRecord[];
}

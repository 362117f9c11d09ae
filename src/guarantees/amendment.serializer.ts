// Amendments and states on the wire: dates as RFC 3339 UTC strings; an amendment shows its
// type's own fields only.
import type { z } from 'zod';
import type { Amendment, GuaranteeState } from './amendments.js';
import type { amendmentView, stateView } from './amendment.schemas.js';

export function toAmendmentView(a: Amendment): z.infer<typeof amendmentView> {
  return {
    id: a.id,
    guaranteeId: a.guaranteeId,
    seq: a.seq,
    type: a.type,
    actor: a.actor,
    ...(a.actorOrgId !== null && { actorOrgId: a.actorOrgId }),
    ...(a.amendmentSeq != null && { amendmentSeq: a.amendmentSeq }),
    ...(a.decision != null && { decision: a.decision }),
    ...(a.consent != null && { consent: a.consent }),
    effectiveAt: a.effectiveAt.toISOString(),
    ...(a.expiresAt !== null && { expiresAt: a.expiresAt.toISOString() }),
    ...(a.garantedAmount !== null && { garantedAmount: a.garantedAmount }),
    ...(a.claimedAmount !== null && { claimedAmount: a.claimedAmount }),
    ...(a.paidAmount !== null && { paidAmount: a.paidAmount }),
    reason: a.reason,
    docs: a.docs.map((d) => ({ type: d.type, key: d.key, originalFileName: d.originalFileName, checksum: d.checksum })),
    createdAt: a.createdAt.toISOString(),
    notarizationStatus: a.notarizationStatus,
    txHash: a.txHash,
    ...(a.notarizationReason && { notarizationReason: a.notarizationReason }),
  };
}

export function toStateView(s: GuaranteeState): z.infer<typeof stateView> {
  return {
    status: s.status,
    garantedAmount: s.garantedAmount,
    expiresAt: s.expiresAt?.toISOString() ?? null,
    openClaim: s.openClaim && { seq: s.openClaim.seq, claimedAmount: s.openClaim.claimedAmount, effectiveAt: s.openClaim.effectiveAt.toISOString() },
    claimDueAt: s.claimDueAt?.toISOString() ?? null,
    lastSeq: s.lastSeq,
    beneficiary: s.beneficiary,
    pendingConsent: s.pendingConsent,
    scheduled: s.scheduled.map((a) => ({ seq: a.seq, type: a.type, effectiveAt: a.effectiveAt.toISOString() })),
  };
}

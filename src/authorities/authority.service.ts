// The contracting authority as a party: it takes charge of a guarantee with the tender's data
// (the same lookup, answer and limits as a public verification: no oracle), and then sees it
// whole (every document) and lists those it took charge of. Taking charge is the guarantee's
// BENEFICIARY_LINKED amendment, recorded by the authority (src/guarantees' recordAct): in the
// notarized chain, in both parties' audit trails, announced to both by
// `guarantee.beneficiary_linked`, and in guarantee_beneficiaries (this folder's), all in its
// transaction.
import type { z } from 'zod';
import type { AmendmentRepository } from '../guarantees/amendment.repository.js';
import { toStateView } from '../guarantees/amendment.serializer.js';
import type { AmendmentService } from '../guarantees/amendment.service.js';
import type { GuaranteeRepository } from '../guarantees/guarantee.repository.js';
import type { ApiActor } from '../orgs/auth.middleware.js';
import type { Organization } from '../orgs/org.repository.js';
import { ConflictError, NotFoundError } from '../shared/errors.js';
import type { Outbox } from '../shared/events/outbox.js';
import { isUuid } from '../shared/validation.js';
import { NO_MATCH, type VerificationService } from '../verification/verification.service.js';
import type { AuthorityRepository } from './authority.repository.js';
import type { authorityList, AuthorityGuaranteeView, CreateAuthorityAct, TakeCharge } from './authority.schemas.js';
import type { StoredResponse } from '../shared/idempotency.js';

/** The authority's acts the server dates at receipt. */
const SERVER_DATED = new Set(['DEMAND', 'DEMAND_WITHDRAWN', 'AMENDMENT_RESPONSE']);

export function createAuthorityService(deps: {
  repo: AuthorityRepository;
  orgs: { findOrganization(id: string): Promise<Organization | undefined> };
  guarantees: Pick<GuaranteeRepository, 'findHitById'>;
  amendments: Pick<AmendmentService, 'recordAct' | 'recordActRequest'>;
  amendmentRepo: Pick<AmendmentRepository, 'statesOf'>;
  verifications: Pick<VerificationService, 'find' | 'partyView'>;
  outbox: Outbox;
  now?: () => Date;
}) {
  const { repo, orgs, guarantees, amendments, amendmentRepo, verifications, outbox } = deps;
  const now = deps.now ?? (() => new Date());
  const noSuch = (id: string) => new NotFoundError(`No guarantee ${id}.`);

  async function authorityOf(orgId: string): Promise<Organization & { fiscalCode: string }> {
    const org = await orgs.findOrganization(orgId);
    // The routes are reached only with an authority's key; its fiscal code is required on creation.
    if (!org || org.kind !== 'authority' || org.fiscalCode === null) throw new NotFoundError(`No authority ${orgId}.`);
    return org as Organization & { fiscalCode: string };
  }

  /** The guarantee as the authority sees it; a 404 unless it took charge of it. */
  async function view(authorityId: string, guaranteeId: string): Promise<AuthorityGuaranteeView> {
    const link = isUuid(guaranteeId) ? await repo.linkOf(authorityId, guaranteeId) : undefined;
    const hit = link && (await guarantees.findHitById(guaranteeId));
    if (!link || !hit) throw noSuch(guaranteeId);
    return { ...(await verifications.partyView(hit, now())), linkedAt: link.linkedAt.toISOString() };
  }

  return {
    /**
     * Takes charge of the guarantee the tender's data identify: 200 with the authority's view
     * (again, without recording anything, for the same authority); a 404 exactly as a public
     * verification's miss when the data identify none, or the issuer named another beneficiary;
     * a 409 when another authority took charge of it, or it ended.
     */
    async takeCharge(authorityId: string, q: TakeCharge, by: ApiActor): Promise<AuthorityGuaranteeView> {
      const authority = await authorityOf(authorityId);
      const hits = (await verifications.find(q)).filter(
        (h) => h.record.details.cig === q.cig && (h.record.details.beneficiaryFiscalCode ?? authority.fiscalCode) === authority.fiscalCode,
      );
      if (!hits.length) throw new NotFoundError(NO_MATCH);
      if (hits.length > 1) throw new ConflictError('Several guarantees match these data: ask their issuers which one is yours.');
      const { record } = hits[0]!;
      const guaranteeId = record.id;
      await amendments.recordAct(
        {
          issuerOrgId: record.orgId,
          actor: 'authority',
          actorOrgId: authorityId,
          audit: { authority: by },
          serverDated: true,
          doneAlready: (fold) => fold.beneficiary === authorityId,
          also: async (t, amendment) => {
            await repo.link(guaranteeId, authorityId, amendment.createdAt, t);
            const data = {
              guaranteeId,
              authority: { orgId: authorityId, name: authority.name, fiscalCode: authority.fiscalCode },
              seq: amendment.seq,
              linkedAt: amendment.createdAt.toISOString(),
            };
            await outbox.add(t, record.orgId, 'guarantee.beneficiary_linked', data, amendment.createdAt);
            await outbox.add(t, authorityId, 'guarantee.beneficiary_linked', data, amendment.createdAt);
          },
        },
        guaranteeId,
        {
          type: 'BENEFICIARY_LINKED',
          effectiveAt: now(),
          expiresAt: null,
          garantedAmount: null,
          claimedAmount: null,
          paidAmount: null,
          reason: null,
          docs: [],
        },
      );
      return view(authorityId, guaranteeId);
    },

    view,

    /**
     * Records the authority's act on a guarantee it took charge of (a 404 otherwise): in the
     * guarantee's chain with its actor, under the same rules, seq and expectedSeq as the
     * issuer's amendments (409s that change nothing), in both audit trails and both parties'
     * events. A demand, its withdrawal and an answer are dated at receipt.
     */
    async act(
      authorityId: string,
      guaranteeId: string,
      input: CreateAuthorityAct,
      by: ApiActor,
      idem?: { key: string; scope: string },
    ): Promise<StoredResponse> {
      const issuerOrgId = isUuid(guaranteeId) ? await repo.issuerOf(authorityId, guaranteeId) : undefined;
      if (!issuerOrgId) throw noSuch(guaranteeId);
      return amendments.recordActRequest(
        { issuerOrgId, actor: 'authority', actorOrgId: authorityId, audit: { authority: by }, serverDated: SERVER_DATED.has(input.type) },
        guaranteeId,
        {
          type: input.type,
          // The server dates the others at receipt (serverDated): a constant here, so that a retry is the same request.
          effectiveAt: 'effectiveAt' in input ? input.effectiveAt : new Date(0),
          expiresAt: null,
          garantedAmount: 'garantedAmount' in input ? input.garantedAmount : null,
          claimedAmount: 'claimedAmount' in input ? input.claimedAmount : null,
          paidAmount: null,
          amendmentSeq: 'amendmentSeq' in input ? input.amendmentSeq : null,
          decision: 'decision' in input ? input.decision : null,
          reason: input.reason ?? null,
          docs: ('docs' in input ? (input.docs ?? []) : []).map((d) => ({ type: d.type ?? null, key: d.key, originalFileName: d.originalFileName ?? null })),
          ...(input.expectedSeq !== undefined && { expectedSeq: input.expectedSeq }),
        },
        idem,
      );
    },

    /** Page `page` of the guarantees the authority took charge of, the latest first (`cig`: of that tender only; `status`: with that status). */
    async list(
      authorityId: string,
      q: { page: number; limit: number; cig?: string | undefined; status?: string | undefined },
    ): Promise<z.infer<typeof authorityList>> {
      const at = now();
      let totalItems: number;
      let items;
      if (q.cig !== undefined || q.status !== undefined) {
        const found = await repo.filtered(authorityId, { cig: q.cig, status: q.status }, at, (q.page - 1) * q.limit, q.limit);
        totalItems = found.total;
        items = found.items;
      } else {
        // Numbered 1..total per authority: the page is a range of the key, however deep.
        totalItems = await repo.count(authorityId);
        const top = totalItems - (q.page - 1) * q.limit;
        items = top > 0 ? await repo.bySeq(authorityId, Math.max(0, top - q.limit), top) : [];
      }
      // Every item's state in one statement.
      const states = await amendmentRepo.statesOf(
        items.map((i) => i.guaranteeId),
        at,
      );
      return {
        totalItems,
        guarantees: items.map((i) => ({
          guaranteeId: i.guaranteeId,
          issuer: i.issuer,
          policyNumber: i.policyNumber,
          cig: i.cig,
          linkedAt: i.linkedAt.toISOString(),
          state: toStateView(states.get(i.guaranteeId)!),
        })),
      };
    },
  };
}

export type AuthorityService = ReturnType<typeof createAuthorityService>;

// Request and response schemas of the contracting authorities' API (/api/authority/v1).
import { z } from 'zod';
import { MAX_REASON, stateView } from '../guarantees/amendment.schemas.js';
import { GUARANTEE_STATUSES } from '../guarantees/amendments.js';
import { docsOf, docV2Input } from '../guarantees/guarantee.schemas.js';
import { dateTime, money, pagingQuery, text } from '../shared/validation.js';
import { verificationMatch, verificationRequest } from '../verification/verification.schemas.js';

/**
 * Taking charge of a guarantee: the tender's data, all four required, compared as a public
 * verification compares them (the policy number and the verification code exactly; the CIG the
 * guarantee must carry; the amount).
 */
export const takeCharge = verificationRequest
  .required({ cig: true, garantedAmount: true })
  .meta({ id: 'TakeCharge', description: "The tender's data that identify the guarantee: the same four a public verification compares, all required." });

export type TakeCharge = z.output<typeof takeCharge>;

export const authorityGuaranteeView = verificationMatch
  .extend({
    linkedAt: z.string().meta({ description: 'When the authority took charge of the guarantee (its BENEFICIARY_LINKED amendment).' }),
    privateDocuments: z.number().int().meta({ description: 'Always 0: the authority that took charge of a guarantee sees every document.' }),
  })
  .meta({ id: 'AuthorityGuarantee', description: 'A guarantee as the contracting authority that took charge of it sees it: every document, public or not.' });

export type AuthorityGuaranteeView = z.infer<typeof authorityGuaranteeView>;

export const authorityListQuery = pagingQuery.extend({
  cig: z.string().min(1).max(255).optional().meta({ description: 'Only the guarantees of this tender (CIG, compared exactly).' }),
  status: z
    .enum(GUARANTEE_STATUSES, { error: `status must be one of ${GUARANTEE_STATUSES.join(', ')}` })
    .optional()
    .meta({
      description:
        "Only the guarantees with this status, as every amendment recorded applies (one with an amendment dated later is listed under the status it will have; its state says today's and what is scheduled).",
    }),
});

export const authorityListItem = z
  .object({
    guaranteeId: z.string(),
    issuer: z.object({ orgId: z.string(), name: z.string() }),
    policyNumber: z.string().nullable(),
    cig: z.string().nullable(),
    linkedAt: z.string(),
    state: stateView,
  })
  .meta({ id: 'AuthorityGuaranteeItem' });

export const authorityList = z
  .object({ totalItems: z.number().int(), guarantees: z.array(authorityListItem) })
  .meta({ id: 'AuthorityGuaranteeList', description: 'The guarantees the authority took charge of, the latest first.' });

const positive = money.refine((n) => n > 0, 'must be > 0');
const expectedSeq = z
  .number({ error: 'must be a whole number >= 0' })
  .int('must be a whole number >= 0')
  .min(0, 'must be a whole number >= 0')
  .optional()
  .meta({ description: 'The seq of the last amendment the authority saw (0 for none): if another came since, a 409 and nothing recorded.' });
const reason = text(MAX_REASON).nullable().optional();

const act = <T extends string, F extends z.ZodRawShape>(type: T, fields: F, description: string) =>
  z.strictObject({ type: z.literal(type), ...fields, reason, expectedSeq }).meta({ id: `AuthorityAct${type}`, description });

/**
 * The authority's acts on a guarantee it took charge of. A demand, its withdrawal and an answer
 * are dated by the server at receipt: they take no effectiveAt (one sent is a 400).
 */
export const createAuthorityAct = z
  .discriminatedUnion(
    'type',
    [
      act(
        'DEMAND',
        { claimedAmount: positive, docs: docsOf(docV2Input) },
        "A demand for payment (escussione) of claimedAmount (> 0, at most the current amount), dated at receipt: the issuer's 15 days run from it. Its documents are the authority's uploads.",
      ),
      act('DEMAND_WITHDRAWN', {}, 'The open demand withdrawn, dated at receipt.'),
      act(
        'AMENDMENT_RESPONSE',
        {
          amendmentSeq: z.number({ error: 'must be a whole number' }).int('must be a whole number').min(1, 'must be >= 1'),
          decision: z.enum(['ACCEPT', 'REFUSE'], { error: 'must be ACCEPT or REFUSE' }),
        },
        "The answer to the issuer's amendment that waits for consent (amendmentSeq), dated at receipt: ACCEPT applies it, REFUSE leaves the state as it was.",
      ),
      act(
        'PARTIAL_RELEASE',
        { garantedAmount: money, effectiveAt: dateTime, docs: docsOf(docV2Input) },
        'Part of the cover released by the authority (svincolo parziale): the amount becomes garantedAmount, lower than the current one.',
      ),
      act('RELEASE', { effectiveAt: dateTime, docs: docsOf(docV2Input) }, 'The guarantee released by the authority (svincolo): nothing may follow.'),
    ],
    { error: 'type must be one of DEMAND, DEMAND_WITHDRAWN, AMENDMENT_RESPONSE, PARTIAL_RELEASE, RELEASE' },
  )
  .meta({ id: 'CreateAuthorityAct', description: "An act of the authority on the guarantee. Unknown fields, and another type's, are a 400." });

export type CreateAuthorityAct = z.output<typeof createAuthorityAct>;

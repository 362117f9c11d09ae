// Request and response schemas of the contracting authorities' API (/api/authority/v1).
import { z } from 'zod';
import { stateView } from '../guarantees/amendment.schemas.js';
import { pagingQuery } from '../shared/validation.js';
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

// Request and response schemas of the amendments endpoints (docs/api.md "A guarantee's life"). One object
// per type, each with its own fields only: a field of another type is a 400, as is a missing
// or malformed one. What depends on the guarantee's state (a later expiry, a lower amount, an
// open claim) is the service's, a 409.
import { z } from 'zod';
import { asInteger, dateTime, money, positiveInt, text } from '../shared/validation.js';
import { AMENDMENT_TYPES, GUARANTEE_STATUSES } from './amendments.js';
import { ACT_TYPES, docsOf, docV2Input } from './guarantee.schemas.js';

export const MAX_REASON = 1000;

/** The most amendments a page of GET .../amendments holds. */
export const MAX_AMENDMENTS_PAGE = 500;

const positive = money.refine((n) => n > 0, 'must be > 0');

const common = {
  effectiveAt: dateTime.meta({ description: 'When the amendment takes effect (RFC 3339 with an offset).' }),
  reason: text(MAX_REASON).nullable().optional(),
  docs: docsOf(docV2Input),
  expectedSeq: z
    .number({ error: 'must be a whole number >= 0' })
    .int('must be a whole number >= 0')
    .min(0, 'must be a whole number >= 0')
    .optional()
    .meta({ description: 'The seq of the last amendment the client saw (0 for none): if another came since, a 409 and nothing recorded.' }),
};

const of = <T extends (typeof AMENDMENT_TYPES)[number], F extends z.ZodRawShape>(type: T, fields: F, description: string) =>
  z.strictObject({ type: z.literal(type), ...fields, ...common }).meta({ id: `Amendment${type}`, description });

export const createAmendment = z
  .discriminatedUnion(
    'type',
    [
      of('EXTENSION', { expiresAt: dateTime }, 'The term extended: expiresAt later than the current expiry.'),
      of('AMOUNT_CHANGE', { garantedAmount: positive }, 'The amount changed to garantedAmount (> 0).'),
      of('PARTIAL_RELEASE', { garantedAmount: money }, 'Part released (art. 117 c.8): the amount becomes garantedAmount, lower than the current one.'),
      of('RELEASE', {}, 'Released: nothing may follow.'),
      of('CLAIM', { claimedAmount: positive }, 'The beneficiary claims claimedAmount (> 0, at most the current amount); one claim open at a time.'),
      of('CLAIM_SETTLED', { paidAmount: money }, 'The open claim paid: the amount is lowered by paidAmount (not below 0).'),
      of('CLAIM_REJECTED', {}, 'The open claim rejected.'),
      of('CANCELLATION', {}, 'Cancelled: nothing may follow.'),
    ],
    { error: `type must be one of ${AMENDMENT_TYPES.join(', ')}` },
  )
  .meta({ id: 'CreateAmendment', description: 'An amendment to record. Unknown fields, and fields of another type, are a 400.' });

export type CreateAmendment = z.output<typeof createAmendment>;

const isoDate = z.string().meta({ description: 'RFC 3339 date-time (UTC).' });

const docView = z.object({ type: z.enum(ACT_TYPES).nullable(), key: z.string(), originalFileName: z.string().nullable(), checksum: z.string().nullable() });

export const amendmentView = z
  .object({
    id: z.string(),
    guaranteeId: z.string(),
    seq: z.number().int().meta({ description: '1, 2, 3... per guarantee, without gaps.' }),
    type: z.enum(AMENDMENT_TYPES),
    actor: z
      .enum(['issuer', 'authority'])
      .meta({ description: "Who recorded it: the guarantee's issuer, or the contracting authority that took charge of it." }),
    actorOrgId: z.string().optional().meta({ description: "The authority's organization, when the actor is one." }),
    amendmentSeq: z.number().int().optional().meta({ description: 'AMENDMENT_RESPONSE: the amendment it answers.' }),
    decision: z.enum(['ACCEPT', 'REFUSE']).optional().meta({ description: 'AMENDMENT_RESPONSE: the answer.' }),
    consent: z.enum(['PENDING', 'ACCEPTED', 'REFUSED']).optional().meta({
      description:
        "Present on an issuer's amendment that would reduce the cover of the authority that took charge of the guarantee: it changes the state only once the authority accepts it.",
    }),
    effectiveAt: isoDate,
    expiresAt: isoDate.optional(),
    garantedAmount: z.number().optional(),
    claimedAmount: z.number().optional(),
    paidAmount: z.number().optional(),
    reason: z.string().nullable(),
    docs: z.array(docView),
    createdAt: isoDate,
    notarizationStatus: z.enum(['PENDING', 'COMPLETE']),
    txHash: z.string().nullable(),
    notarizationReason: z.string().optional().meta({
      description: "Why the amendment will never be notarized (a doc ended Infected or Error, or the guarantee's notarization is blocked), once known.",
    }),
  })
  .meta({ id: 'Amendment' });

/** GET .../amendments's query: the page after seq `after`, `limit` amendments at most (400 otherwise, as GET /api/v2/audit's). */
export const amendmentsQuery = z.object({
  after: z
    .string()
    .regex(/^(0|[1-9]\d{0,15})$/, 'after must be a whole number >= 0')
    .transform(Number)
    .default(0)
    .meta({
      description: "The seq after which amendments are wanted (the previous answer's next); 0 for the first.",
      override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
        for (const key of Object.keys(jsonSchema)) if (key !== 'description') delete jsonSchema[key];
        Object.assign(jsonSchema, { type: 'integer', minimum: 0, default: 0 });
      },
    }),
  limit: positiveInt('limit', MAX_AMENDMENTS_PAGE)
    .default(100)
    .meta({ description: `Amendments per answer, 1 to ${MAX_AMENDMENTS_PAGE}.`, override: asInteger(MAX_AMENDMENTS_PAGE, 100) }),
});

export const amendmentList = z
  .object({
    amendments: z.array(amendmentView),
    next: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The last seq of this page when more amendments follow it, to ask for them (after=next); null at the end.' }),
  })
  .meta({ id: 'AmendmentList' });

export const stateView = z
  .object({
    status: z.enum(GUARANTEE_STATUSES).meta({
      description:
        'The first that applies: CANCELLED, RELEASED, CLAIMED (a claim is open), EXPIRED (expiresAt passed, no automatic renewal), PARTIALLY_RELEASED (a partial release was ever recorded), ACTIVE.',
    }),
    garantedAmount: z.number().nullable(),
    expiresAt: isoDate.nullable(),
    openClaim: z.object({ seq: z.number().int(), claimedAmount: z.number(), effectiveAt: isoDate }).nullable(),
    claimDueAt: isoDate.nullable().meta({ description: "15 × 24 h after the open claim's effectiveAt (the payment term of art. 117 c.7), else null." }),
    lastSeq: z.number().int().meta({ description: 'The seq of the last amendment (0 for none): the expectedSeq of the next.' }),
    beneficiary: z.string().nullable().meta({ description: 'The contracting authority (its organization id) that took charge of the guarantee, if one did.' }),
    pendingConsent: z
      .object({ seq: z.number().int(), type: z.enum(['AMOUNT_CHANGE', 'PARTIAL_RELEASE', 'RELEASE', 'CANCELLATION']) })
      .nullable()
      .meta({ description: "The issuer's amendment waiting for the authority's consent (one at a time), if one is." }),
    scheduled: z.array(z.object({ seq: z.number().int(), type: z.enum(AMENDMENT_TYPES), effectiveAt: isoDate })).meta({
      description:
        'Amendments recorded that apply from a later effectiveAt, in seq order: until then the state is as if they were not there (a RELEASE dated next month is not RELEASED today). An accepted amendment applies from its own effectiveAt.',
    }),
  })
  .meta({ id: 'GuaranteeState' });

// Request and response schemas of the guarantee endpoints, v1 and v2. The same schemas
// validate requests and generate the OpenAPI document.
import { z } from 'zod';
import { isPartitaIva } from '../orgs/org-identity.js';
import { dateTime, ignored, money, text } from '../shared/validation.js';

export const ACT_TYPES = ['BAIL_ACT', 'POST_SALE', 'OTHER'] as const;
export const NOTARIZATION_STATUSES = ['PENDING', 'COMPLETE'] as const;
export const MAX_DOCS = 50;
export const MAX_NOTE = 10_000;

const actType = z.enum(ACT_TYPES, { error: `must be one of ${ACT_TYPES.join(', ')}` });
/** An uploaded file's key as the presigned-URL endpoints return it. */
const fileKey = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be a storage key returned by a presigned-URL endpoint');

const detailsFields = {
  policyNumber: text().optional(),
  actType: actType.nullable().optional(),
  checkCode: text().nullable().optional(),
  emittedAt: dateTime.nullable().optional(),
  effectiveAt: dateTime.nullable().optional(),
  expiresAt: dateTime.nullable().optional(),
  isFixedExpiry: z.boolean({ error: 'must be a boolean' }).nullable().optional(),
  cig: text().nullable().optional().meta({ description: 'Codice Identificativo Gara of the tender.' }),
  batchCode: text().nullable().optional(),
};

const economicsInput = z.strictObject({
  garantedAmount: money.nullable().optional(),
  contractAmount: money.nullable().optional(),
  isAutomaticRenewal: z.boolean({ error: 'must be a boolean' }).nullable().optional(),
});

const noteInput = z.strictObject({
  shared: text(MAX_NOTE).nullable().optional().meta({ description: 'Shared note; null is stored as "".' }),
});

const signInput = z.strictObject({ emissionAt: dateTime.nullable().optional() });

const docV1Input = z.strictObject({
  type: actType.optional(),
  key: fileKey.meta({ description: 'The `key` returned by a presigned-URL endpoint to this organization.' }),
  checksum: ignored('SHA-256 of the stored file, computed by the scan.'),
});

export const docV2Input = docV1Input.extend({
  originalFileName: text().optional().meta({ description: 'Defaults to the fileName given when the upload URL was requested.' }),
  notarizedAt: ignored('Set when the record is notarized.'),
});

const serverFields = {
  id: ignored('UUIDv7.'),
  orgId: ignored("The API key's organization."),
  createdAt: ignored('The time of registration.'),
  txHash: ignored('Notarization transaction hash.'),
  notarizationStatus: ignored('Notarization status.'),
};

export function docsOf<D extends z.ZodType<{ key: string }>>(doc: D) {
  return z
    .array(doc, { error: 'must be an array' })
    .max(MAX_DOCS, `must hold at most ${MAX_DOCS} documents`)
    .superRefine((docs, ctx) => {
      const seen = new Set<string>();
      docs.forEach((d, i) => {
        if (seen.has(d.key)) ctx.addIssue({ code: 'custom', path: [i, 'key'], message: 'names the same file as an earlier document' });
        seen.add(d.key);
      });
    })
    .optional();
}

/** expiresAt, when given with effectiveAt, is not before it. */
function checkPeriod(g: { details?: { effectiveAt?: Date | null; expiresAt?: Date | null } }, ctx: z.RefinementCtx): void {
  const { effectiveAt, expiresAt } = g.details ?? {};
  if (effectiveAt && expiresAt && expiresAt < effectiveAt) {
    ctx.addIssue({ code: 'custom', path: ['details', 'expiresAt'], message: 'must not be before details.effectiveAt' });
  }
}

export const createGuaranteeV1 = z
  .strictObject({
    details: z.strictObject(detailsFields).optional(),
    economics: economicsInput.optional(),
    note: noteInput.optional(),
    sign: signInput.optional(),
    docs: docsOf(docV1Input),
    ...serverFields,
  })
  .superRefine(checkPeriod)
  .meta({ id: 'CreateGuaranteeV1', description: 'A guarantee to register (v1). Unknown fields are a 400.' });

export const createGuaranteeV2 = z
  .strictObject({
    details: z
      .strictObject({
        transactionId: text().min(1, 'must not be empty').optional().meta({
          description:
            "The client's own identifier of the transaction, unique in the organization: a second create with the same transactionId and body returns the first record; with a different body it is a 409.",
        }),
        ...detailsFields,
        beneficiaryFiscalCode: z
          .string({ error: 'must be a string' })
          .refine(isPartitaIva, "must be a public body's fiscal code: 11 digits, the last one a check digit")
          .nullable()
          .optional()
          .meta({
            description:
              'The fiscal code of the contracting authority (stazione appaltante) the guarantee is issued to: when given, only that authority can take charge of it.',
          }),
      })
      .optional(),
    economics: economicsInput.optional(),
    note: noteInput.optional(),
    sign: signInput.optional(),
    docs: docsOf(docV2Input),
    ...serverFields,
  })
  .superRefine(checkPeriod)
  .meta({ id: 'CreateGuaranteeV2', description: 'A guarantee to register (v2). Unknown fields are a 400.' });

export type CreateGuaranteeV1 = z.output<typeof createGuaranteeV1>;
export type CreateGuaranteeV2 = z.output<typeof createGuaranteeV2>;

/** Paging, as every list of the API pages (src/shared/validation.ts). */
export { MAX_LIMIT, pagingQuery as listQuery } from '../shared/validation.js';

// ---- Responses -------------------------------------------------------------------------

const iso = z.iso.datetime({ offset: true });
const nullableIso = iso.nullable();

const detailsOut = {
  policyNumber: z.string().optional(),
  actType: actType.nullable(),
  checkCode: z.string().nullable(),
  emittedAt: nullableIso,
  effectiveAt: nullableIso,
  expiresAt: nullableIso,
  isFixedExpiry: z.boolean().nullable(),
  cig: z.string().nullable(),
  batchCode: z.string().nullable(),
};

const common = {
  economics: z.object({ garantedAmount: z.number().nullable(), contractAmount: z.number().nullable(), isAutomaticRenewal: z.boolean().nullable() }),
  note: z.object({ shared: z.string() }),
  sign: z.object({ emissionAt: nullableIso }),
  txHash: z.string().nullable(),
  notarizationStatus: z.enum(NOTARIZATION_STATUSES).nullable(),
};

const docV1Out = z.object({ type: actType.optional(), key: z.string(), checksum: z.string().nullable() });
const docV2Out = docV1Out.extend({ originalFileName: z.string().optional(), notarizedAt: iso.optional() });

export const guaranteeV1 = z
  .object({
    details: z.object(detailsOut),
    ...common,
    docs: z.array(docV1Out),
    createdAt: iso,
    id: z.string(),
    orgId: z.string(),
  })
  .meta({ id: 'GuaranteeV1' });

export const guaranteeV2 = z
  .object({
    details: z.object({
      transactionId: z.string().optional(),
      ...detailsOut,
      beneficiaryFiscalCode: z.string().optional().meta({ description: 'The beneficiary the issuer named, when it did.' }),
    }),
    ...common,
    docs: z.array(docV2Out),
    createdAt: iso,
    id: z.string(),
    orgId: z.string(),
    notarizationReason: z.string().optional().meta({
      description: 'Present only when the record will never be notarized: why (a doc ended Infected or Error). notarizationStatus then stays PENDING.',
    }),
  })
  .meta({ id: 'GuaranteeV2' });

export type GuaranteeV1 = z.infer<typeof guaranteeV1>;
export type GuaranteeV2 = z.infer<typeof guaranteeV2>;

export const guaranteeListV1 = z.object({ totalItems: z.number().int(), guarantees: z.array(guaranteeV1) }).meta({ id: 'GuaranteeListV1' });
export const guaranteeListV2 = z.object({ totalItems: z.number().int(), guarantees: z.array(guaranteeV2) }).meta({ id: 'GuaranteeListV2' });

// The audit trail on the wire (docs/api.md "Audit"): GET /api/v2/audit's query and answer.
import { z } from 'zod';
import { asInteger, positiveInt } from '../shared/validation.js';

export const auditQuery = z.object({
  since: z
    .string()
    .regex(/^(0|[1-9]\d{0,15})$/, 'since must be a whole number >= 0')
    .transform(Number)
    .default(0)
    .meta({
      description: "The seq after which rows are wanted (the previous answer's next); 0 for the first.",
      override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
        for (const key of Object.keys(jsonSchema)) if (key !== 'description') delete jsonSchema[key];
        Object.assign(jsonSchema, { type: 'integer', minimum: 0, default: 0 });
      },
    }),
  limit: positiveInt('limit', 100)
    .default(50)
    .meta({ description: 'Rows per answer, 1 to 100.', override: asInteger(100, 50) }),
});

export const auditItem = z
  .object({
    seq: z.number().int().meta({ description: "1, 2, 3... in the organization's chain, without gaps." }),
    at: z.string(),
    orgId: z.string().nullable(),
    actor: z.string().meta({ description: "The API key's public prefix (grk_ and 12 characters), `cli`, or the admin user." }),
    action: z.string().meta({ description: 'guarantee.create, amendment.record, ...' }),
    target: z.string().meta({ description: '<kind>:<id>, such as guarantee:<uuid>.' }),
    requestId: z.string().nullable(),
    outcome: z.string(),
    prevHash: z.string().meta({ description: "The previous row's hash (64 zeros for the first)." }),
    hash: z.string().meta({ description: 'SHA-256 of this row and prevHash (docs/api.md "Audit"): a chain that cli audit verify checks.' }),
  })
  .meta({ id: 'AuditItem' });

export const auditPage = z
  .object({
    items: z.array(auditItem),
    next: z.number().int().nullable().meta({ description: 'The last seq of this page, to ask for the next (since=next); null at the end.' }),
  })
  .meta({ id: 'AuditPage' });

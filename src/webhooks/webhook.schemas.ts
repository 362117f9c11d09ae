// Request and response schemas of the webhook endpoints (register and list, and the management
// the other endpoints).
import { z } from 'zod';
import { dateTime, pagingQuery } from '../shared/validation.js';

export const registerWebhook = z
  .strictObject({
    endpoint: z.string({ error: 'is required: an absolute https URL' }).meta({
      description:
        'Absolute https URL (http allowed outside production), at most 2048 characters, reachable on a public address unless WEBHOOK_ALLOWED_NETWORKS lists its network.',
      example: 'https://hooks.example.com/registry',
    }),
  })
  .meta({ id: 'RegisterWebhookRequest' });

export const registerResult = z
  .object({
    success: z.literal(true),
    webhookId: z.string(),
    secret: z
      .string()
      .meta({ description: 'The signing secret (`whsec_...`), for the Standard Webhooks libraries; the same endpoint registered again returns it again.' }),
  })
  .meta({ id: 'RegisterWebhookResult' });

export const registerFailure = z.object({ success: z.literal(false), error: z.string() }).meta({ id: 'RegisterWebhookFailure' });

export const webhookList = z.array(z.object({ webhookId: z.string(), endpoint: z.string() })).meta({ id: 'WebhookList' });

export const webhookView = z
  .object({
    webhookId: z.string(),
    endpoint: z.string(),
    status: z.enum(['active', 'disabled']),
    disabledReason: z.string().nullable().meta({ description: 'Why deliveries stopped: 410 Gone, or failing for WEBHOOK_DISABLE_AFTER_SECONDS.' }),
    failingSince: z.string().nullable().meta({ description: 'First failed attempt since the last success.' }),
    previousSecretValidUntil: z.string().nullable().meta({ description: 'After a rotation, the old secret also signs until then.' }),
    createdAt: z.string(),
  })
  .meta({ id: 'WebhookView' });

export type WebhookView = z.infer<typeof webhookView>;

export const rotateResult = z
  .object({
    webhookId: z.string(),
    secret: z.string(),
    previousSecretValidUntil: z.string(),
  })
  .meta({ id: 'RotateWebhookSecretResult' });

export const attemptsQuery = pagingQuery;

export const attemptList = z
  .object({
    totalItems: z.number().int(),
    attempts: z.array(
      z.object({
        attemptId: z.number().int(),
        eventId: z.string().meta({ description: 'The event: the `webhook-id` header of the delivery.' }),
        eventType: z.string(),
        attemptedAt: z.string(),
        durationMs: z.number().int(),
        statusCode: z
          .number()
          .int()
          .nullable()
          .meta({ description: "The receiver's answer; null when none came (timeout, refused address, connection error)." }),
        error: z.string().nullable(),
        succeeded: z.boolean(),
      }),
    ),
  })
  .meta({ id: 'WebhookAttempts' });

export const replayRequest = z
  .union([
    z.strictObject({ eventId: z.string().meta({ description: 'Replay this event to the endpoint (any event of the organization).' }) }),
    z.strictObject({ since: dateTime.meta({ description: 'Replay every delivery to this endpoint that failed, of events since this time.' }) }),
  ])
  .meta({ id: 'ReplayRequest' });

export const replayResult = z.object({ replayed: z.number().int() }).meta({ id: 'ReplayResult' });

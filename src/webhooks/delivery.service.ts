// One delivery attempt: the delivery must still be due and its endpoint active; the body
// stored in the outbox is signed (Standard Webhooks, by the `standardwebhooks` library: the
// current secret, and the previous one during a rotation's grace period) and sent as is.
// Every attempt is recorded. 2xx: delivered. 410 Gone: the endpoint is disabled. Otherwise the
// job retries on the schedule (or after the receiver's Retry-After), the delivery is failed
// after the last attempt, and an endpoint that has failed for WEBHOOK_DISABLE_AFTER is disabled.
import { Webhook } from 'standardwebhooks';
import { createBatcher } from '../shared/batch.js';
import type { Logger } from '../shared/logger.js';
import { SecretContext, type SecretBox } from '../shared/secrets.js';
import type { Sender, SendResult } from './sender.js';
import { createEndpointSlots, type SpeedBound } from './endpoint-slots.js';
import { DeliveryFailedError, latestRetryMs } from './webhook.jobs.js';
import type { AttemptOutcome, DeliveryKey, EndpointRecord, RecordedAttempt, WebhookRepository } from './webhook.repository.js';

/** Most deliveries read or recorded in one statement. */
const BATCH_MAX = 100;

export interface DeliverySettings {
  /** An endpoint failing without a success for this long is disabled. */
  disableAfterMs: number;
  /** Deliveries to one endpoint in flight at once in this process. */
  endpointConcurrency: number;
  /** As many for an endpoint that answers fast (endpoint-slots.ts); by default the same bound. */
  endpointFast?: SpeedBound;
  /** How long a delivery waits for a slot of its endpoint before its job is put back (default 250 ms). */
  endpointWaitMs?: number;
  /** The longest an attempt may take (WEBHOOK_TIMEOUT_MS). */
  attemptTimeoutMs: number;
  /** WEBHOOK_RETRY_SCHEDULE, seconds: when a retry is due by (the reconciler's mark). */
  retrySchedule: readonly number[];
}

/** Where the job stands: attempts made before this one, and whether this is its last. */
export interface AttemptOf {
  made: number;
  last: boolean;
  /** A first attempt (off the first attempts' list): skipped unless the delivery is due (after a failed attempt, its job has it until its retry's time). */
  first?: boolean;
}

/** Done with ('delivered', 'skipped', 'endpoint-disabled'); 'busy': come back shortly; `giveUp`: the endpoint was just disabled, retrying cannot help. */
export type DeliveryOutcome = 'delivered' | 'skipped' | 'busy' | 'endpoint-disabled' | { giveUp: string };

export function createDeliveryService(deps: {
  repo: WebhookRepository;
  sender: Sender;
  secrets: SecretBox;
  settings: DeliverySettings;
  logger: Logger;
  now?: () => Date;
}) {
  const { repo, sender, secrets, settings, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const slots = createEndpointSlots(settings.endpointConcurrency, settings.endpointWaitMs ?? 250, settings.endpointFast);
  // Per sealed secret, its signer: a secret is opened (AES-GCM) and its HMAC key derived once,
  // not on every attempt. A rotation seals a new secret, which is a new entry.
  const signers = new Map<string, Webhook>();
  // Deliveries under way share their reads and writes: one statement in flight each, and the
  // calls made meanwhile go together in the next (src/shared/batch.ts); records at most every
  // 5 ms under load (nobody waits on them: the request was made). Taken many at once from the
  // first attempts' list, a burst's deliveries read and record in batches of several.
  const contextOf = createBatcher((keys: DeliveryKey[]) => repo.deliveryContexts(keys), { maxItems: BATCH_MAX, serial: true });
  const recordOne = createBatcher((items: RecordedAttempt[]) => repo.recordAttempts(items), { maxItems: BATCH_MAX, serial: true, minIntervalMs: 5 });
  /** `read`: the delivery as the attempt read it. */
  async function record(read: Omit<RecordedAttempt, 'outcome'>, outcome: AttemptOutcome): Promise<void> {
    const err = await recordOne({ ...read, outcome });
    if (err) throw err;
  }

  function signer(endpointId: string, sealed: Buffer): Webhook {
    const key = `${endpointId} ${sealed.toString('base64')}`;
    let wh = signers.get(key);
    if (!wh) {
      if (signers.size >= 1000) signers.clear();
      wh = new Webhook(secrets.open(sealed, SecretContext.webhook(endpointId)));
      signers.set(key, wh);
    }
    return wh;
  }

  /** The Standard Webhooks headers of one attempt: every valid secret signs (rotation). */
  function headersFor(endpoint: EndpointRecord, eventId: string, body: string, at: Date): Record<string, string> {
    const keys = [endpoint.secretEnc];
    if (endpoint.previousSecretEnc && endpoint.previousSecretUntil && endpoint.previousSecretUntil > at) keys.push(endpoint.previousSecretEnc);
    return {
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': keys.map((k) => signer(endpoint.id, k).sign(eventId, at, body)).join(' '),
    };
  }

  // A delivery's due time is written by the clock of the process that made it due, which may be
  // ahead of this one's: within an attempt's time limit it counts as due. A retry's due time is
  // its latest start plus that limit, so a copy on the list still never runs a retry early.
  const notDueYet = (dueAt: Date) => dueAt.getTime() > now().getTime() + settings.attemptTimeoutMs;

  return {
    /**
     * Attempts delivery of `eventId` to `endpointId`. Resolves when it is done with (delivered,
     * or nothing to do); 'busy' when the endpoint kept its share in flight here for the whole
     * wait (the caller retries shortly, no attempt spent, nothing sent); `giveUp` when retrying is
     * pointless (410, endpoint disabled just now); throws DeliveryFailedError to be retried.
     */
    async deliver(eventId: string, endpointId: string, attempt: AttemptOf): Promise<DeliveryOutcome> {
      const context = await contextOf({ eventId, endpointId });
      // A failed delivery whose job runs again was retried by hand (Bull Board): it is due again.
      // (Not a copy on the first attempts' list: that is no one's decision to send it again.)
      if (!attempt.first && context?.status === 'failed' && (await repo.reopen(eventId, endpointId, now()))) {
        logger.info({ event: eventId, endpoint: endpointId }, 'failed delivery retried');
      } else if (context?.status !== 'pending' || (attempt.first && notDueYet(context.dueAt))) return 'skipped';
      const endpoint = context.endpoint;
      if (endpoint.status === 'disabled') {
        await repo.failWithoutAttempt(eventId, endpointId, `endpoint disabled: ${endpoint.disabledReason ?? ''}`, now());
        return 'endpoint-disabled';
      }
      // The endpoint's slot is held for the request only: under load, every turn of the event
      // loop a delivery waits for (its read, above) would otherwise hold a slot as well, and a
      // fast endpoint's bound would cap its deliveries at a few hundred a second (measured).
      if (!(await slots.acquire(endpointId))) return 'busy';
      let at: Date;
      let result: SendResult | undefined;
      try {
        at = now();
        result = await sender.send(endpoint.url, headersFor(endpoint, eventId, context.body, at), context.body);
      } finally {
        slots.release(endpointId, result?.durationMs);
      }

      const code = result.statusCode;
      const succeeded = code !== null && code >= 200 && code < 300;
      const read = { eventId, endpointId, replays: context.replays, wasFailing: endpoint.failingSince !== null };
      const base = { at, durationMs: result.durationMs, statusCode: code, error: result.error, succeeded };
      if (succeeded) {
        await record(read, { ...base, deliveryStatus: 'succeeded' });
        return 'delivered';
      }
      if (code === 410) {
        await record(read, { ...base, deliveryStatus: 'failed', disable: 'the receiver answered 410 Gone' });
        logger.warn({ endpoint: endpointId }, 'webhook endpoint disabled: 410 Gone');
        return { giveUp: '410 Gone: endpoint disabled' };
      }
      const failingSince = endpoint.failingSince ?? at;
      if (at.getTime() - failingSince.getTime() >= settings.disableAfterMs) {
        if (await repo.succeededSince(endpointId, failingSince, settings.attemptTimeoutMs)) {
          // A success raced the failure that set failing_since: failing from now, as far as is known.
          await repo.resetFailingSince(endpointId, at);
        } else {
          const reason = `failing since ${failingSince.toISOString()}`;
          await record(read, { ...base, deliveryStatus: 'failed', disable: reason });
          logger.warn({ endpoint: endpointId, failingSince }, 'webhook endpoint disabled: failing too long');
          return { giveUp: `endpoint disabled: ${reason}` };
        }
      }
      // A retry not begun by this time (and a margin) lost its job; the reconciler queues it again.
      const dueAt = new Date(at.getTime() + latestRetryMs(settings.retrySchedule, attempt.made + 1, result.retryAfterMs) + settings.attemptTimeoutMs);
      await record(read, { ...base, deliveryStatus: attempt.last ? 'failed' : 'pending', dueAt });
      throw new DeliveryFailedError(result.error ?? 'delivery failed', result.retryAfterMs);
    },
  };
}

export type DeliveryService = ReturnType<typeof createDeliveryService>;

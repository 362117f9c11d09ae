// One delivery attempt: the delivery must still be due and its endpoint active; the body
// stored in the outbox is signed (Standard Webhooks, by the `standardwebhooks` library: the
// current secret, and the previous one during a rotation's grace period) and sent as is.
// Every attempt is recorded. 2xx: delivered. 410 Gone: the endpoint is disabled. Otherwise the
// job retries on the schedule (or after the receiver's Retry-After), the delivery is failed
// after the last attempt, and an endpoint that has failed for WEBHOOK_DISABLE_AFTER is disabled.
import { UnrecoverableError } from 'bullmq';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../shared/logger.js';
import type { SecretBox } from '../shared/secrets.js';
import type { Sender } from './sender.js';
import { DeliveryFailedError } from './webhook.jobs.js';
import type { EndpointRecord, WebhookRepository } from './webhook.repository.js';

export interface DeliverySettings {
  /** An endpoint failing without a success for this long is disabled. */
  disableAfterMs: number;
  /** Deliveries to one endpoint in flight at once in this process. */
  endpointConcurrency: number;
}

export type DeliveryOutcome = 'delivered' | 'skipped' | 'busy' | 'endpoint-disabled';

export function createDeliveryService(deps: {
  repo: WebhookRepository; sender: Sender; secrets: SecretBox; settings: DeliverySettings; logger: Logger; now?: () => Date;
}) {
  const { repo, sender, secrets, settings, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const inFlight = new Map<string, number>();
  const signers = new Map<string, Webhook>();

  function signer(secret: string): Webhook {
    let wh = signers.get(secret);
    if (!wh) {
      if (signers.size >= 1000) signers.clear();
      wh = new Webhook(secret);
      signers.set(secret, wh);
    }
    return wh;
  }

  /** The Standard Webhooks headers of one attempt: every valid secret signs (rotation). */
  function headersFor(endpoint: EndpointRecord, eventId: string, body: string, at: Date): Record<string, string> {
    const keys = [secrets.open(endpoint.secretEnc)];
    if (endpoint.previousSecretEnc && endpoint.previousSecretUntil && endpoint.previousSecretUntil > at) keys.push(secrets.open(endpoint.previousSecretEnc));
    return {
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': keys.map((k) => signer(k).sign(eventId, at, body)).join(' '),
    };
  }

  return {
    /**
     * Attempts delivery of `eventId` to `endpointId`. Resolves when it is done with (delivered,
     * or nothing to do); 'busy' when the endpoint already has its share in flight here (the
     * caller retries shortly, no attempt spent); throws DeliveryFailedError to be retried, or
     * UnrecoverableError when retrying is pointless (410, endpoint disabled).
     */
    async deliver(eventId: string, endpointId: string, lastAttempt: boolean): Promise<DeliveryOutcome> {
      if ((await repo.deliveryStatus(eventId, endpointId)) !== 'pending') return 'skipped';
      const endpoint = await repo.endpoint(endpointId);
      if (!endpoint) return 'skipped';
      if (endpoint.status === 'disabled') {
        await repo.failWithoutAttempt(eventId, endpointId, `endpoint disabled: ${endpoint.disabledReason ?? ''}`, now());
        return 'endpoint-disabled';
      }
      // Taken before any await, so that concurrent jobs of this process see it.
      const busy = inFlight.get(endpointId) ?? 0;
      if (busy >= settings.endpointConcurrency) return 'busy';
      inFlight.set(endpointId, busy + 1);
      const at = now();
      let result;
      try {
        const event = await repo.event(eventId);
        if (!event) return 'skipped';
        result = await sender.send(endpoint.url, headersFor(endpoint, eventId, event.body, at), event.body);
      } finally {
        const n = (inFlight.get(endpointId) ?? 1) - 1;
        if (n <= 0) inFlight.delete(endpointId);
        else inFlight.set(endpointId, n);
      }

      const code = result.statusCode;
      const succeeded = code !== null && code >= 200 && code < 300;
      const base = { at, durationMs: result.durationMs, statusCode: code, error: result.error, succeeded };
      if (succeeded) {
        await repo.recordAttempt(eventId, endpointId, { ...base, deliveryStatus: 'succeeded' });
        return 'delivered';
      }
      if (code === 410) {
        await repo.recordAttempt(eventId, endpointId, { ...base, deliveryStatus: 'failed', disable: 'the receiver answered 410 Gone' });
        logger.warn({ endpoint: endpointId }, 'webhook endpoint disabled: 410 Gone');
        throw new UnrecoverableError('410 Gone: endpoint disabled');
      }
      const failingSince = endpoint.failingSince ?? at;
      if (at.getTime() - failingSince.getTime() >= settings.disableAfterMs) {
        const reason = `failing since ${failingSince.toISOString()}`;
        await repo.recordAttempt(eventId, endpointId, { ...base, deliveryStatus: 'failed', disable: reason });
        logger.warn({ endpoint: endpointId, failingSince }, 'webhook endpoint disabled: failing too long');
        throw new UnrecoverableError(`endpoint disabled: ${reason}`);
      }
      await repo.recordAttempt(eventId, endpointId, { ...base, deliveryStatus: lastAttempt ? 'failed' : 'pending' });
      throw new DeliveryFailedError(result.error ?? 'delivery failed', result.retryAfterMs);
    },
  };
}

export type DeliveryService = ReturnType<typeof createDeliveryService>;

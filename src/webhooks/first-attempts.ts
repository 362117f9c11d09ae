// A webhooks worker's first attempts: it takes new deliveries from the first attempts' list
// (src/webhooks/webhook.jobs.ts), as many at once as it has room for, and attempts each at
// once. Only what must wait becomes a job of the delivery queue:
// - a failed attempt: a job for the rest of the schedule, its first retry delayed as the
//   schedule (or the receiver's Retry-After) says;
// - an endpoint with its share in flight here ('busy'): a job now, which waits its turn there;
// - an attempt that could not be made or recorded (the database away): a job, delayed as a
//   first retry would be.
// What a worker takes is leased to it (webhook.jobs.ts): a worker killed with deliveries in
// hand, its leases run out and the next take of any worker puts them back on the list.
import type { Logger } from '../shared/logger.js';
import type { AttemptOf, DeliveryOutcome } from './delivery.service.js';
import { createBatcher } from '../shared/batch.js';
import { DeliveryFailedError, retryDelay, type FirstAttemptsTaker, type Taken, type WebhookJobs } from './webhook.jobs.js';
import type { DeliveryRef } from './webhook.repository.js';

/** Most deliveries taken in one command. */
const TAKE_MAX = 100;
/** How long a take waits for a delivery before it looks again (and sees a close). */
const TAKE_WAIT_SECONDS = 1;
/** After a take failed (Redis away): the first pause, doubled up to the last. */
const PAUSE_MS = [250, 5_000] as const;

export interface FirstAttemptsSettings {
  /** Attempts in flight at once (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** WEBHOOK_RETRY_SCHEDULE, seconds. */
  retrySchedule: readonly number[];
}

export function startFirstAttempts(deps: {
  taker: FirstAttemptsTaker;
  deliver: (eventId: string, endpointId: string, attempt: AttemptOf) => Promise<DeliveryOutcome>;
  jobs: Pick<WebhookJobs, 'queue' | 'retry'>;
  settings: FirstAttemptsSettings;
  logger: Logger;
}) {
  const { taker, deliver, jobs, settings, logger } = deps;
  const schedule = settings.retrySchedule;
  const inFlight = new Set<Promise<void>>();
  let closing = false;
  // Resolved when an attempt ends: the loop, at its bound, waits for room.
  let room: (() => void) | undefined;
  // The leases that end in one turn of the event loop end in one command.
  const finish = createBatcher(
    async (items: string[]) => {
      await taker.done(items).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'webhook delivery leases not ended; they run out'));
      return items.map(() => undefined);
    },
    { maxItems: 500 },
  );

  /** What happens to a delivery once taken; never throws (a job that cannot be queued is left to the reconciler). */
  async function attempt(d: DeliveryRef): Promise<void> {
    let outcome: DeliveryOutcome;
    try {
      outcome = await deliver(d.eventId, d.endpointId, { made: 0, last: schedule.length === 0 });
    } catch (err) {
      const made = err instanceof DeliveryFailedError ? 1 : 0;
      if (made > 0 && schedule.length === 0) return; // that was its only attempt: failed, on record
      await requeue('retry', d, () => jobs.retry(d, made, retryDelay(schedule, 1, err)), err);
      return;
    }
    if (outcome === 'busy') await requeue('wait for its endpoint', d, () => jobs.queue([d]));
  }

  async function requeue(why: string, d: DeliveryRef, queue: () => Promise<void>, cause?: unknown): Promise<void> {
    try {
      await queue();
    } catch (err) {
      logger.warn(
        { event: d.eventId, endpoint: d.endpointId, why, cause: (cause as Error | undefined)?.message, err: (err as Error).message },
        'webhook delivery not queued; the reconciler queues it once overdue',
      );
    }
  }

  function start(t: Taken): void {
    const p = attempt(t.delivery)
      .then(() => finish(t.item))
      .finally(() => {
        inFlight.delete(p);
        room?.();
      });
    inFlight.add(p);
  }

  const loop = (async () => {
    let pause: number = PAUSE_MS[0];
    while (!closing) {
      if (inFlight.size >= settings.concurrency) {
        await new Promise<void>((resolve) => (room = resolve));
        room = undefined;
        continue;
      }
      let taken: Taken[];
      try {
        taken = await taker.take(Math.min(TAKE_MAX, settings.concurrency - inFlight.size), TAKE_WAIT_SECONDS);
        pause = PAUSE_MS[0];
      } catch (err) {
        if (closing) break;
        logger.warn({ err: (err as Error).message, retryInMs: pause }, 'could not take webhook deliveries; trying again');
        await new Promise((r) => setTimeout(r, pause));
        pause = Math.min(PAUSE_MS[1], pause * 2);
        continue;
      }
      for (const t of taken) start(t);
    }
  })();

  return {
    /** Takes no more; resolves when the attempts under way have ended. */
    async close(): Promise<void> {
      closing = true;
      taker.close();
      room?.();
      await loop;
      await Promise.all(inFlight);
    },
  };
}

// A webhooks worker's first attempts: it takes new deliveries from the first attempts' list
// (src/webhooks/webhook.jobs.ts), as many at once as it has room for, and attempts each at
// once. Only what must wait becomes a job of the delivery queue:
// - a failed attempt: a job for the rest of the schedule, its first retry delayed as the
//   schedule (or the receiver's Retry-After) says;
// - an endpoint with its share in flight here ('busy'): a job now, which waits its turn there;
// - an attempt that could not be made or recorded (the database away): a job, delayed as a
//   first retry would be.
// What a worker takes is leased to it, and the leases of attempts under way are extended: a
// worker killed with deliveries in hand, its leases run out and the next take of any worker
// puts them back on the list. A lease is ended only once its delivery is attempted or handed
// to a job; if the job could not be queued (Redis away), the lease runs out and the delivery
// comes back. A delivery that comes back after a failed attempt is not attempted from the list
// before its retry is due ('skipped': its job, or the reconciler, has it).
import { createBatcher } from '../shared/batch.js';
import type { Logger } from '../shared/logger.js';
import type { AttemptOf, DeliveryOutcome } from './delivery.service.js';
import { DeliveryFailedError, retryDelay, type FirstAttemptsTaker, type Taken, type WebhookJobs } from './webhook.jobs.js';
import type { DeliveryRef } from './webhook.repository.js';

/** Most deliveries taken in one command. */
const TAKE_MAX = 100;
/** How long a take waits for a delivery before it looks again (and puts back expired leases). */
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
  const inFlight = new Map<Promise<void>, string>();
  let closing = false;
  // Resolved when an attempt ends: the loop, at its bound, waits for room.
  let room: (() => void) | undefined;
  // The leases that end in one turn of the event loop end in one command.
  const finish = createBatcher(
    async (leases: string[]) => {
      await taker.done(leases).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'webhook delivery leases not ended; they run out'));
      return leases.map(() => undefined);
    },
    { maxItems: 500 },
  );
  // The leases of attempts under way are extended a third of the way into them.
  const renewal = setInterval(
    () => {
      void taker.renew([...inFlight.values()]).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'webhook delivery leases not extended'));
    },
    Math.max(100, Math.floor(taker.leaseMs / 3)),
  );
  renewal.unref();

  /** What happens to a delivery once taken: true when it is done with here (its lease may end). Never throws. */
  async function attempt(d: DeliveryRef): Promise<boolean> {
    let outcome: DeliveryOutcome;
    try {
      outcome = await deliver(d.eventId, d.endpointId, { made: 0, last: false, first: true });
    } catch (err) {
      // Failed (DeliveryFailedError: the attempt is on record), or not made or not recorded.
      const made = err instanceof DeliveryFailedError ? 1 : 0;
      return requeue('retry', d, () => jobs.retry(d, made, retryDelay(schedule, 1, err)), err);
    }
    if (outcome === 'busy') return requeue('wait for its endpoint', d, () => jobs.queue([d]));
    return true;
  }

  async function requeue(why: string, d: DeliveryRef, queue: () => Promise<void>, cause?: unknown): Promise<boolean> {
    try {
      await queue();
      return true;
    } catch (err) {
      logger.warn(
        { event: d.eventId, endpoint: d.endpointId, why, cause: (cause as Error | undefined)?.message, err: (err as Error).message },
        'webhook delivery not queued; it comes back when its lease runs out',
      );
      return false;
    }
  }

  function start(t: Taken): void {
    const p: Promise<void> = attempt(t.delivery)
      .then((handled) => (handled ? finish(t.lease) : undefined))
      .finally(() => {
        inFlight.delete(p);
        room?.();
      });
    inFlight.set(p, t.lease);
  }

  // What a close interrupts: the take or the pause under way. One per wait, dropped after it (a
  // race with one long-lived promise would keep every take's result until the close).
  let interrupt: (() => void) | undefined;
  const interruptible = <T>(wait: Promise<T>): Promise<T | undefined> =>
    new Promise<T | undefined>((resolve, reject) => {
      interrupt = () => resolve(undefined);
      wait.then(resolve, reject);
    }).finally(() => {
      interrupt = undefined;
    });

  const loop = (async () => {
    let pause: number = PAUSE_MS[0];
    while (!closing) {
      if (inFlight.size >= settings.concurrency) {
        await new Promise<void>((resolve) => (room = resolve));
        room = undefined;
        continue;
      }
      let taken: Taken[] | undefined;
      try {
        // A close ends the wait at once, whatever the connection does (a reconnecting ioredis may never settle it).
        taken = await interruptible(taker.take(Math.min(TAKE_MAX, settings.concurrency - inFlight.size), TAKE_WAIT_SECONDS));
        pause = PAUSE_MS[0];
      } catch (err) {
        if (closing) break;
        logger.warn({ err: (err as Error).message, retryInMs: pause }, 'could not take webhook deliveries; trying again');
        await interruptible(new Promise((r) => setTimeout(r, pause)));
        pause = Math.min(PAUSE_MS[1], pause * 2);
        continue;
      }
      // Taken as the close came: their leases run out and they come back for another worker.
      if (closing || !taken) break;
      for (const t of taken) start(t);
    }
  })();

  return {
    /** Takes no more; resolves when the attempts under way have ended. */
    async close(): Promise<void> {
      closing = true;
      interrupt?.();
      taker.close();
      room?.();
      await loop;
      await Promise.all(inFlight.keys());
      clearInterval(renewal);
    },
  };
}

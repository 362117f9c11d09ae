// Webhooks as the consumer of the domain events (src/shared/events): the outbox keeps events
// in webhooks' table, the relay hands each committed event to webhooks, which makes one
// delivery per endpoint of its organization and leaves them on the first attempts' list
// (webhook.jobs.ts); frequent events are taken at
// write time, their deliveries made in the writer's script. This is the event plumbing a
// process needs to emit events. The relay may have a database pool of its own (`relayRepo` over it): in
// a busy process its four statements a round would otherwise each queue behind the requests'
// transactions for a connection, which was most of the time from commit to delivery in a burst.
import type { Logger } from '../shared/logger.js';
import { withTimeout } from '../shared/time-limit.js';
import { createOutbox, type Outbox } from '../shared/events/outbox.js';
import { createRelay, type Relay } from '../shared/events/relay.js';
import { createWebhookJobs, type FirstAttemptsList, type WebhookQueue } from './webhook.jobs.js';
import { pendingDeliveries, type DeliveryRef, type WebhookRepository } from './webhook.repository.js';

/** How long a writer's deliveries may take to reach the first attempts' list before they are left to the reconciler. */
const DISPATCH_TIMEOUT_MS = 2_000;
/** How long, after a failure to queue them, a writer's deliveries are left to the reconciler. */
const DISPATCH_PAUSE_MS = 5_000;

export interface Events {
  outbox: Outbox;
  relay: Relay;
  /**
   * Queues again up to `limit` deliveries pending more than `graceMs` past their due time: their
   * job was lost (Redis restarted without its data, a failover, a flush) or never queued. Each
   * is due again `againMs` later; a delivery whose job still exists is not duplicated. Returns how many.
   */
  reconcile(opts?: { graceMs?: number; againMs?: number; limit?: number }): Promise<number>;
}

/** `relayRepo`: the webhook repository over the relay's own pool (by default `repo`). */
export function createEvents(deps: {
  repo: WebhookRepository;
  relayRepo?: WebhookRepository;
  /** Where new deliveries go. */
  firstAttempts: FirstAttemptsList;
  /** Where the reconciler queues overdue ones. */
  queue: WebhookQueue;
  retrySchedule: readonly number[];
  logger: Logger;
}): Events {
  const { repo, firstAttempts, queue, retrySchedule, logger } = deps;
  const relayRepo = deps.relayRepo ?? repo;
  const jobs = createWebhookJobs(queue, retrySchedule);
  const relay = createRelay({
    source: relayRepo,
    consume: async (events) => firstAttempts.push(await relayRepo.fanOut(events, new Date())),
    logger,
  });
  // Deliveries fanned out by their writer: queued once, within a time limit; on failure they
  // wait in the database for the reconciler (pending past their due time). After a failure,
  // none is tried for DISPATCH_PAUSE_MS: under load every batch would otherwise wait on a
  // Redis that is away, and say so, many times a second (the relay holds back the same way).
  let pausedUntil = 0;
  const dispatch = (deliveries: DeliveryRef[]): void => {
    if (Date.now() < pausedUntil) return;
    withTimeout(firstAttempts.push(deliveries), DISPATCH_TIMEOUT_MS, 'queueing webhook deliveries').catch((err: unknown) => {
      if (Date.now() >= pausedUntil) {
        logger.warn(
          { err: (err as Error).message, deliveries: deliveries.length, pauseMs: DISPATCH_PAUSE_MS },
          'webhook deliveries not queued; the reconciler queues them again',
        );
      }
      pausedUntil = Date.now() + DISPATCH_PAUSE_MS;
    });
  };
  return {
    relay,
    outbox: createOutbox({
      store: repo,
      onCommit: relay.wake,
      atWrite: {
        statements: (type, events, at) => repo.fannedOutStatements(type, events, at),
        taken: (results) => {
          const deliveries = results.flatMap((r) => pendingDeliveries(r as Parameters<typeof pendingDeliveries>[0]));
          if (deliveries.length) dispatch(deliveries);
        },
      },
    }),
    async reconcile({ graceMs = 60_000, againMs = 5 * 60_000, limit = 1000 } = {}) {
      const at = Date.now();
      const overdue = await repo.takeOverdue(new Date(at - graceMs), new Date(at + againMs), limit);
      await jobs.queue(overdue);
      if (overdue.length) logger.info({ deliveries: overdue.length }, 'queued overdue webhook deliveries again');
      return overdue.length;
    },
  };
}

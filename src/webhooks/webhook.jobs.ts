// The delivery queue: one job per delivery (event × endpoint). Job ids are fresh; BullMQ's
// deduplication on the delivery (and its replay count) keeps one job per delivery while it is
// waiting, delayed or running, so the relay and the reconciler may queue the same delivery
// twice harmlessly, and a finished job (kept for Bull Board) never blocks queueing it again.
// Retries follow WEBHOOK_RETRY_SCHEDULE, with jitter, or the receiver's Retry-After.
import type { Queue } from 'bullmq';
import { KEEP_FAILED } from '../shared/queues.js';
import type { DeliveryRef } from './webhook.repository.js';

export const WEBHOOK_QUEUE = 'webhook-deliveries';
export const DELIVER = 'deliver';
export const BACKOFF_TYPE = 'webhook-schedule';

export interface DeliveryPayload {
  eventId: string;
  endpointId: string;
}

export type WebhookQueue = Queue<DeliveryPayload, unknown, typeof DELIVER>;

export const deliveryDedupId = (d: DeliveryRef) => `wh:${d.eventId}:${d.endpointId}:${d.replays}`;

/** Completed deliveries stay an hour for Bull Board (the attempts table is the record). */
const KEEP_DONE = { age: 3600, count: 10_000 };

export function createWebhookJobs(queue: WebhookQueue, schedule: readonly number[]) {
  return {
    async queue(deliveries: readonly DeliveryRef[]): Promise<void> {
      if (!deliveries.length) return;
      await queue.addBulk(
        deliveries.map((d) => ({
          name: DELIVER,
          data: { eventId: d.eventId, endpointId: d.endpointId },
          opts: {
            deduplication: { id: deliveryDedupId(d) },
            attempts: schedule.length + 1,
            backoff: { type: BACKOFF_TYPE },
            removeOnComplete: KEEP_DONE,
            removeOnFail: KEEP_FAILED,
          },
        })),
      );
    },
  };
}

export type WebhookJobs = ReturnType<typeof createWebhookJobs>;

/** A failed attempt; `retryAfterMs` when the receiver said when to come back (429, 503). */
export class DeliveryFailedError extends Error {
  override readonly name = 'DeliveryFailedError';
  constructor(
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** Longest wait a Retry-After may ask for. */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

/**
 * By when the retry that follows attempt `attemptsMade` (1-based) should have begun: the
 * longest delay retryDelay may choose for it (the schedule's entry +20%, or the receiver's
 * Retry-After). A pending delivery past this (and a margin) has lost its job.
 */
export function latestRetryMs(schedule: readonly number[], attemptsMade: number, retryAfterMs: number | undefined): number {
  return retryDelay(schedule, attemptsMade, retryAfterMs === undefined ? undefined : new DeliveryFailedError('', retryAfterMs), () => 1);
}

/**
 * The delay before the retry that follows attempt `attemptsMade` (1-based): the receiver's
 * Retry-After when it gave one (at most a day), else the schedule's entry ±20%.
 */
export function retryDelay(schedule: readonly number[], attemptsMade: number, err: unknown, random: () => number = Math.random): number {
  if (err instanceof DeliveryFailedError && err.retryAfterMs !== undefined) return Math.min(Math.max(err.retryAfterMs, 0), MAX_RETRY_AFTER_MS);
  const base = (schedule[Math.min(attemptsMade, schedule.length) - 1] ?? schedule[schedule.length - 1] ?? 5) * 1000;
  return Math.round(base * (0.8 + 0.4 * random()));
}

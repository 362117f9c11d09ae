// How deliveries wait for a worker. A new delivery waits on a plain Redis list, the first
// attempts' list: the relay pushes a round's deliveries in one command, and a webhooks worker
// takes up to a hundred in one and attempts them at once (src/webhooks/first-attempts.ts).
// What must wait longer is a job of the delivery queue: a retry after a failed attempt (on the
// schedule), a delivery whose endpoint had its share in flight, one the reconciler queues
// again. A job per delivery cost a webhooks worker three Redis round trips and a job to parse
// and store on every delivery, most of its CPU in a burst: with creates twice as fast it fell
// behind them (docs/benchmarks.md, "first attempts").
//
// Job ids are fresh; BullMQ's deduplication on the delivery (and its replay count) keeps one
// job per delivery while it is waiting, delayed or running, so the reconciler may queue a
// delivery again harmlessly, and a finished job (kept for Bull Board) never blocks queueing it
// again. Retries follow WEBHOOK_RETRY_SCHEDULE, with jitter, or the receiver's Retry-After.
import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { KEEP_FAILED, type RedisConnection } from '../shared/queues.js';
import type { DeliveryRef } from './webhook.repository.js';

export const WEBHOOK_QUEUE = 'webhook-deliveries';
export const DELIVER = 'deliver';
export const BACKOFF_TYPE = 'webhook-schedule';

export interface DeliveryPayload {
  eventId: string;
  endpointId: string;
  /** Attempts made before the job was queued (its first one, off the first attempts' list). */
  made?: number;
}

export type WebhookQueue = Queue<DeliveryPayload, unknown, typeof DELIVER>;

export const deliveryDedupId = (d: DeliveryRef) => `wh:${d.eventId}:${d.endpointId}:${d.replays}`;

/** Completed deliveries stay an hour for Bull Board (the attempts table is the record). */
const KEEP_DONE = { age: 3600, count: 10_000 };

export function createWebhookJobs(queue: WebhookQueue, schedule: readonly number[]) {
  const job = (d: DeliveryRef, made: number, delayMs: number) => ({
    name: DELIVER as typeof DELIVER,
    data: { eventId: d.eventId, endpointId: d.endpointId, ...(made > 0 && { made }) },
    opts: {
      deduplication: { id: deliveryDedupId(d) },
      // Every attempt of the schedule, those made before the job included.
      attempts: Math.max(1, schedule.length + 1 - made),
      backoff: { type: BACKOFF_TYPE },
      ...(delayMs > 0 && { delay: delayMs }),
      removeOnComplete: KEEP_DONE,
      removeOnFail: KEEP_FAILED,
    },
  });
  return {
    /** Jobs for deliveries due now (no attempt made yet, or none recorded). */
    async queue(deliveries: readonly DeliveryRef[]): Promise<void> {
      if (!deliveries.length) return;
      await queue.addBulk(deliveries.map((d) => job(d, 0, 0)));
    },
    /** A job for the rest of a delivery's schedule: `made` attempts made already, the next due in `delayMs`. */
    async retry(delivery: DeliveryRef, made: number, delayMs: number): Promise<void> {
      const { name, data, opts } = job(delivery, made, delayMs);
      await queue.add(name, data, opts);
    },
  };
}

/** The first attempts' list of a queue prefix: beside BullMQ's keys, in the same hash slot on a cluster (a prefix's {tag}). */
export const firstAttemptsKey = (prefix: string) => `${prefix}:webhook-first-attempts`;

/** The most deliveries the list holds: past it, the oldest are dropped, and the reconciler queues them once overdue. */
export const FIRST_ATTEMPTS_MAX = 100_000;

/** A delivery on the list: `[eventId, endpointId, replays]`. */
const encode = (d: DeliveryRef) => JSON.stringify([d.eventId, d.endpointId, d.replays]);

function decode(item: string): DeliveryRef | undefined {
  try {
    const [eventId, endpointId, replays] = JSON.parse(item) as unknown[];
    if (typeof eventId === 'string' && typeof endpointId === 'string' && Number.isInteger(replays)) return { eventId, endpointId, replays: replays as number };
  } catch {
    /* not ours: dropped */
  }
  return undefined;
}

/** Where the relay leaves new deliveries (the producer's side of the first attempts' list). */
export interface FirstAttemptsList {
  push(deliveries: readonly DeliveryRef[]): Promise<void>;
  /** How many wait (for tests and metrics). */
  length(): Promise<number>;
}

export function firstAttemptsList(connection: RedisConnection, prefix: string): FirstAttemptsList {
  const key = firstAttemptsKey(prefix);
  return {
    async push(deliveries) {
      if (!deliveries.length) return;
      await connection
        .multi()
        .rpush(key, ...deliveries.map(encode))
        .ltrim(key, -FIRST_ATTEMPTS_MAX, -1)
        .exec()
        .then((results) => {
          const failed = results?.find(([err]) => err);
          if (!results || failed) throw failed?.[0] ?? new Error('the first attempts list was not written');
        });
    },
    length: () => connection.llen(key),
  };
}

/** The first attempts' leases: what workers took and have not finished (`<token>|<item>`), by when they must have. */
const leasesKey = (prefix: string) => `${firstAttemptsKey(prefix)}:leased`;

/**
 * One take, atomic: first puts back at the head of the list what was leased until before now
 * and never finished (its worker died), then takes up to ARGV[1] items and leases each for
 * ARGV[2] ms to the take's token ARGV[3]. Redis's clock, not the workers': theirs may differ.
 */
const TAKE_SCRIPT = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1000)
for _, member in ipairs(expired) do
  redis.call('ZREM', KEYS[2], member)
  local bar = string.find(member, '|', 1, true)
  if bar then redis.call('LPUSH', KEYS[1], string.sub(member, bar + 1)) end
end
local items = redis.call('LPOP', KEYS[1], ARGV[1])
if not items then return {} end
for _, item in ipairs(items) do redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[3] .. '|' .. item) end
return items`;

/** Extends the leases ARGV[2..] that still exist (not put back meanwhile) to ARGV[1] ms from now. */
const RENEW_SCRIPT = `
local t = redis.call('TIME')
local until_ = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', until_, ARGV[i]) end
return 0`;

/** A delivery taken from the list, and its lease (what `done` and `renew` are given). */
export interface Taken {
  delivery: DeliveryRef;
  lease: string;
}

/**
 * The worker's side. `take` takes up to `max` deliveries and leases them for `leaseMs` (one
 * script: nothing is ever taken without its lease); when there are none, it waits up to
 * `waitSeconds` for some on `blocking`, a connection of its own, with a BLMOVE of the list onto
 * itself, which takes nothing. A lease not ended by `done` nor extended by `renew` runs out,
 * and the next take of any worker puts its delivery back. Copies of one delivery taken
 * together come once. `close()` ends the blocking connection.
 */
export function firstAttemptsTaker(connections: { blocking: RedisConnection; regular: RedisConnection }, prefix: string, leaseMs: number) {
  const list = firstAttemptsKey(prefix);
  const leases = leasesKey(prefix);
  const { blocking, regular } = connections;
  const takeNow = async (max: number): Promise<Taken[]> => {
    const token = randomUUID();
    const items = (await blocking.eval(TAKE_SCRIPT, 2, list, leases, max, leaseMs, token)) as string[];
    const seen = new Set<string>();
    const dropped: string[] = [];
    const taken = items.flatMap((item) => {
      const delivery = decode(item);
      if (!delivery) dropped.push(`${token}|${item}`);
      if (!delivery || seen.has(item)) return [];
      seen.add(item);
      return [{ delivery, lease: `${token}|${item}` }];
    });
    // What is not a delivery is dropped for good: its lease ends now, or it would come back.
    if (dropped.length) await regular.zrem(leases, ...dropped);
    return taken;
  };
  return {
    leaseMs,
    async take(max: number, waitSeconds: number): Promise<Taken[]> {
      const taken = await takeNow(max);
      if (taken.length) return taken;
      // Expired leases go back at this take's end too: an idle worker still recovers them.
      await blocking.call('BLMOVE', list, list, 'RIGHT', 'RIGHT', waitSeconds);
      return takeNow(max);
    },
    /** The leases end: their deliveries were attempted, or handed to a job. */
    async done(leased: readonly string[]): Promise<void> {
      if (leased.length) await regular.zrem(leases, ...leased);
    },
    /** The leases last `leaseMs` more (attempts still under way). */
    async renew(leased: readonly string[]): Promise<void> {
      if (leased.length) await regular.eval(RENEW_SCRIPT, 1, leases, leaseMs, ...leased);
    },
    close(): void {
      blocking.disconnect();
    },
  };
}

export type FirstAttemptsTaker = ReturnType<typeof firstAttemptsTaker>;

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

// Repeatable jobs (BullMQ job schedulers) that must never stop: the notarization cycle, the
// sweeper, the reconciler, the purges. They live in Redis only, so a Redis that restarts
// without its data, a failover or a FLUSHALL loses them, and with them every later run. Each
// worker process upserts its schedules at start and then checks every KEEP_EVERY_MS that each
// one still exists with its next job; a missing one is upserted again (idempotent across
// processes: fixed scheduler ids).
import type { JobsOptions, Queue } from 'bullmq';
import type { Logger } from './logger.js';

export interface Schedule {
  queue: Queue;
  /** The scheduler's id: fixed, so that every process shares one schedule. */
  id: string;
  everyMs: number;
  name: string;
  opts?: JobsOptions;
}

/** How often a worker process checks that its schedules still exist. */
export const KEEP_EVERY_MS = 20_000;

async function upsert(s: Schedule): Promise<void> {
  await s.queue.upsertJobScheduler(s.id, { every: s.everyMs }, { name: s.name, data: {}, ...(s.opts && { opts: s.opts }) });
}

/** Whether the schedule is there with its next run queued (a running or finished one counts: it queues the next). */
async function present(s: Schedule): Promise<boolean> {
  const scheduler = await s.queue.getJobScheduler(s.id);
  if (!scheduler?.next) return false;
  return (await s.queue.getJobState(`repeat:${s.id}:${scheduler.next}`)) !== 'unknown';
}

/**
 * Upserts `schedules` now, then every `everyMs` upserts again any that Redis lost. A failed
 * check (Redis away) is logged and tried at the next tick.
 */
export async function keepSchedules(
  schedules: readonly Schedule[],
  logger: Logger,
  everyMs = KEEP_EVERY_MS,
): Promise<{ check(): Promise<number>; stop(): void }> {
  for (const s of schedules) await upsert(s);
  let running = false;
  async function check(): Promise<number> {
    let restored = 0;
    for (const s of schedules) {
      if (await present(s)) continue;
      await upsert(s);
      restored += 1;
      logger.warn({ queue: s.queue.name, schedule: s.id }, 'a repeatable job was missing from Redis; scheduled again');
    }
    return restored;
  }
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    check()
      .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'could not check the repeatable jobs'))
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref();
  return { check, stop: () => clearInterval(timer) };
}

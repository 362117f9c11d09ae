// The notarization queue: one repeatable job, `notarize`, every NOTARIZATION_INTERVAL_MS (a
// fixed scheduler id, so that several worker processes share one schedule; kept by
// keepSchedules, so that a Redis that lost it gets it back within a minute). Each run is one
// cycle of the notarization service; a run that finds another process's cycle under way does
// nothing (the database lock), and a failed run is retried by the next one (and from Bull Board).
import type { Queue } from 'bullmq';
import { KEEP_FAILED } from '../shared/queues.js';
import type { Schedule } from '../shared/schedules.js';

export const NOTARIZATION_QUEUE = 'notarization';
export const NotarizationJob = { notarize: 'notarize' } as const;

/** Payload of the notarize job: none, the job's name says it all. */
export type NotarizationPayload = Record<string, never>;
export type NotarizationQueue = Queue<NotarizationPayload>;

export function notarizationSchedule(queue: NotarizationQueue, everyMs: number): Schedule {
  // A stuck batch fails every run: the last thousand failures are plenty to read.
  return {
    queue,
    id: NotarizationJob.notarize,
    everyMs,
    name: NotarizationJob.notarize,
    opts: { removeOnComplete: 100, removeOnFail: { ...KEEP_FAILED, count: 1000 } },
  };
}

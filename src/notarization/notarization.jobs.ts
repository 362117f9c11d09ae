// The notarization queue: one repeatable job, `notarize`, every NOTARIZATION_INTERVAL_MS (a
// fixed scheduler id, so that several worker processes share one schedule). Each run is one
// cycle of the notarization service; a run that finds another process's cycle under way does
// nothing (the database lock), and a failed run is retried by the next one (and from Bull Board).
import type { Queue } from 'bullmq';
import { KEEP_FAILED } from '../shared/queues.js';

export const NOTARIZATION_QUEUE = 'notarization';
export const NotarizationJob = { notarize: 'notarize' } as const;

/** Payload of the notarize job: none, the job's name says it all. */
export type NotarizationPayload = Record<string, never>;
export type NotarizationQueue = Queue<NotarizationPayload>;

export async function scheduleNotarization(queue: NotarizationQueue, everyMs: number): Promise<void> {
  await queue.upsertJobScheduler(NotarizationJob.notarize, { every: everyMs }, {
    // A stuck batch fails every run: the last thousand failures are plenty to read.
    name: NotarizationJob.notarize, data: {}, opts: { removeOnComplete: 100, removeOnFail: { ...KEEP_FAILED, count: 1000 } },
  });
}

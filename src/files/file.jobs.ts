// The uploads pipeline's queues, job payloads and the functions that enqueue. Every job gets a
// fresh id; duplicates are prevented by BullMQ's deduplication instead, which holds only while
// a job is waiting, delayed or running: one upload watch per file, one pending hint per file,
// one scan per object version, one signature check per file. A job that completed or failed
// (kept a week for Bull Board) never stands in the way of queueing the same work again, so
// every recovery path (the sweeper, a status read's hint, a store event) really re-queues.
// Payloads carry ids only, never bytes.
import type { JobsOptions, Queue } from 'bullmq';
import { KEEP_FAILED } from '../shared/queues.js';

export const FileQueue = { checks: 'upload-checks', scans: 'scans', signatures: 'signatures' } as const;

export const FileJob = { watch: 'watch-upload', hint: 'upload-hint', scan: 'scan', verify: 'verify-signature' } as const;
export type CheckJobName = typeof FileJob.watch | typeof FileJob.hint;

/** Look for the upload of `uuid`: `watch` keeps polling with backoff, `hint` looks once. */
export interface CheckPayload {
  uuid: string;
}
/**
 * Scan this version of the upload of `uuid`. (`etag` instead of `versionId`: a job queued by the
 * release before versions were pinned, handled as a hint.)
 */
export interface ScanPayload {
  uuid: string;
  versionId?: string;
  etag?: string;
}
/** Check the .p7m signature of the scanned, clean file `uuid`. */
export interface SignaturePayload {
  uuid: string;
}

export interface FileQueues {
  checks: Queue<CheckPayload, unknown, CheckJobName>;
  scans: Queue<ScanPayload, unknown, typeof FileJob.scan>;
  signatures: Queue<SignaturePayload, unknown, typeof FileJob.verify>;
}

export interface FileJobSettings {
  scanAttempts: number;
  /** First retry delay of a scan, and of a check; doubles each attempt. */
  scanBackoffMs?: number;
}

/**
 * The sweeper makes sure of the job of every file In Progress this often (a lost job, a Redis
 * flush, a watch that could not be queued when the URL was issued, or whose attempts ran out).
 */
export const SWEEP_IDLE_MS = 60_000;

/** Scans and signature checks stay a day for Bull Board; completed checks leave no trace. */
const KEEP_DONE = { age: 24 * 3600, count: 10_000 };

/** The deduplication ids: one job per subject while it is pending or running. */
export const FileDedup = {
  watch: (uuid: string) => `watch:${uuid}`,
  hint: (uuid: string) => `hint:${uuid}`,
  lastLook: (uuid: string) => `last-look:${uuid}`,
  scan: (uuid: string, versionId: string) => `scan:${uuid}:${versionId}`,
  verify: (uuid: string) => `verify:${uuid}`,
};

export function createFileJobs(queues: FileQueues, settings: FileJobSettings) {
  // A hint that arrives while the file's hint is running is kept and runs after it (keepLastIfActive):
  // the running look may have just missed the upload that the new hint announces.
  const checkOpts = (dedupId: string, delay: number, keepLastIfActive = false): JobsOptions => ({
    deduplication: { id: dedupId, ...(keepLastIfActive && { keepLastIfActive }) },
    delay,
    removeOnComplete: true,
    removeOnFail: KEEP_FAILED,
    attempts: 5,
    backoff: { type: 'exponential', delay: settings.scanBackoffMs ?? 2000 },
  });
  return {
    /** Starts (or keeps) the polling watch over an issued key: a no-op while one is pending. */
    async watchUpload(uuid: string, delayMs = 0): Promise<void> {
      await queues.checks.add(FileJob.watch, { uuid }, checkOpts(FileDedup.watch(uuid), delayMs));
    },
    /** watchUpload for many files at once, in one round trip. */
    async watchUploads(uuids: readonly string[]): Promise<void> {
      if (uuids.length) await queues.checks.addBulk(uuids.map((uuid) => ({ name: FileJob.watch, data: { uuid }, opts: checkOpts(FileDedup.watch(uuid), 0) })));
    },
    /** A hint that the upload may be there (a store event, a status read): one pending per file. */
    async hint(uuid: string): Promise<void> {
      await queues.checks.add(FileJob.hint, { uuid }, checkOpts(FileDedup.hint(uuid), 0, true));
    },
    /** One last look at the upload location once the URL can no longer be used: a replayed upload is discarded. */
    async lastLook(uuid: string, delayMs: number): Promise<void> {
      await queues.checks.add(FileJob.hint, { uuid }, checkOpts(FileDedup.lastLook(uuid), Math.max(0, delayMs)));
    },
    /** Queues the scan of one object version; a no-op while that version's scan is pending or running. */
    async scan(uuid: string, versionId: string): Promise<void> {
      await queues.scans.add(
        FileJob.scan,
        { uuid, versionId },
        {
          deduplication: { id: FileDedup.scan(uuid, versionId) },
          attempts: settings.scanAttempts,
          backoff: { type: 'exponential', delay: settings.scanBackoffMs ?? 2000 },
          removeOnComplete: KEEP_DONE,
          removeOnFail: KEEP_FAILED,
        },
      );
    },
    async verifySignature(uuid: string): Promise<void> {
      await queues.signatures.add(
        FileJob.verify,
        { uuid },
        {
          deduplication: { id: FileDedup.verify(uuid) },
          attempts: 5,
          backoff: { type: 'exponential', delay: 2000 },
          removeOnComplete: KEEP_DONE,
          removeOnFail: KEEP_FAILED,
        },
      );
    },
  };
}

export type FileJobs = ReturnType<typeof createFileJobs>;

// The uploads pipeline's queues, job payloads and the functions that enqueue. Job ids are
// deterministic where duplicates matter: one upload watch per file, one pending hint per
// file, one scan per object version (uuid + ETag), one signature check per file. Payloads
// carry ids only, never bytes.
import type { JobsOptions, Queue } from 'bullmq';
import { KEEP_FAILED } from '../shared/queues.js';

export const FileQueue = { checks: 'upload-checks', scans: 'scans', signatures: 'signatures' } as const;

export const FileJob = { watch: 'watch-upload', hint: 'upload-hint', scan: 'scan', verify: 'verify-signature' } as const;
export type CheckJobName = typeof FileJob.watch | typeof FileJob.hint;

/** Look for the upload of `uuid`: `watch` keeps polling with backoff, `hint` looks once. */
export interface CheckPayload { uuid: string }
/** Scan this version (ETag, unquoted) of the upload of `uuid`. */
export interface ScanPayload { uuid: string; etag: string }
/** Check the .p7m signature of the scanned, clean file `uuid`. */
export interface SignaturePayload { uuid: string }

export interface FileQueues {
  checks: Queue<CheckPayload, unknown, CheckJobName>;
  scans: Queue<ScanPayload, unknown, typeof FileJob.scan>;
  signatures: Queue<SignaturePayload, unknown, typeof FileJob.verify>;
}

export interface FileJobSettings {
  scanAttempts: number;
  /** First retry delay of a scan; doubles each attempt. */
  scanBackoffMs?: number;
}

/** Completed checks leave no trace (their ids must be free for the next watch); scans and signature checks stay a day for Bull Board, failures a week. */
const KEEP_DONE = { age: 24 * 3600, count: 10_000 };

export type ScanJobState = 'queued' | 'failed' | 'done';

export function createFileJobs(queues: FileQueues, settings: FileJobSettings) {
  const checkOpts = (jobId: string, delay: number): JobsOptions => ({ jobId, delay, removeOnComplete: true, removeOnFail: KEEP_FAILED, attempts: 5, backoff: { type: 'exponential', delay: 1000 } });
  return {
    /** Starts (or keeps) the polling watch over an issued key: a no-op while one is pending. */
    async watchUpload(uuid: string, delayMs = 0): Promise<void> {
      await queues.checks.add(FileJob.watch, { uuid }, checkOpts(`watch-${uuid}`, delayMs));
    },
    /** watchUpload for many files at once, in one round trip. */
    async watchUploads(uuids: readonly string[]): Promise<void> {
      if (uuids.length) await queues.checks.addBulk(uuids.map((uuid) => ({ name: FileJob.watch, data: { uuid }, opts: checkOpts(`watch-${uuid}`, 0) })));
    },
    /** A hint that the upload may be there (a store event, a status read): one pending per file. */
    async hint(uuid: string): Promise<void> {
      await queues.checks.add(FileJob.hint, { uuid }, checkOpts(`hint-${uuid}`, 0));
    },
    /** One last look at the upload location once the URL can no longer be used: a replayed upload is discarded. */
    async lastLook(uuid: string, delayMs: number): Promise<void> {
      await queues.checks.add(FileJob.hint, { uuid }, checkOpts(`last-look-${uuid}`, Math.max(0, delayMs)));
    },
    /**
     * Queues the scan of one object version, once: the same version hinted again finds its job.
     * Says whether that job is still to run, failed (its retries ran out) or done.
     */
    async scan(uuid: string, etag: string): Promise<ScanJobState> {
      const jobId = `scan-${uuid}-${etag}`;
      const state = await queues.scans.getJobState(jobId);
      if (state !== 'unknown') return state === 'failed' ? 'failed' : state === 'completed' ? 'done' : 'queued';
      // Adding an id that exists is a no-op, so a concurrent add of the same version is harmless.
      await queues.scans.add(FileJob.scan, { uuid, etag }, {
        jobId, attempts: settings.scanAttempts, backoff: { type: 'exponential', delay: settings.scanBackoffMs ?? 2000 },
        removeOnComplete: KEEP_DONE, removeOnFail: KEEP_FAILED,
      });
      return 'queued';
    },
    async verifySignature(uuid: string): Promise<void> {
      await queues.signatures.add(FileJob.verify, { uuid }, {
        jobId: `verify-${uuid}`, attempts: 5, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: KEEP_DONE, removeOnFail: KEEP_FAILED,
      });
    },
  };
}

export type FileJobs = ReturnType<typeof createFileJobs>;

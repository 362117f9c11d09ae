// From an issued key to a verdict. Whatever noticed an upload (a store event, the polling
// watch, a status read, the sweeper), `advance` confirms it with HeadObject and queues one scan
// per object version. The bucket is versioned: `scan` streams exactly that version into clamd
// while hashing it and records the verdict with its VersionId; that version is the document
// from then on (the signature check, the checksum, notarization and every later read name it).
// Every other version of the key (a replay of the form, before or after the verdict) is never
// judged as this document, and is deleted: at the store's event for it, at the last look after
// the URL's expiry and grace, when its own scan finds the verdict taken; an Infected file's
// bytes at once. No decision rests on an ETag.
import pLimit from 'p-limit';
import type { Logger } from '../shared/logger.js';
import { isMissing, type Storage } from '../shared/storage.js';
import type { Antivirus } from './antivirus.js';
import type { FileRepository, FileRecord } from './file.repository.js';
import type { FileJobs } from './file.jobs.js';

export interface ScanSettings {
  /** After the upload URL expires, how long a started upload may still arrive. */
  graceMs: number;
  /** Attempts of one scan job (SCAN_ATTEMPTS); a file gets at most three times as many scan starts. */
  scanAttempts: number;
  /** The polling watch backs off up to this interval. */
  pollMaxMs: number;
  /**
   * Streams sent to clamd at once by this process (clamd spends about a core on each). Scan
   * jobs can outnumber them: the copy, the database and the store's latency then overlap
   * with other files' streams, and clamd is never left idle.
   */
  clamdStreams?: number;
}

export type AdvanceOutcome = { state: 'unknown' | 'judged' | 'scan-queued' | 'error' | 'expired' } | { state: 'waiting'; retryInMs?: number };

/** How a scan job ended: a verdict, or why there is none (`gone`: the version vanished, and the file was looked at again). */
export type ScanOutcome = 'unknown' | 'already-judged' | 'gone' | 'gave-up' | 'Clean' | 'Infected' | 'In Progress';

export const NOT_UPLOADED = 'No file was uploaded before the upload URL expired.';
/** The reasons a file shows; what went wrong in detail goes to the log, never to the client. */
export const SCAN_FAILED = 'The scan could not complete after its retries.';
export const SCAN_INTERRUPTED = 'The scan could not complete: it was interrupted too many times.';
export const NOT_VERSIONED = 'the bucket keeps no object versions: run the release (cli migrate), which turns versioning on';

/** Whether the scan recorded a verdict for the file. */
export const isJudged = (file: Pick<FileRecord, 'scannedAt'>) => file.scannedAt !== null;

/** The next poll of an upload not seen yet: about a fifth of its age, between 0.5 s and `maxMs`. */
export function nextPollDelay(ageMs: number, maxMs: number): number {
  return Math.round(Math.min(maxMs, Math.max(500, ageMs * 0.2)));
}

export function createScanService(deps: {
  repo: FileRepository;
  storage: Storage;
  antivirus: Antivirus;
  jobs: FileJobs;
  settings: ScanSettings;
  logger: Logger;
  now?: () => Date;
}) {
  const { repo, storage, antivirus, jobs, settings, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const clamdSlot = pLimit(settings.clamdStreams ?? 2);
  // Starts of restarted scan jobs (retried, or taken over after their worker died): a file whose
  // scans keep dying gets at most three times a job's attempts, then Error.
  const maxScanStarts = 3 * settings.scanAttempts;

  /**
   * Deletes every version of a judged file's key but its document: replays of the form. An
   * Infected file's judged bytes are kept in quarantine (never read again, never served) until
   * the retention job deletes them, INFECTED_RETENTION_DAYS after the verdict (docs/operations.md
   * "Records"). (A file judged before versions were pinned keeps its document under its own
   * stored key: nothing at the upload key is kept.)
   */
  async function pruneVersions(file: FileRecord): Promise<void> {
    const keep = file.storedKey === file.key || file.status === 'Infected' ? file.versionId : null;
    for (const versionId of await storage.versions(file.key)) {
      if (versionId === keep) continue;
      await storage.removeVersion(file.key, versionId);
      logger.info({ file: file.uuid, versionId }, keep ? 'deleted an upload that is not the judged document' : 'deleted bytes that are not kept');
    }
  }

  return {
    /**
     * Looks for the upload of `uuid` and moves the file on: queues the scan of the version
     * found, resumes a lost signature check, or (`watch` only) asks to be called again later,
     * until the URL's expiry plus the grace period, when the file becomes Error.
     */
    async advance(uuid: string, mode: 'watch' | 'hint'): Promise<AdvanceOutcome> {
      const file = await repo.get(uuid);
      if (!file) return { state: 'unknown' };
      if (isJudged(file)) {
        if (file.status === 'In Progress') await jobs.verifySignature(uuid);
        else await pruneVersions(file);
        return { state: 'judged' };
      }
      if (file.status !== 'In Progress' && file.status !== 'Error') return { state: 'judged' };

      const version = await storage.head(file.key);
      if (version) {
        await jobs.scan(uuid, version.versionId);
        return { state: 'scan-queued' };
      }
      if (file.status === 'Error') return { state: 'error' };

      const at = now().getTime();
      const deadline = file.expiresAt.getTime() + settings.graceMs;
      if (at >= deadline) {
        await repo.markError(uuid, NOT_UPLOADED, now());
        return { state: 'expired' };
      }
      if (mode === 'hint') return { state: 'waiting' };
      const delay = nextPollDelay(at - file.createdAt.getTime(), settings.pollMaxMs);
      return { state: 'waiting', retryInMs: Math.min(delay, deadline - at) };
    },

    /**
     * Scans one object version of the upload of `uuid`. Throws when the scan could not complete
     * (clamd or the store unreachable): the job retries; its last attempt records Error first.
     * `attempt.restarted`: the job ran before (a retry, or taken over from a worker that died):
     * only then is the start counted (one statement less on the path of almost every file).
     */
    async scan(uuid: string, versionId: string, attempt: { last: boolean; restarted: boolean }): Promise<ScanOutcome> {
      const lastAttempt = attempt.last;
      const file = await repo.get(uuid);
      if (!file) return 'unknown';
      if (isJudged(file)) {
        await pruneVersions(file);
        return 'already-judged';
      }
      if (file.status !== 'In Progress' && file.status !== 'Error') return 'already-judged';
      if (attempt.restarted && !(await repo.scanStarted(uuid, maxScanStarts))) {
        await repo.markError(uuid, SCAN_INTERRUPTED, now());
        return 'gave-up';
      }

      try {
        const engine = await antivirus.version();
        const verdict = await clamdSlot(async () => antivirus.scan(await storage.read(file.key, versionId)));
        const status = verdict.infected ? 'Infected' : file.isDocumentPublic ? 'In Progress' : 'Clean';
        const storedKey = verdict.infected ? null : file.key;
        const at = now();
        const recorded = await repo.recordScan(uuid, {
          versionId,
          storedKey,
          size: verdict.bytes,
          checksum: verdict.sha256 ?? null,
          threat: verdict.infected ? verdict.threat : null,
          engine,
          status,
          at,
        });
        if (!recorded) {
          // Another version's verdict was recorded first: that one is the document, this one goes.
          const judged = await repo.get(uuid);
          if (judged && isJudged(judged)) await pruneVersions(judged);
          return 'already-judged';
        }
        // An Infected file's other versions go at once (its judged bytes stay in quarantine until
        // the retention job). Other versions of a clean file's key (a replay of the form) are
        // deleted by the last look below, or as soon as the store's event for them comes: never
        // read as the document, and no request on the path of every file.
        if (verdict.infected) await pruneVersions({ ...file, status: 'Infected', versionId, storedKey, scannedAt: at });
        logger.info(
          { file: uuid, versionId, status: verdict.infected ? 'Infected' : 'Clean', threat: verdict.infected ? verdict.threat : undefined, engine },
          'file scanned',
        );
        if (status === 'In Progress') await jobs.verifySignature(uuid);
        await jobs.lastLook(uuid, file.expiresAt.getTime() + settings.graceMs - now().getTime());
        return status;
      } catch (err) {
        if (isMissing(err)) {
          // This version is gone before it could be read: whatever the key holds now gets its own scan.
          await jobs.hint(uuid);
          return 'gone';
        }
        logger.warn({ file: uuid, versionId, err: (err as Error).message, lastAttempt }, 'scan attempt failed');
        if (lastAttempt) await repo.markError(uuid, SCAN_FAILED, now());
        throw err;
      }
    },

    /**
     * Makes sure every file In Progress has its job (a lost job, a Redis flush, a watch that
     * could not be queued when the URL was issued, or whose attempts ran out while the store or
     * the database was away): up to `limit` files whose check is due, longest due first, each
     * due again `idleMs` later, so that every stalled file gets its turn. The watch finds
     * whatever the file needs (a scan, a signature check). Idempotent: a pending or running
     * job of the same file is not duplicated.
     */
    async sweep(idleMs: number, limit = 1000): Promise<number> {
      const at = now();
      const uuids = await repo.takeDue(at, new Date(at.getTime() + idleMs), limit);
      await jobs.watchUploads(uuids);
      return uuids.length;
    },
  };
}

export type ScanService = ReturnType<typeof createScanService>;

// From an issued key to a verdict. Whatever noticed an upload (a store event, the polling
// watch, a status read, the sweeper), `advance` confirms it with HeadObject and queues one scan
// per object version. `scan` streams that version into clamd while hashing it, copies the
// judged version (on condition that its ETag is unchanged) to a place only the service writes,
// and records the verdict; the upload location is then emptied, and anything uploaded there
// later is discarded without changing the verdict.
import pLimit from 'p-limit';
import type { Logger } from '../shared/logger.js';
import { isChanged, isMissing, type Storage } from '../shared/storage.js';
import type { Antivirus } from './antivirus.js';
import type { FileRepository, FileRecord } from './file.repository.js';
import type { FileJobs } from './file.jobs.js';

export interface ScanSettings {
  /** After the upload URL expires, how long a started upload may still arrive. */
  graceMs: number;
  /** The polling watch backs off up to this interval. */
  pollMaxMs: number;
  /**
   * Streams sent to clamd at once by this process (clamd spends about a core on each). Scan
   * jobs can outnumber them: the copy, the database and the store's latency then overlap
   * with other files' streams, and clamd is never left idle.
   */
  clamdStreams?: number;
}

/** Where the judged copy of an upload lives: a prefix no presigned POST can write (those bind flat `<uuid>.<ext>` keys). */
export function storedKeyOf(file: Pick<FileRecord, 'key'>, etag: string): string {
  return `documents/${etag}/${file.key}`;
}

export type AdvanceOutcome =
  | { state: 'unknown' | 'judged' | 'scan-queued' | 'scan-failed' | 'error' | 'expired' }
  | { state: 'waiting'; retryInMs?: number };

export type ScanOutcome = 'unknown' | 'already-judged' | 'gone' | 'superseded' | 'Clean' | 'Infected' | 'In Progress';

export const NOT_UPLOADED = 'No file was uploaded before the upload URL expired.';

/** The next poll of an upload not seen yet: about a fifth of its age, between 0.5 s and `maxMs`. */
export function nextPollDelay(ageMs: number, maxMs: number): number {
  return Math.round(Math.min(maxMs, Math.max(500, ageMs * 0.2)));
}

export function createScanService(deps: {
  repo: FileRepository; storage: Storage; antivirus: Antivirus; jobs: FileJobs; settings: ScanSettings; logger: Logger; now?: () => Date;
}) {
  const { repo, storage, antivirus, jobs, settings, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const clamdSlot = pLimit(settings.clamdStreams ?? 2);

  /** Empties the upload location of a file that has its verdict: a replayed upload changes nothing. */
  async function discardLateUpload(file: FileRecord): Promise<void> {
    if (await storage.head(file.key)) {
      await storage.remove(file.key);
      logger.info({ file: file.uuid }, 'discarded an upload that arrived after the verdict');
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
      if (file.etag) {
        if (file.status === 'In Progress') await jobs.verifySignature(uuid);
        else await discardLateUpload(file);
        return { state: 'judged' };
      }
      if (file.status !== 'In Progress' && file.status !== 'Error') return { state: 'judged' };

      const version = await storage.head(file.key);
      if (version) {
        const job = await jobs.scan(uuid, version.etag);
        if (job === 'failed') {
          // The version's scan ran out of retries (or its worker died too often): terminal.
          if (file.status === 'In Progress') await repo.markError(uuid, 'The scan could not complete after its retries.', now());
          return { state: 'scan-failed' };
        }
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
     * (clamd or the store unreachable): the job retries; `lastAttempt` records Error first.
     */
    async scan(uuid: string, etag: string, lastAttempt: boolean): Promise<ScanOutcome> {
      const file = await repo.get(uuid);
      if (!file) return 'unknown';
      if (file.etag) {
        await discardLateUpload(file);
        return 'already-judged';
      }
      if (file.status !== 'In Progress' && file.status !== 'Error') return 'already-judged';

      try {
        const engine = await antivirus.version();
        const verdict = await clamdSlot(async () => antivirus.scan(await storage.read(file.key, etag)));
        let storedKey: string | null = null;
        if (!verdict.infected) {
          storedKey = storedKeyOf(file, etag);
          if (!(await storage.copyIfUnchanged(file.key, storedKey, etag))) {
            // Replaced (or removed) while it was scanned: the new version gets its own scan.
            await jobs.hint(uuid);
            return 'superseded';
          }
        }
        const status = verdict.infected ? 'Infected' : file.isDocumentPublic ? 'In Progress' : 'Clean';
        const recorded = await repo.recordScan(uuid, {
          etag, storedKey, size: verdict.bytes, checksum: verdict.sha256 ?? null, threat: verdict.infected ? verdict.threat : null,
          engine, status, at: now(),
        });
        if (!recorded) {
          // Another version won the race for the verdict: this copy is not the document.
          if (storedKey) await storage.remove(storedKey);
          return 'already-judged';
        }
        logger.info({ file: uuid, status: verdict.infected ? 'Infected' : 'Clean', threat: verdict.infected ? verdict.threat : undefined, engine }, 'file scanned');
        if (status === 'In Progress') await jobs.verifySignature(uuid);
        // The upload location is emptied; a replay of the form until it expires is discarded by
        // the store's event, or by a last look after the URL's expiry and grace.
        await storage.remove(file.key);
        await jobs.lastLook(uuid, file.expiresAt.getTime() + settings.graceMs - now().getTime());
        return status;
      } catch (err) {
        if (isMissing(err) || isChanged(err)) {
          // This version is gone or replaced before the scan began; a newer one gets its own scan.
          await jobs.hint(uuid);
          return isMissing(err) ? 'gone' : 'superseded';
        }
        if (lastAttempt) await repo.markError(uuid, `The scan could not complete after its retries: ${(err as Error).message}`, now());
        throw err;
      }
    },

    /**
     * Restarts the watch of files In Progress that have not moved for `idleMs` (a lost job, a
     * Redis flush, an enqueue that failed when the URL was issued). Idempotent: a pending watch
     * or scan of the same file is not duplicated.
     */
    async sweep(idleMs: number, limit = 1000): Promise<number> {
      const uuids = await repo.stalled(new Date(now().getTime() - idleMs), limit);
      await jobs.watchUploads(uuids);
      return uuids.length;
    },
  };
}

export type ScanService = ReturnType<typeof createScanService>;

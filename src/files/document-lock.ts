// Documents kept for the legal keeping period (docs/operations.md "Records", issue 17): every document
// version attached to a guarantee or an amendment, once judged fit (Clean or Signed), is put
// under S3 Object Lock in COMPLIANCE mode until DOCUMENT_RETENTION_YEARS after it was attached
// or judged, whichever is later. In COMPLIANCE mode no one, the bucket's owner and this
// service's own credentials included, can delete the version or shorten its date before then.
// - A sweep of the maintenance worker (DOCUMENT_LOCK_EVERY_MS) takes the attached documents not
//   yet kept (files.attached_at, written with the attachment; files.retained_until, null until
//   the store has said yes), asks the store to keep each version, then records the date, only
//   if the document was not attached again meanwhile (the date would be the earlier one: the
//   next sweep asks for the later). Asking again with the same or a later date is harmless
//   (COMPLIANCE only extends), so a crash between the two steps costs nothing.
// - A document the store did not keep is tried again on its own schedule (files.lock_retry_at,
//   LOCK_RETRY's backoff): the sweep reads the documents due, by keyset, and one that failed is
//   behind the others until its time, so that documents the store keeps refusing never stand
//   in the way of newer ones, however many.
// - Versions judged Infected or Error are not kept: Infected bytes are deleted (docs/operations.md's
//   retention table), and a file in Error is kept once judged after all.
// - On a bucket without Object Lock (created without it, or a store that has none) nothing is
//   locked: the sweep says so once, the web process at boot and in /readyz, and docs/operations.md says
//   what is then not guaranteed.
import { S3ServiceException } from '@aws-sdk/client-s3';
import type { Logger } from '../shared/logger.js';
import { withTimeout } from '../shared/time-limit.js';
import type { Storage } from '../shared/storage.js';
import type { DocumentToRetain, FileRepository } from './file.repository.js';

/** Documents per page of the sweep. */
const PAGE = 100;
/** Documents per sweep at most (the first one after a release has every attached document to do): the rest at the next. */
export const MAX_PER_SWEEP = 1000;
/** When a document the store did not keep is tried again: `firstMs` after the failure, doubling with each failure in a row, at most `maxMs`. */
export const LOCK_RETRY = { firstMs: 10 * 60_000, maxMs: 24 * 3600_000 };
/** How far back a process's first sweep looks for attachments without their record (then: since its last sweep, with OVERLAP_MS). */
export const LOOKBACK_MS = 24 * 3600_000;
const OVERLAP_MS = 10 * 60_000;
/** The look back's slices: each one query of the attachments in it. */
const SLICE_MS = 10 * 60_000;

/** When a document is tried again after its `failures`-th failure in a row at `at`. */
export function nextLockTry(failures: number, at: Date, schedule: { firstMs: number; maxMs: number } = LOCK_RETRY): Date {
  const delay = Math.min(schedule.maxMs, schedule.firstMs * 2 ** Math.min(Math.max(failures, 1) - 1, 30));
  return new Date(at.getTime() + delay);
}

/** The end of a document's keeping period: `years` after the later of its attachment and its verdict. */
export function retainUntil(doc: Pick<DocumentToRetain, 'attachedAt' | 'judgedAt'>, years: number): Date {
  const start = doc.judgedAt && doc.judgedAt > doc.attachedAt ? doc.judgedAt : doc.attachedAt;
  const until = new Date(start);
  until.setUTCFullYear(until.getUTCFullYear() + years);
  return until;
}

/** The document's own trouble, as a refusal (4xx) is: not a sign of the store's absence. */
class NoVersionToKeep extends Error {}

export interface LockRun {
  /** Whether the bucket has Object Lock; nothing is locked when it has not. */
  objectLock: boolean;
  locked: number;
  failed: number;
}

export function createDocumentLock(deps: {
  repo: Pick<FileRepository, 'toRetain' | 'markRetained' | 'lockFailed' | 'recordAttachment'>;
  storage: Pick<Storage, 'objectLock' | 'retain' | 'head' | 'bucket'>;
  /** The attachments of a window (guarantees' and amendments' documents) whose file has no record of one, for the look back. */
  unrecordedBetween: (from: Date, to: Date) => Promise<Array<{ key: string; at: Date }>>;
  years: number;
  logger: Logger;
  now?: () => Date;
  /** Documents per sweep at most (MAX_PER_SWEEP). */
  max?: number;
  /** When a document the store did not keep is tried again (LOCK_RETRY). */
  retry?: { firstMs: number; maxMs: number };
}) {
  const { repo, storage, years, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const max = deps.max ?? MAX_PER_SWEEP;
  const retry = deps.retry ?? LOCK_RETRY;
  let saidAbsent = false;
  /** Up to when this process has looked back. */
  let lookedUntil: Date | undefined;

  /**
   * Records the attachments of the recent past that have no record (a process of the previous
   * release attached them during a rolling release): each is then kept like any other.
   */
  async function lookBack(): Promise<number> {
    const to = now();
    let from = new Date((lookedUntil?.getTime() ?? to.getTime() - LOOKBACK_MS + OVERLAP_MS) - OVERLAP_MS);
    let recorded = 0;
    while (from < to) {
      const end = new Date(Math.min(from.getTime() + SLICE_MS, to.getTime()));
      for (const a of await deps.unrecordedBetween(from, end)) {
        // The latest of a key's attachments is kept (attachStatement), whatever their order here.
        await repo.recordAttachment(a.key, a.at);
        recorded++;
      }
      from = end;
    }
    lookedUntil = to;
    if (recorded) logger.warn({ recorded }, 'attachments without their record found (made by another release?): recorded now');
    return recorded;
  }

  /** Asks the store to keep the document, then records it; false when it was attached again meanwhile (left for the next sweep). */
  async function keep(doc: DocumentToRetain): Promise<boolean> {
    // A file judged before versions were pinned keeps its document as its key's current version.
    const versionId = doc.versionId ?? (await storage.head(doc.key))?.versionId;
    if (!versionId) throw new NoVersionToKeep('an attached document has no version in the store to keep');
    const until = retainUntil(doc, years);
    await storage.retain(doc.key, versionId, until);
    // Recorded only if the row still has the times the date was computed from: a document
    // attached again since has a later date to ask for, which the next sweep asks for.
    if (await repo.markRetained(doc, until)) return true;
    logger.info({ file: doc.uuid }, 'a document attached again while it was being kept: the next sweep keeps it from the later attachment');
    return false;
  }

  return {
    /** One sweep: every attached document not yet kept, page by page. */
    async run(): Promise<LockRun> {
      // Attachments without their record are recorded whatever the bucket: the retention job must never take them for uploads never attached.
      await lookBack();
      if ((await storage.objectLock()) !== 'enabled') {
        if (!saidAbsent)
          logger.warn(
            { bucket: storage.bucket },
            'the bucket has no Object Lock: attached documents are not protected against deletion (docs/operations.md "Records")',
          );
        saidAbsent = true;
        return { objectLock: false, locked: 0, failed: 0 };
      }
      saidAbsent = false;
      const result: LockRun = { objectLock: true, locked: 0, failed: 0 };
      // What is due when the sweep starts: a document that fails now is due again later, never in this sweep.
      const dueBy = now();
      let after: { dueAt: Date; uuid: string } | undefined;
      // A store that fails three times in a row is away: the rest waits for the next sweep
      // (each call has its time limit, but a thousand of them would hold the worker for long).
      let inARow = 0;
      for (;;) {
        const limit = Math.min(PAGE, max - result.locked - result.failed);
        if (limit <= 0) return result;
        const page = await repo.toRetain(limit, dueBy, after);
        for (const doc of page) {
          after = { dueAt: doc.dueAt, uuid: doc.uuid };
          try {
            if (await keep(doc)) result.locked++;
            inARow = 0;
          } catch (err) {
            result.failed++;
            const retryAt = nextLockTry(doc.failures + 1, now(), retry);
            await repo.lockFailed(doc.uuid, doc.failures + 1, retryAt);
            logger.warn(
              { file: doc.uuid, failures: doc.failures + 1, retryAt, err: (err as Error).message },
              'could not put a document under Object Lock (tried again at retryAt)',
            );
            // The store's refusal of this document (4xx: a version gone, say) is this document's
            // trouble, not the store's absence: the sweep goes on past it.
            const status = err instanceof S3ServiceException ? err.$metadata.httpStatusCode : undefined;
            if ((status !== undefined && status >= 400 && status < 500) || err instanceof NoVersionToKeep) inARow = 0;
            else if (++inARow >= 3) return result;
          }
        }
        if (page.length < limit) return result;
      }
    },
  };
}

export type DocumentLock = ReturnType<typeof createDocumentLock>;

export type ObjectLockState = 'enabled' | 'absent' | 'unknown';

/**
 * What the web process knows of the bucket's Object Lock, for its boot log and /readyz: asked
 * at once and every `everyMs` (a bucket can be replaced), each time within `timeoutMs`;
 * 'unknown' until the store has answered. Said once at boot, again whenever it changes.
 */
export function watchObjectLock(storage: Pick<Storage, 'objectLock' | 'bucket'>, logger: Logger, opts: { everyMs?: number; timeoutMs?: number } = {}) {
  let state: ObjectLockState = 'unknown';
  const ask = async () => {
    const next = await withTimeout(storage.objectLock(), opts.timeoutMs ?? 10_000, 'Object Lock configuration').catch((err: unknown) => {
      logger.warn({ bucket: storage.bucket, err: (err as Error).message }, 'could not ask the store about Object Lock');
      return state;
    });
    if (next !== state) {
      if (next === 'absent')
        logger.warn(
          { bucket: storage.bucket },
          'the bucket has no Object Lock: attached documents are not protected against deletion (docs/operations.md "Records")',
        );
      else if (next === 'enabled') logger.info({ bucket: storage.bucket }, 'the bucket has Object Lock: attached documents are kept in COMPLIANCE mode');
    }
    state = next;
  };
  const first = ask();
  const timer = setInterval(() => void ask(), opts.everyMs ?? 600_000);
  timer.unref();
  return {
    state: (): ObjectLockState => state,
    /** Resolves once the first answer (or its time limit) is in. */
    ready: first,
    stop: () => clearInterval(timer),
  };
}

// What the files keep, and for how long (docs/operations.md "Records", retention table), enforced by the
// maintenance worker's retention job:
// - an upload never attached to a guarantee or an amendment is deleted UNATTACHED_UPLOAD_DAYS
//   after its URL was issued: first its row (still unattached) in a short transaction that
//   leaves a tombstone of its keys (file_purges), then, after the commit, every version of
//   its keys, then the tombstone. Its key is unknown from the commit on (a guarantee naming it
//   gets a 400); an attachment racing the deletion waits for the row's lock, then finds no
//   file. A commit that fails leaves the row and its bytes as they were; a store that fails
//   leaves the tombstone, whose bytes the next run deletes first.
// - an Infected file's bytes (kept in quarantine since the verdict) are deleted
//   INFECTED_RETENTION_DAYS after it; its row, the verdict, stays (purged_at says when).
// Each reads its work off an index that holds nothing else (migration 0022); in pages of 100
// files, each deletion a short transaction; at most `max` per run, the rest next run (the
// Infected bytes by keyset, a pass stopped at its maximum resumed after its last file: files
// the store refuses are tried once a pass, never in the way of the rest).
import { ER_LOCK_DEADLOCK, ER_ROW_IS_REFERENCED, execute, mysqlErrno, select, type Sequelize } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import { attachStatement } from './file.sql.js';
import type { Storage } from '../shared/storage.js';

const PAGE = 100;

interface Tombstone {
  object_key: string;
  stored_key: string | null;
  file_uuid: string;
}

export function createFileRetention(deps: {
  db: Sequelize;
  storage: Pick<Storage, 'versions' | 'removeVersion'>;
  logger: Logger;
  now?: () => Date;
  /** Files per page (100). */
  page?: number;
}) {
  const { db, storage, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const pageSize = deps.page ?? PAGE;
  /** Where the last Infected pass stopped at its maximum (the next goes on after it); undefined when it reached the end. */
  let infectedAfter: { at: Date; uuid: string } | undefined;
  /** Where the next run's tombstones start, when this one stopped at its maximum (else from the first). */
  let tombstonesAfter: { at: Date; key: string } | undefined;

  /** Deletes every version of `key`; how many. */
  async function removeAll(key: string): Promise<number> {
    let n = 0;
    for (const versionId of await storage.versions(key)) {
      await storage.removeVersion(key, versionId);
      n++;
    }
    return n;
  }

  /** The bytes of a deleted upload's keys, then its tombstone; false (and the tombstone kept for the next run) when the store fails. */
  async function bury(t: Tombstone): Promise<boolean> {
    try {
      let versions = 0;
      for (const key of new Set([t.object_key, t.stored_key ?? t.object_key])) versions += await removeAll(key);
      await execute(db, 'DELETE FROM file_purges WHERE object_key = $1', [t.object_key]);
      logger.info({ file: t.file_uuid, versions }, 'deleted an upload never attached');
      return true;
    } catch (err) {
      // Another file's trouble (the store refusing one version) must not stop the rest: the next run tries it again.
      logger.warn({ file: t.file_uuid, err: (err as Error).message }, 'could not delete the bytes of an upload never attached (its tombstone stays)');
      return false;
    }
  }

  /** Deletes the row of an unattached upload with its tombstone, in one transaction; the tombstone, or undefined when it is kept. */
  async function unregister(f: Tombstone): Promise<Tombstone | undefined> {
    try {
      return await db.transaction(async (t) => {
        // Still unattached, and never judged Infected meanwhile (a verdict row stays). The row's
        // lock is held to the commit: an attachment racing it waits, then finds no file.
        if ((await execute(db, "DELETE FROM files WHERE uuid = $1 AND attached_at IS NULL AND status <> 'Infected'", [f.file_uuid], t)) !== 1) return undefined;
        await execute(
          db,
          'INSERT INTO file_purges (object_key, stored_key, file_uuid, created_at) VALUES ($1, $2, $3, $4) ON DUPLICATE KEY UPDATE file_uuid = file_uuid',
          [f.object_key, f.stored_key, f.file_uuid, now()],
          t,
        );
        return f;
      });
    } catch (err) {
      const errno = mysqlErrno(err);
      if (errno === ER_LOCK_DEADLOCK) {
        logger.info({ file: f.file_uuid }, 'an upload being attached while it was to be deleted: kept');
        return undefined;
      }
      if (errno === ER_ROW_IS_REFERENCED) {
        // Attached without its record (by a previous release): recorded now, kept from now on.
        const attach = attachStatement([f.object_key], now());
        await execute(db, attach.sql, attach.bind, undefined, { prepared: false });
        logger.warn({ file: f.file_uuid }, 'an upload attached without its record: recorded, not deleted');
        return undefined;
      }
      throw err;
    }
  }

  return {
    /** Uploads issued before `cutoff` and never attached: their rows, then their versions; how many files. */
    async purgeUnattached(cutoff: Date, max = 2000): Promise<number> {
      let purged = 0;
      let failures = 0;
      // First the bytes that an earlier run could not delete (their rows are gone already): at
      // most `max` a run, by keyset, resumed where the last run stopped, and their failures
      // apart from the uploads' (tombstones the store keeps refusing, at the head, took every
      // run's whole maximum: no upload was deleted any more).
      const from = tombstonesAfter ?? { at: new Date(0), key: '' };
      const tombstones = await select<Tombstone & { created_at: Date }>(
        db,
        `SELECT object_key, stored_key, file_uuid, created_at FROM file_purges WHERE created_at > $1 OR (created_at = $1 AND object_key > $2)
        ORDER BY created_at, object_key LIMIT ${Math.trunc(max)}`,
        [from.at, from.key],
      );
      for (const t of tombstones) await bury(t);
      const lastTombstone = tombstones.at(-1);
      tombstonesAfter = tombstones.length === Math.trunc(max) && lastTombstone ? { at: lastTombstone.created_at, key: lastTombstone.object_key } : undefined;
      let after = { at: new Date(0), uuid: '' };
      while (purged + failures < max) {
        const page = await select<{ uuid: string; object_key: string; stored_key: string | null; unattached_since: Date }>(
          db,
          `SELECT uuid, object_key, stored_key, unattached_since FROM files FORCE INDEX (ix_files_unattached_since)
          WHERE unattached_since < $1 AND (unattached_since > $2 OR (unattached_since = $2 AND uuid > $3))
          ORDER BY unattached_since, uuid LIMIT ${Math.trunc(pageSize)}`,
          [cutoff, after.at, after.uuid],
        );
        if (!page.length) break;
        for (const f of page) {
          after = { at: f.unattached_since, uuid: f.uuid };
          const tombstone = await unregister({ object_key: f.object_key, stored_key: f.stored_key, file_uuid: f.uuid }).catch((err: unknown) => {
            logger.warn({ file: f.uuid, err: (err as Error).message }, 'could not delete an upload never attached');
            failures++;
            return undefined;
          });
          if (!tombstone) continue;
          purged++;
          if (!(await bury(tombstone))) failures++;
        }
        if (page.length < pageSize) break;
      }
      return purged;
    },

    /**
     * The bytes of files judged Infected before `cutoff`: deleted, the verdict row kept; how many
     * files. By keyset (their verdict's time, uuid): a file the store will not let go is tried
     * once a pass and passed, never read again in a loop nor in the way of the files after it.
     * At most `max` files tried; a pass stopped there is resumed where it stopped, and one that
     * reaches the end starts over (the files that failed are tried again then).
     */
    async purgeInfected(cutoff: Date, max = 2000): Promise<number> {
      let purged = 0;
      let failed = 0;
      let after = infectedAfter ?? { at: new Date(0), uuid: '' };
      infectedAfter = undefined;
      for (;;) {
        const limit = Math.min(pageSize, max - purged - failed);
        if (limit <= 0) break;
        const page = await select<{ uuid: string; object_key: string; infected_since: Date }>(
          db,
          `SELECT uuid, object_key, infected_since FROM files FORCE INDEX (ix_files_infected_since)
          WHERE infected_since < $1 AND (infected_since > $2 OR (infected_since = $2 AND uuid > $3))
          ORDER BY infected_since, uuid LIMIT ${Math.trunc(limit)}`,
          [cutoff, after.at, after.uuid],
        );
        for (const f of page) {
          after = { at: f.infected_since, uuid: f.uuid };
          try {
            const versions = await removeAll(f.object_key);
            await execute(db, 'UPDATE files SET purged_at = $2 WHERE uuid = $1', [f.uuid, now()]);
            logger.info({ file: f.uuid, versions }, "deleted an Infected file's bytes (its verdict stays)");
            purged++;
          } catch (err) {
            // One file the store will not let go must not stop the rest (the next pass tries it again).
            logger.warn({ file: f.uuid, err: (err as Error).message }, "could not delete an Infected file's bytes");
            failed++;
          }
        }
        if (page.length < limit) return purged;
      }
      infectedAfter = after;
      return purged;
    },
  };
}

export type FileRetention = ReturnType<typeof createFileRetention>;

// What the files keep, and for how long (README "Records", retention table), enforced by the
// maintenance worker's retention job:
// - an upload never attached to a guarantee or an amendment is deleted UNATTACHED_UPLOAD_DAYS
//   after its URL was issued: its row (still unattached), then every version of its key, in one
//   transaction (its key is then unknown: a guarantee naming it later gets a 400). An
//   attachment racing the deletion waits for the row's lock, then finds no file (a 400, its
//   guarantee not registered) rather than naming deleted bytes.
// - an Infected file's bytes (kept in quarantine since the verdict) are deleted
//   INFECTED_RETENTION_DAYS after it; its row, the verdict, stays (purged_at says when).
// In batches of 100 files, each a short transaction; at most `max` per run, the rest next run.
import { ER_LOCK_DEADLOCK, ER_ROW_IS_REFERENCED, execute, mysqlErrno, select, type Sequelize } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import { attachStatement } from './file.sql.js';
import type { Storage } from '../shared/storage.js';

const PAGE = 100;

export function createFileRetention(deps: { db: Sequelize; storage: Pick<Storage, 'versions' | 'removeVersion'>; logger: Logger; now?: () => Date }) {
  const { db, storage, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /** Deletes every version of `key`; how many. */
  async function removeAll(key: string): Promise<number> {
    let n = 0;
    for (const versionId of await storage.versions(key)) {
      await storage.removeVersion(key, versionId);
      n++;
    }
    return n;
  }

  return {
    /** Uploads issued before `cutoff` and never attached: their versions, then their rows; how many files. */
    async purgeUnattached(cutoff: Date, max = 2000): Promise<number> {
      let purged = 0;
      let failures = 0;
      let after = { at: new Date(0), uuid: '' };
      while (purged + failures < max) {
        const page = await select<{ uuid: string; object_key: string; stored_key: string | null; created_at: Date }>(
          db,
          `SELECT uuid, object_key, stored_key, created_at FROM files FORCE INDEX (ix_files_unattached)
          WHERE attached_at IS NULL AND created_at < $1 AND (created_at > $2 OR (created_at = $2 AND uuid > $3)) AND status <> 'Infected'
          ORDER BY created_at, uuid LIMIT ${PAGE}`,
          [cutoff, after.at, after.uuid],
        );
        if (!page.length) break;
        for (const f of page) {
          after = { at: f.created_at, uuid: f.uuid };
          // The row first, still unattached (its lock held to the commit), then its bytes: an
          // attachment racing it waits, then finds no file; a deadlock with one, or a store
          // that fails, rolls the row back with its bytes untouched (the next run tries again).
          const gone = await db
            .transaction(async (t) => {
              // Still unattached, and never judged Infected meanwhile (a verdict row stays).
              if ((await execute(db, "DELETE FROM files WHERE uuid = $1 AND attached_at IS NULL AND status <> 'Infected'", [f.uuid], t)) !== 1) return false;
              let versions = 0;
              for (const key of new Set([f.object_key, f.stored_key ?? f.object_key])) versions += await removeAll(key);
              logger.info({ file: f.uuid, versions }, 'deleted an upload never attached');
              return true;
            })
            .catch(async (err: unknown) => {
              const errno = mysqlErrno(err);
              if (errno === ER_LOCK_DEADLOCK) {
                logger.info({ file: f.uuid }, 'an upload being attached while it was to be deleted: kept');
                return false;
              }
              if (errno === ER_ROW_IS_REFERENCED) {
                // Attached without its record (by a previous release): recorded now, kept from now on.
                const attach = attachStatement([f.object_key], now());
                await execute(db, attach.sql, attach.bind, undefined, { prepared: false });
                logger.warn({ file: f.uuid }, 'an upload attached without its record: recorded, not deleted');
                return false;
              }
              // Another file's trouble (the store refusing one version) must not stop the rest: the next run tries it again.
              logger.warn({ file: f.uuid, err: (err as Error).message }, 'could not delete an upload never attached');
              failures++;
              return false;
            });
          if (gone) purged++;
        }
        if (page.length < PAGE) break;
      }
      return purged;
    },

    /** The bytes of files judged Infected before `cutoff`: deleted, the verdict row kept; how many files. */
    async purgeInfected(cutoff: Date, max = 2000): Promise<number> {
      let purged = 0;
      while (purged < max) {
        const page = await select<{ uuid: string; object_key: string }>(
          db,
          `SELECT uuid, object_key FROM files WHERE status = 'Infected' AND purged_at IS NULL AND scanned_at < $1 LIMIT ${PAGE}`,
          [cutoff],
        );
        if (!page.length) break;
        let failed = 0;
        for (const f of page) {
          try {
            const versions = await removeAll(f.object_key);
            await execute(db, 'UPDATE files SET purged_at = $2 WHERE uuid = $1', [f.uuid, now()]);
            logger.info({ file: f.uuid, versions }, "deleted an Infected file's bytes (its verdict stays)");
            purged++;
          } catch (err) {
            // One file the store will not let go must not stop the rest (the next run tries it again).
            logger.warn({ file: f.uuid, err: (err as Error).message }, "could not delete an Infected file's bytes");
            failed++;
          }
        }
        if (page.length < PAGE || failed === page.length) break;
      }
      return purged;
    },
  };
}

export type FileRetention = ReturnType<typeof createFileRetention>;

// The records' sweeps read exactly their work (issue 17, review): each reads off an index that
// holds only the rows it has to do, so rows it must keep for ever no longer lengthen every run.
// - files.unattached_since: created_at of an upload never attached and not Infected (an
//   Infected one keeps its verdict row), else NULL; the retention job's uploads to delete.
// - files.to_retain_since: attached_at of an attached document judged fit (Clean or Signed)
//   that the store has not yet said it keeps, else NULL; the document lock's sweep. Attached
//   documents judged Infected or Error are never kept, and were read again at every sweep.
// - files.infected_since: scanned_at of an Infected file whose bytes are still kept, else NULL;
//   the retention job's Infected bytes to delete.
// Virtual columns (computed, not stored) with an index each, whose NULLs a range on it skips.
// - file_purges: the keys of uploads whose row is deleted and whose bytes are still to delete:
//   the row goes in a short transaction that writes this tombstone, the bytes after its commit
//   (a commit that fails can no longer leave a row naming deleted bytes, nor hold its lock
//   across calls to the store), the tombstone when they are gone.
// New columns, indexes and a table: the previous release runs unchanged (its indexes stay).
import type { Migration } from './index.js';

const KEY = 'VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0022-retention-queues',
  async up({ context: q }) {
    await q(`ALTER TABLE files
      ADD COLUMN unattached_since DATETIME(3) AS (IF(attached_at IS NULL AND status <> 'Infected', created_at, NULL)) VIRTUAL,
      ADD COLUMN to_retain_since DATETIME(3) AS (IF(retained_until IS NULL AND status IN ('Clean', 'Signed'), attached_at, NULL)) VIRTUAL,
      ADD COLUMN infected_since DATETIME(3) AS (IF(status = 'Infected' AND purged_at IS NULL, scanned_at, NULL)) VIRTUAL`);
    await q(`ALTER TABLE files
      ADD KEY ix_files_unattached_since (unattached_since, uuid),
      ADD KEY ix_files_to_retain_since (to_retain_since, uuid),
      ADD KEY ix_files_infected_since (infected_since)`);
    await q(`CREATE TABLE file_purges (
      object_key ${KEY} NOT NULL PRIMARY KEY,
      stored_key ${KEY} NULL,
      file_uuid CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    // A tombstone is bytes still to delete, whose row is gone: dropping it would keep them for ever.
    const [waiting] = (await q('SELECT COUNT(*) AS n FROM file_purges')) as [Array<{ n: number | string }>];
    if (Number(waiting[0]?.n ?? 0) > 0)
      throw new Error(
        'file_purges has uploads whose bytes are still to delete: run the retention job (apply-retention) until it is empty, then undo this migration',
      );
    await q('DROP TABLE file_purges');
    await q(`ALTER TABLE files DROP KEY ix_files_unattached_since, DROP KEY ix_files_to_retain_since, DROP KEY ix_files_infected_since,
      DROP COLUMN unattached_since, DROP COLUMN to_retain_since, DROP COLUMN infected_since`);
  },
};

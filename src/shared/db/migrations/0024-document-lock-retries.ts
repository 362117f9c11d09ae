// The document lock's sweep gets past documents the store will not keep (issue 27): it read the
// oldest documents not yet kept at every sweep, and a thousand the store kept refusing stood at
// the head of each, so that newer attachments were never kept. A document the store did not
// keep is now tried again on a schedule of its own, behind the documents due before it.
// - files.lock_failures: the store's failures in a row to keep the document (0 once kept).
// - files.lock_retry_at: when the sweep tries a failed document again (NULL once kept).
// - files.lock_due_at: when an attached document judged fit (Clean or Signed) and not yet kept
//   is due: its retry time once it failed, else its attachment's time; NULL for every other
//   file. Virtual, indexed with uuid: the sweep reads the documents due, in that order, by
//   keyset; one that failed is not read again before its time.
// Columns with defaults, a virtual column and an index: the previous release runs unchanged (it
// reads to_retain_since, which stays, and tries every document not yet kept at each sweep).
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0024-document-lock-retries',
  async up({ context: q }) {
    await q('ALTER TABLE files ADD COLUMN lock_failures SMALLINT UNSIGNED NOT NULL DEFAULT 0, ADD COLUMN lock_retry_at DATETIME(3) NULL');
    await q(`ALTER TABLE files ADD COLUMN lock_due_at DATETIME(3)
      AS (IF(attached_at IS NOT NULL AND retained_until IS NULL AND status IN ('Clean', 'Signed'), COALESCE(lock_retry_at, attached_at), NULL)) VIRTUAL`);
    await q('ALTER TABLE files ADD KEY ix_files_lock_due_at (lock_due_at, uuid)');
  },
  async down({ context: q }) {
    // The previous release tries every document not yet kept at each sweep: nothing is lost with the schedule.
    await q('ALTER TABLE files DROP KEY ix_files_lock_due_at, DROP COLUMN lock_due_at, DROP COLUMN lock_retry_at, DROP COLUMN lock_failures');
  },
};

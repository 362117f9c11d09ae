// Retention enforced (issue 17, docs/operations.md "Records"): uploads never attached are deleted after
// UNATTACHED_UPLOAD_DAYS, Infected objects after INFECTED_RETENTION_DAYS (their verdict row
// stays, files.purged_at says when the bytes went).
// - files.purged_at: when an Infected file's bytes were deleted.
// - An index on (attached_at, created_at): the uploads never attached, oldest first.
// - An index on webhook_attempts (attempted_at): the attempts past WEBHOOK_LOG_DAYS, oldest
//   first, whatever order their ids came in.
// A column and an index added in place: the previous release runs unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0019-retention',
  async up({ context: q }) {
    await q('ALTER TABLE files ADD COLUMN purged_at DATETIME(3) NULL');
    await q('ALTER TABLE files ADD KEY ix_files_unattached (attached_at, created_at), ALGORITHM=INPLACE, LOCK=NONE');
    await q('ALTER TABLE webhook_attempts ADD KEY ix_webhook_attempts_at (attempted_at), ALGORITHM=INPLACE, LOCK=NONE');
  },
  async down({ context: q }) {
    await q('ALTER TABLE webhook_attempts DROP KEY ix_webhook_attempts_at');
    await q('ALTER TABLE files DROP KEY ix_files_unattached, DROP COLUMN purged_at');
  },
};

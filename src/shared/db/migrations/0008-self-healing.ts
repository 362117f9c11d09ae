// Self-healing pipelines (issue 12).
// - files.version_id: the object version the scan judged (the bucket is versioned); that
//   version is the document from then on. Files judged before it keep their copy under
//   stored_key (documents/<etag>/<key>), read as before: nothing is moved.
// - files.check_due_at: when the sweeper next makes sure the file's job exists; each sweep takes
//   the files longest due and pushes them back, so every stalled file gets its turn.
// - files.scan_starts: scans begun for the file; a file whose scans keep dying (a worker killed
//   each time) ends in Error instead of being queued for ever.
// - webhook_deliveries.due_at: by when the delivery's next attempt should have run; the
//   reconciler queues again a pending delivery long past it (its job lost with Redis's data).
// Added columns have defaults and added indexes only: the previous release's code, which
// names none of them, runs unchanged while the release rolls out.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0008-self-healing',
  async up({ context: q }) {
    await q(`ALTER TABLE files
      ADD COLUMN version_id VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL AFTER etag,
      ADD COLUMN check_due_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
      ADD COLUMN scan_starts SMALLINT UNSIGNED NOT NULL DEFAULT 0,
      ADD KEY ix_files_check_due (status, check_due_at)`);
    await q(`ALTER TABLE webhook_deliveries
      ADD COLUMN due_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
      ADD KEY ix_webhook_deliveries_due (status, due_at)`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE webhook_deliveries DROP KEY ix_webhook_deliveries_due, DROP COLUMN due_at');
    await q('ALTER TABLE files DROP KEY ix_files_check_due, DROP COLUMN scan_starts, DROP COLUMN check_due_at, DROP COLUMN version_id');
  },
};

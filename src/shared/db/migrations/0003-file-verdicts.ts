// What the scan and the signature check record on a file: the object version judged (its
// ETag), the service-only copy that is the document from then on, the threat found, the
// antivirus engine and database that judged it, why a file ended in Error, and the
// signature verdict. All additive and nullable: the previous release's code runs unchanged.
import type { Migration } from './index.js';

const KEY = 'VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0003-file-verdicts',
  async up({ context: q }) {
    await q(`ALTER TABLE files
      ADD COLUMN etag VARCHAR(128) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL AFTER checksum,
      ADD COLUMN stored_key ${KEY} NULL AFTER etag,
      ADD COLUMN threat VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL AFTER stored_key,
      ADD COLUMN scan_engine VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL AFTER threat,
      ADD COLUMN scanned_at DATETIME(3) NULL AFTER scan_engine,
      ADD COLUMN status_reason VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL AFTER scanned_at,
      ADD COLUMN signature MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL AFTER status_reason,
      ADD KEY ix_files_status (status, updated_at)`);
  },
  async down({ context: q }) {
    await q(`ALTER TABLE files DROP KEY ix_files_status, DROP COLUMN etag, DROP COLUMN stored_key, DROP COLUMN threat,
      DROP COLUMN scan_engine, DROP COLUMN scanned_at, DROP COLUMN status_reason, DROP COLUMN signature`);
  },
};

// Documents kept for the legal keeping period (issue 17, CONTRACT "Records"): each document
// version attached to a guarantee or an amendment is put under S3 Object Lock (COMPLIANCE)
// until DOCUMENT_RETENTION_YEARS after it was attached or judged, whichever is later.
// - files.attached_at: when the file was last named by a guarantee or an amendment, written
//   in the same transaction (null: never attached); set here for the files attached already.
// - files.retained_until: the date the store was asked to keep the version until (null: not
//   yet, or not a document).
// - An index on (retained_until, attached_at): the documents still to lock are read off it.
// Columns with no default work and an index added in place: the previous release runs
// unchanged (what it attaches during a release is found by the sweep's look back, README).
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0018-document-retention',
  async up({ context: q }) {
    await q('ALTER TABLE files ADD COLUMN attached_at DATETIME(3) NULL, ADD COLUMN retained_until DATETIME(3) NULL');
    await q('ALTER TABLE files ADD KEY ix_files_to_retain (retained_until, attached_at), ALGORITHM=INPLACE, LOCK=NONE');
    await q(`UPDATE files f JOIN (SELECT d.file_key, MIN(g.created_at) AS at FROM guarantee_docs d JOIN guarantees g ON g.id = d.guarantee_id GROUP BY d.file_key) x
      ON x.file_key = f.object_key SET f.attached_at = x.at`);
    await q(`UPDATE files f JOIN (SELECT d.file_key, MIN(a.created_at) AS at FROM guarantee_amendment_docs d JOIN guarantee_amendments a ON a.id = d.amendment_id GROUP BY d.file_key) x
      ON x.file_key = f.object_key SET f.attached_at = LEAST(COALESCE(f.attached_at, x.at), x.at)`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE files DROP KEY ix_files_to_retain, DROP COLUMN retained_until, DROP COLUMN attached_at');
  },
};

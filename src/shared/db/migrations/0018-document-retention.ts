// Documents kept for the legal keeping period (issue 17, docs/operations.md "Records"): each document
// version attached to a guarantee or an amendment is put under S3 Object Lock (COMPLIANCE)
// until DOCUMENT_RETENTION_YEARS after it was attached or judged, whichever is later.
// - files.attached_at: when the file was last named by a guarantee or an amendment, written
//   in the same transaction (null: never attached); set here for the files attached already
//   (backfillAttachedAt, in batches).
// - files.retained_until: the date the store was asked to keep the version until (null: not
//   yet, or not a document).
// - An index on (retained_until, attached_at): the documents still to lock are read off it.
// Columns with no default work and an index added in place: the previous release runs
// unchanged (what it attaches during a release is found by the sweep's look back, docs/operations.md "Records").
import type { Migration, Query } from './index.js';

/** Files per statement of the backfill: each statement locks its batch's rows only, briefly. */
const BACKFILL_BATCH = 1000;

/**
 * files.attached_at of the files attached already: the time of the latest attachment (a
 * guarantee's or an amendment's), as attachStatement keeps it. In batches of `batch` files by
 * primary key, each batch two short statements of its own (one statement over the whole table
 * would hold every row's lock until it ends). Never lowers a time already recorded, so running
 * it again, or beside processes that record attachments, changes nothing they wrote.
 */
export async function backfillAttachedAt(q: Query, batch = BACKFILL_BATCH): Promise<void> {
  let after = '';
  for (;;) {
    const [rows] = (await q(`SELECT uuid FROM files WHERE uuid > '${after}' ORDER BY uuid LIMIT 1 OFFSET ${Math.trunc(batch) - 1}`)) as [
      Array<{ uuid: string }>,
    ];
    const upTo = rows[0]?.uuid;
    // Ids this table made (UUIDs): checked all the same, as they are written into the SQL.
    if (upTo !== undefined && !/^[0-9a-f-]{36}$/.test(upTo)) throw new Error(`unexpected file id ${JSON.stringify(upTo)}`);
    const range = (alias: string) => `${alias}.uuid > '${after}'${upTo === undefined ? '' : ` AND ${alias}.uuid <= '${upTo}'`}`;
    await q(`UPDATE files f JOIN (SELECT d.file_key, MAX(g.created_at) AS at FROM files ff JOIN guarantee_docs d ON d.file_key = ff.object_key
        JOIN guarantees g ON g.id = d.guarantee_id WHERE ${range('ff')} GROUP BY d.file_key) x
      ON x.file_key = f.object_key SET f.attached_at = GREATEST(COALESCE(f.attached_at, x.at), x.at)`);
    await q(`UPDATE files f JOIN (SELECT d.file_key, MAX(a.created_at) AS at FROM files ff JOIN guarantee_amendment_docs d ON d.file_key = ff.object_key
        JOIN guarantee_amendments a ON a.id = d.amendment_id WHERE ${range('ff')} GROUP BY d.file_key) x
      ON x.file_key = f.object_key SET f.attached_at = GREATEST(COALESCE(f.attached_at, x.at), x.at)`);
    if (upTo === undefined) return;
    after = upTo;
  }
}

export const migration: Migration = {
  name: '0018-document-retention',
  async up({ context: q }) {
    await q('ALTER TABLE files ADD COLUMN attached_at DATETIME(3) NULL, ADD COLUMN retained_until DATETIME(3) NULL');
    await q('ALTER TABLE files ADD KEY ix_files_to_retain (retained_until, attached_at), ALGORITHM=INPLACE, LOCK=NONE');
    await backfillAttachedAt(q);
  },
  async down({ context: q }) {
    await q('ALTER TABLE files DROP KEY ix_files_to_retain, DROP COLUMN retained_until, DROP COLUMN attached_at');
  },
};

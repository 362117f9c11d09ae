// Uploaded files in MariaDB: one row per issued key, filled in by the scan and the signature
// check. Every verdict is a conditional UPDATE, so that two workers (or a retried job) can
// never both record one, and a file that has a verdict never gets another. A change of
// status writes the `file.status.changed` event in the same transaction.
import { execute, select, truncate, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import type { Outbox } from '../shared/events/outbox.js';

export interface NewFile {
  uuid: string;
  key: string;
  orgId: string;
  fileType: string;
  originalFileName: string | null;
  isDocumentPublic: boolean;
  /** The API version the upload URL was asked through (2 when absent): a v1 upload, which has no isDocumentPublic, is shown by the public verification. */
  uploadApi?: 1 | 2;
  /** When the upload URL stops working. */
  expiresAt: Date;
  createdAt: Date;
}

import { FILE_SQL, attachStatement } from './file.sql.js';
import type { FileStatus } from './file.statuses.js';
export { FILE_STATUSES, type FileStatus } from './file.statuses.js';

/** What a guarantee's document takes from its file. */
export interface FileForDoc {
  key: string;
  status: FileStatus;
  originalFileName: string | null;
  checksum: string | null;
}

/** A file as the pipeline and the extended view see it: as issued, plus what the scan and the check recorded. */
export interface FileRecord extends NewFile {
  status: FileStatus;
  size: number | null;
  checksum: string | null;
  /**
   * The object version the scan judged (its VersionId): with `storedKey`, the document from then
   * on. Null before the verdict, and for files judged before versions were pinned, whose
   * document is the copy at `storedKey` (read without a version).
   */
  versionId: string | null;
  /** Where the document's bytes are: the upload's own key (pinned by `versionId`), or a legacy copy. Null until judged, and for Infected files. */
  storedKey: string | null;
  threat: string | null;
  scanEngine: string | null;
  scannedAt: Date | null;
  statusReason: string | null;
  /** The signature verdict (JSON), for public v2 documents once checked. */
  signature: string | null;
}

interface FileRow {
  uuid: string;
  object_key: string;
  org_id: string;
  file_type: string;
  original_file_name: string | null;
  is_document_public: number;
  status: FileStatus;
  size: number | string | null;
  checksum: string | null;
  version_id: string | null;
  stored_key: string | null;
  threat: string | null;
  scan_engine: string | null;
  scanned_at: Date | null;
  status_reason: string | null;
  signature: string | null;
  expires_at: Date;
  created_at: Date;
}

const FILE_COLUMNS = `uuid, object_key, org_id, file_type, original_file_name, is_document_public, status, size, checksum, version_id,
  stored_key, threat, scan_engine, scanned_at, status_reason, signature, expires_at, created_at`;

function toRecord(r: FileRow): FileRecord {
  return {
    uuid: r.uuid,
    key: r.object_key,
    orgId: r.org_id,
    fileType: r.file_type,
    originalFileName: r.original_file_name,
    isDocumentPublic: r.is_document_public === 1,
    status: r.status,
    size: r.size === null ? null : Number(r.size),
    checksum: r.checksum,
    versionId: r.version_id,
    storedKey: r.stored_key,
    threat: r.threat,
    scanEngine: r.scan_engine,
    scannedAt: r.scanned_at,
    statusReason: r.status_reason,
    signature: r.signature,
    expiresAt: r.expires_at,
    createdAt: r.created_at,
  };
}

/** What a scan found in one object version. */
export interface ScanRecord {
  versionId: string;
  /** Null for an Infected file: its bytes are not kept. */
  storedKey: string | null;
  size: number;
  checksum: string | null;
  threat: string | null;
  engine: string;
  /** Clean or Infected; In Progress while a signature check is still to come. */
  status: 'Clean' | 'Infected' | 'In Progress';
  at: Date;
}

/** The WHERE clause and value that find one of an organization's files by UUID or whole key. */
const byRef = (orgId: string, by: { uuid: string } | { key: string }): [string, unknown[]] =>
  'uuid' in by ? ['uuid = $1 AND org_id = $2', [by.uuid, orgId]] : ['object_key = $1 AND org_id = $2', [by.key, orgId]];

/** The data of a `file.status.changed` event. */
export interface FileStatusChanged {
  key: string;
  uuid: string;
  status: FileStatus;
  previousStatus: FileStatus;
  statusReason?: string;
  threat?: string;
  /** The signature verdict, when the file was checked. */
  signature?: unknown;
}

/** An attached document to put under Object Lock: its stored version, and the two times its keeping period starts from. */
export interface DocumentToRetain {
  uuid: string;
  key: string;
  versionId: string | null;
  attachedAt: Date;
  judgedAt: Date | null;
  /** When it was due to the sweep: its retry time once the store failed to keep it, else `attachedAt` (the sweep's cursor). */
  dueAt: Date;
  /** The store's failures in a row to keep it. */
  failures: number;
}

export function createFileRepository(db: Sequelize, outbox: Outbox) {
  /**
   * Runs a conditional UPDATE of one file (`update` says whether it changed the row) with the
   * row locked, and writes `file.status.changed` when it moved the file to another status.
   */
  async function changeStatus(
    uuid: string,
    at: Date,
    next: Omit<FileStatusChanged, 'key' | 'uuid' | 'previousStatus'>,
    update: (t: Transaction) => Promise<boolean>,
  ): Promise<boolean> {
    return db.transaction(async (t) => {
      const [before] = await select<{ status: FileStatus; org_id: string; object_key: string }>(
        db,
        'SELECT status, org_id, object_key FROM files WHERE uuid = $1 FOR UPDATE',
        [uuid],
        t,
      );
      if (!before || !(await update(t))) return false;
      if (next.status !== before.status) {
        const data: FileStatusChanged = { key: before.object_key, uuid, previousStatus: before.status, ...next };
        await outbox.add(t, before.org_id, 'file.status.changed', data, at);
      }
      return true;
    });
  }

  return {
    /**
     * The organization's files among `keys`, as a guarantee's documents name them (keys of other
     * organizations, or never issued, are simply absent).
     */
    async forDocs(orgId: string, keys: readonly string[]): Promise<FileForDoc[]> {
      if (!keys.length) return [];
      const rows = await select<{ object_key: string; status: FileStatus; original_file_name: string | null; checksum: string | null }>(
        db,
        'SELECT object_key, status, original_file_name, checksum FROM files WHERE org_id = $1 AND object_key IN ($2)',
        [orgId, keys],
        undefined,
        { prepared: false },
      );
      return rows.map((r) => ({ key: r.object_key, status: r.status, originalFileName: r.original_file_name, checksum: r.checksum }));
    },

    /**
     * Which of `keys` name files the public verification may show: uploaded as public, or through
     * v1 (which has no such flag). A key of no file is not among them.
     */
    async publicAmong(keys: readonly string[]): Promise<Set<string>> {
      if (!keys.length) return new Set();
      const rows = await select<{ object_key: string }>(
        db,
        `SELECT object_key FROM files f WHERE object_key IN ($1) AND ${FILE_SQL.shownPublicly('f')}`,
        [keys],
        undefined,
        { prepared: false },
      );
      return new Set(rows.map((r) => r.object_key));
    },

    /** The status of this organization's file by its UUID or its whole key; another organization's is absent. */
    async statusOf(orgId: string, by: { uuid: string } | { key: string }): Promise<{ uuid: string; status: FileStatus; judged: boolean } | undefined> {
      const [where, bind] = byRef(orgId, by);
      const [row] = await select<{ uuid: string; status: FileStatus; judged: number }>(
        db,
        `SELECT uuid, status, scanned_at IS NOT NULL AS judged FROM files WHERE ${where}`,
        bind,
      );
      return row && { uuid: row.uuid, status: row.status, judged: Number(row.judged) === 1 };
    },

    /** This organization's file by UUID or whole key; another organization's is absent. */
    async findForOrg(orgId: string, by: { uuid: string } | { key: string }): Promise<FileRecord | undefined> {
      const [where, bind] = byRef(orgId, by);
      const [row] = await select<FileRow>(db, `SELECT ${FILE_COLUMNS} FROM files WHERE ${where}`, bind);
      return row && toRecord(row);
    },

    async get(uuid: string): Promise<FileRecord | undefined> {
      const [row] = await select<FileRow>(db, `SELECT ${FILE_COLUMNS} FROM files WHERE uuid = $1`, [uuid]);
      return row && toRecord(row);
    },

    /** Records an issued key; the sweeper first makes sure of its watch at `checkDueAt`. */
    /** `also`: more of the same change, in its transaction (its audit row). */
    async insert(f: NewFile, checkDueAt: Date, also?: (t: Transaction) => Promise<unknown>): Promise<void> {
      const write = async (t?: Transaction) =>
        execute(
          db,
          `INSERT INTO files (uuid, object_key, org_id, file_type, original_file_name, is_document_public, status, expires_at, created_at, updated_at, check_due_at, upload_api)
          VALUES ($1, $2, $3, $4, $5, $6, 'In Progress', $7, $8, $8, $9, $10)`,
          [f.uuid, f.key, f.orgId, f.fileType, f.originalFileName, f.isDocumentPublic, f.expiresAt, f.createdAt, checkDueAt, f.uploadApi ?? 2],
          t,
        );
      if (!also) {
        await write();
        return;
      }
      await db.transaction(async (t) => {
        // `also` (an audit row) first: see the audit repository's append.
        await also(t);
        await write(t);
      });
    },

    /** Moves the sweeper's next look at a file (sooner, when its watch could not be queued). */
    async checkDueAt(uuid: string, at: Date): Promise<void> {
      await execute(db, 'UPDATE files SET check_due_at = $2 WHERE uuid = $1', [uuid, at]);
    },

    /**
     * Counts one more scan begun for the file; false when `max` had already begun: a file whose
     * scans keep dying with their worker is given up on (Error) instead of being queued for ever.
     */
    async scanStarted(uuid: string, max: number): Promise<boolean> {
      return 1 === (await execute(db, 'UPDATE files SET scan_starts = scan_starts + 1 WHERE uuid = $1 AND scan_starts < $2', [uuid, max]));
    },

    /**
     * Records a scan verdict, unless the file already has one (then false). A file in Error
     * without a verdict (nothing had arrived, or the scan had failed) can still get one.
     */
    async recordScan(uuid: string, s: ScanRecord): Promise<boolean> {
      const threat = s.threat ? truncate(s.threat, 255) : null;
      return changeStatus(
        uuid,
        s.at,
        { status: s.status, ...(threat && { threat }) },
        async (t) =>
          1 ===
          (await execute(
            db,
            // etag is written (the version id, never read as an ETag) only so that the previous
            // release's workers, which took a file with a NULL etag for unjudged, judge it no more
            // while a release rolls out.
            `UPDATE files SET status = $2, version_id = $3, etag = LEFT($3, 128), stored_key = $4, size = $5, checksum = $6, threat = $7,
          scan_engine = $8, scanned_at = $9, status_reason = NULL, updated_at = $9
        WHERE uuid = $1 AND scanned_at IS NULL AND status IN ('In Progress', 'Error')`,
            [uuid, s.status, s.versionId, s.storedKey, s.size, s.checksum, threat, truncate(s.engine, 255), s.at],
            t,
          )),
      );
    },

    /**
     * Attached documents judged fit whose version is not yet kept under Object Lock, due by
     * `dueBy` (attached, or their retry time come), in that order after `after` (a cursor:
     * dueAt, uuid), at most `limit`.
     */
    async toRetain(limit: number, dueBy: Date, after?: { dueAt: Date; uuid: string }): Promise<DocumentToRetain[]> {
      const rows = await select<{
        uuid: string;
        object_key: string;
        stored_key: string | null;
        version_id: string | null;
        attached_at: Date;
        scanned_at: Date | null;
        lock_due_at: Date;
        lock_failures: number;
      }>(
        db,
        // lock_due_at: the retry time, or else attached_at, of the documents judged fit and not
        // yet kept, NULL for every other file (migration 0024): the range reads nothing else,
        // and a document that failed is behind until its time.
        `SELECT uuid, object_key, stored_key, version_id, attached_at, scanned_at, lock_due_at, lock_failures FROM files FORCE INDEX (ix_files_lock_due_at)
        WHERE lock_due_at <= $1 AND (lock_due_at > $2 OR (lock_due_at = $2 AND uuid > $3))
        ORDER BY lock_due_at, uuid LIMIT ${Math.trunc(limit)}`,
        [dueBy, after?.dueAt ?? new Date(0), after?.uuid ?? ''],
      );
      return rows.map((r) => ({
        uuid: r.uuid,
        key: r.stored_key ?? r.object_key,
        versionId: r.version_id,
        attachedAt: r.attached_at,
        judgedAt: r.scanned_at,
        dueAt: r.lock_due_at,
        failures: Number(r.lock_failures),
      }));
    },

    /** Records the attachment of `key` at `at` (attachStatement: the latest attachment's time is kept). */
    async recordAttachment(key: string, at: Date): Promise<void> {
      const statement = attachStatement([key], at);
      await execute(db, statement.sql, statement.bind, undefined, { prepared: false });
    },

    /**
     * Records that the store keeps the document's version until `until`, computed from the
     * attachment and verdict times `doc` was read with; false, the row left as it was, when
     * those have changed since (attached again meanwhile: the next sweep asks for the later date).
     */
    async markRetained(doc: Pick<DocumentToRetain, 'uuid' | 'attachedAt' | 'judgedAt'>, until: Date): Promise<boolean> {
      return (
        1 ===
        (await execute(
          db,
          `UPDATE files SET retained_until = GREATEST(COALESCE(retained_until, $2), $2), lock_failures = 0, lock_retry_at = NULL
          WHERE uuid = $1 AND attached_at = $3 AND scanned_at <=> $4`,
          [doc.uuid, until, doc.attachedAt, doc.judgedAt],
        ))
      );
    },

    /** Records the store's `failures`-th failure in a row to keep the document: the sweep tries it again from `retryAt`. */
    async lockFailed(uuid: string, failures: number, retryAt: Date): Promise<void> {
      await execute(db, 'UPDATE files SET lock_failures = LEAST($2, 65535), lock_retry_at = $3 WHERE uuid = $1 AND retained_until IS NULL', [
        uuid,
        failures,
        retryAt,
      ]);
    },

    /**
     * Error, with its reason, for a file that has no verdict yet; false when it has one. Its count
     * of scan starts begins again: a later upload (a store event, a retry from Bull Board) gets
     * its own chances.
     */
    async markError(uuid: string, reason: string, at: Date): Promise<boolean> {
      const statusReason = truncate(reason, 500);
      return changeStatus(
        uuid,
        at,
        { status: 'Error', statusReason },
        async (t) =>
          1 ===
          (await execute(
            db,
            `UPDATE files SET status = 'Error', status_reason = $2, updated_at = $3, scan_starts = 0
        WHERE uuid = $1 AND scanned_at IS NULL AND status IN ('In Progress', 'Error')`,
            [uuid, statusReason, at],
            t,
          )),
      );
    },

    /** The outcome of the signature check of a scanned, clean file; false when it already has one. */
    async recordSignature(uuid: string, status: 'Signed' | 'Clean', verdict: string, at: Date): Promise<boolean> {
      return changeStatus(
        uuid,
        at,
        { status, signature: JSON.parse(verdict) as unknown },
        async (t) =>
          1 ===
          (await execute(
            db,
            `UPDATE files SET status = $2, signature = $3, updated_at = $4
        WHERE uuid = $1 AND scanned_at IS NOT NULL AND status = 'In Progress'`,
            [uuid, status, verdict, at],
            t,
          )),
      );
    },

    /**
     * Up to `limit` files In Progress whose check is due (longest due first), each pushed back
     * to `next` in the same transaction: a sweep takes every stalled file in turn, never the
     * same oldest ones again and again, and two sweepers never take the same file.
     */
    async takeDue(at: Date, next: Date, limit: number): Promise<string[]> {
      return db.transaction(async (t) => {
        const rows = await select<{ uuid: string }>(
          db,
          `SELECT uuid FROM files WHERE status = 'In Progress' AND check_due_at <= $1 ORDER BY check_due_at LIMIT ${Math.trunc(limit)} FOR UPDATE SKIP LOCKED`,
          [at],
          t,
        );
        const uuids = rows.map((r) => r.uuid);
        if (uuids.length) {
          await execute(db, `UPDATE files SET check_due_at = $1 WHERE uuid IN (${uuids.map((_, i) => `$${i + 2}`).join(', ')})`, [next, ...uuids], t);
        }
        return uuids;
      });
    },
  };
}

export type FileRepository = ReturnType<typeof createFileRepository>;

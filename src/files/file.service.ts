// Upload URLs: each request gets a fresh object key `<fileUuid>.<ext>` and an S3 presigned POST
// bound to exactly that key, a size range and an expiry; the key is recorded for the
// organization (status In Progress) before the URL is handed out, and a watch for the upload
// starts. Reading the status of a file still waiting for its upload nudges a check.
import { v7 as uuidv7 } from 'uuid';
import type { Storage } from '../shared/storage.js';
import { isUuid, UUID_PATTERN } from '../shared/validation.js';
import { allowedExtension } from './file-type.js';
import { NotFoundError, PayloadTooLargeError, ValidationError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { FileRecord, FileRepository, FileStatus } from './file.repository.js';
import type { FileView, PresignResult } from './file.schemas.js';
import { withTimeout } from '../shared/time-limit.js';
import { SWEEP_IDLE_MS, type FileJobs } from './file.jobs.js';
import type { SignatureVerdict } from './p7m/p7m.verifier.js';
import type { AuditRepository } from '../audit/audit.repository.js';
import type { ApiActor } from '../orgs/auth.middleware.js';

/** An object key as issued: `<uuid>.<ext>`, the extension possibly compound (pdf.p7m). */
const UUID_KEY = new RegExp(`^${UUID_PATTERN}\\.[a-z0-9]{1,10}(\\.[a-z0-9]{1,10}){0,3}$`);

export interface UploadPolicy {
  allowedFileTypes: readonly string[];
  maxBytes: number;
  ttlSeconds: number;
}

export interface UploadRequest {
  fileType: string;
  fileName?: string;
  isDocumentPublic?: boolean;
  /** The API version asked through (v1 has no isDocumentPublic: its uploads are shown by the public verification). */
  api: 1 | 2;
}

/** The first look for an upload: most arrive within seconds of the URL. */
const FIRST_CHECK_MS = 500;
/** A status read nudges a check of the same file at most this often. */
const NUDGE_EVERY_MS = 1000;
/** The longest a presign waits for Redis to take the upload's watch. */
const ENQUEUE_WAIT_MS = 500;

/** `<uuid>` or `<uuid>.<ext>` as a lookup; undefined when it can be neither. */
export function fileRef(uuidOrKey: string): { uuid: string } | { key: string } | undefined {
  if (isUuid(uuidOrKey)) return { uuid: uuidOrKey };
  if (UUID_KEY.test(uuidOrKey)) return { key: uuidOrKey };
  return undefined;
}

export function createFileService(deps: {
  repo: FileRepository;
  storage: Storage;
  policy: UploadPolicy;
  jobs: Pick<FileJobs, 'watchUpload' | 'hint'>;
  logger: Logger;
  /** The audit trail: each upload URL issued (a file record made) is a row of its organization's chain. */
  audit?: Pick<AuditRepository, 'append'>;
  now?: () => Date;
}) {
  const { repo, storage, policy, jobs, logger, audit } = deps;
  const now = deps.now ?? (() => new Date());
  const nudged = new Map<string, number>();

  /** Best effort and not awaited: a status read never waits for, or fails because of, Redis. */
  function nudge(uuid: string): void {
    const at = Date.now();
    if ((nudged.get(uuid) ?? 0) > at - NUDGE_EVERY_MS) return;
    if (nudged.size >= 10_000) nudged.clear();
    nudged.set(uuid, at);
    jobs.hint(uuid).catch((err: unknown) => logger.warn({ file: uuid, err: (err as Error).message }, 'could not queue an upload check'));
  }

  async function find(orgId: string, uuidOrKey: string): Promise<FileRecord> {
    const ref = fileRef(uuidOrKey);
    const file = ref && (await repo.findForOrg(orgId, ref));
    if (!file) throw new NotFoundError(`No file ${uuidOrKey}.`);
    return file;
  }

  /**
   * A file row for an upload of `req` by the organization (its key, its watch started), with
   * `upload` made for its key before the row is written (the presigned POST, or nothing).
   */
  async function issue<U>(orgId: string, req: UploadRequest, by: ApiActor | undefined, upload: (key: string) => Promise<U>) {
    const ext = allowedExtension(req.fileType, policy.allowedFileTypes);
    const uuid = uuidv7();
    const key = `${uuid}.${ext}`;
    const createdAt = now();
    const made = await upload(key);
    await repo.insert(
      {
        uuid,
        key,
        orgId,
        fileType: ext,
        originalFileName: req.fileName ?? null,
        isDocumentPublic: req.isDocumentPublic ?? false,
        uploadApi: req.api,
        expiresAt: new Date(createdAt.getTime() + policy.ttlSeconds * 1000),
        createdAt,
      },
      new Date(createdAt.getTime() + SWEEP_IDLE_MS),
      by && audit ? (t) => audit.append({ orgId, ...by, action: 'file.issue_upload', target: `file:${uuid}`, outcome: 'ok' }, createdAt, t) : undefined,
    );
    // The URL is issued from the database alone. Redis away (or never reached since boot: a
    // BullMQ Queue waits for its client without limit) costs at most ENQUEUE_WAIT_MS: the file
    // is then due for the sweeper at once, which starts its watch (jobs are deduplicated, so
    // an add that lands later is harmless).
    try {
      await withTimeout(jobs.watchUpload(uuid, FIRST_CHECK_MS), ENQUEUE_WAIT_MS, 'queueing the upload watch');
    } catch (err) {
      logger.warn({ file: uuid, err: (err as Error).message }, 'could not start the upload watch; the sweeper will');
      await repo.checkDueAt(uuid, createdAt);
    }
    return { uuid, key: { key, upload: made } };
  }

  return {
    /**
     * The status of a file by its UUID or its whole key (`<uuid>.<ext>`). Unknown, malformed
     * and other organizations' files are all a 404.
     */
    async status(orgId: string, uuidOrKey: string): Promise<FileStatus> {
      const ref = fileRef(uuidOrKey);
      const row = ref && (await repo.statusOf(orgId, ref));
      if (!row) throw new NotFoundError(`No file ${uuidOrKey}.`);
      if (row.status === 'In Progress' && !row.judged) nudge(row.uuid);
      return row.status;
    },

    /** Everything known about one of this organization's files, for humans. */
    async view(orgId: string, uuidOrKey: string): Promise<FileView> {
      const f = await find(orgId, uuidOrKey);
      if (f.status === 'In Progress' && !f.scannedAt) nudge(f.uuid);
      return {
        uuid: f.uuid,
        key: f.key,
        fileType: f.fileType,
        fileName: f.originalFileName,
        isDocumentPublic: f.isDocumentPublic,
        status: f.status,
        statusReason: f.statusReason,
        size: f.size,
        checksum: f.checksum,
        threat: f.threat,
        scan: f.scannedAt && f.scanEngine ? { engine: f.scanEngine, scannedAt: f.scannedAt.toISOString() } : null,
        signature: f.signature ? (JSON.parse(f.signature) as SignatureVerdict) : null,
        createdAt: f.createdAt.toISOString(),
        uploadUrlExpiresAt: f.expiresAt.toISOString(),
      };
    },

    /**
     * The store says these keys were written (an unauthenticated hint: it only queues a check,
     * which confirms with HeadObject). Keys that are not issued-key shaped are ignored.
     */
    uploadEvent(keys: readonly string[]): number {
      let queued = 0;
      for (const key of new Set(keys)) {
        if (!UUID_KEY.test(key)) continue;
        const uuid = key.slice(0, key.indexOf('.'));
        queued += 1;
        jobs.hint(uuid).catch((err: unknown) => logger.warn({ file: uuid, err: (err as Error).message }, 'could not queue an upload check'));
      }
      return queued;
    },

    async issueUploadUrl(orgId: string, req: UploadRequest, by?: ApiActor): Promise<PresignResult> {
      const { key } = await issue(orgId, req, by, (k) => storage.presignUpload(k, policy.maxBytes, policy.ttlSeconds));
      return { presignedUrl: key.upload.url, fields: key.upload.fields, fileType: req.fileType, key: key.key };
    },

    /**
     * An upload the service received itself (the /authority pages' form: one request origin for
     * the browser): issued as issueUploadUrl issues one, then written to the store, where it is
     * found, scanned and checked as any upload. A 413 past the upload limit.
     */
    async receiveUpload(orgId: string, req: UploadRequest, bytes: Buffer, by?: ApiActor): Promise<{ key: string; uuid: string }> {
      if (bytes.length === 0) throw new ValidationError('The file is empty.', [{ pointer: '#/file', detail: 'is empty' }]);
      if (bytes.length > policy.maxBytes) throw new PayloadTooLargeError(`The file is larger than ${policy.maxBytes} bytes.`);
      const { uuid, key } = await issue(orgId, req, by, () => Promise.resolve(undefined));
      await storage.put(key.key, bytes);
      return { uuid, key: key.key };
    },
  };
}

export type FileService = ReturnType<typeof createFileService>;

// Upload URLs: each request gets a fresh object key `<fileUuid>.<ext>` and an S3 presigned POST
// bound to exactly that key, a size range and an expiry; the key is recorded for the
// organization (status In Progress) before the URL is handed out.
import { v7 as uuidv7 } from 'uuid';
import type { Storage } from '../shared/storage.js';
import { UUID_PATTERN } from '../shared/validation.js';
import { allowedExtension } from './file-type.js';
import { NotFoundError } from '../shared/errors.js';
import type { FileRepository, FileStatus } from './file.repository.js';
import type { PresignResult } from './file.schemas.js';

const UUID_ONLY = new RegExp(`^${UUID_PATTERN}$`);
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
}

export function createFileService(deps: { repo: FileRepository; storage: Storage; policy: UploadPolicy; now?: () => Date }) {
  const { repo, storage, policy } = deps;
  const now = deps.now ?? (() => new Date());
  return {
    /**
     * The status of a file by its UUID or its whole key (`<uuid>.<ext>`). Unknown, malformed
     * and other organizations' files are all a 404.
     */
    async status(orgId: string, uuidOrKey: string): Promise<FileStatus> {
      const uuid = UUID_ONLY.test(uuidOrKey);
      const key = !uuid && UUID_KEY.test(uuidOrKey);
      const status = uuid || key ? await repo.statusOf(orgId, uuid ? { uuid: uuidOrKey } : { key: uuidOrKey }) : undefined;
      if (!status) throw new NotFoundError(`No file ${uuidOrKey}.`);
      return status;
    },

    async issueUploadUrl(orgId: string, req: UploadRequest): Promise<PresignResult> {
      const ext = allowedExtension(req.fileType, policy.allowedFileTypes);
      const uuid = uuidv7();
      const key = `${uuid}.${ext}`;
      const createdAt = now();
      const { url, fields } = await storage.presignUpload(key, policy.maxBytes, policy.ttlSeconds);
      await repo.insert({
        uuid, key, orgId, fileType: ext, originalFileName: req.fileName ?? null, isDocumentPublic: req.isDocumentPublic ?? false,
        expiresAt: new Date(createdAt.getTime() + policy.ttlSeconds * 1000), createdAt,
      });
      return { presignedUrl: url, fields, fileType: req.fileType, key };
    },
  };
}

export type FileService = ReturnType<typeof createFileService>;

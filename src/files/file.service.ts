// Upload URLs: each request gets a fresh object key `<fileUuid>.<ext>` and an S3 presigned POST
// bound to exactly that key, a size range and an expiry; the key is recorded for the
// organization (status In Progress) before the URL is handed out.
import { v7 as uuidv7 } from 'uuid';
import type { Storage } from '../shared/storage.js';
import { allowedExtension } from './file-type.js';
import type { FileRepository } from './file.repository.js';
import type { PresignResult } from './file.schemas.js';

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

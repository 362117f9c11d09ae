// Uploaded files in MariaDB: one row per issued key, filled in by the scan.
import { execute, select, type Sequelize } from '../shared/db/sequelize.js';

export interface NewFile {
  uuid: string;
  key: string;
  orgId: string;
  fileType: string;
  originalFileName: string | null;
  isDocumentPublic: boolean;
  /** When the upload URL stops working. */
  expiresAt: Date;
  createdAt: Date;
}

export const FILE_STATUSES = ['In Progress', 'Clean', 'Infected', 'Error', 'Signed'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];

export function createFileRepository(db: Sequelize) {
  return {
    /** The status of this organization's file by its UUID or its whole key; another organization's is absent. */
    async statusOf(orgId: string, by: { uuid: string } | { key: string }): Promise<FileStatus | undefined> {
      const [row] = 'uuid' in by
        ? await select<{ status: FileStatus }>(db, 'SELECT status FROM files WHERE uuid = $1 AND org_id = $2', [by.uuid, orgId])
        : await select<{ status: FileStatus }>(db, 'SELECT status FROM files WHERE object_key = $1 AND org_id = $2', [by.key, orgId]);
      return row?.status;
    },

    async insert(f: NewFile): Promise<void> {
      await execute(db, `INSERT INTO files (uuid, object_key, org_id, file_type, original_file_name, is_document_public, status, expires_at, created_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, 'In Progress', $7, $8, $8)`,
      [f.uuid, f.key, f.orgId, f.fileType, f.originalFileName, f.isDocumentPublic, f.expiresAt, f.createdAt]);
    },
  };
}

export type FileRepository = ReturnType<typeof createFileRepository>;

// Which documents the public verification may show (issue 27): those uploaded as public
// (`isDocumentPublic: true`) and those uploaded through v1, which has no such flag. Both were
// written is_document_public = 0; from this release files.upload_api says which API version
// asked for the upload URL (1 or 2). Uploads made before it have NULL: they cannot be told apart
// and stay private (a document is never made public by guesswork).
// A nullable column: the previous release's statements run unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0026-upload-api',
  async up({ context: q }) {
    await q('ALTER TABLE files ADD COLUMN upload_api TINYINT NULL');
  },
  async down({ context: q }) {
    await q('ALTER TABLE files DROP COLUMN upload_api');
  },
};

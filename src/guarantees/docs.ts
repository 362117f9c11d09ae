// The documents a guarantee or an amendment names: each key must be a file issued to the
// organization and not Infected or Error; a doc without originalFileName takes the file's.
import { ValidationError, type FieldProblem } from '../shared/errors.js';
import { REJECTED_FILE_STATUSES as REJECTED_STATUSES, type FileStatus } from '../files/file.statuses.js';
import type { FileRepository } from '../files/file.repository.js';
import type { NewDoc } from './guarantee.types.js';

const REJECTED_FILE_STATUSES = new Set<FileStatus>(REJECTED_STATUSES);

/** Checks `docs` (filling originalFileName); each key's checksum (null until scanned). A 400 names every bad doc. */
export async function resolveDocs(files: Pick<FileRepository, 'forDocs'>, orgId: string, docs: NewDoc[]): Promise<Map<string, string | null>> {
  const found = new Map(
    (
      await files.forDocs(
        orgId,
        docs.map((d) => d.key),
      )
    ).map((f) => [f.key, f]),
  );
  const problems: FieldProblem[] = [];
  docs.forEach((doc, i) => {
    const file = found.get(doc.key);
    if (!file) problems.push({ pointer: `#/docs/${i}/key`, detail: 'is not a file key issued to this organization' });
    else if (REJECTED_FILE_STATUSES.has(file.status)) problems.push({ pointer: `#/docs/${i}/key`, detail: `names a file whose status is ${file.status}` });
    else doc.originalFileName ??= file.originalFileName;
  });
  if (problems.length) {
    throw new ValidationError(`Invalid docs: ${problems.map((p) => `${p.pointer.slice(2)} ${p.detail}`).join('; ')}`, problems);
  }
  return new Map([...found.values()].map((f) => [f.key, f.checksum]));
}

/** The answer when a document's file was deleted between the check of its key and the write (an upload never attached, deleted by the retention job). */
export const DOC_GONE = 'A document named was deleted meanwhile (an upload not attached within UNATTACHED_UPLOAD_DAYS is deleted): upload it again.';

// fileType as clients send it (`pdf`, `.PDF`, `pdf.p7m`) against the configured allow-list.
import { ValidationError } from '../shared/errors.js';

/** The extension the object key gets: lower case, without the leading dot. */
export function normalizeFileType(fileType: string): string {
  return fileType.trim().toLowerCase().replace(/^\./, '');
}

/** The normalized extension, or a 400 naming the allowed ones. */
export function allowedExtension(fileType: string, allowed: readonly string[]): string {
  const ext = normalizeFileType(fileType);
  if (!allowed.includes(ext)) {
    throw new ValidationError(`fileType ${JSON.stringify(fileType)} is not accepted; accepted: ${allowed.join(', ')}.`, [
      { pointer: '#/fileType', detail: `is not one of ${allowed.join(', ')}` },
    ]);
  }
  return ext;
}

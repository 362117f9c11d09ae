// The statuses of an uploaded file, owned here: other domains read them through these names,
// never by typing the words out (a guarantee's service and notarization both judge files).
export const FILE_STATUSES = ['In Progress', 'Clean', 'Infected', 'Error', 'Signed'] as const;
export type FileStatus = (typeof FILE_STATUSES)[number];

/** Judged unfit: a guarantee that names such a file is refused, and cannot be notarized. */
export const REJECTED_FILE_STATUSES: readonly FileStatus[] = ['Infected', 'Error'];
/** Judged fit: scanned clean (and, for a public v2 document, its signatures checked). Migration 0022's files.to_retain_since names them too (a test compares). */
export const ACCEPTED_FILE_STATUSES: readonly FileStatus[] = ['Clean', 'Signed'];

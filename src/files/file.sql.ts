// What files lend to other domains' SQL: the join from a document's key to its file, and
// predicates on the file's status. Only src/files/ names the files table
// (scripts/table-owners.ts); a guarantee's read shows its documents' checksums and verdicts
// through these, and notarization waits for the verdicts through them.
import type { FileStatus } from './file.statuses.js';

/** Statuses as an SQL list for `IN (...)`: literals from the constants of file.statuses.ts, never input. */
const sqlStatusList = (statuses: readonly FileStatus[]): string => statuses.map((s) => `'${s}'`).join(', ');

export const FILE_SQL = {
  /** Joins, as `alias`, the file of the document key in column `keyColumn`; LEFT JOIN keeps a document whose file is unknown. */
  ofKey: (alias: string, keyColumn: string, kind: 'JOIN' | 'LEFT JOIN' = 'JOIN') => `${kind} files ${alias} ON ${alias}.object_key = ${keyColumn}`,
  /** The file `alias` has one of `statuses`. */
  statusIn: (alias: string, statuses: readonly FileStatus[]) => `${alias}.status IN (${sqlStatusList(statuses)})`,
  /** The file `alias` has none of `statuses`. */
  statusNotIn: (alias: string, statuses: readonly FileStatus[]) => `${alias}.status NOT IN (${sqlStatusList(statuses)})`,
} as const;

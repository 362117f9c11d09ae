// What files lend to other domains' SQL: the join from a document's key to its file, and
// predicates on the file's status. Only src/files/ names the files table
// (scripts/table-owners.ts); a guarantee's read shows its documents' checksums and verdicts
// through these, and notarization waits for the verdicts through them.
import type { Statement } from '../shared/db/sequelize.js';
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
  /** The file `alias` has no record of an attachment (attachStatement). */
  unrecorded: (alias: string) => `${alias}.attached_at IS NULL`,
  /** The file `alias` may be shown by the public verification: uploaded as public, or through v1 (which has no such flag; migration 0026). */
  shownPublicly: (alias: string) => `(${alias}.is_document_public = 1 OR ${alias}.upload_api <=> 1)`,
} as const;

/**
 * The statement that records the files of `keys` as attached (to a guarantee or an amendment)
 * at `at`, an SQL expression (a session variable of a registration's script) or a time (bound
 * after the keys); only when `when` holds (an SQL condition: the registration took its place).
 * The latest attachment's time is kept: it starts the document's keeping period (Object Lock),
 * so a document attached again later is kept longer (its retention asked again, extended).
 */
export function attachStatement(keys: readonly string[], at: string | Date, when = 'TRUE'): Statement {
  const list = keys.map((_, i) => `$${i + 1}`).join(', ');
  const atSql = typeof at === 'string' ? at : `$${keys.length + 1}`;
  return {
    // retained_until first: MariaDB assigns left to right, and it must compare with the old attached_at.
    sql: `UPDATE files SET retained_until = IF(attached_at IS NULL OR ${atSql} > attached_at, NULL, retained_until),
      attached_at = GREATEST(COALESCE(attached_at, ${atSql}), ${atSql}) WHERE object_key IN (${list}) AND ${when}`,
    bind: typeof at === 'string' ? [...keys] : [...keys, at],
  };
}

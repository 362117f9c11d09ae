// What the audit trail lends to other domains' SQL: the last seq of a chain, read off
// audit_log's primary key. Only src/audit/ names its tables (scripts/table-owners.ts); the
// organizations' repository, which keeps each organization's chain head on its row, heals a
// head left behind with it.

/**
 * The session variable in which a registration's script has its audit row's seq: set by the
 * UPDATE that takes its registry place (orgs' registryPlaceStatements), cleared first by the
 * script (a pooled connection keeps a previous script's variables), read by the row's INSERT.
 */
export const AUDIT_SEQ_VAR = '@audit_seq';

export const AUDIT_SQL = {
  /**
   * The last seq written to the chain named by the SQL expression `chain` (0 for none): one
   * dive into the primary key (chain, seq).
   */
  lastSeqOf: (chain: string) => `(SELECT COALESCE(MAX(seq), 0) FROM audit_log WHERE chain = ${chain})`,
} as const;

// The audit trail's rows and their hash chain (docs/api.md "Audit").
// Each organization's changes are one chain, the changes no organization owns (the CLI's,
// Bull Board's) another, 'system': row n's hash covers its fields and row n - 1's hash, so a row
// changed, removed or moved breaks every hash after it. The same hash is computed in SQL (a
// registration's one-round-trip script appends its row without a round trip more) and here
// (appends in a transaction, and `cli audit verify`), over the same bytes:
//   SHA-256 hex of UTF-8 "audit/v1" followed, for each field in this order, by its length in
//   bytes, ':', the field and ';': prevHash, chain, seq, at (RFC 3339 UTC with milliseconds),
//   orgId ('' for none), actor, action, target, requestId ('' for none), outcome.
// The first row of a chain has prevHash 64 zeros. No field ever holds a secret: the actor of
// an API change is its key's public prefix, never the key.
import { sha256Hex } from '../shared/sha256.js';

export const AUDIT_SCHEMA = 'audit/v1';
export const GENESIS_HASH = '0'.repeat(64);
/** The chain of the changes no organization owns (the CLI's, Bull Board's). */
export const SYSTEM_CHAIN = 'system';

/** A change to record: who, what, on what, and how it ended. */
export interface AuditEntry {
  /** The organization whose data changed; null for the system's. */
  orgId: string | null;
  /** The API key's public prefix (grk_ and 12 characters), `cli`, or the admin user (`admin:<user>`). */
  actor: string;
  /** What was done, as `<domain>.<verb>` (guarantee.create, amendment.record, webhook.register...). */
  action: string;
  /** What it was done to, as `<kind>:<id>` (guarantee:<uuid>). */
  target: string;
  /** The request's X-Request-Id, when it came over HTTP. */
  requestId: string | null;
  /** How it ended (`ok` for a change made). */
  outcome: string;
}

export interface AuditRow extends AuditEntry {
  chain: string;
  seq: number;
  at: Date;
  prevHash: string;
  hash: string;
}

export const chainOf = (orgId: string | null): string => orgId ?? SYSTEM_CHAIN;

const field = (v: string): string => `${Buffer.byteLength(v, 'utf8')}:${v};`;

/** The row's hash (see the header), from its fields and the previous row's hash. */
export function auditHash(r: Omit<AuditRow, 'hash'>): string {
  const parts = [r.prevHash, r.chain, String(r.seq), r.at.toISOString(), r.orgId ?? '', r.actor, r.action, r.target, r.requestId ?? '', r.outcome];
  return sha256Hex(AUDIT_SCHEMA + parts.map(field).join(''));
}

/** A field of the hash in SQL: a string expression (never NULL), or a value known before the statement runs. */
export type AuditSqlField = string | { value: string };

/** A row's fields for auditHashSql, in hash order. */
export interface AuditSqlFields {
  prevHash: AuditSqlField;
  chain: AuditSqlField;
  seq: AuditSqlField;
  iso: AuditSqlField;
  orgId: AuditSqlField;
  actor: AuditSqlField;
  action: AuditSqlField;
  target: AuditSqlField;
  requestId: AuditSqlField;
  outcome: AuditSqlField;
}

/**
 * The same hash as auditHash, as an SQL expression (MariaDB: LENGTH counts bytes). The values
 * known beforehand are framed here, each run of them one parameter bound from `$firstParam` on
 * (`bind`, in order): the expression MariaDB parses and evaluates under a registration's lock is
 * then only what it must compute (the previous hash, the seq, the time, the target).
 */
export function auditHashSql(f: AuditSqlFields, firstParam: number): { sql: string; bind: string[] } {
  const parts: string[] = [];
  const bind: string[] = [];
  let known = AUDIT_SCHEMA;
  const flush = () => {
    if (!known) return;
    bind.push(known);
    parts.push(`$${firstParam + bind.length - 1}`);
    known = '';
  };
  for (const x of [f.prevHash, f.chain, f.seq, f.iso, f.orgId, f.actor, f.action, f.target, f.requestId, f.outcome]) {
    if (typeof x === 'object') known += field(x.value);
    else {
      flush();
      parts.push(`LENGTH(${x}), ':', ${x}, ';'`);
    }
  }
  flush();
  return { sql: `SHA2(CONCAT(${parts.join(', ')}), 256)`, bind };
}

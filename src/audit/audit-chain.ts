// The audit trail's rows and their hash chain (CONTRACT "Records: ... audit", README "Audit").
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

/** SQL expressions of a row's fields (each a string expression, never NULL). */
export interface AuditSqlFields {
  prevHash: string;
  chain: string;
  seq: string;
  iso: string;
  orgId: string;
  actor: string;
  action: string;
  target: string;
  requestId: string;
  outcome: string;
}

/** The same hash as auditHash, as an SQL expression over the fields' expressions (MariaDB: LENGTH counts bytes). */
export function auditHashSql(f: AuditSqlFields): string {
  const parts = [f.prevHash, f.chain, f.seq, f.iso, f.orgId, f.actor, f.action, f.target, f.requestId, f.outcome].map(
    (x) => `CAST(LENGTH(${x}) AS CHAR), ':', ${x}, ';'`,
  );
  return `SHA2(CONCAT('${AUDIT_SCHEMA}', ${parts.join(', ')}), 256)`;
}

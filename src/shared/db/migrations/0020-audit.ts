// The audit trail (issue 17, docs/api.md "Audit"): one append-only, hash-chained row
// per change made through the API, the CLI or Bull Board (src/audit/audit-chain.ts).
// - audit_log: the rows, by chain (an organization's id, or 'system') and seq (1, 2, 3... per
//   chain, dense); never updated, never deleted by the service.
// - audit_heads: each chain's last seq and hash, the row its appenders lock (one at a time per
//   chain: an organization's changes are serialized by it, no one else's).
// New tables only: the previous release runs unchanged.
import type { Migration } from './index.js';

const CHAIN = 'VARCHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';
const HASH = 'CHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0020-audit',
  async up({ context: q }) {
    await q(`CREATE TABLE audit_log (
      chain ${CHAIN} NOT NULL,
      seq BIGINT UNSIGNED NOT NULL,
      at DATETIME(3) NOT NULL,
      org_id CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      actor VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      action VARCHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      target VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      request_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      outcome VARCHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      prev_hash ${HASH} NOT NULL,
      hash ${HASH} NOT NULL,
      PRIMARY KEY (chain, seq)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE audit_heads (
      chain ${CHAIN} NOT NULL PRIMARY KEY,
      seq BIGINT UNSIGNED NOT NULL,
      hash ${HASH} NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE audit_heads');
    await q('DROP TABLE audit_log');
  },
};

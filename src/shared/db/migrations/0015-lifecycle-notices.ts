// The lifecycle check (issue 16), owned by guarantees: `guarantee.expired` and
// `guarantee.claim_overdue` are emitted once each, by a periodic job that looks at the window
// since its last run.
// - guarantee_notices: what was emitted, keyed by guarantee, kind and what it is about (the
//   expiry that passed, as an ISO string; the claim's seq), so that a run repeated after a
//   failure emits nothing twice.
// - lifecycle_checks: up to when each check has looked (one row per check).
// - guarantees gets indexes on expires_at and created_at (the candidates of a window). InnoDB
//   adds them in place, without blocking writes, first (a failure leaves nothing half made);
//   the previous release runs unchanged.
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0015-lifecycle-notices',
  async up({ context: q }) {
    await q('ALTER TABLE guarantees ADD INDEX ix_guarantees_expires (expires_at), ADD INDEX ix_guarantees_created (created_at), ALGORITHM=INPLACE, LOCK=NONE');
    await q(`CREATE TABLE guarantee_notices (
      guarantee_id ${ID} NOT NULL,
      kind ENUM('expired','claim_overdue') NOT NULL,
      ref VARCHAR(32) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (guarantee_id, kind, ref)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE lifecycle_checks (
      name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL PRIMARY KEY,
      checked_until DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE guarantees DROP INDEX ix_guarantees_expires, DROP INDEX ix_guarantees_created');
    await q('DROP TABLE lifecycle_checks');
    await q('DROP TABLE guarantee_notices');
  },
};

// Idempotency claims get an owner token, so that a request whose claim was taken over can
// neither record its response nor release the claim. Organizations keep the createdAt of
// their newest guarantee, so that createdAt strictly increases with registration order
// whatever the clocks of the processes that register. Both additive and nullable: the
// previous release's code runs unchanged against them.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0002-claim-owner-and-created-order',
  async up({ context: q }) {
    await q('ALTER TABLE idempotency_keys ADD COLUMN owner CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL AFTER state');
    // Epoch milliseconds, so that one UPDATE can both advance it and hand it back (LAST_INSERT_ID).
    await q('ALTER TABLE organizations ADD COLUMN last_created_ms BIGINT UNSIGNED NULL AFTER guarantee_count');
    await q("SET time_zone = '+00:00'");
    await q(`UPDATE organizations o SET last_created_ms =
      (SELECT FLOOR(UNIX_TIMESTAMP(MAX(g.created_at)) * 1000) FROM guarantees g WHERE g.org_id = o.id)`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE idempotency_keys DROP COLUMN owner');
    await q('ALTER TABLE organizations DROP COLUMN last_created_ms');
  },
};

// The public verification's lookup key (issue 13): SHA-256 of the exact bytes of the policy
// number and check code, as a virtual column with an index of its own. The earlier index on
// (policy_number, check_code) compared its long case-folding keys with the Unicode collation at
// every step of the seek, a quarter of the lookup's cost in MariaDB (measured); this one
// compares 32 bytes. The key is NULL for a check code under 8 characters, which never matches
// publicly: such a lookup misses in the index like an unknown policy. The length prefix keeps
// ("AB", "C...") and ("A", "BC...") apart.
//
// The virtual column is computed, never written, so the previous release's statements run
// unchanged; it still looks codes up through ix_guarantees_verification, which stays until a
// later release drops it.
import type { Migration } from './index.js';

/** The expression, repeated in JavaScript by verificationKey() (src/guarantees/guarantee.repository.ts). */
const KEY = "IF(CHAR_LENGTH(check_code) >= 8, UNHEX(SHA2(CONCAT(LENGTH(policy_number), ':', policy_number, check_code), 256)), NULL)";

export const migration: Migration = {
  name: '0011-verification-key',
  async up({ context: q }) {
    // MariaDB adds a virtual column in place only alone, then builds its index online.
    await q(`ALTER TABLE guarantees ADD COLUMN verification_key BINARY(32) AS (${KEY}) VIRTUAL, ALGORITHM=INPLACE, LOCK=NONE`);
    await q('ALTER TABLE guarantees ADD KEY ix_guarantees_verification_key (verification_key), ALGORITHM=INPLACE, LOCK=NONE');
  },
  async down({ context: q }) {
    await q('ALTER TABLE guarantees DROP KEY ix_guarantees_verification_key');
    await q('ALTER TABLE guarantees DROP COLUMN verification_key');
  },
};

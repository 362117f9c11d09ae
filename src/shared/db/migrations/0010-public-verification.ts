// Public verification (issue 13).
// - ix_guarantees_verification: a contracting authority's lookup by policy number and check
//   code is one index seek whatever the registry's size. The columns' collation is
//   case-insensitive, so the seek finds a superset and the service compares exactly.
// - verification_counts: the successful verifications of each guarantee, for its issuer.
// - verification_keys: every public key that has signed receipts (the JWKS keeps them after a
//   rotation), and the development key, generated once and sealed under ENCRYPTION_KEY.
// An added index (built online) and new tables only: the previous release runs unchanged.
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0010-public-verification',
  async up({ context: q }) {
    await q('ALTER TABLE guarantees ADD KEY ix_guarantees_verification (policy_number, check_code), ALGORITHM=INPLACE, LOCK=NONE');
    await q(`CREATE TABLE verification_counts (
      guarantee_id ${ID} NOT NULL PRIMARY KEY,
      verifications BIGINT UNSIGNED NOT NULL,
      last_verified_at DATETIME(3) NOT NULL,
      CONSTRAINT fk_verification_counts_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE verification_keys (
      -- RFC 7638 thumbprint of the public key: the receipts' kid.
      kid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL PRIMARY KEY,
      public_jwk VARCHAR(512) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      -- Only the generated development key is kept here (sealed); a production key lives in the environment.
      private_enc VARBINARY(512) NULL,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE verification_keys');
    await q('DROP TABLE verification_counts');
    await q('ALTER TABLE guarantees DROP KEY ix_guarantees_verification');
  },
};

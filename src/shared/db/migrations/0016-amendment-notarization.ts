// Amendments notarized in a chain (issue 16, docs/api.md "A guarantee's life"): each amendment's digest
// covers its canonical form, its guarantee's digest and the previous amendment's digest, and
// joins the same batches as records.
// - guarantee_amendments gets where it stands (notary_state: waiting → batched → done, or
//   blocked, as guarantees), why it is blocked, and its digest once computed (batched, or
//   blocked with its documents settled: the next amendment's link). Columns with defaults:
//   the previous release's code runs unchanged, and the amendments it records start waiting.
// - notarization_amendment_proofs: an amendment's leaf in its batch, with the two digests its
//   own covers (so that a client holding the amendment's JSON can recompute it).
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';
const HASH = 'CHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0016-amendment-notarization',
  async up({ context: q }) {
    await q(`ALTER TABLE guarantee_amendments
      ADD COLUMN notary_state ENUM('waiting','batched','done','blocked') NOT NULL DEFAULT 'waiting',
      ADD COLUMN notarization_reason VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      ADD COLUMN digest ${HASH} NULL,
      ADD KEY ix_guarantee_amendments_notary_state (notary_state)`);
    await q(`CREATE TABLE notarization_amendment_proofs (
      amendment_id ${ID} NOT NULL PRIMARY KEY,
      batch_id BIGINT UNSIGNED NOT NULL,
      leaf_index INT UNSIGNED NOT NULL,
      digest ${HASH} NOT NULL,
      guarantee_digest ${HASH} NOT NULL,
      previous_digest ${HASH} NULL,
      path TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      UNIQUE KEY uq_notarization_amendment_proofs_leaf (batch_id, leaf_index),
      CONSTRAINT fk_notarization_amendment_proofs_amendment FOREIGN KEY (amendment_id) REFERENCES guarantee_amendments (id),
      CONSTRAINT fk_notarization_amendment_proofs_batch FOREIGN KEY (batch_id) REFERENCES notarization_batches (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE IF EXISTS notarization_amendment_proofs');
    await q(`ALTER TABLE guarantee_amendments DROP KEY ix_guarantee_amendments_notary_state, DROP COLUMN digest,
      DROP COLUMN notarization_reason, DROP COLUMN notary_state`);
  },
};

// Notarization: each guarantee's place in the notarization pipeline (`notary_state`; the wire's
// notarizationStatus stays PENDING until the anchor is final), the reason a record is blocked,
// the batches (a Merkle root each, anchored once), each record's proof, and the embedded
// anchor's hash-chained ledger. The added columns have defaults and the rest is new tables:
// the previous release's code runs unchanged, and the guarantees it registers during a
// release start 'waiting' like any other.
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';
const HASH = 'CHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0006-notarization',
  async up({ context: q }) {
    await q(`ALTER TABLE guarantees
      ADD COLUMN notary_state ENUM('waiting','batched','done','blocked') NOT NULL DEFAULT 'waiting',
      ADD COLUMN notarization_reason VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      ADD KEY ix_guarantees_notary_state (notary_state)`);
    await q(`CREATE TABLE notarization_batches (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      anchor_kind VARCHAR(16) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      root ${HASH} NOT NULL,
      size INT UNSIGNED NOT NULL,
      -- sealed: root and proofs written; submitted: the anchor has it (tx_hash); anchored: final, records COMPLETE.
      state ENUM('sealed','submitted','anchored') NOT NULL,
      tx_hash VARCHAR(80) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      -- What the anchor says of it (JSON): the ledger entry, or the chain, block and sender.
      receipt TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
      created_at DATETIME(3) NOT NULL,
      anchored_at DATETIME(3) NULL,
      KEY ix_notarization_batches_state (state)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE notarization_proofs (
      guarantee_id ${ID} NOT NULL PRIMARY KEY,
      batch_id BIGINT UNSIGNED NOT NULL,
      leaf_index INT UNSIGNED NOT NULL,
      digest ${HASH} NOT NULL,
      -- The Merkle path from the leaf to the batch's root (JSON [{side, hash}], leaf first).
      path TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      UNIQUE KEY uq_notarization_proofs_leaf (batch_id, leaf_index),
      CONSTRAINT fk_notarization_proofs_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id),
      CONSTRAINT fk_notarization_proofs_batch FOREIGN KEY (batch_id) REFERENCES notarization_batches (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    // The embedded anchor: append-only, each entry committing to the previous one's hash. The
    // unique prev_hash forbids forks; the unique batch_id, anchoring one batch twice.
    await q(`CREATE TABLE notarization_ledger (
      seq BIGINT UNSIGNED NOT NULL PRIMARY KEY,
      prev_hash ${HASH} NOT NULL,
      entry_hash ${HASH} NOT NULL,
      batch_id BIGINT UNSIGNED NOT NULL,
      root ${HASH} NOT NULL,
      size INT UNSIGNED NOT NULL,
      recorded_at DATETIME(3) NOT NULL,
      UNIQUE KEY uq_notarization_ledger_prev (prev_hash),
      UNIQUE KEY uq_notarization_ledger_entry (entry_hash),
      UNIQUE KEY uq_notarization_ledger_batch (batch_id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    for (const t of ['notarization_ledger', 'notarization_proofs', 'notarization_batches']) await q(`DROP TABLE IF EXISTS ${t}`);
    await q('ALTER TABLE guarantees DROP KEY ix_guarantees_notary_state, DROP COLUMN notarization_reason, DROP COLUMN notary_state');
  },
};

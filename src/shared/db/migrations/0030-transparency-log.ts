// The transparency log (issue 30): one append-only Merkle log of every notarization leaf, every
// audit chain's head and every receipt-key change, published as tiles and signed checkpoints,
// cosigned by witnesses (src/log/).
// - log_sequencer: one row, the sequencer's lease (holder, fencing token, expiry) and the log's
//   size. Every append updates it where the token is still the appender's: a process whose
//   lease was taken over is fenced off, on one server or on a Galera cluster (where GET_LOCK is
//   not replicated and a row is).
// - log_entries: the entries by index, with their leaf hashes (level 0 of the tree).
// - log_hashes: the stored hashes above: level L's hash n is the root of the full subtree of
//   256^L leaves starting at n * 256^L (a full tile's root).
// - log_checkpoints: each signed checkpoint (the note, the registry's signature on it).
// - log_cosignatures: the witnesses' cosignature lines on each checkpoint.
// - log_witnesses: each configured witness's last cosigned size and last answer.
// - log_observed: what of the audit heads and receipt keys the log already holds.
// - log_keys: the log's signing key outside production (sealed under ENCRYPTION_KEY).
// - log_index on both proofs' tables: where each notarization leaf is in the log (NULL: not yet,
//   e.g. a leaf sealed before this release, which the sequencer appends first).
// - verification_keys.retired_at / compromised_since (`cli verification-key retire`).
// - audit_log refuses UPDATE and DELETE (triggers): its rows are never changed by anyone.
// New tables and nullable columns: the previous release runs unchanged (it never updates or
// deletes audit rows either).
import type { Migration } from './index.js';

const HASH = 'BINARY(32)';

/** The triggers that make audit rows append-only (a database administrator can drop them: the log then catches what they did). */
export const AUDIT_GUARDS = [
  `CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log FOR EACH ROW
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit rows are never changed'`,
  `CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log FOR EACH ROW
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'audit rows are never deleted'`,
];
export const DROP_AUDIT_GUARDS = ['DROP TRIGGER IF EXISTS audit_log_no_delete', 'DROP TRIGGER IF EXISTS audit_log_no_update'];

export const migration: Migration = {
  name: '0030-transparency-log',
  async up({ context: q }) {
    await q(`CREATE TABLE log_sequencer (
      id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
      holder VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
      token BIGINT UNSIGNED NOT NULL DEFAULT 0,
      expires_at DATETIME(3) NOT NULL,
      renewals BIGINT UNSIGNED NOT NULL DEFAULT 0,
      size BIGINT UNSIGNED NOT NULL DEFAULT 0
    ) ENGINE=InnoDB`);
    await q(`INSERT INTO log_sequencer (id, expires_at) VALUES (1, '1970-01-02 00:00:00')`);
    await q(`CREATE TABLE log_entries (
      idx BIGINT UNSIGNED NOT NULL PRIMARY KEY,
      entry VARBINARY(1024) NOT NULL,
      leaf_hash ${HASH} NOT NULL,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB`);
    await q(`CREATE TABLE log_hashes (
      level TINYINT UNSIGNED NOT NULL,
      idx BIGINT UNSIGNED NOT NULL,
      hash ${HASH} NOT NULL,
      PRIMARY KEY (level, idx)
    ) ENGINE=InnoDB`);
    await q(`CREATE TABLE log_checkpoints (
      size BIGINT UNSIGNED NOT NULL PRIMARY KEY,
      root ${HASH} NOT NULL,
      note TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE log_cosignatures (
      size BIGINT UNSIGNED NOT NULL,
      witness VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      line VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      PRIMARY KEY (size, witness)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE log_witnesses (
      vkey VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
      size BIGINT UNSIGNED NULL,
      last_ok_at DATETIME(3) NULL,
      last_try_at DATETIME(3) NULL,
      last_error VARCHAR(500) NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE log_observed (
      subject VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      state VARCHAR(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
    ) ENGINE=InnoDB`);
    await q(`CREATE TABLE log_keys (
      name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
      private_enc VARBINARY(512) NOT NULL,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q('ALTER TABLE notarization_proofs ADD COLUMN log_index BIGINT UNSIGNED NULL, ADD KEY ix_notarization_proofs_log (log_index)');
    await q('ALTER TABLE notarization_amendment_proofs ADD COLUMN log_index BIGINT UNSIGNED NULL, ADD KEY ix_notarization_amendment_proofs_log (log_index)');
    await q('ALTER TABLE verification_keys ADD COLUMN retired_at DATETIME(3) NULL, ADD COLUMN compromised_since DATETIME(3) NULL');
    for (const sql of AUDIT_GUARDS) await q(sql);
  },
  async down({ context: q }) {
    for (const sql of DROP_AUDIT_GUARDS) await q(sql);
    await q('ALTER TABLE verification_keys DROP COLUMN compromised_since, DROP COLUMN retired_at');
    await q('ALTER TABLE notarization_amendment_proofs DROP KEY ix_notarization_amendment_proofs_log, DROP COLUMN log_index');
    await q('ALTER TABLE notarization_proofs DROP KEY ix_notarization_proofs_log, DROP COLUMN log_index');
    for (const t of ['log_keys', 'log_observed', 'log_witnesses', 'log_cosignatures', 'log_checkpoints', 'log_hashes', 'log_entries', 'log_sequencer'])
      await q(`DROP TABLE ${t}`);
  },
};

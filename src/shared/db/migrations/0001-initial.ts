// Organizations, API keys, files (filled by the upload endpoints), guarantees with their docs,
// and idempotency records. Dates are DATETIME(3) in UTC, money DECIMAL(15,2), identifiers
// compared exactly: binary NO PAD collations, since MariaDB's plain _bin ones ignore
// trailing spaces ('abc ' = 'abc').
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';
const KEY = 'VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin';
const TEXT255 = 'VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci';
const ACT = "ENUM('BAIL_ACT','POST_SALE','OTHER')";

export const migration: Migration = {
  name: '0001-initial',
  async up({ context: q }) {
    await q(`CREATE TABLE organizations (
      id ${ID} NOT NULL PRIMARY KEY,
      name ${TEXT255} NOT NULL,
      -- Guarantees registered so far: totalItems, and the next guarantee's sequence number.
      guarantee_count BIGINT UNSIGNED NOT NULL DEFAULT 0,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE api_keys (
      id ${ID} NOT NULL PRIMARY KEY,
      org_id ${ID} NOT NULL,
      prefix VARCHAR(32) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      key_hash BINARY(32) NOT NULL,
      created_at DATETIME(3) NOT NULL,
      revoked_at DATETIME(3) NULL,
      UNIQUE KEY uq_api_keys_prefix (prefix),
      KEY ix_api_keys_org (org_id),
      CONSTRAINT fk_api_keys_org FOREIGN KEY (org_id) REFERENCES organizations (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE files (
      uuid ${ID} NOT NULL PRIMARY KEY,
      object_key ${KEY} NOT NULL,
      org_id ${ID} NOT NULL,
      file_type VARCHAR(32) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      original_file_name ${TEXT255} NULL,
      is_document_public TINYINT(1) NOT NULL DEFAULT 0,
      status ENUM('In Progress','Clean','Infected','Error','Signed') NOT NULL DEFAULT 'In Progress',
      size BIGINT UNSIGNED NULL,
      checksum CHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      expires_at DATETIME(3) NOT NULL,
      created_at DATETIME(3) NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      UNIQUE KEY uq_files_object_key (object_key),
      KEY ix_files_org (org_id, created_at),
      CONSTRAINT fk_files_org FOREIGN KEY (org_id) REFERENCES organizations (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE guarantees (
      id ${ID} NOT NULL PRIMARY KEY,
      org_id ${ID} NOT NULL,
      -- 1, 2, 3... per organization, in registration order, without gaps (the counter
      -- lives on the organization row and rolls back with a failed insert). The registry is
      -- append-only, so page N of the newest-first list is a seq range: an index seek.
      seq BIGINT UNSIGNED NOT NULL,
      transaction_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
      policy_number ${TEXT255} NULL,
      act_type ${ACT} NULL,
      check_code ${TEXT255} NULL,
      emitted_at DATETIME(3) NULL,
      effective_at DATETIME(3) NULL,
      expires_at DATETIME(3) NULL,
      is_fixed_expiry TINYINT(1) NULL,
      cig ${TEXT255} NULL,
      batch_code ${TEXT255} NULL,
      garanted_amount DECIMAL(15,2) NULL,
      contract_amount DECIMAL(15,2) NULL,
      is_automatic_renewal TINYINT(1) NULL,
      note_shared TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL,
      sign_emission_at DATETIME(3) NULL,
      tx_hash VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      notarization_status ENUM('PENDING','COMPLETE') NULL,
      -- SHA-256 of the canonical create request: tells a retry from a conflicting reuse of transactionId.
      request_hash BINARY(32) NOT NULL,
      created_at DATETIME(3) NOT NULL,
      UNIQUE KEY uq_guarantees_org_seq (org_id, seq),
      UNIQUE KEY uq_guarantees_org_transaction (org_id, transaction_id),
      CONSTRAINT fk_guarantees_org FOREIGN KEY (org_id) REFERENCES organizations (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE guarantee_docs (
      guarantee_id ${ID} NOT NULL,
      position SMALLINT UNSIGNED NOT NULL,
      type ${ACT} NULL,
      file_key ${KEY} NOT NULL,
      original_file_name ${TEXT255} NULL,
      notarized_at DATETIME(3) NULL,
      PRIMARY KEY (guarantee_id, position),
      KEY ix_guarantee_docs_file (file_key),
      CONSTRAINT fk_guarantee_docs_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id),
      CONSTRAINT fk_guarantee_docs_file FOREIGN KEY (file_key) REFERENCES files (object_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE idempotency_keys (
      org_id ${ID} NOT NULL,
      idem_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
      request_hash BINARY(32) NOT NULL,
      state ENUM('running','done') NOT NULL,
      response_status SMALLINT UNSIGNED NULL,
      response_body MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NULL,
      -- A 'running' row whose owner died is taken over after this time.
      locked_until DATETIME(3) NOT NULL,
      created_at DATETIME(3) NOT NULL,
      expires_at DATETIME(3) NOT NULL,
      PRIMARY KEY (org_id, idem_key),
      KEY ix_idempotency_expires (expires_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    for (const t of ['idempotency_keys', 'guarantee_docs', 'guarantees', 'files', 'api_keys', 'organizations']) {
      await q(`DROP TABLE IF EXISTS ${t}`);
    }
  },
};

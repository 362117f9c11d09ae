// Amendments (issue 16), owned by guarantees: what happens to a guarantee after its
// registration, as an append-only chain per guarantee (docs/api.md "A guarantee's life"). The registration
// row never changes; the current state is folded from its amendments.
// - seq: 1, 2, 3... per guarantee, dense (the writer holds the guarantee's row lock; the
//   unique key is the backstop).
// - The amounts and the expiry are those of the amendment's type (null otherwise).
// - guarantee_amendment_docs: its documents, each linked to its file as a guarantee's are
//   (the checksum is read from the file: a doc named while its scan runs gets it once scanned).
// New table only: the previous release runs unchanged.
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0014-amendments',
  async up({ context: q }) {
    await q(`CREATE TABLE guarantee_amendments (
      id ${ID} NOT NULL PRIMARY KEY,
      guarantee_id ${ID} NOT NULL,
      org_id ${ID} NOT NULL,
      seq INT UNSIGNED NOT NULL,
      type ENUM('EXTENSION','AMOUNT_CHANGE','PARTIAL_RELEASE','RELEASE','CLAIM','CLAIM_SETTLED','CLAIM_REJECTED','CANCELLATION') NOT NULL,
      effective_at DATETIME(3) NOT NULL,
      expires_at DATETIME(3) NULL,
      garanted_amount DECIMAL(15,2) NULL,
      claimed_amount DECIMAL(15,2) NULL,
      paid_amount DECIMAL(15,2) NULL,
      reason TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      created_at DATETIME(3) NOT NULL,
      notarization_status ENUM('PENDING','COMPLETE') NOT NULL DEFAULT 'PENDING',
      tx_hash VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      UNIQUE KEY uq_guarantee_amendments_seq (guarantee_id, seq),
      -- The lifecycle check's candidates: extensions by their expiry, claims by their date, all by when written.
      KEY ix_guarantee_amendments_expiry (type, expires_at),
      KEY ix_guarantee_amendments_effective (type, effective_at),
      KEY ix_guarantee_amendments_created (created_at),
      CONSTRAINT fk_guarantee_amendments_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE guarantee_amendment_docs (
      amendment_id ${ID} NOT NULL,
      position SMALLINT UNSIGNED NOT NULL,
      type ENUM('BAIL_ACT','POST_SALE','OTHER') NULL,
      file_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      original_file_name VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      PRIMARY KEY (amendment_id, position),
      KEY ix_guarantee_amendment_docs_file (file_key),
      CONSTRAINT fk_guarantee_amendment_docs_amendment FOREIGN KEY (amendment_id) REFERENCES guarantee_amendments (id),
      CONSTRAINT fk_guarantee_amendment_docs_file FOREIGN KEY (file_key) REFERENCES files (object_key)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE guarantee_amendment_docs');
    await q('DROP TABLE guarantee_amendments');
  },
};

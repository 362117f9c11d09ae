// EU trusted lists (issue 14), owned by files/trust: `cli trust import` fills them, the
// signature worker reads them beside SIGNATURE_TRUST_STORE.
// - trusted_lists: the list imported for each territory (one at a time; a newer replaces it).
//   A removed list keeps its row (removed_at set): its sequence number still refuses an older
//   list replayed after the removal.
// - trust_services: its qualified CA and timestamping services, each with its status history
//   (the current status included), certificates (base64 DER) and AdditionalServiceInformation
//   URIs, as JSON text.
// New tables only: the previous release runs unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0013-trusted-lists',
  async up({ context: q }) {
    await q(`CREATE TABLE trusted_lists (
      territory CHAR(2) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      list_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      sequence_number INT UNSIGNED NOT NULL,
      issued_at DATETIME(3) NOT NULL,
      next_update DATETIME(3) NULL,
      -- SHA-256 of the canonical bytes the list's signature covers.
      sha256 BINARY(32) NOT NULL,
      imported_at DATETIME(3) NOT NULL,
      removed_at DATETIME(3) NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE trust_services (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      territory CHAR(2) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      service_type VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      provider TEXT NOT NULL,
      name TEXT NOT NULL,
      history MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      certificates MEDIUMTEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      uses TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      KEY ix_trust_services_territory (territory),
      CONSTRAINT fk_trust_services_list FOREIGN KEY (territory) REFERENCES trusted_lists (territory) ON DELETE CASCADE
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE trust_services');
    await q('DROP TABLE trusted_lists');
  },
};

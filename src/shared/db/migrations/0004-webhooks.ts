// Webhooks: the endpoints an organization registers (secrets encrypted), the events written in
// the same transaction as the change that causes them (the outbox: `dispatched_at` is set
// once the relay has handed an event to the delivery queue), one delivery per event and
// endpoint (the authority on whether it is still due), and every attempt made. New tables
// only: the previous release's code runs unchanged.
import type { Migration } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0004-webhooks',
  async up({ context: q }) {
    await q(`CREATE TABLE webhook_endpoints (
      id ${ID} NOT NULL PRIMARY KEY,
      org_id ${ID} NOT NULL,
      -- The WHATWG-normalized URL, and its SHA-256 for the uniqueness check (a 2048-character
      -- column is too long to index).
      url VARCHAR(2048) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
      url_hash BINARY(32) NOT NULL,
      secret_enc VARBINARY(255) NOT NULL,
      previous_secret_enc VARBINARY(255) NULL,
      previous_secret_until DATETIME(3) NULL,
      status ENUM('active','disabled') NOT NULL DEFAULT 'active',
      disabled_reason VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      -- Set by the first failed attempt after a success; an endpoint failing for long enough is disabled.
      failing_since DATETIME(3) NULL,
      created_at DATETIME(3) NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      UNIQUE KEY uq_webhook_endpoints_url (org_id, url_hash),
      CONSTRAINT fk_webhook_endpoints_org FOREIGN KEY (org_id) REFERENCES organizations (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE webhook_events (
      id ${ID} NOT NULL PRIMARY KEY,
      org_id ${ID} NOT NULL,
      type VARCHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      -- The body exactly as it is signed and sent.
      body MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      dispatched_at DATETIME(3) NULL,
      KEY ix_webhook_events_undispatched (dispatched_at, id),
      KEY ix_webhook_events_org (org_id, created_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE webhook_deliveries (
      event_id ${ID} NOT NULL,
      endpoint_id ${ID} NOT NULL,
      org_id ${ID} NOT NULL,
      status ENUM('pending','succeeded','failed') NOT NULL DEFAULT 'pending',
      attempts INT UNSIGNED NOT NULL DEFAULT 0,
      -- Each replay queues a new job for the same delivery.
      replays INT UNSIGNED NOT NULL DEFAULT 0,
      last_error VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      created_at DATETIME(3) NOT NULL,
      updated_at DATETIME(3) NOT NULL,
      PRIMARY KEY (event_id, endpoint_id),
      KEY ix_webhook_deliveries_endpoint (endpoint_id, status, created_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE webhook_attempts (
      id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
      event_id ${ID} NOT NULL,
      endpoint_id ${ID} NOT NULL,
      attempted_at DATETIME(3) NOT NULL,
      duration_ms INT UNSIGNED NOT NULL,
      status_code SMALLINT UNSIGNED NULL,
      error VARCHAR(500) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL,
      succeeded TINYINT(1) NOT NULL,
      KEY ix_webhook_attempts_endpoint (endpoint_id, id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE webhook_attempts');
    await q('DROP TABLE webhook_deliveries');
    await q('DROP TABLE webhook_events');
    await q('DROP TABLE webhook_endpoints');
  },
};

// The EVM anchor: its signing key, sealed under ENCRYPTION_KEY (one per anchor kind), and every
// transaction it signs, written before it is broadcast (the write-ahead that makes a worker
// dying mid-send harmless: the next cycle finds the signed transaction and broadcasts the same
// bytes again, never a second transaction for a batch). New tables only: the previous
// release's code runs unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0007-evm-anchor',
  async up({ context: q }) {
    await q(`CREATE TABLE anchor_keys (
      kind VARCHAR(16) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL PRIMARY KEY,
      address VARCHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      key_enc VARBINARY(255) NOT NULL,
      created_at DATETIME(3) NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE evm_transactions (
      batch_id BIGINT UNSIGNED NOT NULL PRIMARY KEY,
      chain_id BIGINT UNSIGNED NOT NULL,
      from_address CHAR(42) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      nonce BIGINT UNSIGNED NOT NULL,
      tx_hash CHAR(66) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      raw_tx TEXT CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      -- One transaction per nonce of a sender: a nonce can never be handed out twice.
      UNIQUE KEY uq_evm_transactions_nonce (chain_id, from_address, nonce),
      UNIQUE KEY uq_evm_transactions_hash (tx_hash),
      CONSTRAINT fk_evm_transactions_batch FOREIGN KEY (batch_id) REFERENCES notarization_batches (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE IF EXISTS evm_transactions');
    await q('DROP TABLE IF EXISTS anchor_keys');
  },
};

// The anchors' signing keys, sealed under ENCRYPTION_KEY (src/shared/secrets.ts) in the
// database: never in the environment, a file or a log. Set with `cli evm set-key` (the key
// read from standard input); re-sealed by `cli secrets reencrypt` after a key rotation.
import { execute, select, type Sequelize } from '../shared/db/sequelize.js';
import { ValidationError } from '../shared/errors.js';
import { SecretContext, type SecretBox } from '../shared/secrets.js';

export function createAnchorKeys(db: Sequelize, box: SecretBox) {
  return {
    /** Stores (or replaces) the EVM anchor's private key; returns its address. */
    async setEvmKey(privateKey: string): Promise<string> {
      const hex = privateKey.trim();
      if (!/^(0x)?[0-9a-fA-F]{64}$/.test(hex)) throw new ValidationError('an EVM private key is 32 bytes in hex (64 digits, 0x optional)');
      // ethers, loaded here: every process opens this repository, one command sets the key.
      const { Wallet } = await import('ethers');
      const wallet = new Wallet(hex.startsWith('0x') ? hex : `0x${hex}`);
      await execute(
        db,
        `INSERT INTO anchor_keys (kind, address, key_enc, created_at) VALUES ('evm', $1, $2, $3)
        ON DUPLICATE KEY UPDATE address = VALUES(address), key_enc = VALUES(key_enc), created_at = VALUES(created_at)`,
        [wallet.address, box.seal(wallet.privateKey, SecretContext.anchorKey('evm')), new Date()],
      );
      return wallet.address;
    },

    /** The EVM anchor's key, opened; undefined when none was set. */
    async evmKey(): Promise<{ address: string; privateKey: string } | undefined> {
      const [row] = await select<{ address: string; key_enc: Buffer }>(db, "SELECT address, key_enc FROM anchor_keys WHERE kind = 'evm'", []);
      return row && { address: row.address, privateKey: box.open(row.key_enc, SecretContext.anchorKey('evm')) };
    },

    /** The EVM anchor's address (no key opened): the sender its proofs must name. */
    async evmAddress(): Promise<string | undefined> {
      const [row] = await select<{ address: string }>(db, "SELECT address FROM anchor_keys WHERE kind = 'evm'", []);
      return row?.address;
    },

    /** Re-seals every key under the first ENCRYPTION_KEY, bound to its kind; how many were re-sealed. */
    async reseal(): Promise<number> {
      let n = 0;
      for (const row of await select<{ kind: string; key_enc: Buffer }>(db, 'SELECT kind, key_enc FROM anchor_keys', [])) {
        if (box.isCurrent(row.key_enc)) continue;
        await execute(db, 'UPDATE anchor_keys SET key_enc = $2 WHERE kind = $1', [
          row.kind,
          box.seal(box.open(row.key_enc, SecretContext.anchorKey(row.kind)), SecretContext.anchorKey(row.kind)),
        ]);
        n++;
      }
      return n;
    },
  };
}

export type AnchorKeys = ReturnType<typeof createAnchorKeys>;

// Secrets at rest (webhook signing secrets, the EVM anchor's key): AES-256-GCM under
// ENCRYPTION_KEY. The first key encrypts; every listed key decrypts, chosen by the 4-byte id
// stored with the ciphertext, so a key can be rotated by putting the new one first and
// re-encrypting (`npm run -s cli -- secrets reencrypt`) before the old one is removed.
// Each secret is bound to what it is the secret of (its purpose and row, e.g.
// `webhook-secret:<endpointId>`) as AES-GCM associated data: a sealed value copied into
// another row, or another purpose's column, does not open.
// Layout: version (1) | key id (4) | IV (12) | tag (16) | ciphertext. Version 2 is bound;
// version 1 (before binding) opens without a context until `release` re-seals it.
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const UNBOUND = 1;
const VERSION = 2;
const HEADER = 1 + 4 + 12 + 16;

export class SecretDecryptionError extends Error {
  override readonly name = 'SecretDecryptionError';
}

function keyId(key: Buffer): Buffer {
  return createHash('sha256').update(key).digest().subarray(0, 4);
}

/** What each kind of sealed secret is bound to. */
export const SecretContext = {
  webhook: (endpointId: string) => `webhook-secret:${endpointId}`,
  anchorKey: (kind: string) => `anchor-key:${kind}`,
  verificationKey: (kid: string) => `verification-key:${kid}`,
};

export interface SecretBox {
  /** Seals `plaintext` as the secret of `context` (SecretContext). */
  seal(plaintext: string, context: string): Buffer;
  /** Opens a secret sealed for `context`; throws SecretDecryptionError for any other. */
  open(sealed: Buffer, context: string): string;
  /** Whether `sealed` is bound and under the current (first) key already. */
  isCurrent(sealed: Buffer): boolean;
}

export function createSecretBox(keys: readonly Buffer[]): SecretBox {
  const [current] = keys;
  if (!current || keys.some((k) => k.length !== 32)) throw new Error('ENCRYPTION_KEY must list 32-byte keys');
  const byId = new Map(keys.map((k) => [keyId(k).toString('hex'), k]));
  const currentId = keyId(current);
  return {
    seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return Buffer.concat([Buffer.from([VERSION]), currentId, iv, cipher.getAuthTag(), body]);
    },
    open(sealed, context) {
      if (sealed.length < HEADER || (sealed[0] !== VERSION && sealed[0] !== UNBOUND)) throw new SecretDecryptionError('not a sealed secret');
      const key = byId.get(sealed.subarray(1, 5).toString('hex'));
      if (!key) throw new SecretDecryptionError('sealed under a key that ENCRYPTION_KEY no longer lists');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(5, 17));
        if (sealed[0] === VERSION) decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(sealed.subarray(17, HEADER));
        return Buffer.concat([decipher.update(sealed.subarray(HEADER)), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretDecryptionError('sealed secret failed authentication (another key, another row, or altered)');
      }
    },
    isCurrent(sealed) {
      return sealed.length >= HEADER && sealed[0] === VERSION && sealed.subarray(1, 5).equals(currentId);
    },
  };
}

/** Compares a presented secret (token, password) with the expected one in constant time, whatever their lengths. */
export function sameSecret(presented: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(presented).digest(), createHash('sha256').update(expected).digest());
}

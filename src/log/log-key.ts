// The log's signing key and name. LOG_SIGNING_KEY in production; elsewhere a key generated once
// and kept in the database sealed under ENCRYPTION_KEY, as the receipts' development key is.
// The name (LOG_ORIGIN, by default the public URL's host and path and "/log") is the
// checkpoints' origin line and the key's name in its verifier key.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Config } from '../../config/index.js';
import type { SecretBox } from '../shared/secrets.js';
import type { LogRepository } from './log.repository.js';
import { ed25519Signer, verifierKey, type Signer } from './note.js';

const context = (origin: string) => `log-key:${origin}`;

/** The log's name: LOG_ORIGIN, or derived from PUBLIC_BASE_URL. */
export function logOrigin(config: Pick<Config, 'LOG_ORIGIN' | 'PUBLIC_BASE_URL'>): string {
  if (config.LOG_ORIGIN) return config.LOG_ORIGIN;
  if (!config.PUBLIC_BASE_URL) return 'guarantee-registry.localhost/log';
  const u = new URL(config.PUBLIC_BASE_URL);
  return `${u.host}${u.pathname.replace(/\/$/, '')}/log`;
}

export async function openLogKey(
  config: Pick<Config, 'LOG_ORIGIN' | 'PUBLIC_BASE_URL' | 'LOG_SIGNING_KEY'>,
  repo: Pick<LogRepository, 'sealedKey' | 'putSealedKey'>,
  box: SecretBox,
): Promise<{ origin: string; signer: Signer; verifierKey: string }> {
  const origin = logOrigin(config);
  let key: KeyObject | undefined = config.LOG_SIGNING_KEY;
  if (!key) {
    let sealed = await repo.sealedKey(origin);
    if (!sealed) {
      const made = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
      await repo.putSealedKey(origin, box.seal(made, context(origin)));
      // Two processes starting at once: the first one's key stays, both read it.
      sealed = await repo.sealedKey(origin);
      if (!sealed) throw new Error("the log's generated key was not kept");
    }
    key = createPrivateKey({ key: box.open(sealed, context(origin)), format: 'pem' });
  }
  return { origin, signer: ed25519Signer(origin, key), verifierKey: verifierKey(origin, key) };
}

// The application settings of a local run (dev, test or bench profile): everything that is
// not a server address. Secrets are made once per profile and kept under .data/<profile>/.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { context, type Profile } from './services/index.js';

function secret(profile: Profile, name: string, make: () => string): string {
  const dir = context(profile).dataDir;
  const file = join(dir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dir, { recursive: true });
  const value = make();
  writeFileSync(file, value, { mode: 0o600 });
  return value;
}

export function localAppEnv(profile: Profile): Record<string, string> {
  return {
    NODE_ENV: profile === 'dev' ? 'development' : profile === 'test' ? 'test' : 'production',
    ENCRYPTION_KEY: secret(profile, 'encryption.key', () => randomBytes(32).toString('base64')),
    ADMIN_USER: 'admin',
    ADMIN_PASSWORD: secret(profile, 'admin-password', () => randomBytes(12).toString('base64url')),
    // Local webhook receivers listen on loopback.
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    UPLOAD_CORS_ORIGINS: 'http://localhost:3000,http://127.0.0.1:3000',
    // npm start's radosgw pushes upload events to npm start's API (tests set up their own).
    ...(profile === 'dev' && { STORAGE_EVENTS_URL: `http://127.0.0.1:${process.env.PORT || 3000}` }),
    // The bench runs as production does, which needs the receipts' key and the public URL set.
    ...(profile === 'bench' && {
      VERIFICATION_SIGNING_KEY: secret(
        profile,
        'verification-signing-key.pem',
        () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
      ),
      LOG_SIGNING_KEY: secret(
        profile,
        'log-signing-key.pem',
        () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
      ),
      PUBLIC_BASE_URL: `http://127.0.0.1:${process.env.PORT || 3000}`,
    }),
  };
}

/**
 * Fills process.env for a local run: the local servers' addresses and the settings above,
 * without overriding anything the user set.
 */
export function applyEnv(...layers: Array<Record<string, string>>): void {
  for (const layer of layers) {
    for (const [k, v] of Object.entries(layer)) if (process.env[k] === undefined || process.env[k] === '') process.env[k] = v;
  }
}

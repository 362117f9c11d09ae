// The keys that sign verification receipts (Ed25519). The current key comes from
// VERIFICATION_SIGNING_KEY (PKCS#8 PEM, or a private JWK) or, outside production, is generated
// once and kept in the database sealed under ENCRYPTION_KEY. Every public key that ever signed
// is recorded, so that the JWKS still checks the receipts of a rotated-out key.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import { execute, select, type Sequelize } from '../shared/db/sequelize.js';
import { SecretContext, type SecretBox } from '../shared/secrets.js';

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

/** The published form of a public key: what /.well-known/jwks.json lists. */
export interface PublicJwk extends JWK {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
  /** Once retired: since when it signs nothing. */
  retiredAt?: string;
  /** Once known to have leaked: from when on its signatures prove nothing. */
  compromisedSince?: string;
}

async function publicJwkOf(privateKey: KeyObject): Promise<PublicJwk> {
  const { x } = createPublicKey(privateKey).export({ format: 'jwk' });
  const base = { kty: 'OKP' as const, crv: 'Ed25519' as const, x: x as string };
  // jose, loaded here: every process opens these keys' repository, few of them sign (a CLI command's start).
  const { calculateJwkThumbprint } = await import('jose');
  return { ...base, kid: await calculateJwkThumbprint(base, 'sha256'), alg: 'EdDSA', use: 'sig' };
}

/** The configured receipt key was retired (`cli verification-key retire`): it signs nothing more. */
export class RetiredKeyError extends Error {
  override readonly name = 'RetiredKeyError';
}

export function createSigningKeys(db: Sequelize, box: SecretBox) {
  async function record(jwk: PublicJwk, sealed: Buffer | null): Promise<void> {
    await execute(db, 'INSERT IGNORE INTO verification_keys (kid, public_jwk, private_enc, created_at) VALUES ($1, $2, $3, $4)', [
      jwk.kid,
      JSON.stringify(jwk),
      sealed,
      new Date(),
    ]);
  }

  /** The oldest generated key: every process of a development setup signs with the same one. */
  async function generated(): Promise<SigningKey | undefined> {
    const [row] = await select<{ kid: string; private_enc: Buffer }>(
      db,
      'SELECT kid, private_enc FROM verification_keys WHERE private_enc IS NOT NULL AND retired_at IS NULL ORDER BY created_at, kid LIMIT 1',
      [],
    );
    return row && { kid: row.kid, privateKey: createPrivateKey({ key: box.open(row.private_enc, SecretContext.verificationKey(row.kid)), format: 'pem' }) };
  }

  return {
    /**
     * The key to sign with: `configured` (VERIFICATION_SIGNING_KEY) when given, its public key
     * recorded for the JWKS; otherwise the development key, generated on first use.
     */
    async current(configured: KeyObject | undefined): Promise<SigningKey> {
      if (configured) {
        const jwk = await publicJwkOf(configured);
        await record(jwk, null);
        const [row] = await select<{ retired_at: Date | null }>(db, 'SELECT retired_at FROM verification_keys WHERE kid = $1', [jwk.kid]);
        // A retired key signs nothing more: the operator configures the next one first, then retires this one.
        if (row?.retired_at) throw new RetiredKeyError(`VERIFICATION_SIGNING_KEY (kid ${jwk.kid}) was retired: configure a new key`);
        return { kid: jwk.kid, privateKey: configured };
      }
      const existing = await generated();
      if (existing) return existing;
      const { privateKey } = generateKeyPairSync('ed25519');
      const jwk = await publicJwkOf(privateKey);
      await record(jwk, box.seal(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string, SecretContext.verificationKey(jwk.kid)));
      // Two processes starting at once may both generate: both then take the oldest.
      return (await generated()) as SigningKey;
    },

    /**
     * Every public key that has signed receipts, oldest first; a retired one says since when
     * (`retiredAt`) and, if it leaked, since when its signatures prove nothing (`compromisedSince`).
     */
    async publicKeys(): Promise<PublicJwk[]> {
      const rows = await select<{ public_jwk: string; retired_at: Date | null; compromised_since: Date | null }>(
        db,
        'SELECT public_jwk, retired_at, compromised_since FROM verification_keys ORDER BY created_at, kid',
        [],
      );
      return rows.map((r) => ({
        ...(JSON.parse(r.public_jwk) as PublicJwk),
        ...(r.retired_at && { retiredAt: r.retired_at.toISOString() }),
        ...(r.compromised_since && { compromisedSince: r.compromised_since.toISOString() }),
      }));
    },

    /**
     * Retires key `kid` as of `at` (it signs nothing more) and, when it leaked, marks its
     * signatures from `compromisedSince` on as worthless. Asking again may add or move the
     * compromise time; the retirement keeps its first date. False when there is no such key.
     */
    async retire(kid: string, at: Date, compromisedSince: Date | null): Promise<boolean> {
      const [row] = await select<{ kid: string }>(db, 'SELECT kid FROM verification_keys WHERE kid = $1', [kid]);
      if (!row) return false;
      await execute(
        db,
        'UPDATE verification_keys SET retired_at = COALESCE(retired_at, $2), compromised_since = COALESCE($3, compromised_since) WHERE kid = $1',
        [kid, at, compromisedSince],
      );
      return true;
    },

    /** Every key with its public key and, once retired, when (and since when it is held compromised). */
    async states(): Promise<Array<{ kid: string; x: string; retiredAt: Date | null; compromisedSince: Date | null }>> {
      const rows = await select<{ kid: string; public_jwk: string; retired_at: Date | null; compromised_since: Date | null }>(
        db,
        'SELECT kid, public_jwk, retired_at, compromised_since FROM verification_keys ORDER BY created_at, kid',
        [],
      );
      return rows.map((r) => ({ kid: r.kid, x: (JSON.parse(r.public_jwk) as PublicJwk).x, retiredAt: r.retired_at, compromisedSince: r.compromised_since }));
    },

    /** Re-seals generated keys under the first ENCRYPTION_KEY; how many were re-sealed. */
    async reseal(): Promise<number> {
      let n = 0;
      for (const row of await select<{ kid: string; private_enc: Buffer }>(
        db,
        'SELECT kid, private_enc FROM verification_keys WHERE private_enc IS NOT NULL',
        [],
      )) {
        if (box.isCurrent(row.private_enc)) continue;
        const context = SecretContext.verificationKey(row.kid);
        await execute(db, 'UPDATE verification_keys SET private_enc = $2 WHERE kid = $1', [row.kid, box.seal(box.open(row.private_enc, context), context)]);
        n++;
      }
      return n;
    },
  };
}

export type SigningKeys = ReturnType<typeof createSigningKeys>;

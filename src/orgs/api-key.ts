// API keys: `grk_` + 12 random characters (the public prefix, stored and shown) + `_` + 32
// random bytes in base64url (the secret). Only SHA-256 of the whole key is stored: with 256
// bits of entropy a slow hash adds nothing, and the lookup stays one indexed read.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const PREFIX_RANDOM_CHARS = 12;
const KEY_PATTERN = /^(grk_[a-km-zA-HJ-NP-Z2-9]{12})_[A-Za-z0-9_-]{43}$/;

export interface NewApiKey {
  /** The whole key: shown once, never stored. */
  key: string;
  /** Public, unique identifier of the key (`grk_xxxxxxxxxxxx`): logged, used to revoke. */
  prefix: string;
  hash: Buffer;
}

function randomChars(n: number): string {
  // Rejection sampling keeps every character equally likely.
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      if (b < 256 - (256 % ALPHABET.length)) out += ALPHABET[b % ALPHABET.length];
      if (out.length === n) break;
    }
  }
  return out;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export function generateApiKey(): NewApiKey {
  const prefix = `grk_${randomChars(PREFIX_RANDOM_CHARS)}`;
  const key = `${prefix}_${randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: hashApiKey(key) };
}

/** The prefix of a well-formed key, or undefined for anything else. */
export function apiKeyPrefix(key: string): string | undefined {
  return KEY_PATTERN.exec(key)?.[1];
}

/** Constant-time comparison of a presented key with a stored hash. */
export function apiKeyMatches(key: string, storedHash: Buffer): boolean {
  const presented = hashApiKey(key);
  return storedHash.length === presented.length && timingSafeEqual(presented, storedHash);
}

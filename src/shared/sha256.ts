// SHA-256 for code that runs both in Node and in the browser (the public verification page runs
// the same proof checks as `cli verify`): @noble/hashes is synchronous and audited, where
// WebCrypto is asynchronous and node:crypto does not exist in a page. Used for proofs (a few
// dozen hashes each); bulk hashing (documents, request digests) stays on node:crypto.
import { sha256 as nobleSha256 } from '@noble/hashes/sha2';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils';

/** SHA-256 of the concatenation of `parts` (strings as UTF-8). */
export function sha256(...parts: Array<Uint8Array | string>): Uint8Array {
  const h = nobleSha256.create();
  for (const p of parts) h.update(typeof p === 'string' ? utf8ToBytes(p) : p);
  return h.digest();
}

export const sha256Hex = (...parts: Array<Uint8Array | string>): string => bytesToHex(sha256(...parts));

export { bytesToHex, hexToBytes };

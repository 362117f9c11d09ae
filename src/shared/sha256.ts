// SHA-256 for code that runs both in Node and in the browser (the public verification page runs
// the same proof checks as `cli verify`). In Node it is node:crypto (OpenSSL), reached through
// process.getBuiltinModule so that the page's bundle imports nothing of Node; in a page it is
// @noble/hashes, synchronous and audited, where WebCrypto is asynchronous. The two give the
// same bytes (test/unit/shared/sha256.test.ts). node:crypto matters on the hot paths: a
// verification's record digest cost 36 µs of CPU more with the JavaScript hash (measured by
// `npm run bench -- verify`), and notarization hashes every record of a batch.
import { sha256 as nobleSha256 } from '@noble/hashes/sha2';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils';

interface NodeHash {
  update(data: Uint8Array | string): NodeHash;
  digest(): Uint8Array;
  digest(encoding: 'hex'): string;
}

type Part = Uint8Array | string;

const nodeCrypto = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.('node:crypto') as
  { createHash(algorithm: 'sha256'): NodeHash } | undefined;

/** Which implementation this runtime uses. */
export const SHA256_IMPLEMENTATION: 'node:crypto' | '@noble/hashes' = nodeCrypto ? 'node:crypto' : '@noble/hashes';

/** The JavaScript implementation, whatever the runtime (the page's; exported for the tests that compare the two). */
export function sha256Portable(...parts: Part[]): Uint8Array {
  const h = nobleSha256.create();
  for (const p of parts) h.update(typeof p === 'string' ? utf8ToBytes(p) : p);
  return h.digest();
}

function nodeHash(parts: Part[]): NodeHash {
  const h = (nodeCrypto as { createHash(algorithm: 'sha256'): NodeHash }).createHash('sha256');
  // A string is hashed as UTF-8, as utf8ToBytes encodes it (lone surrogates as U+FFFD alike).
  for (const p of parts) h.update(p);
  return h;
}

/** SHA-256 of the concatenation of `parts` (strings as UTF-8). */
export const sha256: (...parts: Part[]) => Uint8Array = nodeCrypto ? (...parts) => new Uint8Array(nodeHash(parts).digest()) : sha256Portable;

export const sha256Hex: (...parts: Part[]) => string = nodeCrypto
  ? (...parts) => nodeHash(parts).digest('hex')
  : (...parts) => bytesToHex(sha256Portable(...parts));

export { bytesToHex, hexToBytes };

// The receipt of a public verification: a compact JWS (EdDSA over Ed25519, RFC 8037) by the
// registry, which a contracting authority files as proof of its diligence. It says what was
// asked (never the checkCode) and what answered: each match's record digest and notarization.
// Anyone checks it with a JOSE library against GET /.well-known/jwks.json (docs/api.md, "Checking a receipt"); the tests
// check every receipt with `jose`.
//
// It is signed here with node:crypto, in the calling thread. jose signs only through WebCrypto,
// a job on the thread pool, and so did crypto.sign with a callback: an Ed25519 signature costs
// about 37 µs of CPU in one thread and 50 µs handed to the pool and back (both threads,
// measured on the bench machine), and on two cores every thread's CPU counts (one 4-round run of
// `npm run bench -- verify` each: 0.74 of get-by-id signed here, 0.70 on the pool; 8 rounds,
// within the noise: 0.69 against 0.68). On a host whose database runs elsewhere the main
// thread may be what saturates: there the pool could be the better place.
// A compact JWS is the three base64url parts of RFC 7515 §7.1; the protected header is fixed
// per key, so it is encoded once.
import { sign } from 'node:crypto';
import type { SigningKey } from './signing-keys.js';

/** The JWS `typ`: tells this registry's receipts from any other token signed by the same key. */
export const RECEIPT_TYPE = 'guarantee-verification-receipt+jws';

export interface ReceiptPayload {
  verifiedAt: string;
  query: { policyNumber: string; cig?: string; garantedAmount?: number };
  /** `status` and `lastSeq`: the guarantee's state when verified (what it covered, after how many amendments). */
  matches: Array<{
    guaranteeId: string;
    digest: string | null;
    notarizationStatus: string | null;
    txHash: string | null;
    status: string;
    lastSeq: number;
    /** The record's leaf in the transparency log: its index, the checkpoint (cosigned) holding it, the inclusion proof. */
    log?: { index: number; checkpoint: string; inclusion: string[] };
  }>;
}

const headers = new WeakMap<SigningKey, string>();

/** BASE64URL(UTF8(JWS Protected Header)) of a key's receipts. */
function protectedHeader(key: SigningKey): string {
  let h = headers.get(key);
  if (h === undefined) {
    // The header says EdDSA: any other key would sign something else under that name.
    if (key.privateKey.asymmetricKeyType !== 'ed25519') throw new Error('receipts are signed with an Ed25519 key only');
    h = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYPE }), 'utf8').toString('base64url');
    headers.set(key, h);
  }
  return h;
}

export function signReceipt(key: SigningKey, payload: ReceiptPayload): string {
  const input = `${protectedHeader(key)}.${Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')}`;
  // Ed25519 takes no digest algorithm (null): the whole input is signed (RFC 8032).
  return `${input}.${sign(null, Buffer.from(input, 'ascii'), key.privateKey).toString('base64url')}`;
}

// The receipt of a public verification: a compact JWS (EdDSA over Ed25519, RFC 8037) by the
// registry, which a contracting authority files as proof of its diligence. It says what was
// asked (never the checkCode) and what answered: each match's record digest and notarization.
// Anyone checks it with a JOSE library against GET /.well-known/jwks.json (README).
import { CompactSign } from 'jose';
import type { SigningKey } from './signing-keys.js';

/** The JWS `typ`: tells this registry's receipts from any other token signed by the same key. */
export const RECEIPT_TYPE = 'guarantee-verification-receipt+jws';

export interface ReceiptPayload {
  verifiedAt: string;
  query: { policyNumber: string; cig?: string; garantedAmount?: number };
  matches: Array<{ guaranteeId: string; digest: string | null; notarizationStatus: string | null; txHash: string | null }>;
}

const encoder = new TextEncoder();

export async function signReceipt(key: SigningKey, payload: ReceiptPayload): Promise<string> {
  return new CompactSign(encoder.encode(JSON.stringify(payload)))
    .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: RECEIPT_TYPE })
    .sign(key.privateKey);
}

// Checks a verification receipt as a contracting authority (or its auditor) would, with the
// registry's published keys (GET /.well-known/jwks.json): `cli receipt verify <receipt> --jwks
// <URL or file>`. The signature must verify with the key its header names, and that key must
// not have been retired before the receipt says it was signed, nor compromised by then: a key
// known to have leaked proves nothing from its compromise time on. Such a key's thief can also
// date a receipt before that time. The transparency log bounds how far: a receipt's matches carry
// their inclusion in a checkpoint a witness cosigned before the receipt was made, so `cli receipt
// verify --witness` refuses a receipt dated before that cosignature (src/log/log-checks.ts); a
// thief can date one no earlier than the cosignatures of a checkpoint they hold (the log's
// checkpoints are public). So a receipt from a key held compromised is accepted only so bound
// (src/cli.ts, receiptCommand).
import { compactVerify, importJWK } from 'jose';
import { RECEIPT_TYPE, type ReceiptPayload } from './receipt.js';
import type { PublicJwk } from './signing-keys.js';

export class ReceiptError extends Error {
  override readonly name = 'ReceiptError';
}

export async function checkReceipt(jws: string, keys: readonly PublicJwk[]): Promise<{ payload: ReceiptPayload; kid: string }> {
  const [encodedHeader] = jws.split('.');
  let header: { alg?: string; kid?: string; typ?: string };
  try {
    header = JSON.parse(Buffer.from(encodedHeader ?? '', 'base64url').toString('utf8')) as typeof header;
  } catch {
    throw new ReceiptError('not a compact JWS');
  }
  if (header.alg !== 'EdDSA' || header.typ !== RECEIPT_TYPE) throw new ReceiptError(`not a verification receipt (alg ${header.alg}, typ ${header.typ})`);
  const jwk = keys.find((k) => k.kid === header.kid);
  if (!jwk) throw new ReceiptError(`signed by key ${header.kid}, which the registry's key set does not hold`);
  let payload: ReceiptPayload;
  try {
    const { kty, crv, x } = jwk;
    const { payload: bytes } = await compactVerify(jws, await importJWK({ kty, crv, x }, 'EdDSA'));
    payload = JSON.parse(new TextDecoder().decode(bytes)) as ReceiptPayload;
  } catch {
    throw new ReceiptError(`its signature does not verify with key ${jwk.kid}`);
  }
  const at = Date.parse(payload.verifiedAt);
  if (!Number.isFinite(at)) throw new ReceiptError('its verifiedAt is not a time');
  if (jwk.compromisedSince && at >= Date.parse(jwk.compromisedSince))
    throw new ReceiptError(
      `signed by key ${jwk.kid}, compromised since ${jwk.compromisedSince}: a receipt it signed at or after then (this one says ${payload.verifiedAt}) proves nothing`,
    );
  if (jwk.retiredAt && at > Date.parse(jwk.retiredAt))
    throw new ReceiptError(`signed by key ${jwk.kid} after it was retired (${jwk.retiredAt}); this one says ${payload.verifiedAt}`);
  return { payload, kid: jwk.kid };
}

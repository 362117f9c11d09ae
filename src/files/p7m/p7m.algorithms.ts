// Algorithm identifiers of a CMS SignerInfo, mapped to what node:crypto verifies.
import { constants, createHash, createPublicKey, publicDecrypt, verify, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { CONTEXT, MalformedError, T, UNIVERSAL, algorithm, derOf, is, kids, noParams, parseDer, seq, smallInt, type Node } from './p7m.asn1.js';

export type HashName = 'sha1' | 'sha224' | 'sha256' | 'sha384' | 'sha512' | 'sha3-224' | 'sha3-256' | 'sha3-384' | 'sha3-512';

const HASHES: Record<string, HashName> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.4': 'sha224',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
  '2.16.840.1.101.3.4.2.7': 'sha3-224',
  '2.16.840.1.101.3.4.2.8': 'sha3-256',
  '2.16.840.1.101.3.4.2.9': 'sha3-384',
  '2.16.840.1.101.3.4.2.10': 'sha3-512',
};

/** The OID of each hash (for DigestInfo). */
const HASH_OIDS = Object.fromEntries(Object.entries(HASHES).map(([oid, name]) => [name, oid])) as Record<HashName, string>;

/** The hash an AlgorithmIdentifier names (parameters absent or NULL), or undefined. */
export function hashOf(alg: { oid: string; params: Node | undefined }): HashName | undefined {
  return noParams(alg.params) ? HASHES[alg.oid] : undefined;
}

const RSA_PKCS1 = '1.2.840.113549.1.1.1';
const RSA_PSS = '1.2.840.113549.1.1.10';
const MGF1 = '1.2.840.113549.1.1.8';
const EC_PUBLIC_KEY = '1.2.840.10045.2.1';

const SCHEMES: Record<string, { name: 'rsa' | 'ecdsa'; hash: HashName | null }> = {
  [RSA_PKCS1]: { name: 'rsa', hash: null },
  '1.2.840.113549.1.1.5': { name: 'rsa', hash: 'sha1' },
  '1.2.840.113549.1.1.14': { name: 'rsa', hash: 'sha224' },
  '1.2.840.113549.1.1.11': { name: 'rsa', hash: 'sha256' },
  '1.2.840.113549.1.1.12': { name: 'rsa', hash: 'sha384' },
  '1.2.840.113549.1.1.13': { name: 'rsa', hash: 'sha512' },
  [EC_PUBLIC_KEY]: { name: 'ecdsa', hash: null },
  '1.2.840.10045.4.1': { name: 'ecdsa', hash: 'sha1' },
  '1.2.840.10045.4.3.1': { name: 'ecdsa', hash: 'sha224' },
  '1.2.840.10045.4.3.2': { name: 'ecdsa', hash: 'sha256' },
  '1.2.840.10045.4.3.3': { name: 'ecdsa', hash: 'sha384' },
  '1.2.840.10045.4.3.4': { name: 'ecdsa', hash: 'sha512' },
  '2.16.840.1.101.3.4.3.9': { name: 'ecdsa', hash: 'sha3-224' },
  '2.16.840.1.101.3.4.3.10': { name: 'ecdsa', hash: 'sha3-256' },
  '2.16.840.1.101.3.4.3.11': { name: 'ecdsa', hash: 'sha3-384' },
  '2.16.840.1.101.3.4.3.12': { name: 'ecdsa', hash: 'sha3-512' },
  '2.16.840.1.101.3.4.3.13': { name: 'rsa', hash: 'sha3-224' },
  '2.16.840.1.101.3.4.3.14': { name: 'rsa', hash: 'sha3-256' },
  '2.16.840.1.101.3.4.3.15': { name: 'rsa', hash: 'sha3-384' },
  '2.16.840.1.101.3.4.3.16': { name: 'rsa', hash: 'sha3-512' },
};

/** A SignerInfo's signatureAlgorithm, resolved. */
export interface Scheme {
  name: 'rsa' | 'rsa-pss' | 'ecdsa';
  /** The hash the algorithm itself names; null when it takes the SignerInfo's digest algorithm. */
  hash: HashName | null;
  pss?: { mgf1Hash: HashName; saltLength: number; params: Node | undefined };
}

/** A reason the signer fails, worded for the verdict. */
export class SchemeProblem extends Error {
  override name = 'SchemeProblem';
}

/** Resolves a signatureAlgorithm; throws {@link SchemeProblem} for what we do not verify. */
export function schemeOf(alg: { oid: string; params: Node | undefined }): Scheme {
  if (alg.oid === RSA_PSS) return { name: 'rsa-pss', ...pssParams(alg.params) };
  const known = SCHEMES[alg.oid];
  if (!known) throw new SchemeProblem(`unsupported signature algorithm ${alg.oid}`);
  if (!noParams(alg.params)) throw new SchemeProblem('unexpected signature algorithm parameters');
  return { ...known };
}

// RSASSA-PSS-params (RFC 4055): [0] hash DEFAULT sha1, [1] MGF1 DEFAULT mgf1-sha1,
// [2] saltLength DEFAULT 20, [3] trailerField DEFAULT 1, each EXPLICIT and in that order.
function pssParams(params: Node | undefined): { hash: HashName; pss: NonNullable<Scheme['pss']> } {
  let hash: HashName | undefined = 'sha1';
  let mgf1Hash: HashName | undefined = 'sha1';
  let saltLength = 20;
  const fields = params === undefined ? [] : seq(params, 'RSASSA-PSS parameters');
  let last = -1;
  for (const field of fields) {
    const tag: number = field.type;
    const inner = kids(field, CONTEXT, tag, 'RSASSA-PSS parameter');
    if (tag <= last || inner.length !== 1) throw new MalformedError('RSASSA-PSS parameters out of order');
    last = tag;
    if (tag === 0) {
      hash = hashOf(algorithm(inner[0], 'PSS hash algorithm'));
    } else if (tag === 1) {
      const mgf = algorithm(inner[0], 'PSS mask generation algorithm');
      if (mgf.oid !== MGF1) throw new SchemeProblem('unsupported PSS mask generation function');
      mgf1Hash = hashOf(algorithm(mgf.params, 'MGF1 hash algorithm'));
    } else if (tag === 2) {
      saltLength = smallInt(inner[0], 'PSS salt length');
    } else if (tag === 3) {
      if (smallInt(inner[0], 'PSS trailer field') !== 1) throw new SchemeProblem('unsupported PSS trailer field');
    } else {
      throw new MalformedError('unknown RSASSA-PSS parameter');
    }
  }
  if (!hash || !mgf1Hash) throw new SchemeProblem('unsupported PSS hash algorithm');
  if (saltLength > 1024) throw new SchemeProblem('invalid PSS salt length');
  return { hash, pss: { mgf1Hash, saltLength, params } };
}

/**
 * Verifies `signature` over `data` with the certificate's key. Throws {@link SchemeProblem}
 * when the algorithm does not fit the key.
 */
export function verifySignature(scheme: Scheme, hash: HashName, data: Buffer, signature: Buffer, key: KeyObject): boolean {
  const keyType = key.asymmetricKeyType;
  if (scheme.name === 'ecdsa') {
    if (keyType !== 'ec') throw keyMismatch();
    // The hash name is always passed: with null, Node picks SHA-256 for EC keys whatever the envelope says.
    return verify(hash, data, key, signature);
  }
  if (scheme.name === 'rsa') {
    // An rsa-pss key makes Node verify PSS even when PKCS#1 v1.5 is asked for. openssl cms
    // -verify rejects such envelopes (rsaEncryption over a PSS signature, produced by openssl
    // when a PSS key signs without `-keyopt rsa_padding_mode:pss`), and so do we.
    if (keyType !== 'rsa') throw keyMismatch();
    // The DigestInfo-without-NULL form is tried over signed attributes only (small): over a
    // whole content it would hash it a second time.
    return (
      verify(hash, data, { key, padding: constants.RSA_PKCS1_PADDING }, signature) ||
      (data.length <= MAX_NO_NULL_INPUT && digestInfoWithoutNull(hash, data, signature, key))
    );
  }
  if (keyType !== 'rsa' && keyType !== 'rsa-pss') throw keyMismatch();
  const pss = scheme.pss!;
  // Node takes the MGF1 hash from the message hash unless the key itself is restricted to
  // other PSS parameters: carry the envelope's parameters on the key in that case.
  const pssKey = pss.mgf1Hash === hash ? key : restrictedPssKey(key, pss.params);
  return verify(hash, data, { key: pssKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: pss.saltLength }, signature);
}

/**
 * RSA PKCS#1 v1.5 whose DigestInfo leaves out the hash's NULL parameters, which RFC 8017 §9.2
 * lists as the other encoding some implementations produce and which DSS accepts (OpenSSL does
 * not). Only that exact encoding of the same digest is accepted.
 */
function digestInfoWithoutNull(hash: HashName, data: Buffer, signature: Buffer, key: KeyObject): boolean {
  let recovered: Buffer;
  try {
    recovered = publicDecrypt({ key, padding: constants.RSA_PKCS1_PADDING }, signature);
  } catch {
    return false;
  }
  const oidDer = Buffer.from(forge.asn1.oidToDer(HASH_OIDS[hash]).getBytes(), 'latin1');
  const digest = createHash(hash).update(data).digest();
  // SEQUENCE { SEQUENCE { OID }, OCTET STRING digest }, every length under 128 bytes.
  const algorithmId = Buffer.concat([Buffer.from([0x30, oidDer.length + 2, 0x06, oidDer.length]), oidDer]);
  const inner = Buffer.concat([algorithmId, Buffer.from([0x04, digest.length]), digest]);
  return recovered.equals(Buffer.concat([Buffer.from([0x30, inner.length]), inner]));
}

const MAX_NO_NULL_INPUT = 64 * 1024;

function keyMismatch(): SchemeProblem {
  return new SchemeProblem("signature algorithm does not match the certificate's key type");
}

/** The RSA key re-wrapped as an id-RSASSA-PSS SubjectPublicKeyInfo carrying `params`. */
function restrictedPssKey(key: KeyObject, params: Node | undefined): KeyObject {
  const spki = seq(parseDer(key.export({ type: 'spki', format: 'der' })), 'public key');
  const bitString = spki[1];
  if (!params || !is(bitString, UNIVERSAL, T.BITSTRING)) throw new SchemeProblem('cannot apply the PSS parameters to the key');
  const { asn1 } = forge;
  const wrapped = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(RSA_PSS).getBytes()),
      params,
    ]),
    bitString,
  ]);
  return createPublicKey({ key: derOf(wrapped), format: 'der', type: 'spki' });
}

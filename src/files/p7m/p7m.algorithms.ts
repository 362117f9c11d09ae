// Algorithm identifiers of a CMS SignerInfo, mapped to what node:crypto verifies.
import { constants, createHash, createPublicKey, publicDecrypt, verify, type Hash, type KeyObject } from 'node:crypto';
import forge from 'node-forge';
import { CONTEXT, MalformedError, T, UNIVERSAL, algorithm, derOf, is, kids, noParams, parseDer, seq, smallInt, type Node } from './p7m.asn1.js';

export type HashName = 'sha1' | 'sha224' | 'sha256' | 'sha384' | 'sha512' | 'sha3-224' | 'sha3-256' | 'sha3-384' | 'sha3-512' | 'shake256';

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

// SHAKE256 with a 512-bit output, Ed448's digest in CMS (RFC 8419 §3.1): id-shake256 without
// parameters (RFC 8702), or id-shake256-len with the length, 512, as its parameter.
const SHAKE256 = '2.16.840.1.101.3.4.2.12';
const SHAKE256_LEN = '2.16.840.1.101.3.4.2.18';

/** The hash an AlgorithmIdentifier names (parameters absent or NULL), or undefined. */
export function hashOf(alg: { oid: string; params: Node | undefined }): HashName | undefined {
  if (alg.oid === SHAKE256) return alg.params === undefined ? 'shake256' : undefined;
  if (alg.oid === SHAKE256_LEN) return alg.params !== undefined && is(alg.params, UNIVERSAL, T.INTEGER) && integerIs(alg.params, 512) ? 'shake256' : undefined;
  return noParams(alg.params) ? HASHES[alg.oid] : undefined;
}

function integerIs(node: Node, n: number): boolean {
  try {
    return smallInt(node, 'SHAKE256 output length') === n;
  } catch {
    return false;
  }
}

/** A hash of `name` (SHAKE256 with its CMS output of 64 bytes). */
export function newHash(name: HashName): Hash {
  return name === 'shake256' ? createHash('shake256', { outputLength: 64 }) : createHash(name);
}

const RSA_PKCS1 = '1.2.840.113549.1.1.1';
const ED25519 = '1.3.101.112';
const ED448 = '1.3.101.113';
const RSA_PSS = '1.2.840.113549.1.1.10';
const MGF1 = '1.2.840.113549.1.1.8';
const EC_PUBLIC_KEY = '1.2.840.10045.2.1';

const SCHEMES: Record<string, { name: Scheme['name']; hash: HashName | null }> = {
  // PureEdDSA (RFC 8419): the signature is over the signed attributes' DER, or the content itself.
  [ED25519]: { name: 'ed25519', hash: null },
  [ED448]: { name: 'ed448', hash: null },
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
  name: 'rsa' | 'rsa-pss' | 'ecdsa' | 'ed25519' | 'ed448';
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
  // RFC 8410 §3: EdDSA identifiers have absent parameters, not NULL.
  if (known.name.startsWith('ed') ? alg.params !== undefined : !noParams(alg.params)) throw new SchemeProblem('unexpected signature algorithm parameters');
  return { ...known };
}

/** RSASSA-PSS-params, defaults applied; a hash we do not know is undefined. */
export interface PssParameters {
  hash: HashName | undefined;
  mgf1Hash: HashName | undefined;
  saltLength: number;
  trailerField: number;
}

// RSASSA-PSS-params (RFC 4055): [0] hash DEFAULT sha1, [1] MGF1 DEFAULT mgf1-sha1,
// [2] saltLength DEFAULT 20, [3] trailerField DEFAULT 1, each EXPLICIT and in that order.
/** Reads RSASSA-PSS-params as they are; throws MalformedError or SchemeProblem for what cannot be read. */
export function pssParameters(params: Node | undefined): PssParameters {
  const out: PssParameters = { hash: 'sha1', mgf1Hash: 'sha1', saltLength: 20, trailerField: 1 };
  const fields = params === undefined ? [] : seq(params, 'RSASSA-PSS parameters');
  let last = -1;
  for (const field of fields) {
    const tag: number = field.type;
    const inner = kids(field, CONTEXT, tag, 'RSASSA-PSS parameter');
    if (tag <= last || inner.length !== 1) throw new MalformedError('RSASSA-PSS parameters out of order');
    last = tag;
    if (tag === 0) {
      out.hash = hashOf(algorithm(inner[0], 'PSS hash algorithm'));
    } else if (tag === 1) {
      const mgf = algorithm(inner[0], 'PSS mask generation algorithm');
      if (mgf.oid !== MGF1) throw new SchemeProblem('unsupported PSS mask generation function');
      out.mgf1Hash = hashOf(algorithm(mgf.params, 'MGF1 hash algorithm'));
    } else if (tag === 2) {
      out.saltLength = smallInt(inner[0], 'PSS salt length');
    } else if (tag === 3) {
      out.trailerField = smallInt(inner[0], 'PSS trailer field');
    } else {
      throw new MalformedError('unknown RSASSA-PSS parameter');
    }
  }
  return out;
}

function pssParams(params: Node | undefined): { hash: HashName; pss: NonNullable<Scheme['pss']> } {
  const { hash, mgf1Hash, saltLength, trailerField } = pssParameters(params);
  if (trailerField !== 1) throw new SchemeProblem('unsupported PSS trailer field');
  if (!hash || !mgf1Hash) throw new SchemeProblem('unsupported PSS hash algorithm');
  if (saltLength > 1024) throw new SchemeProblem('invalid PSS salt length');
  return { hash, pss: { mgf1Hash, saltLength, params } };
}

/** Whether two signature AlgorithmIdentifiers say the same (RSASSA-PSS: the same parameters, defaults applied; others: NULL and absent alike). */
export function sameSignatureAlgorithm(a: { oid: string; params: Node | undefined }, b: { oid: string; params: Node | undefined }): boolean {
  if (a.oid !== b.oid) return false;
  if (a.oid === RSA_PSS) {
    const [x, y] = [pssParameters(a.params), pssParameters(b.params)];
    return x.hash === y.hash && x.mgf1Hash === y.mgf1Hash && x.saltLength === y.saltLength && x.trailerField === y.trailerField;
  }
  if (noParams(a.params) && noParams(b.params)) return true;
  return a.params !== undefined && b.params !== undefined && derOf(a.params).equals(derOf(b.params));
}

/**
 * Verifies `signature` over `data` with the certificate's key. Throws {@link SchemeProblem}
 * when the algorithm does not fit the key.
 */
export function verifySignature(scheme: Scheme, hash: HashName, data: Buffer, signature: Buffer, key: KeyObject): boolean {
  const keyType = key.asymmetricKeyType;
  if (scheme.name === 'ed25519' || scheme.name === 'ed448') {
    if (keyType !== scheme.name) throw keyMismatch();
    return verify(null, data, key, signature);
  }
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

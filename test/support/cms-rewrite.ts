// Rewrites of openssl's CMS output, for the quirks of real envelopes that openssl will not
// produce: ASN.1 taken apart with node-forge, changed, put back together, and re-signed with
// node:crypto where the change falls under a signature. Test support only.
import { constants, createHash, privateEncrypt, sign, type KeyObject } from 'node:crypto';
import forge from 'node-forge';

export type Asn1 = forge.asn1.Asn1;
const { asn1 } = forge;
const { UNIVERSAL, CONTEXT_SPECIFIC } = asn1.Class;

export const OIDS = {
  messageDigest: '1.2.840.113549.1.9.4',
  contentTimestamp: '1.2.840.113549.1.9.16.2.20',
  revocationValues: '1.2.840.113549.1.9.16.2.24',
  archiveTimestampV3: '0.4.0.1733.2.4',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha512: '2.16.840.1.101.3.4.2.3',
  sha3_256: '2.16.840.1.101.3.4.2.8',
  ecdsaWithSha3_256: '2.16.840.1.101.3.4.3.10',
  rsaPss: '1.2.840.113549.1.1.10',
  counterSignature: '1.2.840.113549.1.9.6',
  signatureTimestamp: '1.2.840.113549.1.9.16.2.14',
  signingTime: '1.2.840.113549.1.9.5',
  timestampedData: '1.2.840.113549.1.9.16.1.31',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  rsaEncryption: '1.2.840.113549.1.1.1',
  mgf1: '1.2.840.113549.1.1.8',
  algorithmProtection: '1.2.840.113549.1.9.52',
  smimeCapabilities: '1.2.840.113549.1.9.15',
};

export function parse(der: Buffer): Asn1 {
  return asn1.fromDer(der.toString('latin1'), { strict: true, parseAllBytes: true, decodeBitStrings: false } as unknown as boolean);
}

export function encode(node: Asn1): Buffer {
  return Buffer.from(asn1.toDer(node).getBytes(), 'latin1');
}

export const children = (node: Asn1): Asn1[] => node.value as Asn1[];
export const oidNode = (oid: string): Asn1 => asn1.create(UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(oid).getBytes());
export const integer = (n: number): Asn1 => asn1.create(UNIVERSAL, asn1.Type.INTEGER, false, asn1.integerToDer(n).getBytes());
export const octetString = (bytes: Buffer): Asn1 => asn1.create(UNIVERSAL, asn1.Type.OCTETSTRING, false, bytes.toString('latin1'));
export const sequence = (...items: Asn1[]): Asn1 => asn1.create(UNIVERSAL, asn1.Type.SEQUENCE, true, items);
export const set = (...items: Asn1[]): Asn1 => asn1.create(UNIVERSAL, asn1.Type.SET, true, items);
export const tagged = (tag: number, ...items: Asn1[]): Asn1 => asn1.create(CONTEXT_SPECIFIC, tag, true, items);
export const attribute = (oid: string, ...values: Asn1[]): Asn1 => sequence(oidNode(oid), set(...values));
export const algorithm = (oid: string, params?: Asn1): Asn1 => sequence(oidNode(oid), ...(params ? [params] : []));

/** The SignedData fields of a ContentInfo: version, digestAlgorithms, encapContentInfo, [0] certificates?, [1] crls?, signerInfos. */
export const signedData = (ci: Asn1): Asn1[] => children(children(children(ci)[1]!)[0]!);

export function signerInfo(ci: Asn1, i = 0): SignerInfo {
  const sd = signedData(ci);
  return new SignerInfo(children(sd[sd.length - 1]!)[i]!);
}

/** A SignerInfo's fields: version, sid, digestAlgorithm, [0] signedAttrs?, signatureAlgorithm, signature, [1] unsignedAttrs?. */
export class SignerInfo {
  constructor(readonly node: Asn1) {}

  get fields(): Asn1[] {
    return children(this.node);
  }

  private get hasSigned(): boolean {
    const f = this.fields[3]!;
    return (f.tagClass as number) === (CONTEXT_SPECIFIC as number) && (f.type as number) === 0;
  }

  set version(n: number) {
    this.fields[0] = integer(n);
  }

  get sid(): Asn1 {
    return this.fields[1]!;
  }

  set digestAlgorithm(alg: Asn1) {
    this.fields[2] = alg;
  }

  /** The signed attributes, in the order they are sent. */
  get signedAttributes(): Asn1[] {
    if (!this.hasSigned) throw new Error('no signed attributes');
    return children(this.fields[3]!);
  }

  set signedAttributes(attrs: Asn1[]) {
    this.fields[3] = tagged(0, ...attrs);
  }

  set signatureAlgorithm(alg: Asn1) {
    this.fields[this.hasSigned ? 4 : 3] = alg;
  }

  set signature(bytes: Buffer) {
    this.fields[this.hasSigned ? 5 : 4] = octetString(bytes);
  }

  get signature(): Buffer {
    return Buffer.from(this.fields[this.hasSigned ? 5 : 4]!.value as string, 'latin1');
  }

  set unsignedAttributes(attrs: Asn1[]) {
    const at = this.hasSigned ? 6 : 5;
    this.fields.splice(at, this.fields.length - at, tagged(1, ...attrs));
  }

  /** The bytes a signature over the signed attributes covers: their encoding as sent, tagged SET. */
  signedBytes(): Buffer {
    const der = encode(this.fields[3]!);
    der[0] = 0x31;
    return der;
  }

  /** The DER (sorted) encoding of the signed attributes, tagged SET: what RFC 5652 §5.4 signs. */
  signedBytesDer(): Buffer {
    return encode(asn1.create(UNIVERSAL, asn1.Type.SET, true, sortedDer(this.signedAttributes)));
  }

  /** Re-signs the signed attributes, as sent, with `sign`. */
  resign(signer: (data: Buffer) => Buffer): void {
    this.signature = signer(this.signedBytes());
  }
}

/** The signed attributes in DER order (SET OF: by their encodings). */
export function sortedDer(attrs: Asn1[]): Asn1[] {
  return attrs
    .map((a) => ({ a, der: encode(a) }))
    .sort((x, y) => Buffer.compare(x.der, y.der))
    .map((x) => x.a);
}

export const signWith =
  (hash: string, key: KeyObject) =>
  (data: Buffer): Buffer =>
    sign(hash, data, key);

/** RSA PKCS#1 v1.5 whose DigestInfo leaves out the NULL parameters (some signing devices do). */
export const rsaWithoutNull =
  (hashOid: string, hash: string, key: KeyObject) =>
  (data: Buffer): Buffer =>
    privateEncrypt(
      { key, padding: constants.RSA_PKCS1_PADDING },
      encode(sequence(sequence(oidNode(hashOid)), octetString(createHash(hash).update(data).digest()))),
    );

/** A well-formed ASN.1 value of about `nodes` nodes (a CRL-sized list of revoked serials). */
export function bulk(nodes: number): Asn1 {
  const entries: Asn1[] = [];
  for (let i = 0; i < nodes / 3; i++) entries.push(sequence(integer(100_000 + i), integer(i % 97)));
  return sequence(...entries);
}

/** The issuer Name and serial INTEGER of a certificate (PEM or DER). */
export function issuerAndSerial(certPemOrDer: Buffer): Asn1 {
  const der = certPemOrDer[0] === 0x30 ? certPemOrDer : Buffer.from(forge.pem.decode(certPemOrDer.toString('latin1'))[0]!.body, 'latin1');
  const tbs = children(children(parse(der))[0]!);
  const i = (tbs[0]!.tagClass as number) === (CONTEXT_SPECIFIC as number) ? 1 : 0;
  return sequence(tbs[i + 2]!, tbs[i]!);
}

export function certificateNode(certPem: Buffer): Asn1 {
  return parse(Buffer.from(forge.pem.decode(certPem.toString('latin1'))[0]!.body, 'latin1'));
}

const utcTime = (at: Date): Asn1 => asn1.create(UNIVERSAL, asn1.Type.UTCTIME, false, asn1.dateToUtcTime(at));

/**
 * A counter-signature (RFC 5652 §11.4) of `signatureValue`: a SignerInfo whose messageDigest is
 * the digest of those octets, signed by `signer` (SHA-256; its signature algorithm given).
 */
export function counterSignature(
  signatureValue: Buffer,
  signer: { cert: Buffer; key: KeyObject; signatureAlgorithm: string },
  opts: { digestOf?: Buffer; contentType?: boolean } = {},
): Asn1 {
  const attrs = sortedDer([
    attribute('1.2.840.113549.1.9.5', utcTime(new Date())),
    attribute(
      OIDS.messageDigest,
      octetString(
        createHash('sha256')
          .update(opts.digestOf ?? signatureValue)
          .digest(),
      ),
    ),
    ...(opts.contentType ? [attribute('1.2.840.113549.1.9.3', oidNode('1.2.840.113549.1.7.1'))] : []),
  ]);
  const si = new SignerInfo(
    sequence(
      integer(1),
      issuerAndSerial(signer.cert),
      algorithm(OIDS.sha256),
      tagged(0, ...attrs),
      algorithm(signer.signatureAlgorithm),
      octetString(Buffer.alloc(0)),
    ),
  );
  si.resign(signWith('sha256', signer.key));
  return si.node;
}

/** The signature octets of a SignerInfo. */
export const signatureOf = (si: SignerInfo): Buffer => si.signature;

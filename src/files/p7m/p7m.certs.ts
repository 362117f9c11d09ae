// Certificates of a .p7m: those the envelope carries (found by issuer and serial or by key
// identifier), their validity, and the chain from a signer up to a configured trust anchor.
import { X509Certificate, createHash } from 'node:crypto';
import { CONTEXT, T, UNIVERSAL, bytes, derOf, is, kids, malformed, octets, oid, parseDer, prim, seq, walkTlv, type Node } from './p7m.asn1.js';

/** A certificate from the envelope's `certificates` set, with what signer lookup needs. */
export interface EnvelopeCert {
  /** The issuer's name, compared as RFC 5280 §7.1 says ({@link canonicalName}). */
  issuerName: string;
  /** The serial INTEGER's content octets, as a binary string. */
  serial: string;
  subjectKeyId: string | undefined;
  /** digitalSignature or nonRepudiation allowed; undefined without a keyUsage extension. */
  signingUsage: boolean | undefined;
  /** The QC statements the certificate makes (ETSI EN 319 412-5): EU qualified, and the key in a qualified device. */
  qc: { compliance: boolean; sscd: boolean; types: string[] };
  /** The extended key usage extension: its purposes and whether it is critical; undefined without one. */
  eku: { purposes: string[]; critical: boolean } | undefined;
  /** The certificate as node:crypto loads it; undefined when it cannot. */
  x509: () => X509Certificate | undefined;
}

/** More would only cost time: real envelopes carry a handful. */
const MAX_CERTS = 32;
const MAX_CHAIN = 8;
const SKI = '2.5.29.14';
const KEY_USAGE = '2.5.29.15';
const QC_STATEMENTS = '1.3.6.1.5.5.7.1.3';
const EXT_KEY_USAGE = '2.5.29.37';
const QC_COMPLIANCE = '0.4.0.1862.1.1';
const QC_SSCD = '0.4.0.1862.1.4';
const QC_TYPE = '0.4.0.1862.1.6';

/** Reads the certificates set; entries that are not X.509 certificates or not readable are skipped. */
export function readCertificates(set: Node | undefined): EnvelopeCert[] {
  if (set === undefined) return [];
  const entries = kids(set, CONTEXT, 0, 'certificates');
  if (entries.length > MAX_CERTS) throw new Error(`more than ${MAX_CERTS} certificates`);
  const certs: EnvelopeCert[] = [];
  for (const entry of entries) {
    // Attribute certificates and other formats ([1], [2], [3]) play no part here.
    if (!is(entry, UNIVERSAL, T.SEQUENCE)) continue;
    try {
      certs.push(readCertificate(entry));
    } catch {
      // An unreadable certificate is as good as absent: a signer that needs it fails lookup.
    }
  }
  return certs;
}

function readCertificate(node: Node): EnvelopeCert {
  const tbs = seq(seq(node, 'certificate')[0], 'tbsCertificate');
  let i = is(tbs[0], CONTEXT, 0) ? 1 : 0;
  const serial = prim(tbs[i++], UNIVERSAL, T.INTEGER, 'serial number');
  i++; // signature algorithm
  const issuer = tbs[i++];
  seq(issuer, 'issuer');
  i += 3; // validity, subject, subjectPublicKeyInfo
  let subjectKeyId: string | undefined;
  let signingUsage: boolean | undefined;
  const qc = { compliance: false, sscd: false, types: [] as string[] };
  let eku: EnvelopeCert['eku'];
  for (; i < tbs.length; i++) {
    if (!is(tbs[i], CONTEXT, 3)) continue;
    for (const ext of seq(kids(tbs[i], CONTEXT, 3, 'extensions')[0], 'extensions')) {
      const parts = seq(ext, 'extension');
      const id = oid(parts[0], 'extension id');
      if (id !== SKI && id !== KEY_USAGE && id !== QC_STATEMENTS && id !== EXT_KEY_USAGE) continue;
      const value = parseSmall(octets(parts[parts.length - 1], 'extension value'));
      if (id === SKI) subjectKeyId = prim(value, UNIVERSAL, T.OCTETSTRING, 'subject key identifier');
      else if (id === EXT_KEY_USAGE) {
        const critical = parts.length === 3 && is(parts[1], UNIVERSAL, T.BOOLEAN) && parts[1].value !== '\x00';
        eku = { purposes: seq(value, 'extended key usage').map((p) => oid(p, 'key purpose')), critical };
      } else if (id === KEY_USAGE) {
        const usage = prim(value, UNIVERSAL, T.BITSTRING, 'key usage');
        signingUsage = bitAt(usage, 0) || bitAt(usage, 1); // digitalSignature, nonRepudiation
      } else {
        for (const statement of seq(value, 'QC statements')) {
          const [idNode, info] = seq(statement, 'QC statement');
          const statementId = oid(idNode, 'QC statement id');
          if (statementId === QC_COMPLIANCE) qc.compliance = true;
          if (statementId === QC_SSCD) qc.sscd = true;
          // QcType (ETSI EN 319 412-5): what the certificate is for (esign, eseal, web).
          if (statementId === QC_TYPE && info !== undefined) qc.types.push(...seq(info, 'QcType').map((t) => oid(t, 'QcType')));
        }
      }
    }
  }
  // The certificate's DER (forge re-encodes it: a certificate that is not DER will not verify).
  const der = derOf(node);
  return { issuerName: canonicalName(issuer), serial, subjectKeyId, signingUsage, qc, eku, x509: () => x509Of(der) };
}

// The same signer and CA certificates recur across documents, and loading one costs more than
// forge's whole parse: loaded certificates (immutable) are kept by their DER's SHA-256 (a
// bounded key, whatever the size of a hostile certificate), a few at a time.
const CACHE_SIZE = 64;
const loaded = new Map<string, X509Certificate | null>();

/** The certificate as node:crypto loads it (null cached too: unreadable stays unreadable). */
function x509Of(der: Buffer): X509Certificate | undefined {
  const key = createHash('sha256').update(der).digest('base64');
  let cert = loaded.get(key);
  if (cert === undefined) {
    try {
      cert = new X509Certificate(der);
    } catch {
      cert = null;
    }
    if (loaded.size >= CACHE_SIZE) loaded.delete(loaded.keys().next().value!);
  } else {
    loaded.delete(key); // refreshed below: least recently used goes first
  }
  loaded.set(key, cert);
  return cert ?? undefined;
}

function parseSmall(der: Buffer): Node {
  const end = walkTlv(der, { remaining: 1000 });
  if (end !== der.length) throw new Error('trailing bytes in an extension');
  return parseDer(der);
}

/** Bit `n` (0 = most significant of the first content byte) of a BIT STRING's content octets. */
function bitAt(content: string, n: number): boolean {
  const byte = content.charCodeAt(1 + (n >> 3));
  return !Number.isNaN(byte) && (byte & (0x80 >> (n & 7))) !== 0;
}

/** The envelope certificate an issuerAndSerialNumber names (its issuer given as {@link canonicalName}). */
export function byIssuerSerial(certs: readonly EnvelopeCert[], issuerName: string, serial: string): EnvelopeCert | undefined {
  return certs.find((c) => c.serial === serial && c.issuerName === issuerName);
}

// Directory string types and how their content octets decode.
const STRING_TYPES: Record<number, (octets: Buffer) => string> = {
  12: (b) => b.toString('utf8'), // UTF8String
  19: (b) => b.toString('latin1'), // PrintableString
  20: (b) => b.toString('latin1'), // TeletexString, read as Latin-1 as OpenSSL does
  22: (b) => b.toString('latin1'), // IA5String
  26: (b) => b.toString('latin1'), // VisibleString
  28: (b) => (b.length % 4 === 0 ? String.fromCodePoint(...Array.from({ length: b.length / 4 }, (_, i) => b.readUInt32BE(i * 4))) : b.toString('hex')), // UniversalString
  30: (b) => Buffer.from(b).swap16().toString('utf16le'), // BMPString (odd lengths are refused by the walk)
};

/**
 * A Name (RDNSequence) in the form RFC 5280 §7.1 compares: each attribute value of a directory
 * string type decoded whatever its ASN.1 string type, with outer spaces removed, inner runs of
 * spaces made one, case folded and NFKC-normalized (RFC 4518, as OpenSSL's canonical names
 * do); any other value as its DER. Signers write the issuer in a SignerInfo as a
 * PrintableString where the certificate has a UTF8String, or the reverse: the bytes differ,
 * the name does not.
 */
export function canonicalName(name: unknown): string {
  return seq(name, 'name')
    .map((rdn) =>
      kids(rdn, UNIVERSAL, T.SET, 'relative distinguished name')
        .map((ava) => {
          const [type, value] = seq(ava, 'attribute type and value');
          if (value === undefined) malformed('attribute type and value is not the expected structure');
          const decode = (value.tagClass as number) === UNIVERSAL && typeof value.value === 'string' ? STRING_TYPES[value.type as number] : undefined;
          const text = decode
            ? decode(bytes(value.value as string))
                .normalize('NFKC')
                .toLowerCase()
                .replace(/\s+/g, ' ')
                .trim()
            : `#${derOf(value).toString('hex')}`;
          return `${oid(type, 'attribute type')}=${JSON.stringify(text)}`;
        })
        .sort()
        .join('+'),
    )
    .join(',');
}

/** The envelope certificate a subjectKeyIdentifier names. */
export function bySubjectKeyId(certs: readonly EnvelopeCert[], keyId: string): EnvelopeCert | undefined {
  return certs.find((c) => c.subjectKeyId === keyId);
}

export function validAt(cert: X509Certificate, at: Date): boolean {
  const t = at.getTime();
  return new Date(cert.validFrom).getTime() <= t && t <= new Date(cert.validTo).getTime();
}

function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** Anchors looked up by subject name: a trusted list set holds thousands of certificates. */
export interface AnchorIndex {
  /** Those whose subject is `name` (node:crypto's printing, compared without case or extra spaces). */
  named(name: string): readonly X509Certificate[];
}

const nameKey = (name: string) => name.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

export function anchorIndex(anchors: Iterable<X509Certificate>): AnchorIndex {
  const map = new Map<string, X509Certificate[]>();
  for (const a of anchors) {
    const key = nameKey(a.subject);
    const list = map.get(key);
    if (list) list.push(a);
    else map.set(key, [a]);
  }
  return { named: (name) => map.get(nameKey(name)) ?? [] };
}

/**
 * Follows a path from `leaf` through the envelope's certificates to the anchors, every
 * certificate valid at `at`; intermediates must be CAs. Returns the anchors it ends at (the leaf
 * itself, when it is one, or those that issued the last certificate, valid at `at`): how far
 * they are trusted is for the caller to say. Else why no path was found.
 */
export function chainEnds(leaf: X509Certificate, pool: readonly EnvelopeCert[], anchors: AnchorIndex, at: Date): { ends: X509Certificate[] } | { why: string } {
  const seen = new Set<string>();
  let current = leaf;
  for (let step = 0; step < MAX_CHAIN; step++) {
    const itself = anchors.named(current.subject).filter((a) => a.raw.equals(current.raw));
    if (itself.length > 0) return { ends: itself };
    const issuers = anchors.named(current.issuer).filter((a) => issuedBy(current, a));
    if (issuers.length > 0) {
      const valid = issuers.filter((a) => validAt(a, at));
      return valid.length > 0 ? { ends: valid } : { why: 'the trust anchor was not valid at the signing time' };
    }
    seen.add(current.fingerprint256);
    let next: X509Certificate | undefined;
    for (const candidate of pool) {
      const c = candidate.x509();
      if (c && c.ca && !seen.has(c.fingerprint256) && issuedBy(current, c)) {
        next = c;
        break;
      }
    }
    if (!next) return { why: 'no path to a trust anchor' };
    if (!validAt(next, at)) return { why: `intermediate ${oneLine(next.subject)} was not valid at the signing time` };
    current = next;
  }
  return { why: 'the chain is too long' };
}

/**
 * The Italian fiscal code (codice fiscale, or a company's partita IVA) a certificate names in
 * its subject's serialNumber, as Italian qualified certificates do: `TINIT-<code>` (ETSI EN
 * 319 412-1) or the older `IT:<code>`; null otherwise.
 */
export function fiscalCodeOf(cert: X509Certificate): string | null {
  for (const line of cert.subject.split('\n')) {
    const m = /^serialNumber=(?:TINIT-|IT:)([A-Z0-9]{16}|\d{11})$/i.exec(line);
    if (m) return m[1]!.toUpperCase();
  }
  return null;
}

/** Node's multi-line distinguished name on one line. */
export function oneLine(name: string): string {
  return name.split('\n').join(', ');
}

/** Hex of an INTEGER's content octets, as certificates print serial numbers. */
export function hex(binary: string): string {
  return bytes(binary).toString('hex').toUpperCase();
}

/**
 * Splits a PEM bundle into certificates. Text outside the blocks (bundle comments) is ignored;
 * throws when there is no certificate or one cannot be read.
 */
export function loadTrustAnchors(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  const begins = pem.split('-----BEGIN ').length - 1;
  if (blocks.length === 0) throw new Error('The trust store holds no PEM certificate.');
  if (begins !== blocks.length) throw new Error('The trust store holds a PEM block that is not a complete certificate.');
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new Error(`Trust store certificate ${i + 1} cannot be read: ${(err as Error).message}`, { cause: err });
    }
  });
}

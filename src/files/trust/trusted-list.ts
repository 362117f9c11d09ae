// EU trusted lists (ETSI TS 119 612): a member state's list of trust service providers and
// their services, with the certificates that identify them, signed by the list's operator.
// Read offline: the list's XML signature is checked against the operator certificates the
// registry's operator configured (never the KeyInfo the list brings), and the services are read
// from the bytes that signature covers, never from the parsed document around them.
//
// Libraries: @xmldom/xmldom (strict: any parse warning is an error) and xml-crypto (node-saml)
// for XMLDSig. Two facts about xml-crypto 6.3 shape the checks below: it digests a processing
// instruction's data as text (so a PI could hide a status from a DOM reader while the digest
// still matches: refused up front), and it returns false for a wrong digest but throws for a
// wrong signature value (both are a refusal here).
import { KeyObject, X509Certificate, createHash, createPrivateKey, createPublicKey, sign, verify, type BinaryLike, type KeyLike } from 'node:crypto';
import { DOMParser, type Document, type Element } from '@xmldom/xmldom';
import { SignedXml, type SignatureAlgorithm } from 'xml-crypto';
import { validAt } from '../p7m/p7m.certs.js';

const TSL_NS = 'http://uri.etsi.org/02231/v2#';
const DS_NS = 'http://www.w3.org/2000/09/xmldsig#';
const LIST_OF_LISTS = 'http://uri.etsi.org/TrstSvc/TrustedList/TSLType/EUlistofthelists';
const EU_GENERIC = 'http://uri.etsi.org/TrstSvc/TrustedList/TSLType/EUgeneric';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
const C14N = new Set(['http://www.w3.org/2001/10/xml-exc-c14n#', 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315']);
/** Signature algorithms accepted, with the key type each needs. */
const SIGNATURE_ALGORITHMS = new Map([
  ['http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', 'rsa'],
  ['http://www.w3.org/2001/04/xmldsig-more#rsa-sha512', 'rsa'],
  ['http://www.w3.org/2007/05/xmldsig-more#sha256-rsa-MGF1', 'rsa'],
  ['http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256', 'ec'],
  ['http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384', 'ec'],
  ['http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha512', 'ec'],
]);

/**
 * XMLDSig ECDSA (RFC 4051 §3.4.1), which xml-crypto lacks and several member states' lists
 * use: the SignatureValue is r and s side by side (IEEE P1363), not a DER SEQUENCE.
 */
export function ecdsaAlgorithm(hash: 'sha256' | 'sha384' | 'sha512'): new () => SignatureAlgorithm {
  const uri = `http://www.w3.org/2001/04/xmldsig-more#ecdsa-${hash}`;
  return class {
    getAlgorithmName = () => uri;
    verifySignature = ((material: string, key: KeyLike, signatureValue: string) =>
      verify(
        hash,
        Buffer.from(material, 'utf8'),
        { key: createPublicKey(key), dsaEncoding: 'ieee-p1363' },
        Buffer.from(signatureValue, 'base64'),
      )) as SignatureAlgorithm['verifySignature'];
    getSignature = ((signedInfo: BinaryLike, privateKey: KeyLike) =>
      sign(hash, typeof signedInfo === 'string' ? Buffer.from(signedInfo, 'utf8') : signedInfo, {
        key: privateKey instanceof KeyObject ? privateKey : createPrivateKey(privateKey),
        dsaEncoding: 'ieee-p1363',
      }).toString('base64')) as SignatureAlgorithm['getSignature'];
  };
}
const ECDSA = Object.fromEntries(
  (['sha256', 'sha384', 'sha512'] as const).map((h) => [`http://www.w3.org/2001/04/xmldsig-more#ecdsa-${h}`, ecdsaAlgorithm(h)]),
);
const DIGEST_ALGORITHMS = new Set(['http://www.w3.org/2001/04/xmlenc#sha256', 'http://www.w3.org/2001/04/xmlenc#sha512']);
/** Italy's list is about 2 MB; the EU's list of lists smaller. */
const MAX_BYTES = 32 * 1024 * 1024;

/** A list that cannot be used, and why (safe to show to the operator). */
export class TrustedListError extends Error {
  override name = 'TrustedListError';
}

export interface TrustedService {
  provider: string;
  name: string;
  /** e.g. http://uri.etsi.org/TrstSvc/Svctype/CA/QC */
  type: string;
  /** The current status (e.g. http://uri.etsi.org/TrstSvc/TrustedList/Svcstatus/granted) and since when. */
  status: string;
  statusFrom: Date;
  /** Earlier statuses, newest first: each held from its time until the next newer one. */
  history: Array<{ status: string; from: Date }>;
  /** The certificates that identify the service (for a CA: its own certificates). */
  certificates: X509Certificate[];
  /** AdditionalServiceInformation URIs, e.g. .../SvcInfoExt/ForeSignatures. */
  additionalInformation: string[];
}

export interface TrustedList {
  territory: string;
  type: string;
  sequenceNumber: number;
  issuedAt: Date;
  nextUpdate: Date | null;
  services: TrustedService[];
  /** SHA-256 of the canonical bytes the signature covers: the same list however it was re-serialized. */
  digest: Buffer;
}

/** Parses external XML strictly: no DTD, no processing instruction, any warning fatal. */
function strictParse(xml: string): Document {
  if (Buffer.byteLength(xml, 'utf8') > MAX_BYTES) throw new TrustedListError('the list is larger than 32 MB');
  if (/<!DOCTYPE/i.test(xml)) throw new TrustedListError('the list has a DOCTYPE');
  if (/<\?(?!xml\s)/.test(xml.replace(/^\uFEFF/, ''))) throw new TrustedListError('the list has a processing instruction');
  try {
    return new DOMParser({
      onError: (level, message) => {
        throw new TrustedListError(`XML ${level}: ${message}`);
      },
    }).parseFromString(xml, 'application/xml');
  } catch (err) {
    throw err instanceof TrustedListError ? err : new TrustedListError(`the list is not well-formed XML: ${(err as Error).message}`);
  }
}

const childElements = (el: Element, ns: string, local: string): Element[] => {
  const out: Element[] = [];
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).namespaceURI === ns && (n as Element).localName === local) out.push(n as Element);
  }
  return out;
};
const child = (el: Element | undefined, local: string): Element | undefined => (el ? childElements(el, TSL_NS, local)[0] : undefined);
const text = (el: Element | undefined): string => (el?.textContent ?? '').trim();
const date = (el: Element | undefined, what: string): Date => {
  const d = new Date(text(el));
  if (Number.isNaN(d.getTime())) throw new TrustedListError(`the list's ${what} is not a date`);
  return d;
};

/**
 * Verifies a trusted list's signature with one of `signers` and returns what it says. Throws
 * TrustedListError when the list is malformed, unsigned, signed by anyone else or altered.
 */
export function readTrustedList(text: string, signers: readonly X509Certificate[]): TrustedList {
  try {
    return readSigned(text, signers);
  } catch (err) {
    // xml-crypto throws plain errors on malformed signatures (no SignedInfo, two of them, ...).
    throw err instanceof TrustedListError ? err : new TrustedListError(`the list's signature cannot be read: ${(err as Error).message}`);
  }
}

function readSigned(text: string, signers: readonly X509Certificate[]): TrustedList {
  // A byte order mark (Finland's list has one) is not part of the document.
  const xml = text.replace(/^\uFEFF/, '');
  if (signers.length === 0) throw new TrustedListError('no list signer certificate is configured');
  const doc = strictParse(xml);
  const root = doc.documentElement;
  if (!root || root.namespaceURI !== TSL_NS || root.localName !== 'TrustServiceStatusList')
    throw new TrustedListError('not a trusted list (TrustServiceStatusList)');
  if (doc.getElementsByTagNameNS(DS_NS, 'Signature').length !== 1) throw new TrustedListError('a trusted list has exactly one signature');
  const signature = childElements(root, DS_NS, 'Signature')[0];
  if (!signature) throw new TrustedListError("the signature is not the list's own (a child of its root)");

  let signedBytes: string | undefined;
  let signedBy: X509Certificate | undefined;
  const reasons: string[] = [];
  for (const signer of signers) {
    const sx = new SignedXml({ publicCert: signer.toString(), getCertFromKeyInfo: () => null });
    sx.SignatureAlgorithms = { ...sx.SignatureAlgorithms, ...ECDSA };
    sx.loadSignature(signature);
    const keyType = SIGNATURE_ALGORITHMS.get(sx.signatureAlgorithm ?? '');
    if (!C14N.has(sx.canonicalizationAlgorithm ?? '') || !keyType) {
      throw new TrustedListError(`the list is signed with algorithms not accepted (${sx.canonicalizationAlgorithm}, ${sx.signatureAlgorithm})`);
    }
    // An algorithm is the key's own: an RSA URI is never checked with an EC key, nor the reverse.
    if (signer.publicKey.asymmetricKeyType !== keyType && !(keyType === 'rsa' && signer.publicKey.asymmetricKeyType === 'rsa-pss')) {
      reasons.push(`the signature algorithm is not for the ${signer.publicKey.asymmetricKeyType ?? 'unknown'} key of ${signer.subject.split('\n').join(', ')}`);
      continue;
    }
    let ok: boolean;
    try {
      ok = sx.checkSignature(xml);
    } catch (err) {
      reasons.push((err as Error).message);
      continue;
    }
    if (!ok) {
      reasons.push('a reference digest does not match');
      continue;
    }
    const references = sx.getReferences();
    if (references.some((r) => !DIGEST_ALGORITHMS.has(r.digestAlgorithm))) throw new TrustedListError('the list uses a digest algorithm not accepted');
    // The whole list: URI="" or, as Belgium's list says it, the root's own Id (which xml-crypto
    // resolved to the one element carrying it, refusing a document where two do).
    const rootId = root.getAttribute('Id');
    const whole = references.filter((r) => r.uri === '' || (rootId && r.uri === `#${rootId}`));
    const transforms = whole[0]?.transforms ?? [];
    if (whole.length !== 1 || transforms[0] !== ENVELOPED || !transforms.slice(1).every((t) => C14N.has(t))) {
      throw new TrustedListError('the signature does not cover the whole list (one enveloped reference to "" or to the root\'s Id)');
    }
    signedBytes = whole[0]!.signedReference;
    signedBy = signer;
    break;
  }
  if (signedBytes === undefined || !signedBy)
    throw new TrustedListError(`the list's signature does not verify with a configured signer (${reasons[0] ?? 'no reason'})`);
  // What the signature covers, canonical: the only bytes read from here on.
  const list = listOf(strictParse(signedBytes), createHash('sha256').update(signedBytes, 'utf8').digest());
  if (list.type === LIST_OF_LISTS)
    throw new TrustedListError("the EU's list of lists names lists and their signers, not services: import each member state's list");
  if (list.type !== EU_GENERIC) throw new TrustedListError(`not a member state's trusted list (TSLType ${list.type})`);
  // ETSI TS 119 612 §5.7.1: the operator's certificate is of the list's territory. So a
  // signer configured for one country cannot speak for another's services.
  // The operator signed it when it was issued: its certificate must have been valid then.
  if (!validAt(signedBy, list.issuedAt)) {
    throw new TrustedListError(`the list's signer's certificate was not valid when the list was issued (${list.issuedAt.toISOString()})`);
  }
  const country = countryOf(signedBy);
  if (country !== list.territory && !(list.territory === 'EL' && country === 'GR')) {
    throw new TrustedListError(`the list is ${list.territory}'s, and its signer's certificate is ${country ? `${country}'s` : 'of no country'}`);
  }
  return list;
}

const countryOf = (cert: X509Certificate): string | undefined => /^C=([A-Z]{2})$/m.exec(cert.subject)?.[1];

function listOf(doc: Document, digest: Buffer): TrustedList {
  const root = doc.documentElement!;
  const scheme = child(root, 'SchemeInformation');
  if (!scheme) throw new TrustedListError('the list has no SchemeInformation');
  const services: TrustedService[] = [];
  for (const provider of childElements(child(root, 'TrustServiceProviderList') ?? root, TSL_NS, 'TrustServiceProvider')) {
    const providerName = text(child(child(child(provider, 'TSPInformation'), 'TSPName'), 'Name'));
    for (const service of childElements(child(provider, 'TSPServices') ?? provider, TSL_NS, 'TSPService')) {
      const info = child(service, 'ServiceInformation');
      const identities = childElements(child(info, 'ServiceDigitalIdentity') ?? service, TSL_NS, 'DigitalId');
      const certificates = identities
        .flatMap((id) => childElements(id, TSL_NS, 'X509Certificate'))
        .map((c) => {
          try {
            return new X509Certificate(Buffer.from(text(c).replace(/\s+/g, ''), 'base64'));
          } catch {
            throw new TrustedListError(`a certificate of ${providerName} cannot be read`);
          }
        });
      const history = childElements(child(service, 'ServiceHistory') ?? service, TSL_NS, 'ServiceHistoryInstance')
        .map((h) => ({ status: text(child(h, 'ServiceStatus')), from: date(child(h, 'StatusStartingTime'), 'status starting time') }))
        .sort((a, b) => b.from.getTime() - a.from.getTime());
      services.push({
        provider: providerName,
        name: text(child(child(info, 'ServiceName'), 'Name')),
        type: text(child(info, 'ServiceTypeIdentifier')),
        status: text(child(info, 'ServiceStatus')),
        statusFrom: date(child(info, 'StatusStartingTime'), 'status starting time'),
        history,
        certificates,
        additionalInformation: Array.from(info?.getElementsByTagNameNS(TSL_NS, 'AdditionalServiceInformation') ?? []).map((a) => text(child(a, 'URI'))),
      });
    }
  }
  const nextUpdate = child(child(scheme, 'NextUpdate'), 'dateTime');
  const territory = text(child(scheme, 'SchemeTerritory'));
  if (!/^[A-Z]{2}$/.test(territory)) throw new TrustedListError("the list's territory is not a two-letter code");
  const sequenceNumber = Number(text(child(scheme, 'TSLSequenceNumber')));
  if (!Number.isSafeInteger(sequenceNumber) || sequenceNumber < 1 || sequenceNumber > 0xffffffff)
    throw new TrustedListError("the list's sequence number is not a positive integer");
  return {
    territory,
    type: text(child(scheme, 'TSLType')),
    sequenceNumber,
    issuedAt: date(child(scheme, 'ListIssueDateTime'), 'issue date'),
    nextUpdate: nextUpdate ? date(nextUpdate, 'next update') : null,
    services,
    digest,
  };
}

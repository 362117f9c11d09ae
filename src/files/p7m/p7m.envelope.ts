// The envelope of a .p7m: its encoding (DER, PEM with any label, bare Base64) and the
// SignedData structure, shape-checked, with the content and the certificates it carries.
import forge from 'node-forge';
import {
  CONTEXT,
  LimitError,
  MAX_DEPTH,
  T,
  UNIVERSAL,
  algorithm,
  parseExact,
  childSpans,
  is,
  kids,
  malformed,
  noParams,
  octets,
  oid,
  seq,
  smallInt,
  spanAt,
  walkTlv,
  type IndefiniteEnds,
  type Node,
  type NodeBudget,
  type Span,
  type WalkPath,
} from './p7m.asn1.js';
import { hashOf } from './p7m.algorithms.js';
import { readCertificates, type EnvelopeCert } from './p7m.certs.js';

export const ID_DATA = '1.2.840.113549.1.7.1';
const MAX_SIGNERS = 16;
/** A ContentInfo's first element: OBJECT IDENTIFIER id-signedData. */
const SIGNED_DATA_OID = Buffer.from('06092a864886f70d010702', 'hex');

/**
 * DER as is; otherwise PEM with any label, or bare Base64, decoded strictly (Buffer's own
 * decoder skips junk). Only a ContentInfo that announces id-signedData counts.
 */
export function decode(input: Uint8Array): { encoding: 'der' | 'pem' | 'base64'; der: Uint8Array } | undefined {
  if (input[0] === 0x30) return announcesSignedData(input) ? { encoding: 'der', der: input } : undefined;
  const text = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text[start]!)) start++;
  while (end > start && isSpace(text[end - 1]!)) end--;
  // Base64 of a SEQUENCE starts with 'M': anything else (a PDF's '%') is not worth decoding.
  if (text[start] !== 0x4d && text[start] !== 0x2d) return undefined;
  let encoding: 'pem' | 'base64' = 'base64';
  if (text[start] === 0x2d) {
    const eol = text.indexOf(0x0a, start);
    const header = text.toString('latin1', start, eol < 0 ? Math.min(end, start + 100) : Math.min(eol, start + 100));
    const label = /^-----BEGIN ([A-Z0-9 ]{1,64})-----\r?$/.exec(header)?.[1];
    if (label === undefined) return undefined;
    const footer = Buffer.from(`-----END ${label}-----`, 'latin1');
    if (eol < 0 || end - footer.length < eol || !footer.equals(text.subarray(end - footer.length, end))) return undefined;
    start = eol + 1;
    end -= footer.length;
    encoding = 'pem';
  }
  const der = strictBase64(text, start, end);
  return der && announcesSignedData(der) ? { encoding, der } : undefined;
}

// 1: Base64 alphabet, 2: whitespace allowed between characters.
const BASE64 = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') BASE64[c.charCodeAt(0)] = 1;
for (const c of ' \t\r\n') BASE64[c.charCodeAt(0)] = 2;

/** Decodes Base64 only when every byte is alphabet, whitespace or final padding (Buffer's decoder skips junk). */
export function strictBase64(text: Buffer, start: number, end: number): Buffer | undefined {
  const compact = Buffer.allocUnsafe(end - start);
  let n = 0;
  let padding = 0;
  for (let i = start; i < end; i++) {
    const c = text[i]!;
    const kind = BASE64[c];
    if (kind === 1 && padding === 0) compact[n++] = c;
    else if (c === 0x3d && padding < 2) {
      padding++;
      compact[n++] = c;
    } else if (kind !== 2) return undefined;
  }
  if (n === 0 || n % 4 !== 0) return undefined;
  return Buffer.from(compact.toString('latin1', 0, n), 'base64');
}

export function isSpace(byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

const announcesSignedData = (der: Uint8Array): boolean => announces(der, SIGNED_DATA_OID);

/** Whether `der` is a SEQUENCE (a ContentInfo) whose first element is the OBJECT IDENTIFIER `oidDer` (its DER). */
export function announces(der: Uint8Array, oidDer: Buffer): boolean {
  if (der.length < 2 || der[0] !== 0x30) return false;
  const first = der[1]!;
  const header = first > 0x80 ? 2 + (first & 0x7f) : 2;
  return der.length >= header + oidDer.length && oidDer.equals(der.subarray(header, header + oidDer.length));
}

/** One level of SignedData, read. */
export interface Envelope {
  eContentType: string;
  content: Content | undefined;
  digestOids: Set<string>;
  certs: EnvelopeCert[];
  signerInfos: Node[];
}

/**
 * Unsigned attributes that the check examines; the others (archive timestamps, revocation
 * values, certificate values: megabytes in CAdES-LT/LTA envelopes) are never handed to forge.
 */
export const EXAMINED_UNSIGNED_ATTRIBUTES: ReadonlySet<string> = new Set<string>([
  '1.2.840.113549.1.9.6', // countersignature (RFC 5652 §11.4)
  '1.2.840.113549.1.9.16.2.14', // signature timestamp token (RFC 3161, CAdES-T)
]);

/**
 * Reads one SignedData level; throws MalformedError or LimitError. The budget counts the ASN.1
 * nodes handed to forge (the certificates and signer infos) and the content's BER chunks, not
 * the CRLs or the unsigned attributes that nothing examines. A first walk that builds nothing
 * checks every header but those inside the parts nothing reads (their lengths only), bounded
 * by the input's size (a node takes two bytes at least).
 */
export function readEnvelope(der: Uint8Array, budget: NodeBudget): Envelope {
  const ends: IndefiniteEnds = new Map();
  const end = walkTlv(der, { remaining: Math.ceil(der.length / 2) + 1 }, ends, notExamined);
  // A CR/LF (or spaces) after a DER envelope is a transfer artefact (mail, FTP in ASCII mode),
  // not content: tolerated. Any other trailing byte is refused.
  for (let i = end; i < der.length; i++) if (!isSpace(der[i]!)) malformed('trailing bytes after the envelope');
  const whole = der.subarray(0, end);
  const split = splitContent(whole, ends, budget);
  const contentInfo = seq(split ? split.root : parseCounted(whole, budget), 'ContentInfo');
  const wrapper = kids(contentInfo[1], CONTEXT, 0, 'ContentInfo content');
  if (contentInfo.length !== 2 || wrapper.length !== 1) malformed('ContentInfo is not the expected structure');
  const sd = seq(wrapper[0], 'SignedData');
  let i = 0;
  // The version (RFC 5652 5.1 derives it from the contents) is read but not judged: no
  // signature covers it, and real envelopes get it wrong (DSS and openssl accept them).
  smallInt(sd[i++], 'SignedData version');
  const digestAlgs = kids(sd[i++], UNIVERSAL, T.SET, 'digestAlgorithms').map((n) => algorithm(n, 'digest algorithm'));
  // id-shake256-len (Ed448's digest, RFC 8419) is the one digest algorithm with parameters.
  if (!digestAlgs.every((a) => noParams(a.params) || hashOf(a) !== undefined)) malformed('unexpected digest algorithm parameters');
  const encap = seq(sd[i++], 'encapContentInfo');
  if (encap.length < 1 || encap.length > 2) malformed('encapContentInfo is not the expected structure');
  const eContentType = oid(encap[0], 'eContentType');
  let content: Content | undefined;
  if (encap.length === 2) {
    const eContent = kids(encap[1], CONTEXT, 0, 'eContent');
    if (eContent.length !== 1) malformed('eContent is not the expected structure');
    content = split ? split.content : contentOf([octets(eContent[0], 'eContent')]);
  }
  const certSet = is(sd[i], CONTEXT, 0) ? sd[i++] : undefined;
  if (is(sd[i], CONTEXT, 1)) i++; // CRLs: revocation is not checked here
  const signerInfos = kids(sd[i++], UNIVERSAL, T.SET, 'signerInfos');
  if (i !== sd.length) malformed('unexpected elements in SignedData');
  if (signerInfos.length > MAX_SIGNERS) malformed(`more than ${MAX_SIGNERS} signers`);
  return { eContentType, content, digestOids: new Set(digestAlgs.map((a) => a.oid)), certs: readCertificates(certSet), signerInfos };
}

const EXAMINED_DER = [...EXAMINED_UNSIGNED_ATTRIBUTES].map((o) => Buffer.from(forge.asn1.oidToDer(o).getBytes(), 'latin1'));

/**
 * The parts of a SignedData whose headers the first walk need not read, as nothing reads them
 * (megabytes of CAdES-LT/LTA revocation data): the CRLs, and the values of the unsigned
 * attributes that are not examined. Whatever is later handed to forge is walked in full first.
 * Path: ContentInfo, [0], SignedData, then a SignedData field (crls: [1] after the third), or
 * signerInfos (a SET after the third), SignerInfo, its [1], an attribute, its values.
 */
function notExamined(buf: Uint8Array, tag: number, path: readonly WalkPath[]): boolean {
  if (path.length < 3 || path[0]!.tag !== 0x30 || path[1]!.tag !== 0xa0 || path[2]!.tag !== 0x30) return false;
  if (path.length === 3) return tag === 0xa1 && path[2]!.index > 3;
  if (path.length !== 7 || tag !== 0x31) return false;
  const [, , , signerInfos, info, unsigned, attr] = path as [WalkPath, WalkPath, WalkPath, WalkPath, WalkPath, WalkPath, WalkPath];
  // path[2].index: how many SignedData fields so far, this one included (signerInfos comes fourth or later).
  if (signerInfos.tag !== 0x31 || path[2]!.index < 4 || info.tag !== 0x30 || unsigned.tag !== 0xa1 || attr.tag !== 0x30 || attr.index !== 2 || !attr.firstOid)
    return false;
  const type = buf.subarray(attr.firstOid[0], attr.firstOid[1]);
  return !EXAMINED_DER.some((o) => Buffer.from(type.buffer, type.byteOffset, type.byteLength).equals(o));
}

/** Parses an element's bytes that {@link walkTlv} accepted, charging their nodes to the budget first. */
const parseCounted = (der: Uint8Array, budget: NodeBudget): Node => parseExact(der, budget, 'an element');

/** The encapsulated content, as the byte ranges of its OCTET STRING chunks, in order. */
export interface Content {
  parts: readonly Buffer[];
  /** The parts as one Buffer (a copy only when there are several). */
  whole: () => Buffer;
}

export function contentOf(parts: Buffer[]): Content {
  let joined: Buffer | undefined;
  return { parts, whole: () => (joined ??= parts.length === 1 ? parts[0]! : Buffer.concat(parts)) };
}

const OCTETS_PRIMITIVE = 0x04;
const OCTETS_CONSTRUCTED = 0x24;

/**
 * The usual SignedData shape, read without handing the content to forge: forge parses every
 * other part from its own byte range, the tree is rebuilt around them with a placeholder for
 * the content, and the content stays ranges of the input (no copies into and out of forge's
 * binary strings, which cost more than forge's parse). Undefined for any other shape, which
 * then takes the full forge parse, so errors and verdicts are the same either way.
 */
function splitContent(der: Uint8Array, ends: IndefiniteEnds, budget: NodeBudget): { root: Node; content: Content | undefined } | undefined {
  if (der[0] !== 0x30) return undefined;
  const ci = childSpans(der, ends, spanAt(der, ends, 0), 2);
  if (ci?.length !== 2 || ci[1]!.tag !== 0xa0) return undefined;
  const wrapped = childSpans(der, ends, ci[1]!, 1);
  if (wrapped?.length !== 1 || wrapped[0]!.tag !== 0x30) return undefined;
  const sd = childSpans(der, ends, wrapped[0]!, 6);
  if (!sd || sd.length < 4 || sd[2]!.tag !== 0x30) return undefined;
  const encap = childSpans(der, ends, sd[2]!, 2);
  if (!encap || encap.length < 1 || (encap.length === 2 && encap[1]!.tag !== 0xa0)) return undefined;
  let parts: Buffer[] | undefined;
  if (encap.length === 2) {
    const eContent = childSpans(der, ends, encap[1]!, 1);
    parts = [];
    if (eContent?.length !== 1 || !chunks(der, ends, eContent[0]!, parts, 0, budget)) return undefined;
  }
  const last = sd.length - 1;
  const signerSpans = sd[last]!.tag === 0x31 ? childSpans(der, ends, sd[last]!, MAX_SIGNERS) : undefined;
  if (!signerSpans) return undefined;

  const { create, Class, Type } = forge.asn1;
  const part = (s: Span): Node => parseCounted(der.subarray(s.start, s.end), budget);
  const placeholder = create(Class.UNIVERSAL, Type.OCTETSTRING, false, '');
  const encapNode = create(Class.UNIVERSAL, Type.SEQUENCE, true, [part(encap[0]!), ...(parts ? [create(Class.CONTEXT_SPECIFIC, 0, true, [placeholder])] : [])]);
  const sdNode = create(
    Class.UNIVERSAL,
    Type.SEQUENCE,
    true,
    sd.map((s, i) => {
      if (i === 2) return encapNode;
      // CRLs are not examined: an empty [1] stands for them, however large.
      if (i > 2 && i < last && s.tag === 0xa1) return create(Class.CONTEXT_SPECIFIC, 1, true, []);
      if (i === last)
        return create(
          Class.UNIVERSAL,
          Type.SET,
          true,
          signerSpans.map((si) => signerInfo(der, ends, si, budget)),
        );
      return part(s);
    }),
  );
  const root = create(Class.UNIVERSAL, Type.SEQUENCE, true, [part(ci[0]!), create(Class.CONTEXT_SPECIFIC, 0, true, [sdNode])]);
  return { root, content: parts && contentOf(parts) };
}

/** More unsigned attributes than any real envelope carries: beyond, the signer info is parsed (and counted) whole. */
const MAX_UNSIGNED_ATTRIBUTES = 256;

/**
 * A SignerInfo, its unsigned attributes ([1], last) reduced to those examined: each other one
 * keeps its type with no value, so that the verdict can say it is there.
 */
function signerInfo(der: Uint8Array, ends: IndefiniteEnds, span: Span, budget: NodeBudget): Node {
  const parse = (s: Span): Node => parseCounted(der.subarray(s.start, s.end), budget);
  const fields = span.tag === 0x30 ? childSpans(der, ends, span, 7) : undefined;
  const unsigned = fields?.[fields.length - 1];
  const attrs = fields && fields.length >= 2 && unsigned?.tag === 0xa1 ? childSpans(der, ends, unsigned, MAX_UNSIGNED_ATTRIBUTES) : undefined;
  if (!fields || !attrs) return parse(span);
  const { create, Class, Type } = forge.asn1;
  const attributes = attrs.map((attr) => {
    const parts = attr.tag === 0x30 ? childSpans(der, ends, attr, 2) : undefined;
    if (parts?.length !== 2 || parts[0]!.tag !== T.OID) return parse(attr);
    const type = parse(parts[0]!);
    if (EXAMINED_UNSIGNED_ATTRIBUTES.has(oid(type, 'attribute type'))) return parse(attr);
    return create(Class.UNIVERSAL, Type.SEQUENCE, true, [type, create(Class.UNIVERSAL, Type.SET, true, [])]);
  });
  return create(Class.UNIVERSAL, Type.SEQUENCE, true, [...fields.slice(0, -1).map(parse), create(Class.CONTEXT_SPECIFIC, 1, true, attributes)]);
}

/**
 * Collects an OCTET STRING's chunk ranges, each charged to the budget (a chunk is a node);
 * false when something in it is not an OCTET STRING.
 */
function chunks(der: Uint8Array, ends: IndefiniteEnds, span: Span, out: Buffer[], depth: number, budget: NodeBudget): boolean {
  if (--budget.remaining < 0) throw new LimitError('too many ASN.1 nodes');
  if (span.tag === OCTETS_PRIMITIVE) {
    out.push(Buffer.from(der.buffer, der.byteOffset + span.body, span.bodyEnd - span.body));
    return true;
  }
  if (span.tag !== OCTETS_CONSTRUCTED || depth >= MAX_DEPTH) return false;
  const children = childSpans(der, ends, span, Math.max(0, budget.remaining));
  if (!children) throw new LimitError('too many ASN.1 nodes');
  return children.every((child) => chunks(der, ends, child, out, depth + 1, budget));
}

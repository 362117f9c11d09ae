// The ASN.1 layer of the .p7m check: a cheap TLV pre-walk that bounds what node-forge will be
// asked to parse, the forge parse itself, and shape-checked accessors over forge's nodes
// (hostile input can give any node any shape, so nothing here trusts one).
import forge from 'node-forge';

/** A parsed ASN.1 node, as node-forge builds it. */
export type Node = forge.asn1.Asn1;

/** The envelope's bytes do not have the shape the check expects; the message is short and safe to show. */
export class MalformedError extends Error {
  override name = 'MalformedError';
}

/** The input exceeds a configured bound (node count); refused before any parsing. */
export class LimitError extends Error {
  override name = 'LimitError';
}

export function malformed(message: string): never {
  throw new MalformedError(message);
}

/** Indefinite-length elements recorded by one walk (openssl -stream writes a few per envelope). */
const MAX_INDEFINITE = 10_000;

/** Deeper than any CMS structure we read needs; also bounds forge's recursion. */
export const MAX_DEPTH = 64;

export const UNIVERSAL = 0x00;
export const CONTEXT = 0x80;
export const T = {
  BOOLEAN: 1,
  INTEGER: 2,
  BITSTRING: 3,
  OCTETSTRING: 4,
  NULL: 5,
  OID: 6,
  SEQUENCE: 16,
  SET: 17,
  UTCTIME: 23,
  GENERALIZEDTIME: 24,
  BMPSTRING: 30,
} as const;

/** Node budget shared by every level of one verification. */
export interface NodeBudget {
  remaining: number;
}

interface Frame {
  start: number;
  bound: number;
  indefinite: boolean;
  tag: number;
  /** Children seen so far. */
  index: number;
  /** Where the first child's content lies, when it is an OBJECT IDENTIFIER (an attribute's type). */
  firstOid?: [number, number];
}

/** What a skip rule sees of the elements enclosing the one about to be walked, outermost first. */
export interface WalkPath {
  tag: number;
  index: number;
  firstOid?: [number, number];
}

/**
 * Says whether the definite-length constructed element about to be walked (`tag`, inside
 * `path`) is one the caller will never read: its headers are then not walked (its length is
 * still checked against its parent's).
 */
export type SkipRule = (buf: Uint8Array, tag: number, path: readonly WalkPath[]) => boolean;

/** Where each indefinite-length element (by its offset) ends, as {@link walkTlv} found it. */
export type IndefiniteEnds = Map<number, number>;

/**
 * Validates the TLV headers of the first element of `buf` without building anything, with the
 * same rules as forge's parser (strict lengths, `00 00` ends an indefinite element), and returns
 * the offset just past it. Iterative, so no input can exhaust the stack.
 * Refuses what forge would misparse: the high-tag-number form, odd-length BMPStrings, lengths
 * over four bytes; and refuses more nodes than the budget or more depth than {@link MAX_DEPTH}.
 * Records in `ends`, when given, where each indefinite-length element ends (see {@link spanAt}).
 */
export function walkTlv(buf: Uint8Array, budget: NodeBudget, ends?: IndefiniteEnds, skip?: SkipRule): number {
  const stack: Frame[] = [];
  let pos = 0;
  for (;;) {
    const bound = stack.length > 0 ? stack[stack.length - 1]!.bound : buf.length;
    if (bound - pos < 2) malformed('truncated ASN.1 element');
    const tag = buf[pos]!;
    if ((tag & 0x1f) === 0x1f) malformed('unsupported ASN.1 high tag number');
    const constructed = (tag & 0x20) !== 0;
    const first = buf[pos + 1]!;
    let header = 2;
    let length: number | undefined;
    if (first === 0x80) {
      if (!constructed) malformed('indefinite length on a primitive element');
      length = undefined;
    } else if (first & 0x80) {
      const n = first & 0x7f;
      if (n > 4) malformed('ASN.1 length too large');
      if (pos + 2 + n > bound) malformed('truncated ASN.1 length');
      length = 0;
      for (let i = 0; i < n; i++) length = length * 256 + buf[pos + 2 + i]!;
      header += n;
    } else {
      length = first;
    }
    if (length !== undefined && pos + header + length > bound) malformed('ASN.1 length exceeds the enclosing element');
    if (--budget.remaining < 0) throw new LimitError('too many ASN.1 nodes');
    const parent = stack[stack.length - 1];
    if (parent) {
      if (parent.index === 0 && tag === T.OID && length !== undefined) parent.firstOid = [pos + header, pos + header + length];
      parent.index++;
    }
    if (constructed && length !== undefined && skip?.(buf, tag, stack)) {
      pos += header + length;
    } else if (constructed) {
      if (stack.length >= MAX_DEPTH) malformed('ASN.1 nesting too deep');
      stack.push(
        length === undefined
          ? { start: pos, bound, indefinite: true, tag, index: 0 }
          : { start: pos, bound: pos + header + length, indefinite: false, tag, index: 0 },
      );
      pos += header;
    } else {
      if (tag === T.BMPSTRING && length! % 2 !== 0) malformed('odd-length BMPString');
      pos += header + length!;
    }
    // Close every element this one completed.
    for (;;) {
      const top = stack[stack.length - 1];
      if (!top) return pos;
      if (top.indefinite) {
        if (top.bound - pos >= 2 && buf[pos] === 0 && buf[pos + 1] === 0) {
          pos += 2;
          if (ends) {
            // Real BER envelopes close a handful of indefinite elements; each costs a map entry.
            if (ends.size >= MAX_INDEFINITE) throw new LimitError('too many indefinite-length elements');
            ends.set(top.start, pos);
          }
          stack.pop();
          continue;
        }
        break;
      }
      if (pos === top.bound) {
        stack.pop();
        continue;
      }
      break;
    }
  }
}

/** Where one element lies in bytes that {@link walkTlv} has accepted. */
export interface Span {
  tag: number;
  start: number;
  /** First content byte. */
  body: number;
  /** Just past the content (before the `00 00` of an indefinite element). */
  bodyEnd: number;
  /** Just past the element. */
  end: number;
}

/** The element at `pos` of bytes accepted by {@link walkTlv}, with the `ends` it recorded. */
export function spanAt(buf: Uint8Array, ends: IndefiniteEnds, pos: number): Span {
  const first = buf[pos + 1]!;
  if (first === 0x80) {
    const end = ends.get(pos);
    if (end === undefined) malformed('inconsistent ASN.1 element');
    return { tag: buf[pos]!, start: pos, body: pos + 2, bodyEnd: end - 2, end };
  }
  const n = first & 0x80 ? first & 0x7f : 0;
  let length = n === 0 ? first : 0;
  for (let i = 0; i < n; i++) length = length * 256 + buf[pos + 2 + i]!;
  const body = pos + 2 + n;
  return { tag: buf[pos]!, start: pos, body, bodyEnd: body + length, end: body + length };
}

/**
 * The elements inside a constructed span of bytes already accepted by {@link walkTlv}; undefined
 * when there are more than `max` (a hostile input's million elements are never listed).
 */
export function childSpans(buf: Uint8Array, ends: IndefiniteEnds, span: Span, max = Infinity): Span[] | undefined {
  const out: Span[] = [];
  for (let pos = span.body; pos < span.bodyEnd;) {
    const child = spanAt(buf, ends, pos);
    if (child.end <= pos || child.end > span.bodyEnd) malformed('inconsistent ASN.1 element');
    if (out.length >= max) return undefined;
    out.push(child);
    pos = child.end;
  }
  return out;
}

type FromDer = (bytes: string, options: { strict: boolean; parseAllBytes: boolean; decodeBitStrings: boolean; maxDepth: number }) => Node;

/** Parses one element that {@link walkTlv} accepted and that fills `der` exactly. */
export function parseDer(der: Uint8Array): Node {
  // @types/node-forge does not declare the options object.
  const fromDer = forge.asn1.fromDer as unknown as FromDer;
  return fromDer(latin1(der), { strict: true, parseAllBytes: true, decodeBitStrings: false, maxDepth: MAX_DEPTH + 2 });
}

export function latin1(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

export function bytes(binary: string): Buffer {
  return Buffer.from(binary, 'latin1');
}

/** Parses one element that fills `der` exactly, its nodes charged to the budget first (throws MalformedError naming `what` for bytes after it). */
export function parseExact(der: Uint8Array, budget: NodeBudget, what: string): Node {
  if (walkTlv(der, budget) !== der.length) malformed(`trailing bytes after ${what}`);
  return parseDer(der);
}

/** The DER of a parsed node (forge re-encodes; for DER input it reproduces the original bytes). */
export function derOf(node: Node): Buffer {
  return bytes(forge.asn1.toDer(node).getBytes());
}

function isNode(node: unknown): node is Node {
  return typeof node === 'object' && node !== null && 'tagClass' in node && 'type' in node && 'value' in node;
}

export function is(node: unknown, tagClass: number, type: number): node is Node {
  return isNode(node) && (node.tagClass as number) === tagClass && (node.type as number) === type;
}

/** The children of a constructed node of the given tag. */
export function kids(node: unknown, tagClass: number, type: number, what: string): Node[] {
  if (!is(node, tagClass, type) || !Array.isArray(node.value)) malformed(`${what} is not the expected structure`);
  return node.value;
}

/** The content octets of a primitive node of the given tag, as a binary string. */
export function prim(node: unknown, tagClass: number, type: number, what: string): string {
  if (!is(node, tagClass, type) || typeof node.value !== 'string') malformed(`${what} is not the expected value`);
  return node.value;
}

export function seq(node: unknown, what: string): Node[] {
  return kids(node, UNIVERSAL, T.SEQUENCE, what);
}

export function oid(node: unknown, what: string): string {
  const value = prim(node, UNIVERSAL, T.OID, what);
  if (value.length === 0 || value.length > 64 || (value.charCodeAt(value.length - 1) & 0x80) !== 0) malformed(`${what} is not a valid OID`);
  return forge.asn1.derToOid(value);
}

/** A small non-negative INTEGER (versions, salt lengths). */
export function smallInt(node: unknown, what: string): number {
  const value = prim(node, UNIVERSAL, T.INTEGER, what);
  if (value.length === 0 || value.length > 4 || (value.charCodeAt(0) & 0x80) !== 0) malformed(`${what} is not a small non-negative integer`);
  let n = 0;
  for (let i = 0; i < value.length; i++) n = n * 256 + value.charCodeAt(i);
  return n;
}

/** An OCTET STRING's content, concatenating the chunks of a constructed (BER) one. */
export function octets(node: unknown, what: string): Buffer {
  const chunks: Buffer[] = [];
  const collect = (n: unknown, depth: number): void => {
    if (!is(n, UNIVERSAL, T.OCTETSTRING)) malformed(`${what} is not an OCTET STRING`);
    if (typeof n.value === 'string') chunks.push(bytes(n.value));
    else if (Array.isArray(n.value) && depth < MAX_DEPTH) for (const c of n.value) collect(c, depth + 1);
    else malformed(`${what} is not an OCTET STRING`);
  };
  collect(node, 0);
  return Buffer.concat(chunks);
}

/** An AlgorithmIdentifier: its OID and parameters node, if any. */
export function algorithm(node: unknown, what: string): { oid: string; params: Node | undefined } {
  const parts = seq(node, what);
  if (parts.length < 1 || parts.length > 2) malformed(`${what} is not an AlgorithmIdentifier`);
  return { oid: oid(parts[0], what), params: parts[1] };
}

/** True when parameters are absent or NULL, as hash and most signature algorithms require. */
export function noParams(params: Node | undefined): boolean {
  return params === undefined || (is(params, UNIVERSAL, T.NULL) && params.value === '');
}

const UTC = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?(Z|[+-]\d{4})$/;
const GENERALIZED = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{4})$/;

/**
 * A UTCTime or GeneralizedTime node as a Date, or undefined when it is not a real instant.
 * Stricter than forge's converters, which yield an Invalid Date (or a shifted one) on garbage.
 */
export function timeOf(node: unknown): Date | undefined {
  let m: RegExpExecArray | null;
  let year: number;
  if (is(node, UNIVERSAL, T.UTCTIME) && typeof node.value === 'string' && (m = UTC.exec(node.value))) {
    const yy = Number(m[1]);
    year = yy >= 50 ? 1900 + yy : 2000 + yy; // RFC 5280 4.1.2.5.1
    return instant(year, m[2]!, m[3]!, m[4]!, m[5]!, m[6] ?? '00', undefined, m[7]!);
  }
  if (is(node, UNIVERSAL, T.GENERALIZEDTIME) && typeof node.value === 'string' && (m = GENERALIZED.exec(node.value))) {
    return instant(Number(m[1]), m[2]!, m[3]!, m[4]!, m[5]!, m[6]!, m[7], m[8]!);
  }
  return undefined;
}

function instant(year: number, mo: string, d: string, h: string, mi: string, s: string, frac: string | undefined, zone: string): Date | undefined {
  const [month, day, hour, minute, second] = [Number(mo), Number(d), Number(h), Number(mi), Number(s)];
  const ms = frac === undefined ? 0 : Math.floor(Number(`0.${frac}`) * 1000);
  const local = new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms));
  // Date.UTC rolls 31 February over into March: a round trip catches impossible dates.
  if (
    local.getUTCFullYear() !== year ||
    local.getUTCMonth() !== month - 1 ||
    local.getUTCDate() !== day ||
    local.getUTCHours() !== hour ||
    local.getUTCMinutes() !== minute ||
    local.getUTCSeconds() !== second
  )
    return undefined;
  if (zone === 'Z') return local;
  const offsetH = Number(zone.slice(1, 3));
  const offsetM = Number(zone.slice(3, 5));
  if (offsetH > 23 || offsetM > 59) return undefined;
  const offset = (offsetH * 60 + offsetM) * 60_000 * (zone.startsWith('-') ? -1 : 1);
  return new Date(local.getTime() - offset);
}

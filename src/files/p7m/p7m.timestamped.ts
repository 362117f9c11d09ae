// Timestamped containers of a signed document: `.tsd` (RFC 5544 TimeStampedData: the data and
// its RFC 3161 timestamps in one DER structure) and `.m7m` (the Italian S/MIME bundle of a
// .p7m and the timestamp response over it, as signing tools of the CNIPA/AgID era produce).
// Each is taken apart here; the verifier checks the timestamps over what they cover and the
// document inside as any other.
import {
  CONTEXT,
  T,
  UNIVERSAL,
  derOf,
  is,
  kids,
  malformed,
  octets,
  oid,
  parseDer,
  parseExact,
  seq,
  smallInt,
  walkTlv,
  type Node,
  type NodeBudget,
} from './p7m.asn1.js';
import { announces, isSpace, strictBase64 } from './p7m.envelope.js';

/** A timestamp token and the bytes its messageImprint must be the digest of. */
export interface StampedBytes {
  token: Node;
  imprintOver: Buffer;
}

export interface Timestamped {
  kind: 'tsd' | 'm7m';
  /** The document inside (usually a .p7m); undefined when the container does not carry it. */
  content: Uint8Array | undefined;
  /** Outermost first: a .tsd's renewals follow the first timestamp. */
  stamps: StampedBytes[];
}

/** id-ct-timestampedData */
const TIMESTAMPED_DATA_OID = Buffer.from('060b2a864886f70d010910011f', 'hex');
/** Timestamps of one .tsd: renewals beyond this are not followed. */
const MAX_STAMPS = 16;
/** A .m7m's headers and part headers are short; beyond this it is not one. */
const MAX_MIME_HEADER = 16 * 1024;

/**
 * The container `input` is, taken apart; undefined when it is neither. Throws MalformedError
 * (or LimitError) for a container that announces itself and is broken.
 */
export function readTimestamped(input: Uint8Array, budget: NodeBudget): Timestamped | undefined {
  if (announces(input, TIMESTAMPED_DATA_OID)) return readTsd(input, budget);
  return readM7m(input, budget);
}

// TimeStampedData ::= SEQUENCE { version INTEGER (1), dataUri IA5String OPTIONAL,
//   metaData MetaData OPTIONAL, content OCTET STRING OPTIONAL, temporalEvidence Evidence }
// Evidence ::= CHOICE { tstEvidence [0] TimeStampTokenEvidence, ... }, tagged implicitly (the
// module's default); TimeStampTokenEvidence ::= SEQUENCE OF TimeStampAndCRL { timeStamp, crl OPTIONAL }.
function readTsd(der: Uint8Array, budget: NodeBudget): Timestamped {
  const end = walkTlv(der, budget);
  for (let i = end; i < der.length; i++) if (!isSpace(der[i]!)) malformed('trailing bytes after the timestamped data');
  const ci = seq(parseDer(der.subarray(0, end)), 'ContentInfo');
  const wrapped = kids(ci[1], CONTEXT, 0, 'ContentInfo content');
  if (ci.length !== 2 || wrapped.length !== 1) malformed('ContentInfo is not the expected structure');
  const tsd = seq(wrapped[0], 'TimeStampedData');
  let i = 0;
  if (smallInt(tsd[i++], 'TimeStampedData version') !== 1) malformed('unsupported TimeStampedData version');
  if (is(tsd[i], UNIVERSAL, 22)) i++; // dataUri
  let metaData: Node | undefined;
  if (is(tsd[i], UNIVERSAL, T.SEQUENCE)) metaData = tsd[i++];
  const content = is(tsd[i], UNIVERSAL, T.OCTETSTRING) ? octets(tsd[i++], 'content') : undefined;
  const evidence = tsd[i++];
  if (i !== tsd.length || evidence === undefined) malformed('TimeStampedData is not the expected structure');
  const entries = kids(evidence, CONTEXT, 0, 'timestamp evidence');
  if (entries.length === 0) malformed('no timestamp in the timestamped data');
  if (entries.length > MAX_STAMPS) malformed(`more than ${MAX_STAMPS} timestamps`);
  // The first timestamp covers the data (and the metadata, when it says hashProtected); each
  // renewal covers the DER of the TimeStampAndCRL before it (RFC 5544 §4).
  const protectedMeta = metaData !== undefined && is(seq(metaData, 'MetaData')[0], UNIVERSAL, T.BOOLEAN) && seq(metaData, 'MetaData')[0]!.value !== '\x00';
  const first = Buffer.concat([protectedMeta ? derOf(metaData!) : Buffer.alloc(0), content ?? Buffer.alloc(0)]);
  const stamps = entries.map((entry, n) => {
    const parts = seq(entry, 'TimeStampAndCRL');
    if (parts.length < 1 || parts.length > 2) malformed('TimeStampAndCRL is not the expected structure');
    return { token: parts[0]!, imprintOver: n === 0 ? first : derOf(entries[n - 1]!) };
  });
  return { kind: 'tsd', content, stamps };
}

/**
 * A .m7m: a MIME message, multipart, with one part a CMS SignedData (the .p7m) and one a
 * timestamp response or token over the .p7m's bytes. Undefined when the input is not MIME.
 */
function readM7m(input: Uint8Array, budget: NodeBudget): Timestamped | undefined {
  const text = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  // A MIME message starts with a header line; DER (0x30...) never does.
  if (!/^[!-9;-~]{1,76}:/.test(text.toString('latin1', 0, Math.min(text.length, 80)))) return undefined;
  const headEnd = blankLine(text, 0);
  if (headEnd === undefined || headEnd.at > MAX_MIME_HEADER) return undefined;
  const headers = parseHeaders(text.toString('latin1', 0, headEnd.at));
  const type = headers.get('content-type');
  if (!headers.has('mime-version') || !type || !/^multipart\//i.test(type)) return undefined;
  const boundary = /boundary\s*=\s*(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(type);
  if (!boundary) malformed('multipart without a boundary');
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`, 'latin1');
  let p7m: Buffer | undefined;
  let token: Node | undefined;
  // Exactly the two parts, and nothing beside them that a reader could show: a preamble and an
  // epilogue of white space or the customary sentence only.
  const { parts, preamble, epilogue } = partsOf(text, headEnd.next, delimiter);
  for (const extra of [preamble, epilogue]) if (!onlySpaceOrSentence(extra)) malformed('text outside the parts of the .m7m');
  if (parts.length !== 2) malformed('a .m7m has two parts: the signed document and its timestamp');
  for (const part of parts) {
    const partHead = blankLine(part, 0);
    if (!partHead || partHead.at > MAX_MIME_HEADER) malformed('a MIME part without headers');
    const partHeaders = parseHeaders(part.toString('latin1', 0, partHead.at));
    const encoding = (partHeaders.get('content-transfer-encoding') ?? 'binary').toLowerCase();
    const raw = part.subarray(partHead.next);
    const body = encoding === 'base64' ? (strictBase64(raw, 0, raw.length) ?? malformed('a MIME part is not valid Base64')) : raw;
    const partType = (partHeaders.get('content-type') ?? '').toLowerCase();
    if (/^application\/(x-)?pkcs7-mime/.test(partType)) {
      if (p7m) malformed('more than one signed document in the .m7m');
      p7m = body;
    } else if (/^application\/(timestamp-reply|timestamp-response|vnd\.etsi\.timestamp-token|timestamp)\b/.test(partType)) {
      if (token) malformed('more than one timestamp in the .m7m');
      token = tokenOf(body, budget);
    } else malformed('a part of the .m7m is neither the signed document nor its timestamp');
  }
  if (!p7m) malformed('the .m7m carries no signed document');
  if (!token) malformed('the .m7m carries no timestamp');
  return { kind: 'm7m', content: p7m, stamps: [{ token, imprintOver: p7m }] };
}

/** A TimeStampResp { status, timeStampToken } or a bare TimeStampToken (ContentInfo). */
function tokenOf(der: Buffer, budget: NodeBudget): Node {
  const parsed = parseExact(der, budget, 'the timestamp');
  const node = seq(parsed, 'timestamp');
  if (is(node[0], UNIVERSAL, T.OID)) return parsed; // a token: ContentInfo { id-signedData, [0] ... }
  const status = seq(node[0], 'PKIStatusInfo');
  const granted = smallInt(status[0], 'timestamp status');
  if (granted !== 0 && granted !== 1) malformed('the timestamp response was not granted');
  if (node[1] === undefined || oid(seq(node[1], 'timeStampToken')[0], 'timeStampToken type') !== '1.2.840.113549.1.7.2')
    malformed('the timestamp response carries no token');
  return node[1];
}

const SENTENCE = /^This is a multi-part message in MIME format\.?$/i;

/**
 * White space only, or the customary sentence between white space: trimmed by hand, then one
 * anchored pattern without repetition (a pattern of `\s*` around an optional group backtracks
 * quadratically over a long run of spaces).
 */
function onlySpaceOrSentence(text: Buffer): boolean {
  let start = 0;
  let end = text.length;
  while (start < end && isSpace(text[start]!)) start++;
  while (end > start && isSpace(text[end - 1]!)) end--;
  return start === end || (end - start <= 64 && SENTENCE.test(text.toString('latin1', start, end)));
}

/** Where the first empty line after `from` starts (`at`) and the text after it begins (`next`). */
function blankLine(text: Buffer, from: number): { at: number; next: number } | undefined {
  for (let i = from; i < text.length - 1; i++) {
    if (text[i] !== 0x0a) continue;
    if (text[i + 1] === 0x0a) return { at: i, next: i + 2 };
    if (text[i + 1] === 0x0d && text[i + 2] === 0x0a) return { at: i, next: i + 3 };
  }
  return undefined;
}

function parseHeaders(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  // Folded lines continue the header above them.
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

/** At most this many parts are looked at (a .m7m has two). */
const MAX_PARTS = 8;

/**
 * The bodies between delimiter lines (RFC 2046 §5.1.1: a delimiter starts a line, and the line
 * break before it belongs to it), the preamble before the first and the epilogue after the
 * closing one.
 */
function partsOf(text: Buffer, from: number, delimiter: Buffer): { parts: Buffer[]; preamble: Buffer; epilogue: Buffer } {
  const lineStart = (at: number): boolean => at === from || text[at - 1] === 0x0a;
  const find = (at: number): number => {
    for (let i = text.indexOf(delimiter, at); i >= 0; i = text.indexOf(delimiter, i + 1)) if (lineStart(i)) return i;
    return -1;
  };
  const bodyEnd = (at: number): number => (text[at - 1] === 0x0a ? (text[at - 2] === 0x0d ? at - 2 : at - 1) : at);
  const first = find(from);
  if (first < 0) malformed('a multipart without parts');
  const parts: Buffer[] = [];
  for (let start = first; ;) {
    const after = start + delimiter.length;
    if (text[after] === 0x2d && text[after + 1] === 0x2d) {
      const rest = text.indexOf(0x0a, after);
      return { parts, preamble: text.subarray(from, bodyEnd(first)), epilogue: rest < 0 ? Buffer.alloc(0) : text.subarray(rest + 1) };
    }
    const lineEnd = text.indexOf(0x0a, after);
    const next = lineEnd < 0 ? -1 : find(lineEnd + 1);
    if (next < 0) malformed('a MIME part without its closing delimiter');
    if (parts.length >= MAX_PARTS) malformed('too many MIME parts');
    parts.push(text.subarray(lineEnd + 1, bodyEnd(next)));
    start = next;
  }
}

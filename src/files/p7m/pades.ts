// The signatures of a PDF (PAdES, and the older adbe.pkcs7.detached): each signature
// dictionary's /ByteRange and the detached CMS in its /Contents, found without parsing the PDF's
// objects. A ByteRange names the signed bytes: everything but a /Contents value, which must
// fill the gap between the two ranges exactly (the CMS in it then verifies over the ranges, or
// the signature fails). So nothing is followed (no references, no
// streams, no cycles): the file is scanned once, each range checked against the file's bounds,
// and whatever a hostile file says is read as bytes at known offsets.
import { malformed } from './p7m.asn1.js';

/** One signature as the file places it. */
export interface PdfSignature {
  /** [offset 1, length 1, offset 2, length 2], as the dictionary says. */
  byteRange: [number, number, number, number];
  /**
   * The CMS SignedData in /Contents, DER, its zero padding removed by the verifier: decoded
   * from the hex at each call (a signature's CMS is held only while it is checked).
   */
  cms(): Buffer;
  /** The dictionary's /SubFilter, e.g. ETSI.CAdES.detached; null when not found next to it. */
  subFilter: string | null;
  /** The signed bytes, in order (views of the file, not copies). */
  signed: [Buffer, Buffer];
  /** The second range ends at the file's end (trailing whitespace aside): nothing was appended after this signature. */
  coversWholeFile: boolean;
  /**
   * The dictionary's /M: when the signer says it signed (PAdES puts the claimed signing time
   * there, not in the CMS). Covered by the signature like the rest of the dictionary; null when
   * absent or not a PDF date.
   */
  claimedTime: Date | null;
}

/**
 * Signature dictionaries read at most, counted before any /Contents is decoded. Real documents
 * carry a dozen at most (DSS's tests have one of 51); what bounds the work is the bytes the
 * signatures hash and the time (the verifier's), not this count.
 */
export const MAX_PDF_SIGNATURES = 256;
/** How far before /ByteRange its dictionary's /SubFilter is looked for. */
const DICTIONARY_WINDOW = 4096;

export function isPdf(input: Uint8Array): boolean {
  return input.length >= 5 && Buffer.from(input.buffer, input.byteOffset, 5).toString('latin1') === '%PDF-';
}

const BYTE_RANGE = Buffer.from('/ByteRange', 'latin1');
const RANGE = /^\s*\[\s*(\d{1,10})\s+(\d{1,10})\s+(\d{1,10})\s+(\d{1,10})\s*\]/;

/**
 * The file's signatures in file order; throws MalformedError for a /ByteRange that lies (out of
 * the file, not starting at 0, overlapping, or whose gap is not exactly a /Contents hex string).
 */
export function pdfSignatures(pdf: Buffer): PdfSignature[] {
  const found: PdfSignature[] = [];
  const seen = new Set<string>();
  // Ranges may share a gap (a hostile file's do): each gap's hex is checked once.
  const checkedGaps = new Map<string, number>();
  for (let at = pdf.indexOf(BYTE_RANGE); at >= 0; at = pdf.indexOf(BYTE_RANGE, at + BYTE_RANGE.length)) {
    const m = RANGE.exec(pdf.toString('latin1', at + BYTE_RANGE.length, Math.min(pdf.length, at + BYTE_RANGE.length + 64)));
    // A /ByteRange that is not followed by four numbers is not a signature's (or is a placeholder).
    if (!m) continue;
    const range = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])] as [number, number, number, number];
    const key = range.join(' ');
    if (seen.has(key)) continue; // the same signature's dictionary written twice (object streams, updates)
    seen.add(key);
    if (found.length >= MAX_PDF_SIGNATURES) malformed(`more than ${MAX_PDF_SIGNATURES} signatures in the PDF`);
    found.push(signatureAt(pdf, range, checkedGaps));
  }
  return found.sort((a, b) => a.byteRange[3] + a.byteRange[2] - (b.byteRange[3] + b.byteRange[2]));
}

function signatureAt(pdf: Buffer, range: [number, number, number, number], checkedGaps: Map<string, number>): PdfSignature {
  const [start1, length1, start2, length2] = range;
  if (start1 !== 0) malformed('a /ByteRange does not start at the beginning of the file');
  if (length1 <= 0 || start2 <= length1 || start2 + length2 > pdf.length) malformed('a /ByteRange lies outside the file or overlaps itself');
  // The gap is the /Contents value, angle brackets included, and nothing else.
  const gap = pdf.subarray(length1, start2);
  if (gap.length < 2 || gap[0] !== 0x3c || gap[gap.length - 1] !== 0x3e) malformed('the gap of a /ByteRange is not a hex string');
  if (!/\/Contents\s*$/.test(pdf.toString('latin1', Math.max(0, length1 - 32), length1))) malformed('the gap of a /ByteRange is not the /Contents value');
  // Checked here, decoded when the signature is checked (no copy of a gap is held meanwhile).
  const gapKey = `${length1} ${start2}`;
  let digits = checkedGaps.get(gapKey);
  if (digits === undefined) {
    digits = hexDigits(gap);
    if (digits % 2 !== 0) malformed('a /Contents value is not hexadecimal');
    checkedGaps.set(gapKey, digits);
  }
  // The signature's own dictionary, an indirect object (its bytes cannot sit in a compressed
  // stream): from its object's start to the gap, and from the gap to its end within the signed
  // bytes. Its /SubFilter and /M are read there only, never from another object; without both
  // bounds in the window neither is read.
  const before = pdf.toString('latin1', Math.max(0, length1 - DICTIONARY_WINDOW), length1);
  const signedAfter = pdf.toString('latin1', start2, Math.min(start2 + length2, start2 + DICTIONARY_WINDOW));
  const objectStart = lastObjectHeader(before);
  const objectEnd = signedAfter.indexOf('endobj');
  const own = objectStart < 0 || objectEnd < 0 ? undefined : { before: before.slice(objectStart), after: signedAfter.slice(0, objectEnd) };
  /** The entry's value: the last before the gap, else the first after it. */
  const entry = (re: RegExp): string | undefined => (own ? ([...own.before.matchAll(re)].at(-1)?.[1] ?? [...own.after.matchAll(re)][0]?.[1]) : undefined);
  const subFilter = entry(/\/SubFilter\s*\/([A-Za-z0-9.#_-]{1,64})/g);
  // /M is a string, literal (with escapes: some tools write `(D\07220210818...)`) or hex.
  const claimed = entry(/\/M\s*(\((?:[^()\\]|\\[\s\S]){1,120}\)|<[0-9A-Fa-f\s]{2,160}>)/g);
  let end = start2 + length2;
  while (end < pdf.length && [0x0a, 0x0d, 0x20, 0x09, 0x00].includes(pdf[end]!)) end++;
  return {
    byteRange: range,
    cms: () => fromHex(gap, digits),
    subFilter: subFilter ?? null,
    signed: [pdf.subarray(0, length1), pdf.subarray(start2, start2 + length2)],
    coversWholeFile: end === pdf.length,
    claimedTime: claimed === undefined ? null : pdfDate(pdfString(claimed)),
  };
}

const HEX_CHUNK = 1024 * 1024;
/**
 * Where the last `n g obj` header of `text` starts, or -1. Searched from the end for "obj",
 * each candidate checked against the few characters before it: a pattern of digit runs over
 * the whole window backtracks quadratically on the hex digits of a /Contents before it.
 */
function lastObjectHeader(text: string): number {
  for (let at = text.lastIndexOf('obj'); at >= 0; at = at > 0 ? text.lastIndexOf('obj', at - 1) : -1) {
    if (/[A-Za-z0-9_]/.test(text.charAt(at + 3))) continue;
    const head = /\d{1,10}\s{1,8}\d{1,5}\s{1,8}$/.exec(text.slice(Math.max(0, at - 40), at));
    if (head) return at - head[0].length;
  }
  return -1;
}

const isHexDigit = (b: number): boolean => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);
const isPdfSpace = (b: number): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;

/** The hex digits of `<...>` (white space skipped); throws MalformedError on any other byte. */
function hexDigits(gap: Buffer): number {
  let digits = 0;
  for (let i = 1; i < gap.length - 1; i++) {
    const b = gap[i]!;
    if (isHexDigit(b)) digits++;
    else if (!isPdfSpace(b)) malformed('a /Contents value is not hexadecimal');
  }
  return digits;
}

/** The bytes of a hex string `<...>` of `digits` hex digits, already checked by {@link hexDigits}, in one pass. */
function fromHex(gap: Buffer, digits: number): Buffer {
  // Without white space (as signing tools write it), Node's own decoder, 1 MiB of digits at a time.
  if (digits === gap.length - 2) {
    const bytes = Buffer.allocUnsafe(digits / 2);
    for (let at = 0; at < digits; at += HEX_CHUNK) bytes.write(gap.toString('latin1', 1 + at, 1 + Math.min(digits, at + HEX_CHUNK)), at / 2, 'hex');
    return bytes;
  }
  const out = Buffer.allocUnsafe((gap.length - 2) >>> 1);
  let n = 0;
  let high = -1;
  for (let i = 1; i < gap.length - 1; i++) {
    const b = gap[i]!;
    if (!isHexDigit(b)) continue;
    const v = b <= 0x39 ? b - 0x30 : (b | 0x20) - 0x57;
    if (high < 0) high = v;
    else {
      out[n++] = (high << 4) | v;
      high = -1;
    }
  }
  return out.subarray(0, n);
}

const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', '(': '(', ')': ')', '\\': '\\' };

/**
 * The text of a PDF string token (ISO 32000 §7.3.4): a literal `(...)` with its escapes (octal
 * `\ddd`, `\n`..., a backslash before a line break continuing the line) or a hex `<...>`.
 */
export function pdfString(token: string): string {
  if (token.startsWith('<')) {
    const hex = token.slice(1, -1).replace(/\s+/g, '');
    return Buffer.from(hex.length % 2 === 0 ? hex : `${hex}0`, 'hex').toString('latin1');
  }
  return token
    .slice(1, -1)
    .replace(/\\(?:([0-7]{1,3})|(\r\n|\r|\n)|([\s\S]))/g, (_, octal: string | undefined, lineBreak: string | undefined, other: string | undefined) =>
      octal !== undefined ? String.fromCharCode(parseInt(octal, 8) & 0xff) : lineBreak !== undefined ? '' : (ESCAPES[other!] ?? other!),
    );
}

/** A PDF date (ISO 32000 §7.9.4): D:YYYYMMDDHHmmSSOHH'mm', every part after the year optional; null when not one. */
export function pdfDate(text: string): Date | null {
  const d = /^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?(?:([Zz+-])(?:(\d{2})'?(?:(\d{2})'?)?)?)?$/.exec(text.trim());
  if (!d) return null;
  const n = (i: number, fallback: number) => (d[i] === undefined ? fallback : Number(d[i]));
  const [year, month, day, hour, minute, second] = [n(1, 0), n(2, 1), n(3, 1), n(4, 0), n(5, 0), n(6, 0)];
  const [offsetHours, offsetMinutes] = [n(8, 0), n(9, 0)];
  if (year < 1970 || offsetHours > 23 || offsetMinutes > 59) return null;
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, 0);
  // No rolling over: 30 February or 25:00 is not a date.
  if (
    utc.getUTCMonth() !== month - 1 ||
    utc.getUTCDate() !== day ||
    utc.getUTCHours() !== hour ||
    utc.getUTCMinutes() !== minute ||
    utc.getUTCSeconds() !== second
  )
    return null;
  const sign = d[7] === '-' ? -1 : 1;
  const offset = d[7] && d[7].toUpperCase() !== 'Z' ? sign * (offsetHours * 60 + offsetMinutes) : 0;
  return new Date(utc.getTime() - offset * 60_000);
}

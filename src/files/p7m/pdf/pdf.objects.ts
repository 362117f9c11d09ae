// PDF objects (ISO 32000-1 §7.3) read from a file's bytes, bounded: a hostile file gets a
// MalformedError, never a hang, a deep recursion or an allocation it asks for. Streams are
// not decoded here: a stream is its dictionary and where its bytes lie in the file.
import { malformed } from '../p7m.asn1.js';

export class PdfName {
  constructor(readonly name: string) {}
}

export class PdfString {
  constructor(readonly bytes: Buffer) {}
}

export class PdfRef {
  constructor(
    readonly num: number,
    readonly gen: number,
  ) {}
}

export class PdfDict {
  constructor(readonly entries: Map<string, PdfValue>) {}

  get(key: string): PdfValue | undefined {
    return this.entries.get(key);
  }

  /** The value's name when it is a name (`/Type /Page` → 'Page'). */
  name(key: string): string | undefined {
    const v = this.entries.get(key);
    return v instanceof PdfName ? v.name : undefined;
  }
}

export class PdfStream {
  constructor(
    readonly dict: PdfDict,
    /** The stream's bytes as they lie in the file (encoded): a view, not a copy. */
    readonly raw: Buffer,
  ) {}
}

export type PdfValue = null | boolean | number | PdfName | PdfString | PdfRef | PdfDict | PdfStream | PdfValue[];

/** Work allowed while reading one file: values read and nesting. */
export interface PdfBudget {
  /** Values (of any kind) still allowed. */
  values: number;
  /** String bytes still allowed to be decoded (a string parsed again in each revision counts again); unbounded when absent. */
  stringBytes?: number;
}

const MAX_DEPTH = 64;
const MAX_NAME = 256;
const MAX_STRING = 16 * 1024 * 1024;

/** Bytes appended into one buffer allocated once (a string's decoded bytes). */
class ByteWriter {
  private readonly buf: Buffer;
  length = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(0, capacity));
  }

  push(b: number): void {
    this.buf[this.length++] = b;
  }

  bytes(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.length));
  }
}

const isWhite = (b: number | undefined): boolean => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09 || b === 0x0c || b === 0x00;
const isDelimiter = (b: number | undefined): boolean =>
  b === 0x28 || b === 0x29 || b === 0x3c || b === 0x3e || b === 0x5b || b === 0x5d || b === 0x7b || b === 0x7d || b === 0x2f || b === 0x25;
const isRegular = (b: number | undefined): boolean => b !== undefined && !isWhite(b) && !isDelimiter(b);
const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;

/** Resolves the indirect /Length of a stream being read (null when it cannot). */
export type LengthOf = (ref: PdfRef) => number | null;

/** A cursor over the file's bytes; positions are the file's offsets. */
export class PdfLexer {
  pos: number;

  constructor(
    readonly buf: Buffer,
    at: number,
    readonly budget: PdfBudget,
  ) {
    this.pos = at;
  }

  skipWhite(): void {
    const { buf } = this;
    while (this.pos < buf.length) {
      const b = buf[this.pos];
      if (isWhite(b)) this.pos++;
      else if (b === 0x25) {
        while (this.pos < buf.length && buf[this.pos] !== 0x0a && buf[this.pos] !== 0x0d) this.pos++;
      } else break;
    }
  }

  /** A keyword or number token (regular characters), without consuming white space after it. */
  regular(): string {
    this.skipWhite();
    const start = this.pos;
    while (this.pos < this.buf.length && isRegular(this.buf[this.pos]) && this.pos - start < 64) this.pos++;
    return this.buf.toString('latin1', start, this.pos);
  }

  /** Reads `keyword` or throws. */
  expect(keyword: string): void {
    const at = this.pos;
    const got = this.regular();
    if (got !== keyword) malformed(`expected ${keyword} at ${at}, found ${JSON.stringify(got.slice(0, 16))}`);
  }

  /** A non-negative integer, or undefined (the position restored). */
  integer(): number | undefined {
    const at = this.pos;
    this.skipWhite();
    const start = this.pos;
    while (isDigit(this.buf[this.pos]) && this.pos - start < 12) this.pos++;
    if (this.pos === start || isRegular(this.buf[this.pos])) {
      this.pos = at;
      return undefined;
    }
    return Number(this.buf.toString('latin1', start, this.pos));
  }

  /** One value; streams only as the body of an indirect object ({@link readIndirect}). */
  value(depth = 0): PdfValue {
    if (depth > MAX_DEPTH) malformed('PDF objects nested too deep');
    if (--this.budget.values < 0) malformed('too many PDF values');
    this.skipWhite();
    const { buf } = this;
    const b = buf[this.pos];
    if (b === undefined) malformed('unexpected end of the PDF');
    if (b === 0x2f) return this.name();
    if (b === 0x28) return this.literalString();
    if (b === 0x3c && buf[this.pos + 1] === 0x3c) return this.dict(depth);
    if (b === 0x3c) return this.hexString();
    if (b === 0x5b) {
      this.pos++;
      const items: PdfValue[] = [];
      for (;;) {
        this.skipWhite();
        if (buf[this.pos] === 0x5d) {
          this.pos++;
          return items;
        }
        if (this.pos >= buf.length) malformed('unterminated PDF array');
        items.push(this.value(depth + 1));
      }
    }
    const at = this.pos;
    const token = this.regular();
    if (token === 'true') return true;
    if (token === 'false') return false;
    if (token === 'null') return null;
    if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(token)) {
      // An integer followed by another and R is a reference.
      if (/^\d+$/.test(token)) {
        const back = this.pos;
        const gen = this.integer();
        if (gen !== undefined) {
          this.skipWhite();
          if (buf[this.pos] === 0x52 && !isRegular(buf[this.pos + 1])) {
            this.pos++;
            return new PdfRef(Number(token), gen);
          }
        }
        this.pos = back;
      }
      return Number(token);
    }
    malformed(`unexpected PDF token ${JSON.stringify(token.slice(0, 16) || String.fromCharCode(b))} at ${at}`);
  }

  private name(): PdfName {
    const { buf } = this;
    this.pos++;
    const bytes: number[] = [];
    while (this.pos < buf.length && isRegular(buf[this.pos])) {
      if (bytes.length >= MAX_NAME) malformed('a PDF name too long');
      const c = buf[this.pos++]!;
      if (c === 0x23 && /^[0-9A-Fa-f]{2}$/.test(buf.toString('latin1', this.pos, this.pos + 2))) {
        bytes.push(parseInt(buf.toString('latin1', this.pos, this.pos + 2), 16));
        this.pos += 2;
      } else bytes.push(c);
    }
    return new PdfName(Buffer.from(bytes).toString('latin1'));
  }

  private dict(depth: number): PdfDict {
    const { buf } = this;
    this.pos += 2;
    const entries = new Map<string, PdfValue>();
    for (;;) {
      this.skipWhite();
      if (buf[this.pos] === 0x3e && buf[this.pos + 1] === 0x3e) {
        this.pos += 2;
        return new PdfDict(entries);
      }
      if (buf[this.pos] !== 0x2f) malformed(`a PDF dictionary key is not a name at ${this.pos}`);
      const key = this.name().name;
      // A key twice: readers differ on which wins (pdf.js the last), so no judgment is made on it.
      if (entries.has(key)) malformed(`a dictionary with /${key} twice`);
      entries.set(key, this.value(depth + 1));
    }
  }

  private literalString(): PdfString {
    const { buf } = this;
    this.pos++;
    // The decoded string is never longer than the text it is read from.
    const out = new ByteWriter(Math.min(MAX_STRING, buf.length - this.pos));
    let depth = 1;
    while (this.pos < buf.length) {
      if (out.length >= MAX_STRING) malformed('a PDF string too long');
      const c = buf[this.pos++]!;
      if (c === 0x5c) {
        const e = buf[this.pos++];
        if (e === undefined) break;
        if (e >= 0x30 && e <= 0x37) {
          let v = e - 0x30;
          for (let k = 0; k < 2 && buf[this.pos]! >= 0x30 && buf[this.pos]! <= 0x37; k++) v = v * 8 + (buf[this.pos++]! - 0x30);
          out.push(v & 0xff);
        } else if (e === 0x0d) {
          if (buf[this.pos] === 0x0a) this.pos++;
        } else if (e !== 0x0a) {
          out.push(({ 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09, 0x62: 0x08, 0x66: 0x0c } as Record<number, number>)[e] ?? e);
        }
      } else if (c === 0x28) {
        depth++;
        out.push(c);
      } else if (c === 0x29) {
        if (--depth === 0) return new PdfString(this.charged(out.bytes()));
        out.push(c);
      } else out.push(c);
    }
    malformed('unterminated PDF string');
  }

  /** `bytes`, counted against the budget's string bytes. */
  private charged(bytes: Buffer): Buffer {
    if (this.budget.stringBytes !== undefined && (this.budget.stringBytes -= bytes.length) < 0) malformed('too many PDF string bytes');
    return bytes;
  }

  private hexString(): PdfString {
    const { buf } = this;
    const end = buf.indexOf(0x3e, this.pos);
    if (end < 0) malformed('unterminated PDF hex string');
    const hex = buf.toString('latin1', this.pos + 1, end).replace(/[\s\0]+/g, '');
    if (!/^[0-9A-Fa-f]*$/.test(hex)) malformed('a PDF hex string with other characters');
    this.pos = end + 1;
    return new PdfString(this.charged(Buffer.from(hex.length % 2 ? `${hex}0` : hex, 'hex')));
  }
}

/** An indirect object as read at its offset: its number, generation and value, and where its value (a stream's bytes) ends. */
export interface Indirect {
  num: number;
  gen: number;
  value: PdfValue;
  end: number;
}

/**
 * The indirect object at `offset` (`n g obj ... endobj`), its stream's bytes located by its
 * /Length (resolved with `lengthOf` when indirect) or, when that is wrong, by the next
 * `endstream`, within `limit` (the revision's end).
 */
export function readIndirect(buf: Buffer, offset: number, budget: PdfBudget, lengthOf: LengthOf, limit = buf.length): Indirect {
  if (offset < 0 || offset >= limit) malformed(`an object offset outside the file: ${offset}`);
  const view = buf.subarray(0, limit);
  const lex = new PdfLexer(view, offset, budget);
  const num = lex.integer();
  const gen = lex.integer();
  if (num === undefined || gen === undefined) malformed(`no object at offset ${offset}`);
  lex.expect('obj');
  const value = lex.value();
  lex.skipWhite();
  if (!(value instanceof PdfDict) || view.toString('latin1', lex.pos, lex.pos + 6) !== 'stream') return { num, gen, value, end: lex.pos };
  lex.pos += 6;
  if (view[lex.pos] === 0x0d) lex.pos++;
  if (view[lex.pos] === 0x0a) lex.pos++;
  const start = lex.pos;
  const declared = value.get('Length');
  const length = typeof declared === 'number' ? declared : declared instanceof PdfRef ? lengthOf(declared) : null;
  let end = -1;
  if (length !== null && Number.isInteger(length) && length >= 0 && start + length <= view.length) {
    const after = new PdfLexer(view, start + length, budget);
    after.skipWhite();
    if (view.toString('latin1', after.pos, after.pos + 9) === 'endstream') end = start + length;
  }
  if (end < 0) {
    // A wrong /Length (common in real files): the bytes up to the next endstream, the search
    // counted against the file's budget (many such streams must not each scan the file).
    const found = view.indexOf('endstream', start, 'latin1');
    if (found < 0) malformed(`a stream without endstream at ${offset}`);
    if ((budget.values -= Math.ceil((found - start) / 64)) < 0) malformed('too many PDF values');
    end = found;
    while (end > start && (view[end - 1] === 0x0a || view[end - 1] === 0x0d)) end--;
  }
  return { num, gen, value: new PdfStream(value, view.subarray(start, end)), end: end + 9 };
}

// One revision of a PDF as a reader sees it: the prefix of the file up to one %%EOF, its
// objects found through its cross-reference sections (tables, streams, hybrids, each /Prev
// followed once), objects in object streams included. What a viewer shows is what the xref
// says, never what a scan of the bytes finds: a shadow attack hides its objects from a scan.
// Bounded: sections, entries, values and decoded bytes are counted against a budget.
import { inflateSync } from 'node:zlib';
import { malformed } from '../p7m.asn1.js';
import { PdfDict, PdfLexer, PdfName, PdfRef, PdfStream, readIndirect, type PdfBudget, type PdfValue } from './pdf.objects.js';

/** A cross-reference entry: 1 at an offset (b: generation), 2 in an object stream (a: its number, b: index). */
export interface XrefEntry {
  type: 1 | 2;
  a: number;
  b: number;
}

/** Work allowed for one file, shared by all its revisions. */
export interface FileBudget extends PdfBudget {
  /** Bytes that decoding streams may still produce. */
  decoded: number;
  /** Cross-reference entries still allowed. */
  entries: number;
}

export const newFileBudget = (): FileBudget => ({ values: 2_000_000, decoded: 64 * 1024 * 1024, entries: 4_000_000, stringBytes: 256 * 1024 * 1024 });

/** A cross-reference table's entry: 10-digit offset, 5-digit generation, n or f, a two-byte end of line (ISO 32000-1 §7.5.4). */
const XREF_ENTRY = /^(\d{10}) (\d{5}) ([nf])(?: \r| \n|\r\n)$/;

/** An object definition's header, `n g obj`, followed by a delimiter, white space or the end. */
const OBJECT_HEADER = /(\d{1,10})[\0\t\n\f\r ]+(\d{1,5})[\0\t\n\f\r ]+obj(?![^\0\t\n\f\r ()<>[\]{}/%])/g;
const DELIMITER_OR_WHITE = /[\0\t\n\f\r ()<>[\]{}/%]/;

/** Cross-reference sections followed per revision (each /Prev once). */
const MAX_SECTIONS = 4096;
/** A stream may inflate to at most this many times its size (and 1 MiB in any case). */
const MAX_RATIO = 1000;

export class PdfRevision {
  /** In-use objects by number. */
  readonly entries = new Map<number, XrefEntry>();
  /** Object numbers marked free (or never defined) in this revision's newest word on them. */
  readonly free = new Set<number>();
  readonly trailer: PdfDict;
  /** Where its cross-reference sections are (tables, streams). */
  readonly sections: number[] = [];
  /** The section being read, the table a hybrid file's stream completes while it is read, and which section freed each free number. */
  private reading = 0;
  private completing: number | undefined;
  private readonly freeIn = new Map<number, number>();
  private readonly cache = new Map<number, PdfValue>();
  private readonly objectStreams = new Map<number, { data: Buffer; offsets: Map<number, number>; first: number }>();

  /** The revision ending at `end` (the byte after its %%EOF line). */
  constructor(
    readonly buf: Buffer,
    readonly end: number,
    readonly budget: FileBudget,
  ) {
    const at = buf.lastIndexOf('startxref', end, 'latin1');
    if (at < 0) malformed('no startxref in the revision');
    const lex = new PdfLexer(buf.subarray(0, end), at + 9, budget);
    const first = lex.integer();
    if (first === undefined) malformed('no offset after startxref');
    let trailer: PdfDict | undefined;
    const seen = new Set<number>();
    const sections: Array<number | undefined> = [first];
    /** A hybrid file's xref stream (its offset) and the table it completes. */
    const hybridOf = new Map<number, number>();
    while (sections.length > 0) {
      const offset = sections.shift();
      if (offset === undefined || seen.has(offset)) continue;
      if (seen.size >= MAX_SECTIONS) malformed('too many cross-reference sections');
      seen.add(offset);
      this.sections.push(offset);
      this.reading = offset;
      this.completing = hybridOf.get(offset);
      const section = this.readSection(offset);
      trailer ??= section.trailer;
      const prev = section.trailer.get('Prev');
      // A hybrid file's table is completed by its stream (ISO 32000-1 §7.5.8.4).
      const stream = section.trailer.get('XRefStm');
      if (typeof stream === 'number') {
        hybridOf.set(stream, offset);
        sections.unshift(stream);
      }
      if (typeof prev === 'number') sections.push(prev);
    }
    if (!trailer) malformed('no trailer');
    this.trailer = trailer;
    // Every object in use is below /Size: a reader may ignore those that are not.
    const size = trailer.get('Size');
    if (typeof size !== 'number' || !Number.isInteger(size)) malformed('the trailer has no /Size');
    for (const num of this.entries.keys()) if (num >= size) malformed(`object ${num} is in use beyond the trailer's /Size ${size}`);
  }

  /**
   * Reads one section at `offset`; its entries fill only numbers a newer section left unset.
   * Only a table exactly as ISO 32000-1 §7.5.4 writes it is read: every reader rebuilds the
   * cross-reference by scanning the bytes when a table is not as it expects, and in that scan
   * the last definition of an object wins, which is not the one this analysis reads. So each
   * entry is 20 bytes, no number is listed twice in a section, entry 0 is free, and a
   * subsection does not start at 1 with the free head entry (shifted by one: readers disagree
   * on what each entry means).
   */
  private readSection(offset: number): { trailer: PdfDict } {
    if (offset < 0 || offset >= this.end) malformed(`a cross-reference offset outside the revision: ${offset}`);
    const lex = new PdfLexer(this.buf.subarray(0, this.end), offset, this.budget);
    lex.skipWhite();
    if (this.buf.toString('latin1', lex.pos, lex.pos + 4) !== 'xref') return this.readXrefStream(offset);
    lex.pos += 4;
    const listed = new Set<number>();
    for (;;) {
      const start = lex.integer();
      if (start === undefined) break;
      const count = lex.integer();
      if (count === undefined) malformed('a cross-reference subsection without a count');
      if ((this.budget.entries -= count) < 0 || count * 18 > this.end) malformed('too many cross-reference entries');
      // The entries begin on the line after the subsection's header.
      let at = lex.pos;
      while (this.buf[at] === 0x20 || this.buf[at] === 0x09) at++;
      if (this.buf[at] === 0x0d) at++;
      if (this.buf[at] === 0x0a) at++;
      else if (this.buf[at - 1] !== 0x0d) malformed(`the cross-reference subsection ${start} ${count} is not followed by a line break`);
      for (let i = 0; i < count; i++, at += 20) {
        const num = start + i;
        const entry = XREF_ENTRY.exec(this.buf.toString('latin1', at, Math.min(at + 20, this.end)));
        if (!entry) malformed(`the cross-reference entry of object ${num} is not 20 bytes as ISO 32000-1 writes it`);
        const [, a, b, kind] = entry as unknown as [string, string, string, string];
        if (listed.has(num)) malformed(`object ${num} is listed twice in one cross-reference section`);
        listed.add(num);
        if (num === 0 && kind === 'n') malformed('cross-reference entry 0 is in use (it must head the free list)');
        if (num === 1 && i === 0 && kind === 'f' && b === '65535')
          malformed('a cross-reference subsection shifted by one (it starts at 1 with the head of the free list)');
        this.set(num, kind === 'n' ? { type: 1, a: Number(a), b: Number(b) } : undefined);
      }
      lex.pos = at;
    }
    lex.expect('trailer');
    const trailer = lex.value();
    if (!(trailer instanceof PdfDict)) malformed('the trailer is not a dictionary');
    return { trailer };
  }

  private readXrefStream(offset: number): { trailer: PdfDict } {
    const obj = readIndirect(this.buf, offset, this.budget, () => null, this.end);
    if (!(obj.value instanceof PdfStream) || obj.value.dict.name('Type') !== 'XRef') malformed(`no cross-reference at offset ${offset}`);
    const { dict } = obj.value;
    const w = dict.get('W');
    const size = dict.get('Size');
    if (!Array.isArray(w) || w.length !== 3 || !w.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= 8)) malformed('bad /W');
    if (typeof size !== 'number') malformed('bad /Size');
    const widths = w as number[];
    const index = dict.get('Index') ?? [0, size];
    if (!Array.isArray(index) || index.length % 2 !== 0 || !index.every((x) => typeof x === 'number')) malformed('bad /Index');
    const data = decodeStream(obj.value, this.budget);
    const row = widths[0]! + widths[1]! + widths[2]!;
    const listed = new Set<number>();
    let at = 0;
    for (let k = 0; k < index.length; k += 2) {
      const start = index[k] as number;
      const count = index[k + 1] as number;
      if ((this.budget.entries -= count) < 0) malformed('too many cross-reference entries');
      for (let i = 0; i < count; i++) {
        if (at + row > data.length) malformed('a cross-reference stream shorter than its /Index');
        if (listed.has(start + i)) malformed(`object ${start + i} is listed twice in one cross-reference section`);
        listed.add(start + i);
        const field = (n: number, fallback: number): number => {
          if (widths[n] === 0) return fallback;
          let v = 0;
          for (let j = 0; j < widths[n]!; j++) v = v * 256 + data[at++]!;
          return v;
        };
        const type = field(0, 1);
        const a = field(1, 0);
        const b = field(2, 0);
        if (start + i === 0 && (type === 1 || type === 2)) malformed('cross-reference entry 0 is in use (it must head the free list)');
        this.set(start + i, type === 1 || type === 2 ? { type, a, b } : undefined);
      }
    }
    return { trailer: dict };
  }

  private set(num: number, entry: XrefEntry | undefined): void {
    if (this.entries.has(num)) return;
    if (this.free.has(num)) {
      // A hybrid file's stream gives the objects its table lists as free (ISO 32000-1 §7.5.8.4):
      // those of its own table only, never those a newer section freed.
      if (!entry || this.completing === undefined || this.freeIn.get(num) !== this.completing) return;
      this.free.delete(num);
    }
    if (entry && num > 0) this.entries.set(num, entry);
    else {
      this.free.add(num);
      this.freeIn.set(num, this.reading);
    }
  }

  /** The object `num` as this revision defines it; null when free or missing. */
  get(num: number): PdfValue {
    if (this.cache.has(num)) return this.cache.get(num)!;
    this.cache.set(num, null); // a reference cycle through /Length reads null, not for ever
    const entry = this.entries.get(num);
    let value: PdfValue = null;
    if (entry?.type === 1) {
      const obj = readIndirect(this.buf, entry.a, this.budget, (ref) => this.lengthOf(ref), this.end);
      if (obj.num !== num) malformed(`the cross-reference puts object ${num} where object ${obj.num} is`);
      if (obj.gen !== entry.b) malformed(`the cross-reference gives object ${num} generation ${entry.b}, its definition ${obj.gen}`);
      value = obj.value;
    } else if (entry?.type === 2) value = this.fromObjectStream(entry.a, entry.b, num);
    this.cache.set(num, value);
    return value;
  }

  /**
   * The object definitions (`n g obj`) in the bytes [from, to) at none of the offsets
   * `pointed` (where any revision's cross-reference points: its objects and its sections),
   * and not inside an object defined at one of them there (a stream's bytes may hold
   * anything): each a definition that a reader rebuilding the cross-reference by scanning
   * would see, and this analysis would not. Read with this revision's reader.
   */
  strayDefinitions(from: number, to: number, all: ReadonlySet<number>): Array<{ num: number; offset: number }> {
    const pointed = new Set([...all].filter((at) => at >= from && at < to && this.buf.toString('latin1', at, at + 4) !== 'xref'));
    const spans: Array<[number, number]> = [];
    for (const at of pointed) {
      try {
        spans.push([at, readIndirect(this.buf, at, this.budget, (ref) => this.lengthOf(ref), Math.max(to, this.end)).end]);
      } catch {
        // Not readable: what the analysis reads of it fails on its own.
      }
    }
    spans.sort((p, q) => p[0] - q[0]);
    const stray: Array<{ num: number; offset: number }> = [];
    const text = this.buf.toString('latin1', from, to);
    let span = 0;
    for (const m of text.matchAll(OBJECT_HEADER)) {
      const at = from + m.index;
      if (m.index > 0 && !DELIMITER_OR_WHITE.test(text[m.index - 1]!)) continue;
      if (pointed.has(at)) continue;
      while (span < spans.length && spans[span]![1] <= at) span++;
      if (span < spans.length && spans[span]![0] < at) continue;
      stray.push({ num: Number(m[1]), offset: at });
      if (stray.length >= 16) break;
    }
    return stray;
  }

  /**
   * `v`, or the object it refers to. A reference must name the generation the cross-reference
   * gives its object (0 in an object stream): readers differ on what a reference to another
   * generation is (the object, or null).
   */
  resolve(v: PdfValue | undefined): PdfValue {
    if (!(v instanceof PdfRef)) return v ?? null;
    const entry = this.entries.get(v.num);
    if (entry && (entry.type === 1 ? entry.b : 0) !== v.gen) malformed(`the reference ${v.num} ${v.gen} R names another generation than the cross-reference's`);
    return this.get(v.num);
  }

  /** The dictionary `v` is or refers to (a stream's dictionary too), or undefined. */
  dict(v: PdfValue | undefined): PdfDict | undefined {
    const r = this.resolve(v);
    return r instanceof PdfDict ? r : r instanceof PdfStream ? r.dict : undefined;
  }

  private lengthOf(ref: PdfRef): number | null {
    const v = this.get(ref.num);
    return typeof v === 'number' ? v : null;
  }

  private fromObjectStream(streamNum: number, index: number, num: number): PdfValue {
    let decoded = this.objectStreams.get(streamNum);
    if (!decoded) {
      const entry = this.entries.get(streamNum);
      if (entry?.type !== 1) malformed(`object stream ${streamNum} is not in the file`);
      const obj = readIndirect(this.buf, entry.a, this.budget, (ref) => this.lengthOf(ref), this.end);
      if (!(obj.value instanceof PdfStream) || obj.value.dict.name('Type') !== 'ObjStm') malformed(`object ${streamNum} is not an object stream`);
      const n = obj.value.dict.get('N');
      const first = obj.value.dict.get('First');
      if (typeof n !== 'number' || typeof first !== 'number') malformed('an object stream without /N or /First');
      const data = decodeStream(obj.value, this.budget);
      const lex = new PdfLexer(data, 0, this.budget);
      const offsets = new Map<number, number>();
      for (let i = 0; i < n; i++) {
        const objNum = lex.integer();
        const off = lex.integer();
        if (objNum === undefined || off === undefined) malformed('a malformed object stream header');
        offsets.set(i, off);
        offsets.set(-1 - objNum, i);
      }
      decoded = { data, offsets, first };
      this.objectStreams.set(streamNum, decoded);
    }
    // The entry's index, checked against the header's number for that index.
    if (decoded.offsets.get(-1 - num) !== index) malformed(`object ${num} is not at index ${index} of object stream ${streamNum}`);
    const lex = new PdfLexer(decoded.data, decoded.first + decoded.offsets.get(index)!, this.budget);
    return lex.value();
  }
}

/**
 * A stream's bytes decoded (FlateDecode with PNG or TIFF predictors, or none): enough for
 * cross-reference and object streams. Bounded by the file's budget and a ratio.
 */
export function decodeStream(stream: PdfStream, budget: FileBudget): Buffer {
  const filter = stream.dict.get('Filter');
  const filters = filter === undefined ? [] : Array.isArray(filter) ? filter : [filter];
  let data = stream.raw;
  for (const f of filters) {
    if (!(f instanceof PdfName) || (f.name !== 'FlateDecode' && f.name !== 'Fl')) malformed(`unsupported stream filter ${f instanceof PdfName ? f.name : '?'}`);
    const max = Math.min(budget.decoded, Math.max(1024 * 1024, data.length * MAX_RATIO));
    try {
      data = inflateSync(data, { maxOutputLength: max, finishFlush: 2 /* Z_SYNC_FLUSH: tolerate a missing end */ });
    } catch (err) {
      malformed(`a stream does not inflate (${(err as Error).message.slice(0, 60)})`);
    }
    budget.decoded -= data.length;
  }
  const parms = stream.dict.get('DecodeParms');
  const p = parms instanceof PdfDict ? parms : Array.isArray(parms) && parms[0] instanceof PdfDict ? parms[0] : undefined;
  const predictor = p?.get('Predictor');
  if (typeof predictor === 'number' && predictor >= 10) {
    const columns = p?.get('Columns');
    data = pngUnpredict(data, typeof columns === 'number' ? columns : 1);
  } else if (predictor === 2) malformed('unsupported TIFF predictor');
  return data;
}

function pngUnpredict(data: Buffer, columns: number): Buffer {
  if (!Number.isInteger(columns) || columns < 1 || columns > 1 << 16) malformed('bad /Columns');
  const rowIn = columns + 1;
  const rows = Math.floor(data.length / rowIn);
  const out = Buffer.alloc(rows * columns);
  for (let r = 0; r < rows; r++) {
    const kind = data[r * rowIn]!;
    for (let c = 0; c < columns; c++) {
      const x = data[r * rowIn + 1 + c]!;
      const left = c > 0 ? out[r * columns + c - 1]! : 0;
      const up = r > 0 ? out[(r - 1) * columns + c]! : 0;
      const upLeft = r > 0 && c > 0 ? out[(r - 1) * columns + c - 1]! : 0;
      let v: number;
      if (kind === 0) v = x;
      else if (kind === 1) v = x + left;
      else if (kind === 2) v = x + up;
      else if (kind === 3) v = x + ((left + up) >> 1);
      else if (kind === 4) {
        const pa = Math.abs(up - upLeft);
        const pb = Math.abs(left - upLeft);
        const pc = Math.abs(left + up - 2 * upLeft);
        v = x + (pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft);
      } else malformed('bad PNG predictor row');
      out[r * columns + c] = v & 0xff;
    }
  }
  return out;
}

/**
 * Where each revision of the file ends: after each %%EOF marker (and its line break). A
 * linearized file's first-page section ends one too; a revision that cannot be read alone is
 * for the caller to skip.
 */
const EOF = Buffer.from('%%EOF', 'latin1');

export function revisionEnds(buf: Buffer): number[] {
  const ends: number[] = [];
  for (let at = buf.indexOf(EOF); at >= 0; at = buf.indexOf(EOF, at + 5)) {
    let end = at + 5;
    if (buf[end] === 0x0d) end++;
    if (buf[end] === 0x0a) end++;
    ends.push(end);
  }
  return ends;
}

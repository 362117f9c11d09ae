// Signed PDFs made the way signing tools make them, for the tests and the benches: a base
// document with a real cross-reference (a table, or an xref stream with an object stream), and
// signatures added by incremental updates, each with its signature dictionary, a signature
// field whose widget sits on page 1, the catalog's /AcroForm and the page's /Annots updated, and
// a cross-reference section with /Prev. The /ByteRange is set around /Contents, the two ranges
// signed detached by the caller (openssl cms), the DER hex-encoded into the room. Also any
// other update (`appendUpdate`), for the changes a signature must or must not survive.
import { deflateSync } from 'node:zlib';
import { PdfDict, PdfName, PdfRef, PdfStream, PdfString, type PdfValue } from '../../src/files/p7m/pdf/pdf.objects.js';
import { PdfRevision, newFileBudget, revisionEnds } from '../../src/files/p7m/pdf/pdf.revision.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Room for the CMS in /Contents: 8 KiB of DER, hex-encoded. */
const CONTENTS_HEX = 16_384;
const PLACEHOLDER = '0000000000 0000000000 0000000000 0000000000';

/** PDF syntax for a value (no streams). */
/** A name's characters as a name token writes them: delimiters, white space, # and bytes outside ! to ~ as #xx (ISO 32000-1 §7.3.5). */
const escapeName = (name: string): string => name.replace(/[^!-~]|[#()<>[\]{}/%]/g, (c) => `#${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

export function serialize(v: PdfValue | undefined): string {
  if (v === undefined || v === null) return 'null';
  if (typeof v === 'boolean' || typeof v === 'number') return String(v);
  if (v instanceof PdfName) return `/${escapeName(v.name)}`;
  if (v instanceof PdfString) return `<${v.bytes.toString('hex')}>`;
  if (v instanceof PdfRef) return `${v.num} ${v.gen} R`;
  if (Array.isArray(v)) return `[${v.map(serialize).join(' ')}]`;
  if (v instanceof PdfDict) return `<< ${[...v.entries].map(([k, x]) => `/${escapeName(k)} ${serialize(x)}`).join(' ')} >>`;
  if (v instanceof PdfStream) throw new Error('streams are written with their bytes');
  throw new Error('not a PDF value');
}

/** The last revision of `pdf`, read by the verifier's own reader. */
export function lastRevision(pdf: Buffer): PdfRevision {
  return new PdfRevision(pdf, revisionEnds(pdf).at(-1) ?? pdf.length, newFileBudget());
}

/** A stream object's body: its dictionary (with /Length) and bytes. */
export const streamBody = (dict: string, data: Buffer): Buffer =>
  Buffer.concat([Buffer.from(`<< ${dict} /Length ${data.length} >>\nstream\n`, 'latin1'), data, Buffer.from('\nendstream', 'latin1')]);

/** The objects written after `pdf`, an xref section over them (a table or a stream), the trailer, startxref and %%EOF. */
function writeSection(
  pdf: Buffer,
  objects: Map<number, string | Buffer>,
  trailer: Record<string, string>,
  xrefStream: boolean,
  inStream: ReadonlyMap<number, [number, number]> = new Map(),
): Buffer {
  const parts: Buffer[] = [pdf];
  let at = pdf.length;
  const push = (b: Buffer | string): void => {
    const buf = typeof b === 'string' ? Buffer.from(b, 'latin1') : b;
    parts.push(buf);
    at += buf.length;
  };
  if (pdf.length > 0 && pdf[pdf.length - 1] !== 0x0a) push('\n');
  const offsets = new Map<number, number>();
  for (const [num, body] of [...objects].sort((a, b) => a[0] - b[0])) {
    offsets.set(num, at);
    push(`${num} 0 obj\n`);
    push(body);
    push('\nendobj\n');
  }
  const nums = [...offsets.keys()].sort((a, b) => a - b);
  const runs: Array<[number, number[]]> = [];
  for (const n of nums) {
    const last = runs.at(-1);
    if (last && last[0] + last[1].length === n) last[1].push(n);
    else runs.push([n, [n]]);
  }
  const xrefAt = at;
  const trailerText = Object.entries(trailer)
    .map(([k, v]) => `/${k} ${v}`)
    .join(' ');
  if (xrefStream) {
    const self = Number(trailer.Size) - 1;
    offsets.set(self, xrefAt);
    const all = [...nums, self, ...inStream.keys()].sort((a, b) => a - b);
    const rows = Buffer.concat(
      all.map((n) => {
        const row = Buffer.alloc(7);
        const compressed = inStream.get(n);
        row[0] = compressed ? 2 : 1;
        row.writeUInt32BE(compressed ? compressed[0] : offsets.get(n)!, 1);
        row.writeUInt16BE(compressed ? compressed[1] : 0, 5);
        return row;
      }),
    );
    const index = all.map((n) => `${n} 1`).join(' ');
    push(`${self} 0 obj\n`);
    push(streamBody(`/Type /XRef /W [1 4 2] /Index [${index}] ${trailerText} /Filter /FlateDecode`, deflateSync(rows)));
    push('\nendobj\n');
  } else {
    push('xref\n');
    if (pdf.length === 0) push('0 1\n0000000000 65535 f\r\n');
    for (const [start, run] of runs) {
      push(`${start} ${run.length}\n`);
      for (const n of run) push(`${String(offsets.get(n)).padStart(10, '0')} 00000 n\r\n`);
    }
    push(`trailer\n<< ${trailerText} >>\n`);
  }
  push(`startxref\n${xrefAt}\n%%EOF\n`);
  return Buffer.concat(parts);
}

/**
 * A one-page PDF whose page content carries `marker`, padded to about `padding` more bytes,
 * with a real cross-reference table; `xrefStream`: pages, page and font in an object stream,
 * found through an xref stream.
 */
export function plainPdf(marker: string, padding: number, opts: { xrefStream?: boolean } = {}): Buffer {
  // The padding: a comment of letters and digits, as varied as the compressed streams that make
  // up a real file's bulk (a run of one character would make every search in the file its
  // worst case).
  const noise = Buffer.alloc(padding);
  for (let i = 0, x = 0x9e3779b9; i < padding; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    noise[i] = ALNUM.charCodeAt((x >>> 16) % ALNUM.length);
  }
  const content = Buffer.concat([Buffer.from(`BT /F1 12 Tf 72 720 Td (${marker}) Tj ET %`, 'latin1'), noise]);
  const header = Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1');
  const catalog = '<< /Type /Catalog /Pages 2 0 R >>';
  const pages = '<< /Type /Pages /Kids [3 0 R] /Count 1 >>';
  const page = '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>';
  const font = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  if (!opts.xrefStream) {
    const objects = new Map<number, string | Buffer>([
      [1, catalog],
      [2, pages],
      [3, page],
      [4, streamBody('', content)],
      [5, font],
    ]);
    return writeSection(header, objects, { Size: '6', Root: '1 0 R' }, false);
  }
  // Objects 2, 3 and 5 in object stream 6; the xref stream (7) says where each is.
  const inStream = [
    [2, pages],
    [3, page],
    [5, font],
  ] as const;
  let body = '';
  const head: string[] = [];
  for (const [num, text] of inStream) {
    head.push(`${num} ${body.length}`);
    body += `${text}\n`;
  }
  const first = `${head.join(' ')}\n`;
  const objStm = streamBody(`/Type /ObjStm /N 3 /First ${first.length} /Filter /FlateDecode`, deflateSync(Buffer.from(first + body, 'latin1')));
  const parts: Buffer[] = [header];
  let at = header.length;
  const offsets = new Map<number, number>();
  for (const [num, b] of [
    [1, Buffer.from(catalog, 'latin1')],
    [4, streamBody('', content)],
    [6, objStm],
  ] as const) {
    offsets.set(num, at);
    const obj = Buffer.concat([Buffer.from(`${num} 0 obj\n`, 'latin1'), b, Buffer.from('\nendobj\n', 'latin1')]);
    parts.push(obj);
    at += obj.length;
  }
  offsets.set(7, at);
  const row = (type: number, a: number, b: number): Buffer => {
    const r = Buffer.alloc(7);
    r[0] = type;
    r.writeUInt32BE(a, 1);
    r.writeUInt16BE(b, 5);
    return r;
  };
  const rows = Buffer.concat([
    row(0, 0, 65535),
    row(1, offsets.get(1)!, 0),
    row(2, 6, 0),
    row(2, 6, 1),
    row(1, offsets.get(4)!, 0),
    row(2, 6, 2),
    row(1, offsets.get(6)!, 0),
    row(1, offsets.get(7)!, 0),
  ]);
  parts.push(Buffer.from('7 0 obj\n', 'latin1'), streamBody('/Type /XRef /W [1 4 2] /Size 8 /Root 1 0 R /Filter /FlateDecode', deflateSync(rows)));
  parts.push(Buffer.from(`\nendobj\nstartxref\n${offsets.get(7)}\n%%EOF\n`, 'latin1'));
  return Buffer.concat(parts);
}

/**
 * `pdf` with an incremental update: `objects` (number → body) and a cross-reference section
 * with /Prev. The trailer keeps /Root, /Info and /AdditionalStreams; /Size grows to cover the new numbers.
 */
export function appendUpdate(
  pdf: Buffer,
  objects: Map<number, string | Buffer>,
  /** `info`: the trailer's /Info (a reference, "7 0 R"), instead of the last revision's. */
  opts: { xrefStream?: boolean; inStream?: ReadonlyMap<number, [number, number]>; info?: string } = {},
): Buffer {
  const rev = lastRevision(pdf);
  const prev = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(pdf.toString('latin1', Math.max(0, pdf.length - 64)))?.[1];
  if (prev === undefined) throw new Error('the PDF does not end with startxref and %%EOF');
  const size =
    Math.max(Number(rev.trailer.get('Size')), ...[...objects.keys(), ...(opts.inStream?.keys() ?? [])].map((n) => n + 1)) + (opts.xrefStream ? 1 : 0);
  const trailer: Record<string, string> = { Size: String(size), Root: serialize(rev.trailer.get('Root')), Prev: prev };
  if (rev.trailer.get('Info') !== undefined) trailer.Info = serialize(rev.trailer.get('Info'));
  // A hybrid PDF's source document, written in every trailer as LibreOffice does.
  if (rev.trailer.get('AdditionalStreams') !== undefined) trailer.AdditionalStreams = serialize(rev.trailer.get('AdditionalStreams'));
  if (opts.info !== undefined) trailer.Info = opts.info;
  return writeSection(pdf, objects, trailer, opts.xrefStream ?? false, opts.inStream);
}

/** The next object number an update may use (the trailer's /Size). */
export const nextNumber = (pdf: Buffer): number => Number(lastRevision(pdf).trailer.get('Size'));

/** The catalog's and page 1's numbers and dictionaries in the last revision. */
export function catalogAndPage(pdf: Buffer): { rev: PdfRevision; rootNum: number; root: PdfDict; pageNum: number; page: PdfDict } {
  const rev = lastRevision(pdf);
  const rootRef = rev.trailer.get('Root') as PdfRef;
  const root = rev.dict(rootRef)!;
  let node = root.get('Pages') as PdfRef;
  for (;;) {
    const d = rev.dict(node)!;
    const kids = rev.resolve(d.get('Kids'));
    if (!Array.isArray(kids)) return { rev, rootNum: rootRef.num, root, pageNum: node.num, page: d };
    node = kids[0] as PdfRef;
  }
}

/** A dictionary with entries set (undefined: removed). */
export function withEntries(dict: PdfDict, entries: Record<string, PdfValue | undefined>): PdfDict {
  const map = new Map(dict.entries);
  for (const [k, v] of Object.entries(entries)) {
    if (v === undefined) map.delete(k);
    else map.set(k, v);
  }
  return new PdfDict(map);
}

export interface SignOptions {
  subFilter: string;
  /** The signature dictionary's number (its field's is the next); default the next free one. */
  objectNumber?: number;
  /** The dictionary's /M (a PDF date; null: none). */
  claimedTime?: string | null;
  /** The signature dictionary's object header, e.g. "96 0\nobj" (split over two lines). */
  header?: string;
  /** More of the signature dictionary (after /M). */
  entries?: string;
  /** A certification signature: the catalog's /Perms /DocMDP and a DocMDP transform of this P. */
  docMdp?: 1 | 2 | 3;
  /** The DocMDP transform's /P and /TransformMethod as indirect objects of their own (`/P 11 0 R`). */
  docMdpIndirect?: boolean;
  /** A FieldMDP lock on the new signature field. */
  lock?: { action: 'All' | 'Include' | 'Exclude'; fields?: string[] };
  /** The field's name; default "Signature<n>". */
  fieldName?: string;
  /** The widget's rectangle on page 1; default none (an invisible signature). */
  rect?: [number, number, number, number];
  /** What the widget draws (a content stream of its appearance, a new object); default nothing. */
  appearance?: string;
  xrefStream?: boolean;
}

/**
 * `pdf` with one more signature, added as signing tools add it. `signDetached` gets the bytes
 * the ByteRange covers and returns a detached CMS SignedData (DER) over them, or for
 * ETSI.RFC3161 (a document timestamp) a TimeStampToken.
 */
export function signPdf(pdf: Buffer, signDetached: (data: Buffer) => Buffer, opts: SignOptions): Buffer {
  const { rootNum, root, pageNum, page, rev } = catalogAndPage(pdf);
  const sigNum = Math.max(nextNumber(pdf), opts.objectNumber ?? 0);
  const fieldNum = sigNum + 1;
  const type = opts.subFilter === 'ETSI.RFC3161' ? 'DocTimeStamp' : 'Sig';
  const m = opts.claimedTime === null ? '' : ` /M (${opts.claimedTime ?? 'D:20261124090000Z'})`;
  // Past the field and its appearance: the DocMDP transform's values, when indirect.
  const [pNum, methodNum] = [sigNum + 3, sigNum + 4];
  const [pValue, method] = opts.docMdpIndirect ? [`${pNum} 0 R`, `${methodNum} 0 R`] : [String(opts.docMdp), '/DocMDP'];
  const reference = opts.docMdp
    ? ` /Reference [<< /Type /SigRef /TransformMethod ${method} /TransformParams << /Type /TransformParams /P ${pValue} /V /1.2 >> >>]`
    : '';
  const sigDict =
    `<< /Type /${type} /Filter /Adobe.PPKLite /SubFilter /${opts.subFilter}${m}${opts.entries ?? ''}${reference}\n` +
    `/ByteRange [${PLACEHOLDER}]\n/Contents <${'0'.repeat(CONTENTS_HEX)}> >>`;
  const form = rev.dict(root.get('AcroForm'));
  const fields = form ? (rev.resolve(form.get('Fields')) as PdfValue[]) : [];
  const name = opts.fieldName ?? `Signature${fields.length + 1}`;
  const lock = opts.lock
    ? ` /Lock << /Type /SigFieldLock /Action /${opts.lock.action}${opts.lock.fields ? ` /Fields [${opts.lock.fields.map((f) => `(${f})`).join(' ')}]` : ''} >>`
    : '';
  const apNum = fieldNum + 1;
  const ap = opts.appearance === undefined ? '' : ` /AP << /N ${apNum} 0 R >>`;
  const field = `<< /FT /Sig /T (${name}) /V ${sigNum} 0 R /Type /Annot /Subtype /Widget /F ${opts.appearance === undefined ? 132 : 4} /Rect [${(opts.rect ?? [0, 0, 0, 0]).join(' ')}] /P ${pageNum} 0 R${lock}${ap} >>`;
  const newForm = withEntries(form ?? new PdfDict(new Map()), {
    Fields: [...fields, new PdfRef(fieldNum, 0)],
    SigFlags: 3,
  });
  const annots = rev.resolve(page.get('Annots'));
  const newRoot = withEntries(root, {
    AcroForm: newForm,
    ...(opts.docMdp && { Perms: new PdfDict(new Map([['DocMDP', new PdfRef(sigNum, 0)]])) }),
  });
  const newPage = withEntries(page, { Annots: [...(Array.isArray(annots) ? annots : []), new PdfRef(fieldNum, 0)] });
  const objects = new Map<number, string | Buffer>([
    [rootNum, serialize(newRoot)],
    [pageNum, serialize(newPage)],
    [sigNum, sigDict],
    [fieldNum, field],
  ]);
  if (opts.docMdp && opts.docMdpIndirect) {
    objects.set(pNum, String(opts.docMdp));
    objects.set(methodNum, '/DocMDP');
  }
  if (opts.appearance !== undefined) objects.set(apNum, streamBody('/Type /XObject /Subtype /Form /BBox [0 0 400 60]', Buffer.from(opts.appearance)));
  let text = appendUpdate(pdf, objects, opts);
  if (opts.header) {
    const plain = Buffer.from(`${sigNum} 0 obj\n<< /Type /${type}`, 'latin1');
    const at = text.indexOf(plain, pdf.length);
    const header = Buffer.from(opts.header, 'latin1');
    if (header.length !== `${sigNum} 0 obj`.length) throw new Error(`a header of ${`${sigNum} 0 obj`.length} characters keeps the offsets`);
    header.copy(text, at);
  }
  const placeholder = text.lastIndexOf(PLACEHOLDER);
  const lt = text.indexOf('/Contents <', placeholder) + '/Contents '.length;
  const gt = text.indexOf('>', lt) + 1;
  text = Buffer.from(text);
  text.write([0, lt, gt, text.length - gt].join(' ').padEnd(PLACEHOLDER.length, ' '), placeholder, 'latin1');
  const hex = signDetached(Buffer.concat([text.subarray(0, lt), text.subarray(gt)])).toString('hex');
  if (hex.length > CONTENTS_HEX) throw new Error('the CMS does not fit the room reserved for it');
  text.write(hex, lt + 1, 'latin1');
  return text;
}

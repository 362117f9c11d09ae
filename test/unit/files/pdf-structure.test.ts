import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { verifyP7m } from '../../../src/files/p7m/p7m.verifier.js';
import { PdfDict, PdfRef } from '../../../src/files/p7m/pdf/pdf.objects.js';
import { p7mFixtures } from '../../support/p7m-fixtures.js';
import { lastRevision, plainPdf, serialize } from '../../support/pdf-signing.js';

// Only a conforming structure is judged (src/files/p7m/pdf/pdf.revision.ts). Every reader
// rebuilds the cross-reference by scanning the bytes when a section is not exactly as it
// expects, and in that scan the last definition of an object wins: a section that is not as
// ISO 32000-1 writes it lets a viewer show objects the analysis never read. Each attack is an
// update after a signature that the analysis otherwise finds harmless (object 5, the page's
// font, written again unchanged), written by hand with one defect in its cross-reference.
describe('PDF structure after a signature: only what conforms is judged', function () {
  this.timeout(60_000);
  const fx = p7mFixtures();
  const root = [new X509Certificate(fx.rootPem)];
  const signed = fx.pdfSignedBy(plainPdf(fx.marker.toString('latin1'), 100), 'rsa', {});
  const FONT = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  const verdict = (pdf: Buffer) => verifyP7m(pdf, { trustAnchors: root });

  /** A cross-reference table entry: 10-digit offset, 5-digit generation, n or f, and its end of line. */
  const entry = (offset: number, gen = 0, kind = 'n', eol = '\r\n') => `${String(offset).padStart(10, '0')} ${String(gen).padStart(5, '0')} ${kind}${eol}`;

  /**
   * `pdf` with an update written by hand: `objects` (number, generation, body), then `xref`, the
   * table `table(offsets)` returns (the objects' offsets in order), the trailer (/Size, /Root
   * and /Prev of the last revision, `trailer` over them) and startxref.
   */
  function handUpdate(pdf: Buffer, objects: Array<[number, number, string]>, table: (at: number[]) => string, trailer: Record<string, string> = {}): Buffer {
    const rev = lastRevision(pdf);
    const prev = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(pdf.toString('latin1', pdf.length - 64))?.[1];
    if (prev === undefined) throw new Error('no startxref at the end');
    let text = pdf[pdf.length - 1] === 0x0a ? '' : '\n';
    const at: number[] = [];
    for (const [num, gen, body] of objects) {
      at.push(pdf.length + text.length);
      text += `${num} ${gen} obj\n${body}\nendobj\n`;
    }
    const xrefAt = pdf.length + text.length;
    const fields = { Size: serialize(rev.trailer.get('Size')), Root: serialize(rev.trailer.get('Root')), Prev: prev, ...trailer };
    const dict = Object.entries(fields)
      .map(([k, v]) => `/${k} ${v}`)
      .join(' ');
    text += `xref\n${table(at)}trailer\n<< ${dict} >>\nstartxref\n${xrefAt}\n%%EOF\n`;
    return Buffer.concat([pdf, Buffer.from(text, 'latin1')]);
  }
  const notSigned = (pdf: Buffer, why: RegExp) => {
    const v = verdict(pdf);
    expect(v.outcome, v.reason).to.not.equal('signed');
    expect(v.reason).to.match(why);
  };

  it('keeps Signed the same harmless update written as ISO 32000-1 writes it (the near miss: CRLF, space-CR and space-LF endings)', () => {
    for (const eol of ['\r\n', ' \r', ' \n']) {
      const v = verdict(handUpdate(signed, [[5, 0, FONT]], (at) => `5 1\n${entry(at[0]!, 0, 'n', eol)}`));
      expect(v.outcome, `${JSON.stringify(eol)}: ${v.reason}`).to.equal('signed');
    }
  });

  it('refuses a cross-reference entry that is not 20 bytes (19 with a bare line feed, a short offset, a long line)', () => {
    notSigned(
      handUpdate(signed, [[5, 0, FONT]], (at) => `5 1\n${entry(at[0]!, 0, 'n', '\n')}`),
      /the cross-reference entry of object 5 is not 20 bytes/,
    );
    notSigned(
      handUpdate(signed, [[5, 0, FONT]], (at) => `5 1\n${String(at[0]).padStart(9, '0')} 00000 n\r\n`),
      /the cross-reference entry of object 5 is not 20 bytes/,
    );
    notSigned(
      handUpdate(signed, [[5, 0, FONT]], (at) => `5 1\n${entry(at[0]!, 0, 'n', '  \r\n')}`),
      /the cross-reference entry of object 5 is not 20 bytes/,
    );
  });

  it('refuses an object listed twice in one section (a reader may take either definition)', () => {
    const evil = '<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>';
    notSigned(
      handUpdate(
        signed,
        [
          [5, 0, FONT],
          [5, 0, evil],
        ],
        (at) => `5 1\n${entry(at[0]!)}5 1\n${entry(at[1]!)}`,
      ),
      /object 5 is listed twice in one cross-reference section/,
    );
  });

  it("refuses an object in use beyond the trailer's /Size", () => {
    const size = Number(lastRevision(signed).trailer.get('Size'));
    const beyond = new RegExp(`object ${size + 2} is in use beyond the trailer's /Size ${size}`);
    notSigned(
      handUpdate(
        signed,
        [
          [5, 0, FONT],
          [size + 2, 0, '<< /Note (beyond) >>'],
        ],
        (at) => `5 1\n${entry(at[0]!)}${size + 2} 1\n${entry(at[1]!)}`,
      ),
      beyond,
    );
  });

  it('refuses entry 0 in use, and a subsection shifted by one (starting at 1 with the head of the free list)', () => {
    notSigned(
      handUpdate(signed, [[5, 0, FONT]], (at) => `0 1\n${entry(at[0]!)}5 1\n${entry(at[0]!)}`),
      /cross-reference entry 0 is in use/,
    );
    notSigned(
      handUpdate(signed, [[5, 0, FONT]], (at) => `1 1\n${entry(0, 65535, 'f')}5 1\n${entry(at[0]!)}`),
      /a cross-reference subsection shifted by one/,
    );
  });

  it('reads no reference that names another generation than its entry (readers differ: the object, or null)', () => {
    const rev = lastRevision(signed);
    expect(rev.resolve(new PdfRef(5, 0))).to.be.instanceOf(PdfDict);
    expect(() => rev.resolve(new PdfRef(5, 1))).to.throw(/the reference 5 1 R names another generation/);
  });

  it('refuses a generation the cross-reference and the definition, or a reference, do not agree on (`5 1 obj` where the page says `5 0 R`)', () => {
    // The entry and the definition say 1; the page's resources still refer to 5 0 R.
    notSigned(
      handUpdate(signed, [[5, 1, FONT]], (at) => `5 1\n${entry(at[0]!, 1)}`),
      /object 5 was given another generation \(0, then 1\): references to it name the old one/,
    );
    // The entry says 0, the definition 1.
    notSigned(
      handUpdate(signed, [[5, 1, FONT]], (at) => `5 1\n${entry(at[0]!, 0)}`),
      /the cross-reference gives object 5 generation 0, its definition 1/,
    );
  });

  it('refuses a trailer key other than /Size, /Prev, /Root, /Info, /ID and /XRefStm added or changed after a signature (/Encrypt above all); a new /ID is fine', () => {
    const update = (trailer: Record<string, string>) => handUpdate(signed, [[5, 0, FONT]], (at) => `5 1\n${entry(at[0]!)}`, trailer);
    notSigned(update({ Encrypt: '<< /Filter /Standard /V 1 /R 2 /O (x) /U (y) /P -4 >>' }), /the trailer's \/Encrypt was added or changed/);
    notSigned(update({ DocChecksum: '/0123456789ABCDEF' }), /the trailer's \/DocChecksum was added or changed/);
    const v = verdict(update({ ID: '[<0123456789abcdef0123456789abcdef> <fedcba9876543210fedcba9876543210>]' }));
    expect(v.outcome, v.reason).to.equal('signed');
  });

  it("allows a hybrid PDF's source (/AdditionalStreams, which LibreOffice opens instead of the PDF) written again with the same bytes, and refuses another source", () => {
    const source = (text: string) => `<< /Length ${text.length} >>\nstream\n${text}\nendstream`;
    const plain = plainPdf(fx.marker.toString('latin1'), 100);
    const n = Number(lastRevision(plain).trailer.get('Size'));
    const hybrid = handUpdate(plain, [[n, 0, source('the ODF, as signed')]], (at) => `${n} 1\n${entry(at[0]!)}`, {
      Size: String(n + 1),
      AdditionalStreams: `[/application#2Fvnd.oasis.opendocument.text ${n} 0 R]`,
    });
    const signedHybrid = fx.pdfSignedBy(hybrid, 'rsa', {});
    const m = Number(lastRevision(signedHybrid).trailer.get('Size'));
    const resaved = (text: string) =>
      handUpdate(signedHybrid, [[m, 0, source(text)]], (at) => `${m} 1\n${entry(at[0]!)}`, {
        Size: String(m + 1),
        AdditionalStreams: `[/application#2Fvnd.oasis.opendocument.text ${m} 0 R]`,
      });
    const same = verdict(resaved('the ODF, as signed'));
    expect(same.outcome, same.reason).to.equal('signed');
    notSigned(resaved('the ODF, PAY TO MALLORY'), /the trailer's \/AdditionalStreams was added or changed/);
  });

  it('refuses a definition no cross-reference section points at, after the signature or in the signed bytes (a reader rebuilding the file takes the last one it finds)', () => {
    const evil = '<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>';
    // After the pointed, harmless object 5: a second `5 0 obj` that only a byte scan finds.
    const shadowed = Buffer.from(
      handUpdate(signed, [[5, 0, FONT]], (at) => `5 1\n${entry(at[0]!)}`)
        .toString('latin1')
        .replace(/(5 0 obj\n<< \/Type \/Font \/Subtype \/Type1 \/BaseFont \/Helvetica >>\nendobj\n)(xref\n5 1\n)/, (_m, a: string, b: string) => {
          return `${a}5 0 obj\n${evil}\nendobj\n${b}`;
        }),
      'latin1',
    );
    // The xref's offset moved by the inserted bytes: point startxref at it again.
    const text = shadowed.toString('latin1');
    const fixed = Buffer.from(text.replace(/startxref\n\d+\n%%EOF\n$/, `startxref\n${text.lastIndexOf('xref\n5 1\n')}\n%%EOF\n`), 'latin1');
    notSigned(fixed, /a definition of object 5 at offset \d+ that no cross-reference section points at/);

    // In the signed bytes: a dead `9 0 obj` before the signature, then a harmless update.
    const plain = plainPdf(fx.marker.toString('latin1'), 100);
    const body = plain.toString('latin1');
    const at = body.indexOf('xref\n');
    const dead = `9 0 obj\n${evil}\nendobj\n`;
    const withDead = Buffer.from(
      `${body.slice(0, at)}${dead}${body.slice(at)}`.replace(/startxref\n\d+\n%%EOF\n$/, `startxref\n${at + dead.length}\n%%EOF\n`),
      'latin1',
    );
    const signedDead = fx.pdfSignedBy(withDead, 'rsa', {});
    notSigned(
      handUpdate(signedDead, [[5, 0, FONT]], (at2) => `5 1\n${entry(at2[0]!)}`),
      /a definition of object 9 at offset \d+ that no cross-reference section points at/,
    );

    // The near miss: `n g obj` inside a pointed object's stream is its bytes, not a definition.
    const n = Number(lastRevision(signed).trailer.get('Size'));
    const inside = 'BT (7 0 obj << /Type /Font >> endobj) Tj ET';
    const v = verdict(
      handUpdate(signed, [[n, 0, `<< /Length ${inside.length} >>\nstream\n${inside}\nendstream`]], (at2) => `${n} 1\n${entry(at2[0]!)}`, {
        Size: String(n + 1),
      }),
    );
    expect(v.outcome, v.reason).to.equal('signed');
  });

  it("reads a hybrid file's objects from its stream where its table lists them as free (ISO 32000-1 7.5.8.4), and no number a newer section freed", () => {
    const plain = plainPdf(fx.marker.toString('latin1'), 100);
    const prev = /startxref\s+(\d+)\s+%%EOF\s*$/.exec(plain.toString('latin1'))![1]!;
    let text = '';
    const at7 = plain.length + text.length;
    text += '7 0 obj\n<< /Note (only in the stream) >>\nendobj\n';
    const row = Buffer.from([1, 0, 0, 0, 0, 0, 0]);
    row.writeUInt32BE(at7, 1);
    const at6 = plain.length + text.length;
    text += `6 0 obj\n<< /Type /XRef /W [1 4 2] /Index [7 1] /Size 8 /Length 7 >>\nstream\n${row.toString('latin1')}\nendstream\nendobj\n`;
    const xrefAt = plain.length + text.length;
    text += `xref\n6 2\n${entry(at6)}${entry(0, 1, 'f')}trailer\n<< /Size 8 /Root 1 0 R /Prev ${prev} /XRefStm ${at6} >>\nstartxref\n${xrefAt}\n%%EOF\n`;
    const hybrid = Buffer.concat([plain, Buffer.from(text, 'latin1')]);
    expect(lastRevision(hybrid).entries.get(7)).to.deep.equal({ type: 1, a: at7, b: 0 });
    // A newer section that frees 7 is not undone by the older hybrid stream.
    const freed = Buffer.concat([
      hybrid,
      Buffer.from(`xref\n7 1\n${entry(0, 1, 'f')}trailer\n<< /Size 8 /Root 1 0 R /Prev ${xrefAt} >>\nstartxref\n${hybrid.length}\n%%EOF\n`, 'latin1'),
    ]);
    expect(lastRevision(freed).entries.has(7)).to.equal(false);
  });
});

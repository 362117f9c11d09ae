import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { verifyP7m, type SignatureVerdict } from '../../../src/files/p7m/p7m.verifier.js';
import { PdfDict, PdfLexer, PdfRef, PdfString, type PdfValue } from '../../../src/files/p7m/pdf/pdf.objects.js';
import { PdfRevision, newFileBudget } from '../../../src/files/p7m/pdf/pdf.revision.js';
import { p7mFixtures } from '../../support/p7m-fixtures.js';
import { appendUpdate, catalogAndPage, nextNumber, plainPdf, serialize, signPdf, streamBody, withEntries } from '../../support/pdf-signing.js';

// The modification analysis (src/files/p7m/pdf/pdf.changes.ts): what PAdES allows after a
// signature, and what it does not, on PDFs with real cross-references made by
// test/support/pdf-signing.ts, signed by the test signers.
describe('PDF signatures and the updates after them (modification analysis)', function () {
  this.timeout(60_000);
  const fx = p7mFixtures();
  const root = [new X509Certificate(fx.rootPem)];
  const verdict = (pdf: Buffer): SignatureVerdict => verifyP7m(pdf, { trustAnchors: root });
  const sign = (pdf: Buffer, signer = 'rsa', opts = {}): Buffer => fx.pdfSignedBy(pdf, signer, opts);
  const stamp = (pdf: Buffer): Buffer => signPdf(pdf, (data) => fx.timestampToken(data), { subFilter: 'ETSI.RFC3161' });
  const base = (xrefStream = false): Buffer => plainPdf(fx.marker.toString('latin1'), 100, { xrefStream });

  /** `pdf` with its page's content replaced (the object redefined in an update). */
  const newContent = (pdf: Buffer, text: string): Buffer =>
    appendUpdate(pdf, new Map([[4, streamBody('', Buffer.from(`BT /F1 12 Tf 72 720 Td (${text}) Tj ET`))]]));
  /** `pdf` with an annotation added to page 1. */
  const annotated = (pdf: Buffer, annot: string): Buffer => {
    const { pageNum, page } = catalogAndPage(pdf);
    const num = nextNumber(pdf);
    const annots = (page.get('Annots') as PdfValue[] | undefined) ?? [];
    return appendUpdate(
      pdf,
      new Map([
        [num, annot],
        [pageNum, serialize(withEntries(page, { Annots: [...annots, new PdfRef(num, 0)] }))],
      ]),
    );
  };
  /** `pdf` with a text field "name" (its widget on page 1), unsigned. */
  const withTextField = (pdf: Buffer, name: string): Buffer => {
    const { rootNum, root, pageNum, page, rev } = catalogAndPage(pdf);
    const num = nextNumber(pdf);
    const form = rev.dict(root.get('AcroForm'));
    const fields = form ? (rev.resolve(form.get('Fields')) as PdfValue[]) : [];
    const annots = (page.get('Annots') as PdfValue[] | undefined) ?? [];
    return appendUpdate(
      pdf,
      new Map([
        [num, `<< /FT /Tx /T (${name}) /V (empty) /Type /Annot /Subtype /Widget /Rect [72 600 300 620] /P ${pageNum} 0 R >>`],
        [rootNum, serialize(withEntries(root, { AcroForm: withEntries(form ?? new PdfDict(new Map()), { Fields: [...fields, new PdfRef(num, 0)] }) }))],
        [pageNum, serialize(withEntries(page, { Annots: [...annots, new PdfRef(num, 0)] }))],
      ]),
    );
  };
  /** `pdf` with the field `name`'s value set. */
  const filled = (pdf: Buffer, name: string, value: string): Buffer => {
    const rev = catalogAndPage(pdf).rev;
    for (const [num] of rev.entries) {
      const d = rev.get(num);
      if (d instanceof PdfDict && d.get('T') instanceof PdfString && (d.get('T') as PdfString).bytes.toString('latin1') === name) {
        return appendUpdate(pdf, new Map([[num, serialize(withEntries(d, { V: new PdfString(Buffer.from(value)) }))]]));
      }
    }
    throw new Error(`no field ${name}`);
  };
  // A page that shows "VOID" in optional content group 6, which /OCProperties (7, its own object) turns off; an opening action (8).
  const withHiddenVoid = (): Buffer => {
    const b = base();
    const { rootNum, root, pageNum, page } = catalogAndPage(b);
    const content = Buffer.from('BT /F1 12 Tf 72 720 Td (AMOUNT 1000) Tj ET /OC /oc1 BDC BT /F1 40 Tf 72 400 Td (VOID) Tj ET EMC');
    const resources = new PdfDict(
      new Map<string, PdfValue>([
        ['Font', new PdfDict(new Map([['F1', new PdfRef(5, 0)]]))],
        ['Properties', new PdfDict(new Map([['oc1', new PdfRef(6, 0)]]))],
      ]),
    );
    return appendUpdate(
      b,
      new Map<number, string | Buffer>([
        [4, streamBody('', content)],
        [6, '<< /Type /OCG /Name (void) >>'],
        [7, '<< /OCGs [6 0 R] /D << /Order [6 0 R] /OFF [6 0 R] >> >>'],
        [8, '<< /S /JavaScript /JS (app.alert\\(1\\);) >>'],
        [rootNum, serialize(withEntries(root, { OCProperties: new PdfRef(7, 0), OpenAction: new PdfRef(8, 0) }))],
        [pageNum, serialize(withEntries(page, { Resources: resources }))],
      ]),
    );
  };
  const reason = (pdf: Buffer): string | undefined =>
    verdict(pdf).reason?.replace(/^the PDF was changed after its signature \d+ in a way PAdES does not allow: /, '');

  it('allows what PAdES-LT and LTA add: a Document Security Store with its validation data, and document timestamps', () => {
    const signed = sign(base());
    const { rootNum, root } = catalogAndPage(signed);
    const cert = nextNumber(signed);
    const dss = cert + 1;
    const lt = appendUpdate(
      signed,
      new Map<number, string | Buffer>([
        [cert, streamBody('', Buffer.from(fx.rootPem))],
        [dss, `<< /Type /DSS /Certs [${cert} 0 R] /VRI << /ABCDEF << /Cert [${cert} 0 R] >> >> >>`],
        [rootNum, serialize(withEntries(root, { DSS: new PdfRef(dss, 0) }))],
      ]),
    );
    const v = verdict(stamp(lt));
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.pdf?.signatures[0]?.changesAfter).to.deep.equal(['validation data (a Document Security Store)', 'a document timestamp']);
    expect(v.pdf?.signatures.map((s) => s.intact)).to.deep.equal([true, true]);
  });

  it("refuses a page's content changed after a signature, a page added, a font redefined, an annotation removed, a visible annotation added", () => {
    const signed = sign(base());
    expect(reason(newContent(signed, 'PAY TO MALLORY'))).to.equal('the content of page 1 was changed');
    const { rev } = catalogAndPage(signed);
    const pages = rev.dict(new PdfRef(2, 0))!;
    const added = appendUpdate(
      signed,
      new Map([
        [nextNumber(signed), '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>'],
        [2, serialize(withEntries(pages, { Kids: [new PdfRef(3, 0), new PdfRef(nextNumber(signed), 0)], Count: 2 }))],
      ]),
    );
    expect(reason(added)).to.equal('the page tree was changed (/Kids)');
    expect(reason(appendUpdate(signed, new Map([[5, '<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>']])))).to.equal(
      'object 5 (a resource a page may show) was changed',
    );
    const noted = sign(annotated(base(), '<< /Type /Annot /Subtype /Text /Rect [10 10 30 30] /Contents (a note) >>'));
    const { pageNum, page } = catalogAndPage(noted);
    expect(reason(appendUpdate(noted, new Map([[pageNum, serialize(withEntries(page, { Annots: [] }))]])))).to.equal('an annotation was removed from page 1');
    expect(reason(annotated(signed, '<< /Type /Annot /Subtype /Square /Rect [60 700 300 740] /IC [1 1 1] >>'))).to.equal(
      "an annotation that can cover the page's content (Square) was added to page 1",
    );
    // Links, pop-ups, hidden annotations cannot cover anything: allowed without a certification.
    const link = verdict(annotated(signed, '<< /Type /Annot /Subtype /Link /Rect [60 700 300 740] /A << /S /URI /URI (https://example.org) >> >>'));
    expect(link.outcome, link.reason).to.equal('signed');
    expect(link.pdf?.signatures[0]?.changesAfter).to.deep.equal(['annotations']);
    expect(verdict(annotated(signed, '<< /Type /Annot /Subtype /Square /F 2 /Rect [60 700 300 740] >>')).outcome).to.equal('signed');
  });

  it('refuses a "signature" added after a signature that does not sign its own update (a signature dictionary nobody can verify, and a widget anyone drew)', () => {
    const signed = sign(base());
    const { rootNum, root, pageNum, page, rev } = catalogAndPage(signed);
    const sig = nextNumber(signed);
    const form = rev.dict(root.get('AcroForm'))!;
    const fake = appendUpdate(
      signed,
      new Map([
        // Its ByteRange indirect, where the file's scan for signatures does not look.
        [sig, `<< /Type /Sig /Filter /Adobe.PPKLite /SubFilter /ETSI.CAdES.detached /ByteRange ${sig + 2} 0 R /Contents <00> >>`],
        [sig + 2, '[0 10 20 30]'],
        [sig + 1, `<< /FT /Sig /T (Approved) /V ${sig} 0 R /Type /Annot /Subtype /Widget /Rect [60 700 300 740] /P ${pageNum} 0 R >>`],
        [
          rootNum,
          serialize(
            withEntries(root, { AcroForm: withEntries(form, { Fields: [...(rev.resolve(form.get('Fields')) as PdfValue[]), new PdfRef(sig + 1, 0)] }) }),
          ),
        ],
        [pageNum, serialize(withEntries(page, { Annots: [...(rev.resolve(page.get('Annots')) as PdfValue[]), new PdfRef(sig + 1, 0)] }))],
      ]),
    );
    expect(reason(fake)).to.equal('a signature dictionary that does not sign its own update was added (signature nobody can verify)');
  });

  it("never lets a rule for what a page does not show (information, metadata, DSS, tags, containers) cover what it shows (an independent review's forgeries)", () => {
    const signed = sign(base());
    const { rootNum, root } = catalogAndPage(signed);
    const evil = streamBody('', Buffer.from('BT /F1 12 Tf 72 720 Td (PAY TO MALLORY) Tj ET'));
    const withRoot = (entries: Record<string, PdfValue>): string => serialize(withEntries(root, entries));
    const cases: Array<[string, Map<number, string | Buffer>, string]> = [
      [
        'the catalog /Metadata naming the content',
        new Map<number, string | Buffer>([
          [4, evil],
          [rootNum, withRoot({ Metadata: new PdfRef(4, 0) })],
        ]),
        'the content of page 1 was changed',
      ],
      [
        'a DSS whose /Certs name the content',
        new Map<number, string | Buffer>([
          [4, evil],
          [rootNum, withRoot({ DSS: new PdfDict(new Map([['Certs', [new PdfRef(4, 0)]]])) })],
        ]),
        'the content of page 1 was changed',
      ],
      [
        'the tags naming the content',
        new Map<number, string | Buffer>([
          [4, evil],
          [rootNum, withRoot({ StructTreeRoot: new PdfDict(new Map([['K', [new PdfRef(4, 0)]]])) })],
        ]),
        'the content of page 1 was changed',
      ],
      [
        'the content typed as an object stream',
        new Map<number, string | Buffer>([[4, streamBody('/Type /ObjStm', Buffer.from('BT (X) Tj ET'))]]),
        'the content of page 1 was changed',
      ],
    ];
    for (const [name, objects, why] of cases) expect(reason(appendUpdate(signed, objects)), name).to.equal(why);
    // Resources a page inherits from the page tree are shown as its own are.
    const { rev: r0 } = catalogAndPage(base());
    const inherited = appendUpdate(
      base(),
      new Map<number, string | Buffer>([
        [2, serialize(withEntries(r0.dict(new PdfRef(2, 0))!, { Resources: new PdfRef(9, 0) }))],
        [3, serialize(withEntries(r0.dict(new PdfRef(3, 0))!, { Resources: undefined }))],
        [9, '<< /Font << /F1 5 0 R >> >>'],
      ]),
    );
    const signedInherited = sign(inherited);
    const { rootNum: rn, root: rt } = catalogAndPage(signedInherited);
    const viaDss = appendUpdate(
      signedInherited,
      new Map<number, string | Buffer>([
        [9, '<< /Font << /F1 5 0 R /F2 5 0 R >> >>'],
        [rn, serialize(withEntries(rt, { DSS: new PdfDict(new Map([['Certs', [new PdfRef(9, 0)]]])) }))],
      ]),
    );
    expect(reason(viaDss)).to.equal('object 9 (a resource a page may show) was changed');
    // A key twice (readers differ on which wins): not examined, so not intact.
    const { pageNum } = catalogAndPage(signed);
    const twice = appendUpdate(signed, new Map([[pageNum, '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Contents 4 0 R >>']]));
    expect(reason(twice)).to.equal('the update could not be examined: a dictionary with /Contents twice');
  });

  it('refuses what can draw over the page after a signature: an empty signature field with an appearance, a link with one, an appearance redrawn without a new value, /NeedAppearances', () => {
    const signed = sign(withTextField(base(), 'amount'));
    const { rootNum, root, pageNum, page, rev } = catalogAndPage(signed);
    const num = nextNumber(signed);
    const form = rev.dict(root.get('AcroForm'))!;
    const ap = streamBody('/Type /XObject /Subtype /Form /BBox [0 0 595 842]', Buffer.from('1 1 1 rg 0 0 595 842 re f'));
    const emptySig = appendUpdate(
      signed,
      new Map<number, string | Buffer>([
        [num, ap],
        [num + 1, `<< /FT /Sig /T (Later) /Type /Annot /Subtype /Widget /Rect [0 0 595 842] /P ${pageNum} 0 R /AP << /N ${num} 0 R >> >>`],
        [
          rootNum,
          serialize(
            withEntries(root, { AcroForm: withEntries(form, { Fields: [...(rev.resolve(form.get('Fields')) as PdfValue[]), new PdfRef(num + 1, 0)] }) }),
          ),
        ],
        [pageNum, serialize(withEntries(page, { Annots: [...(rev.resolve(page.get('Annots')) as PdfValue[]), new PdfRef(num + 1, 0)] }))],
      ]),
    );
    expect(reason(emptySig)).to.equal('an empty signature field with a visible appearance was added');
    expect(reason(annotated(signed, `<< /Type /Annot /Subtype /Link /Rect [0 0 595 842] /AP << /N ${num} 0 R >> >>`))).to.equal(
      "an annotation that can cover the page's content (Link) was added to page 1",
    );
    // The field's appearance redrawn, its value the same (DSS's shadow "replace" file does this).
    const field = [...rev.entries.keys()].find((n) => rev.dict(new PdfRef(n, 0))?.name('FT') === 'Tx')!;
    const redrawn = appendUpdate(
      signed,
      new Map<number, string | Buffer>([
        [num, ap],
        [field, serialize(withEntries(rev.dict(new PdfRef(field, 0))!, { AP: new PdfDict(new Map([['N', new PdfRef(num, 0)]])) }))],
      ]),
    );
    expect(reason(redrawn)).to.equal('the appearance of the form field "amount" was redrawn without its value changing');
    const need = appendUpdate(signed, new Map([[rootNum, serialize(withEntries(root, { AcroForm: withEntries(form, { NeedAppearances: true }) }))]]));
    expect(reason(need)).to.equal("the form's /NeedAppearances was changed");
  });

  it("refuses a second review's forgeries: an existing object made a signature field, a new field reusing a signature's dictionary, a field's appearance redrawn through the DSS, references of another generation", () => {
    const signed = sign(withTextField(base(), 'amount'));
    const { rootNum, root, pageNum, page, rev } = catalogAndPage(signed);
    const form = rev.dict(root.get('AcroForm'))!;
    const fields = rev.resolve(form.get('Fields')) as PdfValue[];
    const withFields = (extra: PdfRef[]): string => serialize(withEntries(root, { AcroForm: withEntries(form, { Fields: [...fields, ...extra] }) }));
    // The page's content stream, rewritten to say /FT /Sig, listed as a new signature field.
    const asField = appendUpdate(
      signed,
      new Map<number, string | Buffer>([
        [4, streamBody('/FT /Sig /T (x)', Buffer.from('BT /F1 12 Tf 72 720 Td (PAY TO MALLORY) Tj ET'))],
        [rootNum, withFields([new PdfRef(4, 0)])],
      ]),
    );
    expect(reason(asField)).to.equal('object 4, which the signed revision has, was added to the form as a signature field');
    // A new visible field whose /V is the first signature's dictionary.
    const sigField = rev.dict(fields.find((f) => rev.dict(f)?.name('FT') === 'Sig'))!;
    const num = nextNumber(signed);
    const reused = appendUpdate(
      signed,
      new Map<number, string | Buffer>([
        [num, `<< /FT /Sig /T (Again) /V ${serialize(sigField.get('V'))} /Type /Annot /Subtype /Widget /Rect [0 0 595 842] /P ${pageNum} 0 R >>`],
        [rootNum, withFields([new PdfRef(num, 0)])],
        [pageNum, serialize(withEntries(page, { Annots: [...(rev.resolve(page.get('Annots')) as PdfValue[]), new PdfRef(num, 0)] }))],
      ]),
    );
    expect(reason(reused)).to.equal('a signature field whose signature dictionary is not a new one was added');
    // The text field's appearance stream redefined, named by a DSS entry.
    const form0 = withTextField(base(), 'amount');
    const r2 = catalogAndPage(form0);
    const apNum = nextNumber(form0);
    const txNum = [...r2.rev.entries.keys()].find((n) => r2.rev.dict(new PdfRef(n, 0))?.name('FT') === 'Tx')!;
    const signedAp = sign(
      appendUpdate(
        form0,
        new Map<number, string | Buffer>([
          [apNum, streamBody('/Type /XObject /Subtype /Form /BBox [0 0 200 20]', Buffer.from('BT (100 EUR) Tj ET'))],
          [txNum, serialize(withEntries(r2.rev.dict(new PdfRef(txNum, 0))!, { AP: new PdfDict(new Map([['N', new PdfRef(apNum, 0)]])) }))],
        ]),
      ),
    );
    const r3 = catalogAndPage(signedAp);
    const redrawn = appendUpdate(
      signedAp,
      new Map<number, string | Buffer>([
        [apNum, streamBody('/Type /XObject /Subtype /Form /BBox [0 0 200 20]', Buffer.from('BT (999999 EUR) Tj ET'))],
        [r3.rootNum, serialize(withEntries(r3.root, { DSS: new PdfDict(new Map([['Certs', [new PdfRef(apNum, 0)]]])) }))],
      ]),
    );
    expect(reason(redrawn)).to.match(/^object \d+ \(a resource a page may show\) was changed$/);
    // The page's content named with another generation.
    expect(reason(appendUpdate(signed, new Map([[pageNum, serialize(withEntries(page, { Contents: new PdfRef(4, 1) }))]])))).to.equal(
      'page 1 was changed (/Contents)',
    );
  });

  it("refuses a third review's forgeries: what the catalog reaches besides pages (optional content, an opening action, a field's value, a link's action) redefined through the DSS or the document information, a visible document timestamp", () => {
    const signed = sign(withHiddenVoid());
    expect(verdict(signed).outcome).to.equal('signed');
    const { rootNum, root } = catalogAndPage(signed);
    const turnedOn = new Map<number, string | Buffer>([
      [7, '<< /OCGs [6 0 R] /D << /Order [6 0 R] /ON [6 0 R] >> >>'],
      [8, '<< /S /JavaScript /JS (app.alert\\(2\\);) >>'],
    ]);
    // Named as validation data...
    const viaDss = appendUpdate(
      signed,
      new Map([...turnedOn, [rootNum, serialize(withEntries(root, { DSS: new PdfDict(new Map([['Certs', [new PdfRef(7, 0), new PdfRef(8, 0)]]])) }))]]),
    );
    expect(reason(viaDss)).to.match(/^object [78] \(a part of the signed document/);
    // ... or as the document information (the update's trailer /Info).
    const info = nextNumber(signed);
    const viaInfo = appendUpdate(signed, new Map([...turnedOn, [info, '<< /Producer (x) >>']]), { info: '7 0 R' });
    expect(reason(viaInfo)).to.match(/^object [78] \(a part of the signed document/);
    // Validation data that was validation data, or is new, is allowed as before.
    const cert = nextNumber(signed);
    const lt = appendUpdate(
      signed,
      new Map<number, string | Buffer>([
        [cert, streamBody('', Buffer.from(fx.rootPem))],
        [rootNum, serialize(withEntries(root, { DSS: new PdfDict(new Map([['Certs', [new PdfRef(cert, 0)]]])) }))],
      ]),
    );
    expect(verdict(lt).outcome).to.equal('signed');

    // A field whose value is an object of its own (value), and a link whose action is (action), under P=1 or a lock on every field.
    const value = nextNumber(base());
    const action = value + 1;
    const withIndirectValue = (): Buffer => {
      const b = base();
      const { rootNum: r, root: catalog, pageNum, page } = catalogAndPage(b);
      const field = value + 2;
      return appendUpdate(
        b,
        new Map<number, string | Buffer>([
          [value, '(EUR 1,000.00)'],
          [action, '<< /S /URI /URI (https://example.org/pay) >>'],
          [field, `<< /FT /Tx /T (amount) /V ${value} 0 R /Type /Annot /Subtype /Widget /Rect [72 600 300 620] /P ${pageNum} 0 R >>`],
          [field + 1, `<< /Type /Annot /Subtype /Link /Rect [72 500 300 520] /A ${action} 0 R >>`],
          [r, serialize(withEntries(catalog, { AcroForm: new PdfDict(new Map([['Fields', [new PdfRef(field, 0)]]])) }))],
          [pageNum, serialize(withEntries(page, { Annots: [new PdfRef(field, 0), new PdfRef(field + 1, 0)] }))],
        ]),
      );
    };
    for (const opts of [{ docMdp: 1 as const }, { lock: { action: 'All' as const } }]) {
      const certified = sign(withIndirectValue(), 'rsa', opts);
      const c = catalogAndPage(certified);
      const dss = (objects: Array<[number, string]>) =>
        appendUpdate(
          certified,
          new Map<number, string | Buffer>([
            ...objects,
            [c.rootNum, serialize(withEntries(c.root, { DSS: new PdfDict(new Map([['OCSPs', objects.map(([n]) => new PdfRef(n, 0))]])) }))],
          ]),
        );
      expect(reason(dss([[value, '(EUR 9,999,999.00)']]))).to.equal(
        opts.docMdp
          ? 'the form field "amount" was filled in, which the certification signature does not allow (DocMDP P=1)'
          : 'the form field "amount" is locked by an earlier signature (FieldMDP)',
      );
      expect(reason(dss([[action, '<< /S /URI /URI (https://example.org/pay-mallory) >>']]))).to.equal(
        `object ${action} (a part of the signed document: an action, a value, optional content, an outline...) was changed`,
      );
    }
    // Without a lock, filling the value in its own object is a form fill like any other.
    const fill = appendUpdate(sign(withIndirectValue()), new Map([[value, '(EUR 2,000.00)']]));
    expect(verdict(fill).outcome).to.equal('signed');
    expect(verdict(fill).pdf?.signatures[0]?.changesAfter).to.deep.equal(['form field values']);

    // A document timestamp shows nothing: one that draws (a valid one, or one that does not verify) is refused, an invisible one is not.
    const overlay = '1 1 1 rg 0 0 400 60 re f 0 0 0 rg BT /F1 14 Tf 10 20 Td (PAY EUR 9,999,999.00) Tj ET';
    for (const token of [(data: Buffer) => fx.timestampToken(data), () => Buffer.from('3003020100', 'hex')]) {
      const drawn = signPdf(sign(base(), 'rsa', { docMdp: 1 }), token, { subFilter: 'ETSI.RFC3161', rect: [60, 700, 460, 760], appearance: overlay });
      expect(reason(drawn)).to.equal('a document timestamp with a visible appearance was added (a timestamp shows nothing)');
    }
    const invisibleGarbage = signPdf(sign(base()), () => Buffer.from('3003020100', 'hex'), { subFilter: 'ETSI.RFC3161' });
    const v = verdict(invisibleGarbage);
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.notes?.[0]).to.match(/^document timestamp 1 \(PDF signature 2\) ignored: malformed timestamp token/);
  });

  it("refuses a fourth review's forgeries: a signature field or timestamp widget that brings an action, a kid that is no widget, a value that is also optional content, an appearance the page draws too", () => {
    const turnOn = '<< /S /SetOCGState /State [/ON 6 0 R] >>';
    // A document timestamp (it need not verify) whose hidden widget turns VOID on when the page opens, even at P=1.
    const certified = sign(withHiddenVoid(), 'rsa', { docMdp: 1 });
    const acting = signPdf(certified, () => Buffer.from('3003020100', 'hex'), { subFilter: 'ETSI.RFC3161', fieldName: `TS) /AA << /PO ${turnOn} >> /X (` });
    expect(reason(acting)).to.equal('a signature field with /AA was added (a signature field holds a signature, never an action or more)');
    // An empty signature field doing the same, and one whose kid is a note drawn from its /Contents.
    /** `pdf` with a field (number n, its widget the first object given) added to the form and page 1. */
    const addField = (pdf: Buffer, field: (num: number, pageNum: number) => Array<[number, string | Buffer]>): Buffer => {
      const { rootNum, root, pageNum, page, rev } = catalogAndPage(pdf);
      const n = nextNumber(pdf);
      const form = rev.dict(root.get('AcroForm'));
      const fields = form ? (rev.resolve(form.get('Fields')) as PdfValue[]) : [];
      const annots = (rev.resolve(page.get('Annots')) as PdfValue[] | undefined) ?? [];
      const objects = field(n, pageNum);
      const widget = objects.length > 1 && String(objects[0]![1]).includes('/Kids') ? objects[1]![0] : objects[0]![0];
      return appendUpdate(
        pdf,
        new Map<number, string | Buffer>([
          ...objects,
          [rootNum, serialize(withEntries(root, { AcroForm: withEntries(form ?? new PdfDict(new Map()), { Fields: [...fields, new PdfRef(n, 0)] }) }))],
          [pageNum, serialize(withEntries(page, { Annots: [...annots, new PdfRef(widget, 0)] }))],
        ]),
      );
    };
    const signed = sign(withHiddenVoid());
    expect(
      reason(
        addField(signed, (n, p) => [[n, `<< /FT /Sig /T (Empty) /Type /Annot /Subtype /Widget /F 2 /Rect [0 0 0 0] /P ${p} 0 R /AA << /PV ${turnOn} >> >>`]]),
      ),
    ).to.equal('a signature field with /AA was added (a signature field holds a signature, never an action or more)');
    const note = addField(signed, (n, p) => [
      [n, `<< /FT /Sig /T (Empty) /Kids [${n + 1} 0 R] >>`],
      [n + 1, `<< /Type /Annot /Subtype /FreeText /Parent ${n} 0 R /Rect [60 700 400 760] /P ${p} 0 R /DA (/F1 14 Tf) /Contents (PAY EUR 9,999,999.00) >>`],
    ]);
    expect(reason(note)).to.equal('a signature field whose kid is not a widget (FreeText) was added');
    // Visible without an appearance of its own, an empty field still draws (its border and background).
    const drawn = addField(signed, (n, p) => [
      [n, `<< /FT /Sig /T (Empty) /Type /Annot /Subtype /Widget /F 4 /Rect [60 700 400 760] /P ${p} 0 R /MK << /BG [1 0 0] >> >>`],
    ]);
    expect(reason(drawn)).to.equal('an empty signature field with a visible appearance was added');

    // A text field whose value is the /OCProperties object (7): "filling" it would turn VOID on.
    const withValueField = (pdf: Buffer, value: number, ap = ''): Buffer =>
      addField(pdf, (n, p) => [[n, `<< /FT /Tx /T (note) /V ${value} 0 R /Type /Annot /Subtype /Widget /F 2 /Rect [0 0 0 0] /P ${p} 0 R${ap} >>`]]);
    const shared = sign(withValueField(withHiddenVoid(), 7));
    expect(reason(appendUpdate(shared, new Map([[7, '<< /OCGs [6 0 R] /D << /Order [6 0 R] /ON [6 0 R] >> >>']])))).to.equal(
      'object 7 (a part of the signed document: an action, a value, optional content, an outline...) was changed',
    );

    // A widget whose appearance the page draws too (/Fm0 Do): a fill may not redraw it.
    const b = base();
    const xo = nextNumber(b);
    const { pageNum, page } = catalogAndPage(b);
    const resources = new PdfDict(
      new Map<string, PdfValue>([
        ['Font', new PdfDict(new Map([['F1', new PdfRef(5, 0)]]))],
        ['XObject', new PdfDict(new Map([['Fm0', new PdfRef(xo, 0)]]))],
      ]),
    );
    const xobject = (text: string) => streamBody('/Type /XObject /Subtype /Form /BBox [0 0 400 60]', Buffer.from(`BT /F1 12 Tf 0 10 Td (${text}) Tj ET`));
    const drawsToo = appendUpdate(
      b,
      new Map<number, string | Buffer>([
        [4, streamBody('', Buffer.from('BT /F1 12 Tf 72 720 Td (TOTAL:) Tj ET q 1 0 0 1 150 710 cm /Fm0 Do Q'))],
        [xo, xobject('EUR 1,000.00')],
        [pageNum, serialize(withEntries(page, { Resources: resources }))],
      ]),
    );
    const memo = addField(drawsToo, (n, p) => [
      [n, `<< /FT /Tx /T (memo) /V (a) /Type /Annot /Subtype /Widget /F 2 /Rect [0 0 0 0] /P ${p} 0 R /AP << /N ${xo} 0 R >> >>`],
    ]);
    const filledIn = sign(memo, 'rsa', { docMdp: 2 });
    const memoNum = nextNumber(drawsToo);
    const memoDict = catalogAndPage(filledIn).rev.dict(new PdfRef(memoNum, 0))!;
    const redrawn = appendUpdate(
      filledIn,
      new Map<number, string | Buffer>([
        [memoNum, serialize(withEntries(memoDict, { V: new PdfString(Buffer.from('b')) }))],
        [xo, xobject('EUR 9,999,999.00')],
      ]),
    );
    expect(reason(redrawn)).to.equal(`object ${xo} (a resource a page may show) was changed`);
    // The same fill of a widget whose appearance only it draws is a form fill.
    const alone = addField(base(), (n, p) => [
      [n, `<< /FT /Tx /T (memo) /V (a) /Type /Annot /Subtype /Widget /F 2 /Rect [0 0 0 0] /P ${p} 0 R /AP << /N ${n + 1} 0 R >> >>`],
      [n + 1, xobject('EUR 1,000.00')],
    ]);
    const aloneSigned = sign(alone, 'rsa', { docMdp: 2 });
    const aloneNum = nextNumber(base());
    const refilled = appendUpdate(
      aloneSigned,
      new Map<number, string | Buffer>([
        [aloneNum, serialize(withEntries(catalogAndPage(aloneSigned).rev.dict(new PdfRef(aloneNum, 0))!, { V: new PdfString(Buffer.from('b')) }))],
        [aloneNum + 1, xobject('EUR 2,000.00')],
      ]),
    );
    const fine = verdict(refilled);
    expect(fine.outcome, fine.reason).to.equal('signed');
    expect(fine.pdf?.signatures[0]?.changesAfter).to.deep.equal(['form field values']);
  });

  it('examines a page with an array of 200,000 numbers (no spread of a large array on the stack)', () => {
    const b = base();
    const { pageNum, page } = catalogAndPage(b);
    const big = appendUpdate(
      b,
      new Map([[pageNum, serialize(withEntries(page, { PieceInfo: new PdfDict(new Map([['Data', Array.from({ length: 200_000 }, (_, i) => i % 10)]])) }))]]),
    );
    const v = verdict(stamp(sign(big)));
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.pdf?.signatures[0]?.intact).to.equal(true);
  });

  it('refuses an update that defines an object the signed revision refers to without defining (a dangling reference filled later)', () => {
    const { pageNum, page } = catalogAndPage(base());
    const dangling = appendUpdate(
      base(),
      new Map([
        [
          pageNum,
          serialize(
            withEntries(page, {
              Resources: new PdfDict(
                new Map([
                  [
                    'Font',
                    new PdfDict(
                      new Map([
                        ['F1', new PdfRef(5, 0)],
                        ['F2', new PdfRef(40, 0)],
                      ]),
                    ),
                  ],
                ]),
              ),
            }),
          ),
        ],
      ]),
    );
    const signed = sign(dangling);
    expect(verdict(signed).outcome, verdict(signed).reason).to.equal('signed');
    expect(reason(appendUpdate(signed, new Map([[40, '<< /Type /Font /Subtype /Type1 /BaseFont /Courier >>']])))).to.equal(
      'object 40, which the signed revision refers to without defining, was defined after it',
    );
  });

  it("keeps to the certification signature's DocMDP level: P=1 no signature after it, P=2 signing and form filling, P=3 also annotations", () => {
    const certifiedAt = (p: 1 | 2 | 3): Buffer => sign(withTextField(base(), 'amount'), 'rsa', { docMdp: p });
    expect(reason(sign(certifiedAt(1), 'ec'))).to.equal('a signature after a certification that allows no change (DocMDP P=1)');
    // Validation data and document timestamps are allowed whatever the level.
    expect(verdict(stamp(certifiedAt(1))).outcome).to.equal('signed');
    const p2 = verdict(sign(filled(certifiedAt(2), 'amount', '1000'), 'ec'));
    expect(p2.outcome, p2.reason).to.equal('signed');
    expect(p2.pdf?.signatures[0]?.changesAfter).to.deep.equal(['form field values', 'a signature']);
    expect(reason(filled(certifiedAt(1), 'amount', '1000'))).to.equal(
      'the form field "amount" was filled in, which the certification signature does not allow (DocMDP P=1)',
    );
    const link = '<< /Type /Annot /Subtype /Link /Rect [60 700 300 740] >>';
    expect(reason(annotated(certifiedAt(2), link))).to.equal('an annotation (Link) was added to page 1, which the certification signature does not allow');
    expect(verdict(annotated(certifiedAt(3), link)).outcome).to.equal('signed');
  });

  it('reads an indirect DocMDP /P and /TransformMethod as a reader does (`/P 11 0 R` holding 1 allows no form filling; it read as 2)', () => {
    const certified = (p: 1 | 3) => sign(withTextField(base(), 'amount'), 'rsa', { docMdp: p, docMdpIndirect: true });
    expect(reason(filled(certified(1), 'amount', '1000'))).to.equal(
      'the form field "amount" was filled in, which the certification signature does not allow (DocMDP P=1)',
    );
    expect(reason(sign(certified(1), 'ec'))).to.equal('a signature after a certification that allows no change (DocMDP P=1)');
    // The near miss: an indirect P=3 allows annotations, as a direct one does.
    expect(verdict(annotated(certified(3), '<< /Type /Annot /Subtype /Link /Rect [60 700 300 740] >>')).outcome).to.equal('signed');
  });

  it('keeps to FieldMDP locks: a field locked by a signature cannot be filled after it; an unlocked one can', () => {
    const form = withTextField(withTextField(base(), 'amount'), 'notes');
    const locked = sign(form, 'rsa', { lock: { action: 'Include', fields: ['amount'] } });
    expect(reason(filled(locked, 'amount', '1000000'))).to.equal('the form field "amount" is locked by an earlier signature (FieldMDP)');
    expect(verdict(filled(locked, 'notes', 'paid')).outcome).to.equal('signed');
    const all = sign(form, 'rsa', { lock: { action: 'All' } });
    expect(reason(filled(all, 'notes', 'paid'))).to.equal('the form field "notes" is locked by an earlier signature (FieldMDP)');
    expect(verdict(filled(sign(form), 'amount', '1000')).outcome).to.equal('signed');
  });

  it('reads cross-reference streams and object streams: a document so written, signed twice, then its page object redefined in an object stream', () => {
    const twice = sign(sign(base(true)), 'ec', { xrefStream: true });
    const v = verdict(twice);
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.pdf?.signatures.map((s) => s.changesAfter)).to.deep.equal([['a signature'], []]);
    // Page 3 redefined inside a new object stream, found through an xref stream.
    const body = '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << >> >>';
    const num = nextNumber(twice);
    const first = '3 0\n';
    const objStm = streamBody(`/Type /ObjStm /N 1 /First ${first.length} /Filter /FlateDecode`, deflateSync(Buffer.from(first + body)));
    const unused = appendUpdate(twice, new Map([[num, objStm]]), { xrefStream: true });
    expect(verdict(unused).outcome).to.equal('signed'); // an object stream nobody refers to changes nothing
    const redefined = appendUpdate(twice, new Map([[num, objStm]]), { xrefStream: true, inStream: new Map([[3, [num, 0]]]) });
    expect(new PdfRevision(redefined, redefined.length, newFileBudget()).dict(new PdfRef(3, 0))?.get('Resources')).to.be.instanceOf(PdfDict);
    expect(reason(redefined)).to.equal('page 1 was changed (/Resources)');
  });

  it('reads hostile cross-references within bounds: a /Prev loop read once, a huge entry count and an inflating bomb refused, bytes after %%EOF', () => {
    const loop = Buffer.from('%PDF-1.7\nxref\n0 1\n0000000000 65535 f\r\ntrailer << /Size 1 /Prev 9 /Root 1 0 R >>\nstartxref\n9\n%%EOF\n', 'latin1');
    const rev = new PdfRevision(loop, loop.length, newFileBudget());
    expect(rev.entries.size).to.equal(0);
    const huge = Buffer.from('%PDF-1.7\nxref\n0 99999999\n0000000000 65535 f\r\ntrailer << /Size 1 >>\nstartxref\n9\n%%EOF\n', 'latin1');
    expect(() => new PdfRevision(huge, huge.length, newFileBudget())).to.throw('too many cross-reference entries');
    // An xref stream that inflates a thousand times over its size, past the file's budget.
    const zeros = deflateSync(Buffer.alloc(100 * 1024 * 1024));
    const bomb = Buffer.concat([
      Buffer.from('%PDF-1.7\n', 'latin1'),
      Buffer.from('1 0 obj\n', 'latin1'),
      streamBody('/Type /XRef /W [1 4 2] /Size 2 /Filter /FlateDecode', zeros),
      Buffer.from('\nendobj\nstartxref\n9\n%%EOF\n', 'latin1'),
    ]);
    const used = process.memoryUsage().rss;
    expect(() => new PdfRevision(bomb, bomb.length, newFileBudget())).to.throw(/a stream does not inflate/);
    expect(process.memoryUsage().rss - used).to.be.below(200 * 1024 * 1024);
    // A literal string is decoded into one buffer, never past 16 MiB.
    const long = Buffer.concat([Buffer.from('('), Buffer.alloc(17 * 1024 * 1024, 0x61), Buffer.from(')')]);
    expect(() => new PdfLexer(long, 0, { values: 10 }).value()).to.throw('a PDF string too long');
    expect((new PdfLexer(Buffer.from('(a\\(b\\)c\\101)'), 0, { values: 10 }).value() as PdfString).bytes.toString()).to.equal('a(b)cA');
    // An update written after the last %%EOF, without a cross-reference: no reader sees it, so no signature covers it.
    const signed = sign(sign(base()), 'ec');
    expect(reason(Buffer.concat([signed, Buffer.from('5 0 obj << >> endobj\n')]))).to.equal('bytes after the last %%EOF');
  });
});

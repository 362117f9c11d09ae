// Signed PDFs made the way signing tools make them, for the tests and the benches: a signature
// dictionary appended (an incremental update) with room for the CMS, its /ByteRange set around
// /Contents, the two ranges signed detached by the caller (openssl cms), the DER hex-encoded
// into the room. The PDF's cross-reference is not rewritten: the verifier never reads it.

/** Room for the CMS in /Contents: 8 KiB of DER, hex-encoded. */
const CONTENTS_HEX = 16_384;
const PLACEHOLDER = '0000000000 0000000000 0000000000 0000000000';

/**
 * `pdf` with one more signature: `signDetached` gets the bytes the ByteRange covers and returns
 * a detached CMS SignedData (DER) over them, or for ETSI.RFC3161 (a document timestamp) a
 * TimeStampToken. `claimedTime` is the dictionary's /M (a PDF date; null: none), `header` its object's header, `entries` more of its dictionary (after /M).
 */
export function signPdf(
  pdf: Buffer,
  signDetached: (data: Buffer) => Buffer,
  opts: { subFilter: string; objectNumber: number; claimedTime?: string | null; header?: string; entries?: string },
): Buffer {
  const type = opts.subFilter === 'ETSI.RFC3161' ? 'DocTimeStamp' : 'Sig';
  const m = opts.claimedTime === null ? '' : ` /M (${opts.claimedTime ?? 'D:20261124090000Z'})`;
  const dict =
    `\n${opts.header ?? `${opts.objectNumber} 0 obj`}\n<< /Type /${type} /Filter /Adobe.PPKLite /SubFilter /${opts.subFilter}${m}${opts.entries ?? ''}\n` +
    `/ByteRange [${PLACEHOLDER}]\n/Contents <${'0'.repeat(CONTENTS_HEX)}> >>\nendobj\n%%EOF\n`;
  const text = Buffer.concat([pdf, Buffer.from(dict, 'latin1')]);
  const lt = text.lastIndexOf('/Contents <') + '/Contents '.length;
  const gt = text.indexOf('>', lt) + 1;
  text.write([0, lt, gt, text.length - gt].join(' ').padEnd(PLACEHOLDER.length, ' '), text.lastIndexOf(PLACEHOLDER), 'latin1');
  const hex = signDetached(Buffer.concat([text.subarray(0, lt), text.subarray(gt)])).toString('hex');
  if (hex.length > CONTENTS_HEX) throw new Error('the CMS does not fit the room reserved for it');
  text.write(hex, lt + 1, 'latin1');
  return text;
}

/** A one-page PDF whose page content carries `marker`, padded to about `padding` more bytes. */
export function plainPdf(marker: string, padding: number): Buffer {
  return Buffer.from(
    [
      '%PDF-1.7',
      '%\xe2\xe3\xcf\xd3',
      '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
      '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj',
      '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >> endobj',
      `4 0 obj << /Length ${padding + 60} >> stream`,
      `BT /F1 12 Tf 72 720 Td (${marker}) Tj ET ${'%'.repeat(padding)}`,
      'endstream endobj',
      'trailer << /Root 1 0 R /Size 5 >>',
      '%%EOF',
      '',
    ].join('\n'),
    'latin1',
  );
}

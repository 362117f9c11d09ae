import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { expect } from 'chai';
import type { GuaranteeV2 } from '../../../src/guarantees/guarantee.schemas.js';
import {
  amendmentCanonicalForm,
  amendmentDigest,
  amendmentProjection,
  canonicalForm,
  canonicalProjection,
  guaranteeDigest,
} from '../../../src/notarization/canonical.js';

const record: GuaranteeV2 = {
  details: {
    transactionId: 'TX-1',
    policyNumber: 'P-1',
    actType: 'BAIL_ACT',
    checkCode: null,
    emittedAt: null,
    effectiveAt: '2025-03-01T00:00:00.000Z',
    expiresAt: null,
    isFixedExpiry: false,
    cig: 'CIG1',
    batchCode: null,
  },
  economics: { garantedAmount: 15000.5, contractAmount: 0.1, isAutomaticRenewal: null },
  note: { shared: 'città' },
  sign: { emissionAt: null },
  txHash: null,
  notarizationStatus: 'PENDING',
  docs: [
    { type: 'OTHER', key: 'b.pdf', checksum: 'bb'.repeat(32), originalFileName: 'b.pdf' },
    { key: 'a.pdf', checksum: 'aa'.repeat(32) },
  ],
  createdAt: '2026-11-23T02:31:07.243Z',
  id: '01a2063e-2aeb-7015-89dd-221cf9156a3c',
  orgId: '01a2063d-fd0d-7406-bcb2-977977e358c8',
};

describe('the canonical form of a guarantee', () => {
  it("is the RFC 8785 JSON of the documented projection (docs/api.md's example, byte for byte)", () => {
    expect(canonicalForm(record)).to.equal(
      '{"createdAt":"2026-11-23T02:31:07.243Z","details":{"actType":"BAIL_ACT","batchCode":null,"checkCode":null,"cig":"CIG1",' +
        '"effectiveAt":"2025-03-01T00:00:00.000Z","emittedAt":null,"expiresAt":null,"isFixedExpiry":false,"policyNumber":"P-1",' +
        '"transactionId":"TX-1"},"docs":[{"checksum":"' +
        'aa'.repeat(32) +
        '","key":"a.pdf","originalFileName":null,"type":null},' +
        '{"checksum":"' +
        'bb'.repeat(32) +
        '","key":"b.pdf","originalFileName":"b.pdf","type":"OTHER"}],' +
        '"economics":{"contractAmount":"0.10","garantedAmount":"15000.50","isAutomaticRenewal":null},' +
        '"id":"01a2063e-2aeb-7015-89dd-221cf9156a3c","note":{"shared":"città"},"orgId":"01a2063d-fd0d-7406-bcb2-977977e358c8",' +
        '"schema":"guarantee-registry/notarization/v1","sign":{"emissionAt":null}}',
    );
    expect(guaranteeDigest(record)).to.equal(createHash('sha256').update(canonicalForm(record), 'utf8').digest('hex'));
  });

  it('does not depend on key order, docs order, date offsets, absent-or-null, or what notarization sets', () => {
    const same: GuaranteeV2 = {
      orgId: record.orgId,
      id: record.id,
      createdAt: '2026-11-23T03:31:07.243+01:00',
      docs: [{ key: 'a.pdf', checksum: 'aa'.repeat(32), notarizedAt: '2027-01-01T00:00:00.000Z' }, ...record.docs.slice(0, 1)],
      notarizationStatus: 'COMPLETE',
      txHash: '0xabc',
      sign: { emissionAt: null },
      note: { shared: 'città' },
      economics: { isAutomaticRenewal: null, contractAmount: 0.1, garantedAmount: 15000.5 },
      details: { ...record.details, effectiveAt: '2025-03-01T01:00:00+01:00' },
    };
    expect(guaranteeDigest(same)).to.equal(guaranteeDigest(record));
  });

  it("changes with every field a client registered, and with the docs' checksums", () => {
    const variants: Array<(g: GuaranteeV2) => void> = [
      (g) => {
        g.details.transactionId = 'TX-2';
      },
      (g) => {
        delete g.details.transactionId;
      },
      (g) => {
        g.details.policyNumber = 'P-2';
      },
      (g) => {
        g.details.actType = 'OTHER';
      },
      (g) => {
        g.details.checkCode = '';
      },
      (g) => {
        g.details.emittedAt = '2025-01-01T00:00:00.000Z';
      },
      (g) => {
        g.details.effectiveAt = '2025-03-01T00:00:00.001Z';
      },
      (g) => {
        g.details.expiresAt = '2030-01-01T00:00:00.000Z';
      },
      (g) => {
        g.details.isFixedExpiry = null;
      },
      (g) => {
        g.details.cig = 'CIG2';
      },
      (g) => {
        g.details.batchCode = 'B';
      },
      (g) => {
        g.economics.garantedAmount = 15000.51;
      },
      (g) => {
        g.economics.contractAmount = null;
      },
      (g) => {
        g.economics.isAutomaticRenewal = false;
      },
      (g) => {
        g.note.shared = 'citta';
      },
      (g) => {
        g.sign.emissionAt = '2025-01-01T00:00:00.000Z';
      },
      (g) => {
        g.createdAt = '2026-11-23T02:31:07.244Z';
      },
      (g) => {
        g.id = '01a2063e-2aeb-7015-89dd-221cf9156a3d';
      },
      (g) => {
        g.orgId = '01a2063d-fd0d-7406-bcb2-977977e358c9';
      },
      (g) => {
        (g.docs[0] as GuaranteeV2['docs'][number]).checksum = 'cc'.repeat(32);
      },
      (g) => {
        (g.docs[0] as GuaranteeV2['docs'][number]).type = 'BAIL_ACT';
      },
      (g) => {
        (g.docs[0] as GuaranteeV2['docs'][number]).originalFileName = 'c.pdf';
      },
      (g) => {
        (g.docs[1] as GuaranteeV2['docs'][number]).key = 'c.pdf';
      },
      (g) => {
        g.docs.pop();
      },
    ];
    const digests = new Set([guaranteeDigest(record)]);
    for (const change of variants) {
      const g = structuredClone(record);
      change(g);
      digests.add(guaranteeDigest(g));
    }
    expect(digests.size).to.equal(variants.length + 1);
  });

  it("is what the canonicalize library makes of the projection, for any strings: escapes, Unicode, a key's order", () => {
    const texts = [
      '',
      'plain',
      'quote " backslash \\ slash /',
      'control \u0001\n\t\u001f',
      'città €',
      '𝄞 😀 pair',
      '\u2028\u2029',
      'literal \\ud800 text',
      'ÿ\u007f\u0080',
      'z'.repeat(300),
    ];
    const pick = (i: number) => texts[i % texts.length] as string;
    for (let i = 0; i < 200; i++) {
      const g = structuredClone(record);
      g.details.policyNumber = pick(i);
      g.details.checkCode = i % 3 ? pick(i + 1) : null;
      g.details.transactionId = pick(i + 2);
      g.note.shared = pick(i + 3);
      g.docs = [
        { key: pick(i + 4) || 'k', checksum: null, originalFileName: pick(i + 5) },
        { key: `${pick(i + 6)}-b`, type: 'OTHER', checksum: 'aa'.repeat(32) },
      ];
      g.economics.garantedAmount = i % 2 ? i * 1000.25 : null;
      expect(canonicalForm(g), `case ${i}`).to.equal(canonicalize(canonicalProjection(g)));
    }
  });

  it('refuses a lone surrogate, as RFC 8785 and the canonicalize library do', () => {
    const g = structuredClone(record);
    g.note.shared = 'lone \ud800 surrogate';
    expect(() => canonicalForm(g)).to.throw(/surrogate/i);
  });
});

describe('the canonical form of an amendment', () => {
  const amendment = {
    id: '01a2063e-2aeb-7015-89dd-221cf9156a3d',
    guaranteeId: record.id,
    seq: 2,
    type: 'PARTIAL_RELEASE',
    effectiveAt: '2027-03-01T10:00:00+01:00',
    garantedAmount: 600.5,
    reason: 'SAL n. 3',
    docs: [
      { key: 'z.pdf', type: null, originalFileName: null, checksum: 'cc'.repeat(32) },
      { key: 'b.pdf', type: 'OTHER', originalFileName: 'appendice.pdf', checksum: null },
    ],
    createdAt: '2027-03-01T09:00:01.000Z',
    notarizationStatus: 'COMPLETE',
    txHash: '0xabc',
  };
  const links = { guaranteeDigest: 'aa'.repeat(32), previousDigest: 'bb'.repeat(32) };

  it('is the RFC 8785 JSON of the projection docs/api.md documents, with its two links, byte for byte', () => {
    expect(amendmentCanonicalForm(amendment, links)).to.equal(
      '{"claimedAmount":null,"createdAt":"2027-03-01T09:00:01.000Z","docs":[' +
        '{"checksum":null,"key":"b.pdf","originalFileName":"appendice.pdf","type":"OTHER"},' +
        `{"checksum":"${'cc'.repeat(32)}","key":"z.pdf","originalFileName":null,"type":null}],` +
        '"effectiveAt":"2027-03-01T09:00:00.000Z","expiresAt":null,"garantedAmount":"600.50",' +
        `"guaranteeDigest":"${'aa'.repeat(32)}","guaranteeId":"${record.id}","id":"01a2063e-2aeb-7015-89dd-221cf9156a3d",` +
        `"paidAmount":null,"previousDigest":"${'bb'.repeat(32)}","reason":"SAL n. 3","schema":"guarantee-registry/amendment/v1","seq":2,"type":"PARTIAL_RELEASE"}`,
    );
    expect(amendmentCanonicalForm(amendment, links)).to.equal(canonicalize(amendmentProjection(amendment, links)));
    expect(amendmentDigest(amendment, links)).to.equal(createHash('sha256').update(amendmentCanonicalForm(amendment, links), 'utf8').digest('hex'));
  });

  it('ignores what notarization sets, but changes with any field, either link or the seq', () => {
    const digest = amendmentDigest(amendment, links);
    const { notarizationStatus: _status, txHash: _tx, ...unsealed } = amendment;
    expect(amendmentDigest(unsealed, links)).to.equal(digest);
    for (const changed of [
      { ...amendment, seq: 3 },
      { ...amendment, garantedAmount: 600.51 },
      { ...amendment, reason: null },
      { ...amendment, type: 'AMOUNT_CHANGE' },
      { ...amendment, docs: amendment.docs.slice(1) },
      { ...amendment, effectiveAt: '2027-03-01T10:00:00.001+01:00' },
    ])
      expect(amendmentDigest(changed, links)).to.not.equal(digest);
    expect(amendmentDigest(amendment, { ...links, previousDigest: null })).to.not.equal(digest);
    expect(amendmentDigest(amendment, { ...links, guaranteeDigest: 'ab'.repeat(32) })).to.not.equal(digest);
  });
});

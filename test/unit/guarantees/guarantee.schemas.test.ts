import { expect } from 'chai';
import { createGuaranteeV1, createGuaranteeV2, listQuery } from '../../../src/guarantees/guarantee.schemas.js';
import { normalize } from '../../../src/guarantees/guarantee.service.js';

describe('guarantee request schemas', () => {
  it('parse dates to Date in UTC, truncating beyond milliseconds', () => {
    const parsed = createGuaranteeV2.parse({ details: { emittedAt: '2025-03-31T10:00:00.123456+02:00' } });
    expect(parsed.details?.emittedAt?.toISOString()).to.equal('2025-03-31T08:00:00.123Z');
  });

  it('accept the read-only fields and drop them from the normalized record', () => {
    const parsed = createGuaranteeV1.parse({ id: 1, txHash: 'x', docs: [{ key: 'a.pdf', checksum: 'zz' }] });
    const g = normalize(parsed);
    expect(g).to.not.have.property('id');
    expect(g.docs).to.deep.equal([{ type: null, key: 'a.pdf', originalFileName: null }]);
  });

  it('normalize absent and null alike, note.shared to ""', () => {
    const a = normalize(createGuaranteeV2.parse({}));
    const b = normalize(createGuaranteeV2.parse({ details: { actType: null }, note: { shared: null }, economics: {} }));
    expect(a).to.deep.equal(b);
    expect(a.noteShared).to.equal('');
  });

  it('accept any well-formed Unicode, emoji (surrogate pairs) included', () => {
    const parsed = createGuaranteeV2.parse({ note: { shared: 'Cauzione 💶 ok' }, details: { cig: 'ÀÉÌ' } });
    expect(parsed.note?.shared).to.equal('Cauzione 💶 ok');
  });

  it('accept a leap day, refuse a non-leap one', () => {
    expect(createGuaranteeV2.safeParse({ details: { emittedAt: '2024-02-29T00:00:00Z' } }).success).to.equal(true);
    expect(createGuaranteeV2.safeParse({ details: { emittedAt: '2025-02-29T00:00:00Z' } }).success).to.equal(false);
  });

  it('accept the money edge cases that are exact, refuse the others', () => {
    for (const ok of [0, 1, 0.01, 0.29, 1234567.89, 9_999_999_999_999.99]) {
      expect(createGuaranteeV2.safeParse({ economics: { garantedAmount: ok } }).success, String(ok)).to.equal(true);
    }
    for (const bad of [-0.01, 0.001, 1e-7, 10_000_000_000_000, Number.MAX_VALUE]) {
      expect(createGuaranteeV2.safeParse({ economics: { garantedAmount: bad } }).success, String(bad)).to.equal(false);
    }
  });

  it('default page 1 and limit 10, and bound them', () => {
    expect(listQuery.parse({})).to.deep.equal({ page: 1, limit: 10 });
    expect(listQuery.parse({ page: '3', limit: '100' })).to.deep.equal({ page: 3, limit: 100 });
    for (const bad of [{ page: '0' }, { limit: '101' }, { limit: ' 5' }, { page: ['1', '2'] }, { page: '+1' }]) {
      expect(listQuery.safeParse(bad).success, JSON.stringify(bad)).to.equal(false);
    }
  });
});

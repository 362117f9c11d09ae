import { expect } from 'chai';
import { guaranteeV1, guaranteeV2 } from '../../../src/guarantees/guarantee.schemas.js';
import { toV1, toV2 } from '../../../src/guarantees/guarantee.serializer.js';
import type { GuaranteeRecord } from '../../../src/guarantees/guarantee.types.js';

const base: GuaranteeRecord = {
  id: '0190a000-0000-7000-8000-000000000001',
  orgId: '0190a000-0000-7000-8000-0000000000aa',
  transactionId: null,
  details: {
    policyNumber: null,
    actType: null,
    checkCode: null,
    emittedAt: null,
    effectiveAt: null,
    expiresAt: null,
    isFixedExpiry: null,
    cig: null,
    batchCode: null,
    beneficiaryFiscalCode: null,
  },
  economics: { garantedAmount: null, contractAmount: null, isAutomaticRenewal: null },
  noteShared: '',
  signEmissionAt: null,
  txHash: null,
  notarizationStatus: 'PENDING',
  notarizationReason: null,
  createdAt: new Date('2025-05-01T12:00:00.5Z'),
  docs: [],
};

describe('guarantee serializers', () => {
  it('leaves out non-nullable fields without a value and sends nullable ones as null', () => {
    const g = { ...base, docs: [{ type: null, key: 'k.pdf', originalFileName: null, checksum: null, notarizedAt: null }] };
    const v2 = toV2(g);
    expect(v2.details).to.not.have.property('transactionId');
    expect(v2.details).to.not.have.property('policyNumber');
    expect(v2.details.actType).to.equal(null);
    expect(v2.docs).to.deep.equal([{ key: 'k.pdf', checksum: null }]);
    expect(v2.txHash).to.equal(null);
    expect(guaranteeV2.safeParse(v2).success).to.equal(true);
  });

  it('keeps v2-only fields out of v1', () => {
    const g: GuaranteeRecord = {
      ...base,
      transactionId: 'T',
      details: { ...base.details, policyNumber: 'P' },
      docs: [{ type: 'OTHER', key: 'k.pdf', originalFileName: 'a.pdf', checksum: 'c', notarizedAt: new Date('2025-05-02T00:00:00Z') }],
    };
    const v1 = toV1(g);
    const v2 = toV2(g);
    expect(v1.details).to.not.have.property('transactionId');
    expect(v1.docs[0]).to.deep.equal({ type: 'OTHER', key: 'k.pdf', checksum: 'c' });
    expect(v2.details.transactionId).to.equal('T');
    expect(v2.docs[0]).to.deep.equal({ type: 'OTHER', key: 'k.pdf', checksum: 'c', originalFileName: 'a.pdf', notarizedAt: '2025-05-02T00:00:00.000Z' });
    expect(guaranteeV1.safeParse(v1).success).to.equal(true);
    expect(guaranteeV2.safeParse(v2).success).to.equal(true);
  });

  it('writes dates as UTC RFC 3339 with milliseconds and amounts as numbers', () => {
    const v1 = toV1({
      ...base,
      economics: { garantedAmount: 10.5, contractAmount: 0, isAutomaticRenewal: true },
      signEmissionAt: new Date('2025-01-01T00:00:00+02:00'),
    });
    expect(v1.createdAt).to.equal('2025-05-01T12:00:00.500Z');
    expect(v1.sign.emissionAt).to.equal('2024-12-31T22:00:00.000Z');
    expect(v1.economics).to.deep.equal({ garantedAmount: 10.5, contractAmount: 0, isAutomaticRenewal: true });
  });

  it('shows why a record will never be notarized in v2 only, and leaves the field out otherwise', () => {
    const blocked = { ...base, notarizationReason: 'Doc k.pdf is Infected: the record will not be notarized.' };
    expect(toV2(blocked).notarizationReason).to.equal(blocked.notarizationReason);
    expect(toV1(blocked)).to.not.have.property('notarizationReason');
    expect(toV2(base)).to.not.have.property('notarizationReason');
    expect(guaranteeV2.safeParse(toV2(blocked)).success).to.equal(true);
  });
});

// The lifecycle's rules and the state they fold to (src/guarantees/amendments.ts): pure.
import { expect } from 'chai';
import {
  CLAIM_TERM_MS,
  lapsesOf,
  needsConsent,
  refusalOf,
  stateAfter,
  stateRecordedBy,
  type Amendment,
  type AmendmentType,
  type Issued,
} from '../../../src/guarantees/amendments.js';
import { foldFrom, foldStart, refusalAfter, stateOfFold } from '../../../src/guarantees/amendments.js';

const issued: Issued = { garantedAmount: 1000, expiresAt: new Date('2030-01-01T00:00:00Z'), isAutomaticRenewal: false };
const now = new Date('2026-06-01T00:00:00Z');

let seq = 0;
function amendment(type: AmendmentType, fields: Partial<Amendment> = {}): Amendment {
  seq++;
  return {
    id: `a-${seq}`,
    guaranteeId: 'g',
    seq,
    type,
    actor: 'issuer',
    actorOrgId: null,
    effectiveAt: new Date('2026-05-01T00:00:00Z'),
    expiresAt: null,
    garantedAmount: null,
    claimedAmount: null,
    paidAmount: null,
    reason: null,
    docs: [],
    createdAt: now,
    notarizationStatus: 'PENDING',
    txHash: null,
    ...fields,
  };
}

describe('lifecycle: the state folded from amendments', () => {
  beforeEach(() => {
    seq = 0;
  });

  it('starts from the registration: ACTIVE, its amount and expiry, no claim, lastSeq 0', () => {
    expect(stateAfter(issued, [], now)).to.deep.equal({
      status: 'ACTIVE',
      garantedAmount: 1000,
      expiresAt: issued.expiresAt,
      openClaim: null,
      claimDueAt: null,
      lastSeq: 0,
      beneficiary: null,
      pendingConsent: null,
      scheduled: [],
    });
  });

  it('follows extensions, amount changes, partial releases, claims and their settlement', () => {
    const chain = [
      amendment('EXTENSION', { expiresAt: new Date('2031-01-01T00:00:00Z') }),
      amendment('AMOUNT_CHANGE', { garantedAmount: 1200.5 }),
      amendment('PARTIAL_RELEASE', { garantedAmount: 800.25 }),
    ];
    expect(stateAfter(issued, chain, now)).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 800.25, lastSeq: 3 });
    expect(stateAfter(issued, chain, now).expiresAt?.toISOString()).to.equal('2031-01-01T00:00:00.000Z');
    const claim = amendment('CLAIM', { claimedAmount: 300.1, effectiveAt: new Date('2026-05-10T12:00:00Z') });
    const claimed = stateAfter(issued, [...chain, claim], now);
    expect(claimed.status).to.equal('CLAIMED');
    expect(claimed.openClaim).to.deep.equal({ seq: 4, claimedAmount: 300.1, effectiveAt: claim.effectiveAt });
    expect(claimed.claimDueAt?.getTime()).to.equal(claim.effectiveAt.getTime() + CLAIM_TERM_MS);
    // Paid: the amount lowered exactly, to the cent (in floats 1000.1 - 300.2 is 699.9000000000001).
    const paid = stateAfter(
      { ...issued, garantedAmount: 1000.1 },
      [amendment('CLAIM', { claimedAmount: 300.2 }), amendment('CLAIM_SETTLED', { paidAmount: 300.2 })],
      now,
    );
    expect(paid).to.include({ status: 'ACTIVE', garantedAmount: 699.9, openClaim: null, claimDueAt: null });
  });

  it('closes an open claim when the guarantee is released or cancelled: nothing can settle it nor fall due', () => {
    for (const end of ['RELEASE', 'CANCELLATION'] as const) {
      const s = stateAfter(issued, [amendment('CLAIM', { claimedAmount: 10 }), amendment(end)], now);
      expect(s).to.include({ status: end === 'RELEASE' ? 'RELEASED' : 'CANCELLED', openClaim: null, claimDueAt: null });
    }
  });

  it('never lowers the amount below 0 when a settlement pays more', () => {
    const s = stateAfter(issued, [amendment('CLAIM', { claimedAmount: 1000 }), amendment('CLAIM_SETTLED', { paidAmount: 5000 })], now);
    expect(s.garantedAmount).to.equal(0);
  });

  it('orders the status: CANCELLED, RELEASED, CLAIMED, EXPIRED, PARTIALLY_RELEASED, ACTIVE', () => {
    const past: Issued = { ...issued, expiresAt: new Date('2026-01-01T00:00:00Z') };
    expect(stateAfter(past, [], now).status).to.equal('EXPIRED');
    expect(stateAfter({ ...past, isAutomaticRenewal: true }, [], now).status).to.equal('ACTIVE');
    expect(stateAfter(past, [amendment('PARTIAL_RELEASE', { garantedAmount: 10 })], now).status).to.equal('EXPIRED');
    expect(stateAfter(past, [amendment('CLAIM', { claimedAmount: 10 })], now).status).to.equal('CLAIMED');
    expect(stateAfter(past, [amendment('RELEASE')], now).status).to.equal('RELEASED');
    expect(stateAfter(issued, [amendment('CLAIM', { claimedAmount: 10 }), amendment('CANCELLATION')], now).status).to.equal('CANCELLED');
    expect(stateAfter(issued, [amendment('CLAIM', { claimedAmount: 10 }), amendment('CLAIM_REJECTED')], now)).to.include({
      status: 'ACTIVE',
      garantedAmount: 1000,
    });
    // Expiry is at expiresAt itself.
    expect(stateAfter(issued, [], issued.expiresAt as Date).status).to.equal('EXPIRED');
  });
});

describe('lifecycle: what may follow what (each a 409)', () => {
  const ok = (before: Amendment[], next: Amendment) => expect(refusalOf(issued, before, next)).to.equal(undefined);
  const refused = (before: Amendment[], next: Amendment, words: RegExp) => expect(refusalOf(issued, before, next)).to.match(words);

  beforeEach(() => {
    seq = 0;
  });

  it('nothing after a RELEASE or a CANCELLATION', () => {
    for (const end of ['RELEASE', 'CANCELLATION'] as const) {
      refused([amendment(end)], amendment('EXTENSION', { expiresAt: new Date('2040-01-01T00:00:00Z') }), /nothing may follow/);
      refused([amendment(end)], amendment(end), /nothing may follow/);
    }
  });

  it('an EXTENSION strictly later than the current expiry', () => {
    refused([], amendment('EXTENSION', { expiresAt: issued.expiresAt }), /later than the current expiry/);
    ok([], amendment('EXTENSION', { expiresAt: new Date(issued.expiresAt!.getTime() + 1) }));
    // A guarantee registered without expiry: any is later.
    expect(refusalOf({ ...issued, expiresAt: null }, [], amendment('EXTENSION', { expiresAt: new Date('2020-01-01T00:00:00Z') }))).to.equal(undefined);
  });

  it('a PARTIAL_RELEASE strictly lower than the current amount (to the cent), and only with an amount', () => {
    refused([], amendment('PARTIAL_RELEASE', { garantedAmount: 1000 }), /lower than the current amount/);
    refused([amendment('AMOUNT_CHANGE', { garantedAmount: 10.01 })], amendment('PARTIAL_RELEASE', { garantedAmount: 10.01 }), /lower/);
    ok([amendment('AMOUNT_CHANGE', { garantedAmount: 10.01 })], amendment('PARTIAL_RELEASE', { garantedAmount: 10 }));
    ok([], amendment('PARTIAL_RELEASE', { garantedAmount: 0 }));
    expect(refusalOf({ ...issued, garantedAmount: null }, [], amendment('PARTIAL_RELEASE', { garantedAmount: 1 }))).to.match(/no amount/);
  });

  it('one open CLAIM at a time, at most the current amount; settled or rejected only with one open', () => {
    refused([], amendment('CLAIM', { claimedAmount: 1000.01 }), /at most the current amount/);
    ok([], amendment('CLAIM', { claimedAmount: 1000 }));
    refused([amendment('CLAIM', { claimedAmount: 1 })], amendment('CLAIM', { claimedAmount: 1 }), /claim is open already \(amendment \d+\)/);
    refused([], amendment('CLAIM_SETTLED', { paidAmount: 1 }), /needs an open claim/);
    refused([], amendment('CLAIM_REJECTED'), /needs an open claim/);
    ok([amendment('CLAIM', { claimedAmount: 1 })], amendment('CLAIM_REJECTED'));
    refused([amendment('CLAIM', { claimedAmount: 1 }), amendment('CLAIM_REJECTED')], amendment('CLAIM_SETTLED', { paidAmount: 1 }), /needs an open claim/);
    // After a settlement, a new claim is measured against the lowered amount.
    refused(
      [amendment('CLAIM', { claimedAmount: 600 }), amendment('CLAIM_SETTLED', { paidAmount: 600 })],
      amendment('CLAIM', { claimedAmount: 400.01 }),
      /at most/,
    );
  });
});

describe('lifecycle: the contracting authority as a party (its acts, its consent)', () => {
  const A = 'authority-1';
  const byAuthority = { actor: 'authority' as const, actorOrgId: A };
  const linked = (): Amendment => amendment('BENEFICIARY_LINKED', { ...byAuthority, seq: 1 });
  beforeEach(() => {
    seq = 0;
  });

  it("a demand is the linked authority's only, one open at a time, at most the amount; the issuer's CLAIM is refused once one took charge", () => {
    expect(refusalOf(issued, [], amendment('DEMAND', { claimedAmount: 10 }), byAuthority)).to.match(/Only the contracting authority that took charge/);
    const chain = [linked()];
    expect(refusalOf(issued, chain, amendment('DEMAND', { claimedAmount: 10 }), { actor: 'authority', actorOrgId: 'another' })).to.match(
      /Only the contracting/,
    );
    expect(refusalOf(issued, chain, amendment('DEMAND', { claimedAmount: 1000.01 }), byAuthority)).to.match(/at most the current amount, 1000/);
    expect(refusalOf(issued, chain, amendment('CLAIM', { claimedAmount: 10 }))).to.match(/a demand is its act/);
    const demanded = [...chain, amendment('DEMAND', { claimedAmount: 400, ...byAuthority, seq: 2 })];
    expect(stateAfter(issued, demanded, now)).to.include({ status: 'CLAIMED', beneficiary: A });
    expect(refusalOf(issued, demanded, amendment('DEMAND', { claimedAmount: 1 }), byAuthority)).to.match(/A demand is open already \(amendment 2\)/);
    const withdrawn = [...demanded, amendment('DEMAND_WITHDRAWN', { ...byAuthority, seq: 3 })];
    expect(stateAfter(issued, withdrawn, now)).to.include({ status: 'ACTIVE', openClaim: null });
    expect(refusalOf(issued, withdrawn, amendment('DEMAND_WITHDRAWN'), byAuthority)).to.equal('No demand is open to withdraw.');
  });

  it("an issuer's amendment that would reduce the cover waits (one at a time): ACCEPT applies it as checked then, REFUSE leaves the state", () => {
    const chain = [linked()];
    const fold = foldFrom(
      foldStart(issued),
      chain.map((a) => ({ ...a })),
    );
    expect(needsConsent(fold, { type: 'PARTIAL_RELEASE', garantedAmount: 500 }, { actor: 'issuer' })).to.equal(true);
    expect(needsConsent(fold, { type: 'AMOUNT_CHANGE', garantedAmount: 900 }, { actor: 'issuer' })).to.equal(true);
    expect(needsConsent(fold, { type: 'AMOUNT_CHANGE', garantedAmount: 1100 }, { actor: 'issuer' })).to.equal(false);
    expect(needsConsent(fold, { type: 'EXTENSION', garantedAmount: null }, { actor: 'issuer' })).to.equal(false);
    expect(needsConsent(fold, { type: 'RELEASE', garantedAmount: null }, { actor: 'authority' })).to.equal(false);
    expect(needsConsent(foldStart(issued), { type: 'RELEASE', garantedAmount: null }, { actor: 'issuer' })).to.equal(false);

    const waiting = [...chain, amendment('PARTIAL_RELEASE', { garantedAmount: 500, consent: 'PENDING', seq: 2 })];
    expect(stateAfter(issued, waiting, now)).to.include({ status: 'ACTIVE', garantedAmount: 1000, lastSeq: 2 });
    expect(stateAfter(issued, waiting, now).pendingConsent).to.deep.equal({ seq: 2, type: 'PARTIAL_RELEASE' });
    expect(refusalOf(issued, waiting, amendment('CANCELLATION'), { actor: 'issuer', actorOrgId: null })).to.match(/Amendment 2 waits/);
    expect(refusalOf(issued, waiting, amendment('AMENDMENT_RESPONSE', { amendmentSeq: 1, decision: 'ACCEPT' }), byAuthority)).to.equal(
      'Amendment 1 does not wait for an answer (amendment 2 does).',
    );
    const accepted = [...waiting, amendment('AMENDMENT_RESPONSE', { amendmentSeq: 2, decision: 'ACCEPT', ...byAuthority, seq: 3 })];
    expect(stateAfter(issued, accepted, now)).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 500, pendingConsent: null, lastSeq: 3 });
    const refused = [...waiting, amendment('AMENDMENT_RESPONSE', { amendmentSeq: 2, decision: 'REFUSE', ...byAuthority, seq: 3 })];
    expect(stateAfter(issued, refused, now)).to.include({ status: 'ACTIVE', garantedAmount: 1000, pendingConsent: null });
    // Checked again on ACCEPT: the authority released more itself meanwhile.
    const overtaken = [...waiting, amendment('PARTIAL_RELEASE', { garantedAmount: 300, ...byAuthority, seq: 3 })];
    expect(refusalOf(issued, overtaken, amendment('AMENDMENT_RESPONSE', { amendmentSeq: 2, decision: 'ACCEPT' }), byAuthority)).to.equal(
      'Amendment 2 can no longer apply: garantedAmount must be lower than the current amount, 300.',
    );
    // A release by the authority ends it all, the waiting amendment with it.
    const released = [...waiting, amendment('RELEASE', { ...byAuthority, seq: 3 })];
    expect(stateAfter(issued, released, now)).to.include({ status: 'RELEASED', pendingConsent: null });
  });
});

describe('lifecycle: each amendment applies from its effectiveAt', () => {
  const t = (iso: string) => new Date(iso);
  const A = 'authority-1';
  const byAuthority = { actor: 'authority' as const, actorOrgId: A };
  beforeEach(() => {
    seq = 0;
  });

  it('a RELEASE dated next month is scheduled, not RELEASED, until then; the rules already count it', () => {
    const chain = [amendment('RELEASE', { effectiveAt: t('2026-07-01T00:00:00Z') })];
    const today = stateAfter(issued, chain, now);
    expect(today).to.include({ status: 'ACTIVE', lastSeq: 1 });
    expect(today.scheduled).to.deep.equal([{ seq: 1, type: 'RELEASE', effectiveAt: t('2026-07-01T00:00:00Z') }]);
    expect(stateAfter(issued, chain, t('2026-06-30T23:59:59.999Z')).status).to.equal('ACTIVE');
    const then = stateAfter(issued, chain, t('2026-07-01T00:00:00Z'));
    expect(then).to.include({ status: 'RELEASED' });
    expect(then.scheduled).to.deep.equal([]);
    // What may follow is judged on every amendment recorded, whenever it applies.
    expect(refusalOf(issued, chain, amendment('EXTENSION', { expiresAt: t('2031-01-01T00:00:00Z') }))).to.match(/released/);
  });

  it('applies the ones dated by now and waits for the later, in seq order; backdated ones apply at once', () => {
    const chain = [
      amendment('PARTIAL_RELEASE', { garantedAmount: 600, effectiveAt: t('2026-08-01T00:00:00Z') }),
      amendment('EXTENSION', { expiresAt: t('2031-01-01T00:00:00Z'), effectiveAt: t('2026-01-01T00:00:00Z') }),
    ];
    const today = stateAfter(issued, chain, now);
    expect(today).to.include({ status: 'ACTIVE', garantedAmount: 1000, lastSeq: 2 });
    expect(today.expiresAt?.toISOString()).to.equal('2031-01-01T00:00:00.000Z');
    expect(today.scheduled.map((a) => a.seq)).to.deep.equal([1]);
    expect(stateAfter(issued, chain, t('2026-08-01T00:00:00Z'))).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 600 });
    // Once every amendment applies, the state is the stored fold's (what the rules checked).
    expect(stateAfter(issued, chain, t('2026-08-01T00:00:00Z'))).to.deep.equal(
      stateOfFold(foldFrom(foldStart(issued), chain), issued, t('2026-08-01T00:00:00Z')),
    );
  });

  it('a future-dated claim opens, and its 15 days run, from its effectiveAt', () => {
    const chain = [amendment('CLAIM', { claimedAmount: 100, effectiveAt: t('2026-06-10T00:00:00Z') })];
    expect(stateAfter(issued, chain, now)).to.include({ status: 'ACTIVE', openClaim: null, claimDueAt: null });
    const open = stateAfter(issued, chain, t('2026-06-10T00:00:00Z'));
    expect(open.status).to.equal('CLAIMED');
    expect(open.claimDueAt?.getTime()).to.equal(t('2026-06-10T00:00:00Z').getTime() + CLAIM_TERM_MS);
  });

  it('an amendment waiting for consent waits from when it is recorded; accepted, it applies from its own effectiveAt', () => {
    const chain = [
      amendment('BENEFICIARY_LINKED', { ...byAuthority, effectiveAt: t('2026-05-01T00:00:00Z') }),
      amendment('RELEASE', { consent: 'PENDING', effectiveAt: t('2026-07-01T00:00:00Z') }),
    ];
    expect(stateAfter(issued, chain, now).pendingConsent).to.deep.equal({ seq: 2, type: 'RELEASE' });
    expect(stateAfter(issued, chain, now).scheduled).to.deep.equal([]);
    const accepted = [...chain, amendment('AMENDMENT_RESPONSE', { ...byAuthority, amendmentSeq: 2, decision: 'ACCEPT', effectiveAt: now })];
    const today = stateAfter(issued, accepted, now);
    expect(today).to.include({ status: 'ACTIVE', pendingConsent: null, lastSeq: 3 });
    expect(today.scheduled).to.deep.equal([{ seq: 2, type: 'RELEASE', effectiveAt: t('2026-07-01T00:00:00Z') }]);
    expect(stateAfter(issued, accepted, t('2026-07-01T00:00:00Z'))).to.include({ status: 'RELEASED' });
    // Refused: nothing scheduled, nothing waits.
    const refused = [...chain, amendment('AMENDMENT_RESPONSE', { ...byAuthority, amendmentSeq: 2, decision: 'REFUSE', effectiveAt: now })];
    expect(stateAfter(issued, refused, t('2026-08-01T00:00:00Z'))).to.include({ status: 'ACTIVE', pendingConsent: null });
    expect(stateAfter(issued, refused, now).scheduled).to.deep.equal([]);
  });

  it('a lapse follows the state as it applied: an extension dated after the expiry leaves a lapse until it applies', () => {
    const expiring: Issued = { ...issued, expiresAt: t('2026-03-01T00:00:00Z') };
    const chain = [
      amendment('EXTENSION', { createdAt: t('2026-02-01T00:00:00Z'), effectiveAt: t('2026-03-10T00:00:00Z'), expiresAt: t('2026-06-01T00:00:00Z') }),
    ];
    const { expired } = lapsesOf(expiring, t('2026-01-01T00:00:00Z'), chain, t('2026-12-31T00:00:00Z'));
    expect(expired.map((s) => [s.at.toISOString(), s.state.status])).to.deep.equal([
      ['2026-03-01T00:00:00.000Z', 'EXPIRED'],
      ['2026-06-01T00:00:00.000Z', 'EXPIRED'],
    ]);
    expect(stateAfter(expiring, chain, t('2026-03-10T00:00:00Z')).status).to.equal('ACTIVE');
  });
});

describe('lifecycle: folding on from a stored fold', () => {
  // A chain of accepted amendments of every type, pseudo-random but the same each run.
  function chainOf(length: number, seed: number): Amendment[] {
    let x = seed;
    const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const chain: Amendment[] = [];
    const types: AmendmentType[] = ['EXTENSION', 'AMOUNT_CHANGE', 'PARTIAL_RELEASE', 'CLAIM', 'CLAIM_SETTLED', 'CLAIM_REJECTED'];
    while (chain.length < length) {
      const s = stateAfter(issued, chain, now);
      const type = chain.length === length - 1 ? (next() < 0.5 ? 'RELEASE' : 'CANCELLATION') : (types[Math.floor(next() * types.length)] as AmendmentType);
      const amount = Math.round(next() * (s.garantedAmount ?? 0) * 100) / 100;
      const a: Amendment = {
        ...candidate(type, chain.length + 1),
        expiresAt: type === 'EXTENSION' ? new Date((s.expiresAt?.getTime() ?? 0) + 86_400_000 * (1 + Math.floor(next() * 30))) : null,
        garantedAmount: type === 'AMOUNT_CHANGE' ? 1 + Math.round(next() * 500_000) / 100 : type === 'PARTIAL_RELEASE' ? amount : null,
        claimedAmount: type === 'CLAIM' ? Math.max(0.01, amount) : null,
        paidAmount: type === 'CLAIM_SETTLED' ? amount : null,
        effectiveAt: new Date(Date.UTC(2026, 0, 1) + chain.length * 3_600_000),
      };
      if (refusalOf(issued, chain, a) === undefined) chain.push(a);
    }
    return chain;
  }
  function candidate(type: AmendmentType, seq: number, fields: Partial<Amendment> = {}): Amendment {
    return {
      id: `c-${seq}`,
      guaranteeId: 'g',
      seq,
      type,
      actor: 'issuer',
      actorOrgId: null,
      effectiveAt: new Date('2026-05-01T00:00:00Z'),
      expiresAt: null,
      garantedAmount: null,
      claimedAmount: null,
      paidAmount: null,
      reason: null,
      docs: [],
      createdAt: now,
      notarizationStatus: 'PENDING',
      txHash: null,
      ...fields,
    };
  }
  // What might be asked after any prefix: one of each type, with amounts and dates that some prefixes accept and others refuse.
  const asks = (seq: number): Amendment[] => [
    candidate('EXTENSION', seq, { expiresAt: new Date('2031-01-01T00:00:00Z') }),
    candidate('AMOUNT_CHANGE', seq, { garantedAmount: 10 }),
    candidate('PARTIAL_RELEASE', seq, { garantedAmount: 500 }),
    candidate('RELEASE', seq),
    candidate('CLAIM', seq, { claimedAmount: 700 }),
    candidate('CLAIM_SETTLED', seq, { paidAmount: 1 }),
    candidate('CLAIM_REJECTED', seq),
    candidate('CANCELLATION', seq),
  ];

  it('starts from the registration: the state of no amendment, lastSeq 0', () => {
    expect(foldStart(issued).lastSeq).to.equal(0);
    expect(stateOfFold(foldStart(issued), issued, now)).to.deep.equal(stateAfter(issued, [], now));
  });

  it('gives, from a fold stored after any prefix of a chain, the state and the 409s of folding the whole chain again', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const chain = chainOf(40, seed);
      expect(new Set(chain.map((a) => a.type)).size, `seed ${seed}`).to.be.at.least(5);
      for (let k = 0; k <= chain.length; k++) {
        const stored = foldFrom(foldStart(issued), chain.slice(0, k));
        expect(stored.lastSeq).to.equal(k);
        // Folded on one amendment at a time, as each is recorded, or all at once (a fold healed after a rolling release).
        const onByOne = chain.slice(k).reduce((f, a) => foldFrom(f, [a]), stored);
        for (const f of [foldFrom(stored, chain.slice(k)), onByOne]) expect(stateOfFold(f, issued, now)).to.deep.equal(stateAfter(issued, chain, now));
        for (const ask of asks(k + 1)) expect(refusalAfter(stored, ask), `${ask.type} after ${k}`).to.equal(refusalOf(issued, chain.slice(0, k), ask));
      }
    }
  });

  it('refuses to fold an amendment that does not follow the fold: a gap, one folded already, or one out of order', () => {
    const chain = chainOf(4, 7);
    const at2 = foldFrom(foldStart(issued), chain.slice(0, 2));
    expect(() => foldFrom(at2, [chain[3] as Amendment])).to.throw(/amendment 4 does not follow a fold at 2/);
    expect(() => foldFrom(at2, [chain[1] as Amendment])).to.throw(/amendment 2 does not follow a fold at 2/);
    expect(() => foldFrom(at2, [chain[3] as Amendment, chain[2] as Amendment])).to.throw(/does not follow/);
    expect(foldFrom(at2, [chain[2] as Amendment, chain[3] as Amendment]).lastSeq).to.equal(4);
  });
});

describe('lifecycle: what the state showed, as recorded at each instant', () => {
  const t = (iso: string) => new Date(iso);
  const iso = (d: Date | null | undefined) => d?.toISOString();
  // Registered on 1 January 2026, expiring on 1 March 2026.
  const registeredAt = t('2026-01-01T00:00:00Z');
  const expiring: Issued = { ...issued, expiresAt: t('2026-03-01T00:00:00Z') };
  // Effective when recorded unless it says otherwise.
  const recorded = (type: AmendmentType, createdAt: string, fields: Partial<Amendment> = {}) =>
    amendment(type, { createdAt: t(createdAt), effectiveAt: t(createdAt), ...fields });
  const lapses = (list: Amendment[], until: string, start: Issued = expiring, at = registeredAt) => {
    const { expired, claimOverdue } = lapsesOf(start, at, list, t(until));
    return {
      expired: expired.map((s) => [iso(s.at), iso(s.state.expiresAt), s.state.status]),
      claimOverdue: claimOverdue.map((s) => [iso(s.at), s.state.openClaim?.seq, iso(s.state.claimDueAt)]),
    };
  };

  beforeEach(() => {
    seq = 0;
  });

  it('folds at an instant only the amendments recorded by then, a prefix in seq order even when the clock went back', () => {
    const extension = recorded('EXTENSION', '2026-02-01T00:00:00Z', { expiresAt: t('2026-06-01T00:00:00Z') });
    // Recorded after the extension, by a clock set back a day.
    const change = recorded('AMOUNT_CHANGE', '2026-01-31T00:00:00Z', { garantedAmount: 5 });
    expect(stateRecordedBy(expiring, [extension, change], t('2026-01-31T12:00:00Z'))).to.include({ status: 'ACTIVE', garantedAmount: 1000, lastSeq: 0 });
    expect(stateRecordedBy(expiring, [extension, change], t('2026-02-01T00:00:00Z'))).to.include({ garantedAmount: 5, lastSeq: 2 });
    // After the registered expiry, before the extension was recorded: expired, as it was shown then.
    const before = stateRecordedBy(
      expiring,
      [recorded('EXTENSION', '2026-03-05T00:00:00Z', { expiresAt: t('2026-06-01T00:00:00Z') })],
      t('2026-03-02T00:00:00Z'),
    );
    expect(before.status).to.equal('EXPIRED');
    expect(iso(before.expiresAt)).to.equal('2026-03-01T00:00:00.000Z');
  });

  it('a lapse at the expiry, kept when an extension is recorded after it; the extended expiry lapses again', () => {
    expect(lapses([], '2026-02-28T23:59:59.999Z')).to.deep.equal({ expired: [], claimOverdue: [] });
    const extended = [recorded('EXTENSION', '2026-03-01T00:00:01Z', { expiresAt: t('2026-06-01T00:00:00Z'), effectiveAt: t('2026-02-20T00:00:00Z') })];
    expect(lapses(extended, '2026-03-02T00:00:00Z').expired).to.deep.equal([['2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', 'EXPIRED']]);
    expect(lapses(extended, '2026-06-01T00:00:00Z').expired).to.deep.equal([
      ['2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', 'EXPIRED'],
      ['2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'EXPIRED'],
    ]);
    // Recorded before the expiry: no lapse until the new one.
    const inTime = [recorded('EXTENSION', '2026-02-28T00:00:00Z', { expiresAt: t('2026-06-01T00:00:00Z') })];
    expect(lapses(inTime, '2026-05-31T00:00:00Z').expired).to.deep.equal([]);
  });

  it('a registration already expired lapses at its registration; with automatic renewal, or ended before, never', () => {
    expect(lapses([], '2026-12-31T00:00:00Z', { ...expiring, expiresAt: t('2025-06-01T00:00:00Z') }).expired).to.deep.equal([
      ['2026-01-01T00:00:00.000Z', '2025-06-01T00:00:00.000Z', 'EXPIRED'],
    ]);
    expect(lapses([], '2026-12-31T00:00:00Z', { ...expiring, isAutomaticRenewal: true }).expired).to.deep.equal([]);
    expect(lapses([recorded('RELEASE', '2026-02-01T00:00:00Z')], '2026-12-31T00:00:00Z').expired).to.deep.equal([]);
  });

  it('an expiry passed while a claim is open lapses when the claim is closed; a claim against a lapsed guarantee leaves it lapsed once', () => {
    const open = recorded('CLAIM', '2026-02-20T00:00:00Z', { claimedAmount: 10, effectiveAt: t('2026-02-20T00:00:00Z') });
    const closedLate = [open, recorded('CLAIM_REJECTED', '2026-04-01T00:00:00Z')];
    expect(lapses(closedLate, '2026-12-31T00:00:00Z').expired).to.deep.equal([['2026-04-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', 'EXPIRED']]);
    seq = 0;
    const afterLapse = [
      recorded('CLAIM', '2026-03-10T00:00:00Z', { claimedAmount: 10, effectiveAt: t('2026-02-25T00:00:00Z') }),
      recorded('CLAIM_REJECTED', '2026-03-20T00:00:00Z'),
      // An extension to a date passed already: lapsed still, no new lapse.
      recorded('EXTENSION', '2026-04-01T00:00:00Z', { expiresAt: t('2026-03-15T00:00:00Z') }),
    ];
    expect(lapses(afterLapse, '2026-12-31T00:00:00Z').expired).to.deep.equal([['2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z', 'EXPIRED']]);
  });

  it('a claim overdue from its due date while open, or from its recording when recorded late; kept when closed later; none closed in time', () => {
    const due = '2026-01-25T00:00:00.000Z';
    const overdue = (claimedAt: string, closed?: Amendment['type'], closedAt?: string) => {
      seq = 0;
      const list = [recorded('CLAIM', claimedAt, { claimedAmount: 10, effectiveAt: t('2026-01-10T00:00:00Z') })];
      if (closed && closedAt) list.push(recorded(closed, closedAt, { paidAmount: 10 }));
      return lapses(list, '2026-02-01T00:00:00Z').claimOverdue;
    };
    expect(
      lapses([recorded('CLAIM', '2026-01-10T00:00:00Z', { claimedAmount: 10, effectiveAt: t('2026-01-10T00:00:00Z') })], '2026-01-24T23:59:59.999Z')
        .claimOverdue,
    ).to.deep.equal([]);
    expect(overdue('2026-01-10T00:00:00Z')).to.deep.equal([[due, 1, due]]);
    expect(overdue('2026-01-10T00:00:00Z', 'CLAIM_SETTLED', '2026-01-26T00:00:00Z')).to.deep.equal([[due, 1, due]]);
    expect(overdue('2026-01-30T00:00:00Z')).to.deep.equal([['2026-01-30T00:00:00.000Z', 1, due]]);
    expect(overdue('2026-01-10T00:00:00Z', 'CLAIM_SETTLED', '2026-01-24T00:00:00Z')).to.deep.equal([]);
    expect(overdue('2026-01-10T00:00:00Z', 'RELEASE', '2026-01-24T00:00:00Z')).to.deep.equal([]);
  });
});

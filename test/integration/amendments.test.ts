// A guarantee's life through the API (docs/api.md "A guarantee's life"): amendments recorded with a dense
// seq, each rule's 409 changing nothing, 400s, other organizations' 404s, races, the state,
// and the guarantee.amended event in the outbox; the amendments a page at a time, and the fold
// kept with them (guarantee_folds: what recording one reads, however long the history, healed
// after a rolling release, backfilled by migration 0023). Against the real database.
import { expect } from 'chai';
import { v7 as uuidv7 } from 'uuid';
import { createAuditRepository } from '../../src/audit/audit.repository.js';
import { createFileRepository } from '../../src/files/file.repository.js';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { createAmendmentService } from '../../src/guarantees/amendment.service.js';
import type { Amendment, NewAmendment } from '../../src/guarantees/amendments.js';
import { backfillFolds, migration as guaranteeFolds } from '../../src/shared/db/migrations/0023-guarantee-folds.js';
import { foldColumnsOfAuthorities } from '../../src/shared/db/migrations/0027-authorities.js';
import { createSequelize, execute, select } from '../../src/shared/db/sequelize.js';
import { createIdempotencyStore } from '../../src/shared/idempotency.js';
import { harness, issueFile, newOrg, type TestOrg } from '../support/harness.js';

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

async function guarantee(org: TestOrg, economics: Record<string, unknown> = { garantedAmount: 1000 }, expiresAt = '2030-01-01T00:00:00Z'): Promise<string> {
  const { http } = await harness();
  const res = await http
    .post('/api/v2/guarantees')
    .set('X-API-Key', org.key)
    .send({ details: { policyNumber: 'P-LIFE', effectiveAt: '2025-01-01T00:00:00Z', expiresAt }, economics });
  expect(res.status).to.equal(200);
  return res.body.id as string;
}

async function amend(org: TestOrg, id: string, body: Record<string, unknown>, problem = false): Promise<Answer> {
  const { http } = await harness();
  const req = http.post(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key);
  if (problem) void req.set('Accept', 'application/problem+json');
  const res = await req.send({ effectiveAt: '2026-03-01T10:00:00+01:00', ...body });
  return { status: res.status, body: res.body as Record<string, unknown> };
}

async function stateOf(org: TestOrg, id: string): Promise<Record<string, unknown>> {
  const res = await (await harness()).http.get(`/api/v2/guarantees/${id}/state`).set('X-API-Key', org.key);
  expect(res.status).to.equal(200);
  return res.body as Record<string, unknown>;
}

describe('lifecycle: amendments through the API', function () {
  this.timeout(30_000);
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  it("records a guarantee's whole life, seq 1, 2, 3..., the state answering what it covers after each", async () => {
    const id = await guarantee(org);
    expect(await stateOf(org, id)).to.deep.equal({
      status: 'ACTIVE',
      garantedAmount: 1000,
      expiresAt: '2030-01-01T00:00:00.000Z',
      openClaim: null,
      claimDueAt: null,
      lastSeq: 0,
      beneficiary: null,
      pendingConsent: null,
      scheduled: [],
    });

    const posted: unknown[] = [];
    const ext = await amend(org, id, { type: 'EXTENSION', expiresAt: '2031-06-30T00:00:00Z', reason: 'appendice n. 1' });
    posted.push(ext.body);
    expect(ext.status).to.equal(200);
    expect(ext.body).to.deep.include({
      guaranteeId: id,
      seq: 1,
      type: 'EXTENSION',
      effectiveAt: '2026-03-01T09:00:00.000Z',
      expiresAt: '2031-06-30T00:00:00.000Z',
      reason: 'appendice n. 1',
      docs: [],
      notarizationStatus: 'PENDING',
      txHash: null,
    });
    expect(ext.body).to.not.have.any.keys('garantedAmount', 'claimedAmount', 'paidAmount');

    const partial = await amend(org, id, { type: 'PARTIAL_RELEASE', garantedAmount: 600.5 });
    posted.push(partial.body);
    expect(partial.body).to.include({ seq: 2, garantedAmount: 600.5 });
    expect(await stateOf(org, id)).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 600.5, expiresAt: '2031-06-30T00:00:00.000Z', lastSeq: 2 });

    // Claimed on 20 March at 10:00 in Rome (UTC+1); due 15 × 24 h later, across the change to summer time.
    const claim = await amend(org, id, { type: 'CLAIM', claimedAmount: 200, effectiveAt: '2026-03-20T10:00:00+01:00' });
    posted.push(claim.body);
    expect(claim.body).to.include({ seq: 3 });
    expect(await stateOf(org, id)).to.deep.include({
      status: 'CLAIMED',
      openClaim: { seq: 3, claimedAmount: 200, effectiveAt: '2026-03-20T09:00:00.000Z' },
      claimDueAt: '2026-04-04T09:00:00.000Z',
    });

    // A settlement is never dated before its claim (a 400 that records nothing).
    expect((await amend(org, id, { type: 'CLAIM_SETTLED', paidAmount: 200 })).status).to.equal(400);
    const settled = await amend(org, id, { type: 'CLAIM_SETTLED', paidAmount: 200, effectiveAt: '2026-03-21T00:00:00Z' });
    posted.push(settled.body);
    expect(settled.body).to.include({ seq: 4, paidAmount: 200 });
    expect(await stateOf(org, id)).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 400.5, openClaim: null, claimDueAt: null, lastSeq: 4 });

    const release = await amend(org, id, { type: 'RELEASE', expectedSeq: 4 });
    posted.push(release.body);
    expect(release.body).to.include({ seq: 5, type: 'RELEASE' });
    expect(await stateOf(org, id)).to.include({ status: 'RELEASED', lastSeq: 5 });

    const list = await (await harness()).http.get(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key);
    expect(list.status).to.equal(200);
    expect((list.body.amendments as Array<{ seq: number; type: string }>).map((a) => [a.seq, a.type])).to.deep.equal([
      [1, 'EXTENSION'],
      [2, 'PARTIAL_RELEASE'],
      [3, 'CLAIM'],
      [4, 'CLAIM_SETTLED'],
      [5, 'RELEASE'],
    ]);
    // Read back from the database, each as it was answered when recorded.
    expect(list.body.amendments).to.deep.equal(posted);
    // The registration itself never changes.
    const registered = await (await harness()).http.get(`/api/v2/guarantees/${id}`).set('X-API-Key', org.key);
    expect(registered.body).to.nested.include({ 'economics.garantedAmount': 1000, 'details.expiresAt': '2030-01-01T00:00:00.000Z' });
  });

  it('answers 409 for every rule broken, with a detail when asked, and records nothing', async () => {
    const id = await guarantee(org);
    const refused = async (body: Record<string, unknown>, words: RegExp) => {
      const before = (await stateOf(org, id)).lastSeq;
      const res = await amend(org, id, body, true);
      expect(res.status, JSON.stringify(body)).to.equal(409);
      expect(String(res.body.detail)).to.match(words);
      expect((await stateOf(org, id)).lastSeq).to.equal(before);
    };
    await refused({ type: 'EXTENSION', expiresAt: '2030-01-01T00:00:00Z' }, /later than the current expiry/);
    await refused({ type: 'PARTIAL_RELEASE', garantedAmount: 1000 }, /lower than the current amount/);
    await refused({ type: 'CLAIM', claimedAmount: 1000.01 }, /at most the current amount/);
    await refused({ type: 'CLAIM_SETTLED', paidAmount: 1 }, /needs an open claim/);
    await refused({ type: 'CLAIM_REJECTED' }, /needs an open claim/);
    expect((await amend(org, id, { type: 'CLAIM', claimedAmount: 10 })).status).to.equal(200);
    await refused({ type: 'CLAIM', claimedAmount: 10 }, /claim is open already \(amendment 1\)/);
    await refused({ type: 'AMOUNT_CHANGE', garantedAmount: 5, expectedSeq: 0 }, /expectedSeq is 0, but the last amendment is 1/);
    expect((await amend(org, id, { type: 'CANCELLATION', expectedSeq: 1 })).status).to.equal(200);
    await refused({ type: 'CLAIM_REJECTED' }, /nothing may follow a CANCELLATION/);
    await refused({ type: 'RELEASE' }, /nothing may follow/);
    // Without Accept: problem+json, the 409's body is empty, as everywhere.
    const plain = await amend(org, id, { type: 'RELEASE' });
    expect(plain.status).to.equal(409);
    expect(plain.body).to.deep.equal({});
  });

  it('answers 400 for a missing, malformed or foreign field, an unknown type, or a bad doc, and records nothing', async () => {
    const id = await guarantee(org);
    const bad = async (body: Record<string, unknown>, pointer: RegExp) => {
      const res = await amend(org, id, body, true);
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(JSON.stringify(res.body.errors ?? res.body.detail)).to.match(pointer);
    };
    await bad({ type: 'EXTENSION' }, /expiresAt/);
    await bad({ type: 'EXTENSION', expiresAt: '2031-02-30T00:00:00Z' }, /expiresAt/);
    await bad({ type: 'AMOUNT_CHANGE', garantedAmount: 0 }, /garantedAmount/);
    await bad({ type: 'CLAIM', claimedAmount: -1 }, /claimedAmount/);
    await bad({ type: 'PARTIAL_RELEASE', garantedAmount: 1.001 }, /garantedAmount/);
    await bad({ type: 'RELEASE', garantedAmount: 5 }, /garantedAmount/);
    await bad({ type: 'RENEWAL' }, /type/);
    await bad({ type: 'RELEASE', effectiveAt: '2026-03-01' }, /effectiveAt/);
    await bad({ type: 'RELEASE', expectedSeq: -1 }, /expectedSeq/);
    await bad({ type: 'CLAIM', claimedAmount: 1, effectiveAt: '9999-12-20T00:00:00Z' }, /effectiveAt/);
    await bad({ type: 'RELEASE', docs: [{ key: 'never-issued.pdf' }] }, /docs\/0\/key/);
    const infected = await issueFile(org.orgId, { status: 'Infected' });
    await bad({ type: 'RELEASE', docs: [{ key: infected }] }, /Infected/);
    const res = await (
      await harness()
    ).http
      .post(`/api/v2/guarantees/${id}/amendments`)
      .set('X-API-Key', org.key)
      .set('Content-Type', 'application/json')
      .send('[1]');
    expect(res.status).to.equal(400);
    expect((await stateOf(org, id)).lastSeq).to.equal(0);
  });

  it("keeps a doc's file name and checksum with the amendment", async () => {
    const id = await guarantee(org);
    const key = await issueFile(org.orgId, { status: 'Clean', fileName: 'appendice-1.pdf', checksum: 'a'.repeat(64) });
    // A second doc named while its scan runs: no checksum yet.
    const scanning = await issueFile(org.orgId, { status: 'In Progress', fileName: 'verbale.pdf' });
    const res = await amend(org, id, { type: 'EXTENSION', expiresAt: '2032-01-01T00:00:00Z', docs: [{ key, type: 'OTHER' }, { key: scanning }] });
    expect(res.status).to.equal(200);
    expect(res.body.docs).to.deep.equal([
      { type: 'OTHER', key, originalFileName: 'appendice-1.pdf', checksum: 'a'.repeat(64) },
      { type: null, key: scanning, originalFileName: 'verbale.pdf', checksum: null },
    ]);
    // Once scanned, the amendment's doc has its file's checksum.
    const { db, http } = await harness();
    await execute(db, "UPDATE files SET status = 'Clean', checksum = $2 WHERE object_key = $1", [scanning, 'b'.repeat(64)]);
    const list = await http.get(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key);
    expect((list.body.amendments as Array<{ docs: unknown[] }>)[0]?.docs[1]).to.deep.include({ key: scanning, checksum: 'b'.repeat(64) });
  });

  it("answers 404 for another organization's guarantee, or an id that is none, on every endpoint", async () => {
    const id = await guarantee(org);
    const other = await newOrg();
    const { http } = await harness();
    for (const target of [id, 'not-a-uuid', '01900000-0000-7000-8000-000000000000']) {
      expect((await amend(other, target, { type: 'RELEASE' })).status).to.equal(404);
      expect((await http.get(`/api/v2/guarantees/${target}/amendments`).set('X-API-Key', other.key)).status).to.equal(404);
      expect((await http.get(`/api/v2/guarantees/${target}/state`).set('X-API-Key', other.key)).status).to.equal(404);
    }
    expect((await stateOf(org, id)).lastSeq).to.equal(0);
  });

  it('gives racing amendments dense seqs, never a duplicate or a gap; of racing ones that expect the same seq, one wins', async () => {
    const id = await guarantee(org);
    const free = await Promise.all(Array.from({ length: 12 }, (_, i) => amend(org, id, { type: 'AMOUNT_CHANGE', garantedAmount: 100 + i })));
    expect(free.map((r) => r.status)).to.deep.equal(Array(12).fill(200));
    expect(free.map((r) => r.body.seq as number).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 12 }, (_, i) => i + 1));
    const expecting = await Promise.all(Array.from({ length: 8 }, () => amend(org, id, { type: 'AMOUNT_CHANGE', garantedAmount: 7, expectedSeq: 12 })));
    expect(expecting.filter((r) => r.status === 200)).to.have.length(1);
    expect(expecting.filter((r) => r.status === 409)).to.have.length(7);
    const { db } = await harness();
    const rows = await select<{ seq: number }>(db, 'SELECT seq FROM guarantee_amendments WHERE guarantee_id = $1 ORDER BY seq', [id]);
    expect(rows.map((r) => Number(r.seq))).to.deep.equal(Array.from({ length: 13 }, (_, i) => i + 1));
  });

  it('takes an Idempotency-Key as creates do: a retry gets the first answer and records nothing more', async () => {
    const id = await guarantee(org);
    const other = await guarantee(org);
    const { http } = await harness();
    const send = (target: string, key: string, body: Record<string, unknown>) =>
      http
        .post(`/api/v2/guarantees/${target}/amendments`)
        .set('X-API-Key', org.key)
        .set('Idempotency-Key', key)
        .send({ effectiveAt: '2026-03-01T00:00:00Z', ...body });
    const first = await send(id, 'amend-1', { type: 'AMOUNT_CHANGE', garantedAmount: 900 });
    expect(first.status).to.equal(200);
    // Retried (with the same date written another way): the same amendment, nothing more recorded.
    const again = await send(id, 'amend-1', { type: 'AMOUNT_CHANGE', garantedAmount: 900, effectiveAt: '2026-03-01T01:00:00+01:00' });
    expect(again.status).to.equal(200);
    expect(again.body).to.deep.equal(first.body);
    expect((await stateOf(org, id)).lastSeq).to.equal(1);
    // The same key with another request, or on another guarantee: 409.
    expect((await send(id, 'amend-1', { type: 'AMOUNT_CHANGE', garantedAmount: 901 })).status).to.equal(409);
    expect((await send(other, 'amend-1', { type: 'AMOUNT_CHANGE', garantedAmount: 900 })).status).to.equal(409);
    // Racing retries of one request: one amendment.
    const racing = await Promise.all(Array.from({ length: 6 }, () => send(id, 'amend-2', { type: 'EXTENSION', expiresAt: '2033-01-01T00:00:00Z' })));
    expect(racing.filter((r) => r.status === 200).length).to.be.at.least(1);
    expect(racing.every((r) => r.status === 200 || r.status === 409)).to.equal(true);
    expect(new Set(racing.filter((r) => r.status === 200).map((r) => (r.body as { id: string }).id)).size).to.equal(1);
    expect((await stateOf(org, id)).lastSeq).to.equal(2);
    // A refused request keeps no answer: once its rule holds, the same key records it.
    expect((await send(id, 'amend-3', { type: 'CLAIM_REJECTED' })).status).to.equal(409);
    expect((await amend(org, id, { type: 'CLAIM', claimedAmount: 5, effectiveAt: '2026-03-01T00:00:00Z' })).status).to.equal(200);
    expect((await send(id, 'amend-3', { type: 'CLAIM_REJECTED' })).status).to.equal(200);
    expect((await stateOf(org, id)).lastSeq).to.equal(4);
    // Nor does a 400 or a 404: the key records the next request made with it.
    expect((await send(id, 'amend-4', { type: 'RELEASE', docs: [{ key: 'never-issued.pdf' }] })).status).to.equal(400);
    const stranger = await newOrg();
    expect((await send(await guarantee(stranger), 'amend-4', { type: 'RELEASE' })).status).to.equal(404);
    expect((await send(id, 'amend-4', { type: 'RELEASE' })).status).to.equal(200);
    // A malformed or repeated key is a 400, and records nothing.
    expect((await send(other, ' bad key', { type: 'RELEASE' })).status).to.equal(400);
    const repeated = await http
      .post(`/api/v2/guarantees/${other}/amendments`)
      .set('X-API-Key', org.key)
      .set('Idempotency-Key', ['k1', 'k2'] as unknown as string) /* sent as two headers */
      .send({ type: 'RELEASE', effectiveAt: '2026-03-01T00:00:00Z' });
    expect(repeated.status).to.equal(400);
    expect((await stateOf(org, other)).lastSeq).to.equal(0);
  });

  it('writes guarantee.amended with the amendment and the state after it, in the same transaction', async () => {
    // An endpoint registered, so that the event is kept for delivery.
    const { http, db } = await harness();
    expect((await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/amended' })).status).to.equal(200);
    const id = await guarantee(org);
    const res = await amend(org, id, { type: 'CLAIM', claimedAmount: 250, effectiveAt: '2026-05-01T00:00:00Z' });
    const [event] = await select<{ body: string }>(db, "SELECT body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.amended'", [org.orgId]);
    const body = JSON.parse(event?.body ?? '{}') as { type: string; data: { amendment: unknown; state: Record<string, unknown> } };
    expect(body.type).to.equal('guarantee.amended');
    expect(body.data.amendment).to.deep.equal(res.body);
    expect(body.data.state).to.include({ status: 'CLAIMED', claimDueAt: '2026-05-16T00:00:00.000Z', lastSeq: 1 });
    // A refused amendment writes no event.
    expect((await amend(org, id, { type: 'CLAIM', claimedAmount: 1 })).status).to.equal(409);
    const events = await select(db, "SELECT id FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.amended'", [org.orgId]);
    expect(events).to.have.length(1);
  });

  it('applies each amendment from its effectiveAt: one dated later is scheduled in the state (and its event) until then, counted by the rules at once', async () => {
    const { db } = await harness();
    const id = await guarantee(org);
    const nextMonth = new Date(Date.now() + 30 * 24 * 3600 * 1000).toISOString();
    const cut = await amend(org, id, { type: 'PARTIAL_RELEASE', garantedAmount: 400, effectiveAt: nextMonth });
    expect(cut.status).to.equal(200);
    const state = await stateOf(org, id);
    expect(state).to.include({ status: 'ACTIVE', garantedAmount: 1000, lastSeq: 1 });
    expect(state.scheduled).to.deep.equal([{ seq: 1, type: 'PARTIAL_RELEASE', effectiveAt: nextMonth }]);
    // The fold stored is every amendment's (the rules read it): the next cut must go below 400.
    expect((await amend(org, id, { type: 'PARTIAL_RELEASE', garantedAmount: 500 }, true)).body.detail).to.match(/lower than the current amount, 400/);
    const [event] = await select<{ body: string }>(db, "SELECT body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.amended'", [org.orgId]);
    if (event) expect((JSON.parse(event.body) as { data: { state: { scheduled: unknown } } }).data.state.scheduled).to.deep.equal(state.scheduled);
    // Backdated, it applies at once, the one still ahead kept scheduled.
    expect((await amend(org, id, { type: 'EXTENSION', expiresAt: '2031-01-01T00:00:00Z', effectiveAt: '2026-01-01T00:00:00Z' })).status).to.equal(200);
    const after = await stateOf(org, id);
    expect(after).to.include({ expiresAt: '2031-01-01T00:00:00.000Z', garantedAmount: 1000, lastSeq: 2 });
    expect(after.scheduled).to.deep.equal([{ seq: 1, type: 'PARTIAL_RELEASE', effectiveAt: nextMonth }]);
  });

  it('says EXPIRED once expiresAt has passed without automatic renewal, and not with it, nor while a claim is open', async () => {
    const past = '2025-06-01T00:00:00Z';
    const expired = await guarantee(org, { garantedAmount: 10 }, past);
    expect(await stateOf(org, expired)).to.include({ status: 'EXPIRED' });
    const renewed = await guarantee(org, { garantedAmount: 10, isAutomaticRenewal: true }, past);
    expect(await stateOf(org, renewed)).to.include({ status: 'ACTIVE' });
    expect((await amend(org, expired, { type: 'CLAIM', claimedAmount: 5 })).status).to.equal(200);
    expect(await stateOf(org, expired)).to.include({ status: 'CLAIMED' });
  });
});

/** An amendment as the service takes it: `type` with its fields, the others null. */
function asked(type: NewAmendment['type'], fields: Partial<NewAmendment> = {}): NewAmendment {
  return {
    type,
    effectiveAt: new Date('2026-04-01T00:00:00Z'),
    expiresAt: null,
    garantedAmount: null,
    claimedAmount: null,
    paidAmount: null,
    reason: null,
    docs: [],
    ...fields,
  };
}

interface FoldRow {
  guarantee_id: string;
  garanted_amount: string | null;
  expires_at: Date | null;
  claim_seq: number | null;
  claimed_amount: string | null;
  claim_effective_at: Date | null;
  ended: string | null;
  partially_released: number;
  last_seq: number;
  beneficiary_id: string | null;
  pending: string | null;
}

async function foldRows(...ids: string[]): Promise<FoldRow[]> {
  const { db } = await harness();
  return select<FoldRow>(db, 'SELECT * FROM guarantee_folds WHERE guarantee_id IN ($1) ORDER BY guarantee_id', [ids], undefined, { prepared: false });
}

describe('lifecycle: the amendments a page at a time, and the fold kept with them', function () {
  this.timeout(60_000);
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  const page = async (id: string, query: string) => {
    const res = await (
      await harness()
    ).http
      .get(`/api/v2/guarantees/${id}/amendments${query}`)
      .set('X-API-Key', org.key)
      .set('Accept', 'application/problem+json');
    return { status: res.status, body: res.body as { amendments: Array<{ seq: number; docs: unknown[] }>; next: number | null; detail?: string } };
  };

  it('pages with after and limit (1 to 500, default 100): next is the last seq while more follow, null at the end; malformed paging is a 400', async () => {
    const id = await guarantee(org);
    const key = await issueFile(org.orgId, { status: 'Clean', fileName: 'appendice.pdf', checksum: 'c'.repeat(64) });
    // Documents on 3 (a page's last) and 4 (the one read past a page of 3, to tell that more follow).
    for (let i = 1; i <= 7; i++) {
      const res = await amend(org, id, { type: 'AMOUNT_CHANGE', garantedAmount: 100 + i, ...((i === 3 || i === 4) && { docs: [{ key }] }) });
      expect(res.status).to.equal(200);
    }
    const all = await page(id, '');
    expect(all.status).to.equal(200);
    expect(all.body.amendments.map((a) => a.seq)).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
    expect(all.body.next).to.equal(null);
    expect(all.body.amendments[2]?.docs).to.deep.equal([{ type: null, key, originalFileName: 'appendice.pdf', checksum: 'c'.repeat(64) }]);
    const pages: Array<[string, number[], number | null]> = [
      ['?limit=3', [1, 2, 3], 3],
      ['?after=3&limit=3', [4, 5, 6], 6],
      ['?after=6&limit=3', [7], null],
      // A full page that ends the history: null, no empty page to ask for.
      ['?after=4&limit=3', [5, 6, 7], null],
      ['?after=0&limit=500', [1, 2, 3, 4, 5, 6, 7], null],
      ['?after=7', [], null],
      ['?after=1000', [], null],
    ];
    for (const [query, seqs, next] of pages) {
      const res = await page(id, query);
      expect(res.status, query).to.equal(200);
      expect(
        res.body.amendments.map((a) => a.seq),
        query,
      ).to.deep.equal(seqs);
      expect(res.body.next, query).to.equal(next);
      // Each amendment as the whole list shows it, its documents included.
      expect(res.body.amendments, query).to.deep.equal(all.body.amendments.filter((a) => seqs.includes(a.seq)));
    }
    for (const query of ['?limit=0', '?limit=501', '?limit=abc', '?limit=', '?after=-1', '?after=1.5', '?after=01', '?limit=1&limit=2', '?after=1&after=2']) {
      const res = await page(id, query);
      expect(res.status, query).to.equal(400);
      expect(String(res.body.detail), query).to.match(/after|limit/);
    }
  });

  it('keeps the fold in guarantee_folds, written with each amendment; the fold alone decides the 409s and the state', async () => {
    const id = await guarantee(org);
    expect(await foldRows(id)).to.deep.equal([]);
    expect((await amend(org, id, { type: 'EXTENSION', expiresAt: '2031-01-01T00:00:00Z' })).status).to.equal(200);
    expect((await amend(org, id, { type: 'PARTIAL_RELEASE', garantedAmount: 800.5 })).status).to.equal(200);
    expect((await amend(org, id, { type: 'CLAIM', claimedAmount: 250, effectiveAt: '2026-05-01T00:00:00Z' })).status).to.equal(200);
    expect(await foldRows(id)).to.deep.equal([
      {
        guarantee_id: id,
        garanted_amount: '800.50',
        expires_at: new Date('2031-01-01T00:00:00Z'),
        claim_seq: 3,
        claimed_amount: '250.00',
        claim_effective_at: new Date('2026-05-01T00:00:00Z'),
        ended: null,
        partially_released: 1,
        last_seq: 3,
        beneficiary_id: null,
        pending: null,
      },
    ]);
    // The fold says released, with no claim open (nothing in the amendments says so): a CLAIM_REJECTED
    // is refused as after a RELEASE, not accepted as the open claim would have it.
    const { db } = await harness();
    await execute(
      db,
      "UPDATE guarantee_folds SET ended = 'RELEASED', claim_seq = NULL, claimed_amount = NULL, claim_effective_at = NULL WHERE guarantee_id = $1",
      [id],
    );
    const refused = await amend(org, id, { type: 'CLAIM_REJECTED' }, true);
    expect(refused.status).to.equal(409);
    expect(refused.body.detail).to.match(/nothing may follow a RELEASE/);
    expect(await stateOf(org, id)).to.deep.include({ status: 'RELEASED', garantedAmount: 800.5, openClaim: null, lastSeq: 3 });
    expect((await foldRows(id))[0]?.last_seq).to.equal(3);
  });

  it('reads as many rows to record an amendment after 300 as after 5: the fold, never the history', async () => {
    const { config, db, events } = await harness();
    // One connection, so that its session's count of rows read is the service's.
    const one = createSequelize({ url: config.DATABASE_URL, poolMax: 1 });
    try {
      const service = createAmendmentService({
        repo: createAmendmentRepository(one),
        files: createFileRepository(db, events.outbox),
        outbox: events.outbox,
        idempotency: createIdempotencyStore(db),
        audit: createAuditRepository(db),
      });
      const id = await guarantee(org);
      const rowsRead = async () =>
        Number((await select<{ Value: string }>(one, "SHOW SESSION STATUS LIKE 'Rows_read'", [], undefined, { prepared: false }))[0]?.Value);
      let n = 0;
      // Extensions and amount changes in turn, each extension a day later than the last.
      const next = () =>
        ++n % 2 ? asked('EXTENSION', { expiresAt: new Date(Date.UTC(2030, 0, 1 + n)) }) : asked('AMOUNT_CHANGE', { garantedAmount: 1000 + n });
      const readToRecord = async () => {
        const before = await rowsRead();
        await service.record(org.orgId, id, next());
        return (await rowsRead()) - before;
      };
      while (n < 5) await service.record(org.orgId, id, next());
      const early = await readToRecord();
      while (n < 300) await service.record(org.orgId, id, next());
      const late = await readToRecord();
      expect(n).to.equal(301);
      expect(late, `rows read to record amendment 6: ${early}, amendment 301: ${late}`).to.equal(early);
      expect(await stateOf(org, id)).to.include({ garantedAmount: 1300, lastSeq: 301, expiresAt: new Date(Date.UTC(2030, 0, 1 + 301)).toISOString() });
    } finally {
      await one.close();
    }
  });

  it('folds on what the previous release recorded without the fold (a rolling release), and writes the fold healed with the next amendment', async () => {
    const { db } = await harness();
    const repo = createAmendmentRepository(db);
    // What the previous release wrote: the amendments' rows, under the guarantee's lock, and no fold.
    const recordedByPrevious = (id: string, seq: number, a: NewAmendment) =>
      repo.transaction(async (t) => {
        await repo.lockIssued(org.orgId, id, t);
        const createdAt = new Date();
        const amendment: Amendment = {
          ...a,
          id: uuidv7(),
          guaranteeId: id,
          seq,
          actor: 'issuer',
          actorOrgId: null,
          createdAt,
          notarizationStatus: 'PENDING',
          txHash: null,
          docs: [],
        };
        await repo.insert(org.orgId, amendment, t);
      });
    const id = await guarantee(org);
    expect((await amend(org, id, { type: 'AMOUNT_CHANGE', garantedAmount: 900 })).status).to.equal(200);
    await recordedByPrevious(id, 2, asked('CLAIM', { claimedAmount: 300, effectiveAt: new Date('2026-06-01T00:00:00Z') }));
    await recordedByPrevious(id, 3, asked('EXTENSION', { expiresAt: new Date('2032-01-01T00:00:00Z') }));
    expect((await foldRows(id))[0]?.last_seq).to.equal(1);
    // Read: the fold at 1 and the two after it.
    expect(await stateOf(org, id)).to.deep.equal({
      status: 'CLAIMED',
      garantedAmount: 900,
      expiresAt: '2032-01-01T00:00:00.000Z',
      openClaim: { seq: 2, claimedAmount: 300, effectiveAt: '2026-06-01T00:00:00.000Z' },
      claimDueAt: '2026-06-16T00:00:00.000Z',
      lastSeq: 3,
      beneficiary: null,
      pendingConsent: null,
      scheduled: [],
    });
    expect((await foldRows(id))[0]?.last_seq).to.equal(1);
    // Recorded: the rules and the seq see them.
    expect((await amend(org, id, { type: 'CLAIM', claimedAmount: 10 }, true)).body.detail).to.match(/claim is open already \(amendment 2\)/);
    expect((await amend(org, id, { type: 'CLAIM_SETTLED', paidAmount: 300, expectedSeq: 1 }, true)).body.detail).to.match(/the last amendment is 3/);
    const settled = await amend(org, id, { type: 'CLAIM_SETTLED', paidAmount: 300, expectedSeq: 3, effectiveAt: '2026-06-02T00:00:00Z' });
    expect(settled.body).to.include({ seq: 4 });
    expect(await foldRows(id)).to.deep.equal([
      {
        guarantee_id: id,
        garanted_amount: '600.00',
        expires_at: new Date('2032-01-01T00:00:00Z'),
        claim_seq: null,
        claimed_amount: null,
        claim_effective_at: null,
        ended: null,
        partially_released: 0,
        last_seq: 4,
        beneficiary_id: null,
        pending: null,
      },
    ]);
    // A guarantee whose every amendment the previous release recorded: no fold yet, folded from the registration.
    const other = await guarantee(org);
    await recordedByPrevious(other, 1, asked('PARTIAL_RELEASE', { garantedAmount: 400 }));
    expect(await stateOf(org, other)).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 400, lastSeq: 1 });
    expect(await foldRows(other)).to.deep.equal([]);
    expect((await amend(org, other, { type: 'RELEASE', expectedSeq: 1 })).status).to.equal(200);
    expect(await foldRows(other)).to.deep.include.members([
      {
        guarantee_id: other,
        garanted_amount: '400.00',
        expires_at: new Date('2030-01-01T00:00:00Z'),
        claim_seq: null,
        claimed_amount: null,
        claim_effective_at: null,
        ended: 'RELEASED',
        partially_released: 1,
        last_seq: 2,
        beneficiary_id: null,
        pending: null,
      },
    ]);
  });

  it('migration 0023 backfills the folds of the guarantees with amendments, batch by batch, as the service writes them; a stored fold is kept; down drops them', async () => {
    const { db } = await harness();
    const q = (sql: string) => db.query(sql, { raw: true });
    const long = await guarantee(org);
    for (const body of [
      { type: 'EXTENSION', expiresAt: '2031-01-01T00:00:00Z' },
      { type: 'CLAIM', claimedAmount: 100.1, effectiveAt: '2026-07-01T12:00:00+02:00' },
      { type: 'CLAIM_SETTLED', paidAmount: 0.2, effectiveAt: '2026-07-02T00:00:00Z' },
      { type: 'PARTIAL_RELEASE', garantedAmount: 500.25 },
      { type: 'CLAIM', claimedAmount: 20, effectiveAt: '2026-08-01T00:00:00Z' },
    ])
      expect((await amend(org, long, body)).status).to.equal(200);
    const short = await guarantee(org, {});
    expect((await amend(org, short, { type: 'CANCELLATION' })).status).to.equal(200);
    const none = await guarantee(org);
    const written = await foldRows(long, short, none);
    expect(written.map((r) => [r.guarantee_id, r.last_seq])).to.deep.equal(
      [
        [long, 5],
        [short, 1],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    // Two amendments a batch: the long history spans three, its fold carried from one to the next.
    await execute(db, 'DELETE FROM guarantee_folds WHERE guarantee_id IN ($1)', [[long, short]], undefined, { prepared: false });
    await backfillFolds(q, 2);
    expect(await foldRows(long, short, none)).to.deep.equal(written);
    // A fold stored already is left as it is (the service's, or behind and folded on when read).
    await execute(db, 'UPDATE guarantee_folds SET last_seq = 4, garanted_amount = 1 WHERE guarantee_id = $1', [long]);
    await backfillFolds(q, 2);
    expect((await foldRows(long))[0]).to.include({ last_seq: 4, garanted_amount: '1.00' });
    try {
      await guaranteeFolds.down({ context: q });
      expect(await select(db, "SHOW TABLES LIKE 'guarantee_folds'", [], undefined, { prepared: false })).to.deep.equal([]);
    } finally {
      await guaranteeFolds.up({ context: q });
      // And what later migrations add to the table.
      await foldColumnsOfAuthorities(q);
    }
    expect(await foldRows(long, short, none)).to.deep.equal(written);
  });
});

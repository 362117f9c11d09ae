// A guarantee's life through the API (CONTRACT "Lifecycle"): amendments recorded with a dense
// seq, each rule's 409 changing nothing, 400s, other organizations' 404s, races, the state,
// and the guarantee.amended event in the outbox. Against the real database.
import { expect } from 'chai';
import { execute, select } from '../../src/shared/db/sequelize.js';
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

    const settled = await amend(org, id, { type: 'CLAIM_SETTLED', paidAmount: 200 });
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
    expect((await amend(org, id, { type: 'CLAIM', claimedAmount: 5 })).status).to.equal(200);
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

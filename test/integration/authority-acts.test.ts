// The contracting authority's acts on a guarantee it took charge of (issue 29), through the API
// against the real servers: the demand dated by the server (the issuer's 15 days cannot be
// moved), its withdrawal and its settlement, the issuer's amendments that would reduce the
// authority's cover waiting for its consent, the authority's own releases, each rule a 409
// that changes nothing, and both parties told.
import { expect } from 'chai';
import type supertest from 'supertest';
import { CLAIM_TERM_MS } from '../../src/guarantees/amendments.js';
import { select } from '../../src/shared/db/sequelize.js';
import { registered } from '../support/guarantees.js';
import { appWith, eventually, harness, issueFile, newAuthority, type TestAuthority } from '../support/harness.js';
import { receiver } from '../support/receiver.js';
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';

type Registered = Awaited<ReturnType<typeof registered>>;

describe("contracting authorities: their acts, and their consent to the issuer's", function () {
  this.timeout(60_000);
  let http: ReturnType<typeof supertest>;
  before(async () => {
    http = await appWith({ VERIFY_RATE_PER_MINUTE: '0' });
  });

  /** A guarantee of 15,000.50 that `authority` took charge of (seq 1). */
  async function linked(): Promise<{ r: Registered; a: TestAuthority }> {
    const r = await registered();
    const a = await newAuthority();
    const res = await http
      .post('/api/authority/v1/guarantees')
      .set('X-API-Key', a.key)
      .send({ policyNumber: r.policyNumber, checkCode: r.checkCode, cig: 'A1B2C3D4E5', garantedAmount: 15000.5 });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return { r, a };
  }
  const act = (a: TestAuthority, id: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    http.post(`/api/authority/v1/guarantees/${id}/amendments`).set('X-API-Key', a.key).set('Accept', 'application/problem+json').set(headers).send(body);
  const amend = (r: Registered, body: Record<string, unknown>) =>
    http
      .post(`/api/v2/guarantees/${r.id}/amendments`)
      .set('X-API-Key', r.org.key)
      .set('Accept', 'application/problem+json')
      .send({ effectiveAt: '2026-03-01T10:00:00+01:00', ...body });
  const state = async (r: Registered) => (await http.get(`/api/v2/guarantees/${r.id}/state`).set('X-API-Key', r.org.key)).body as Record<string, unknown>;
  const events = async (orgId: string, type: string) => {
    const { db } = await harness();
    const rows = await select<{ body: string }>(db, 'SELECT body FROM webhook_events WHERE org_id = $1 AND type = $2 ORDER BY id', [orgId, type]);
    return rows.map((e) => (JSON.parse(e.body) as { data: { amendment?: Record<string, unknown>; claimDueAt?: string; answered?: unknown } }).data);
  };

  it('files a demand dated by the server, its 15 days run from receipt; the issuer hears at once, settles it no earlier than it; withdrawn, the cover is whole again', async () => {
    const { r, a } = await linked();
    // The server dates it: an effectiveAt sent is a 400, and so is another type's field.
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 100, reason: 'inadempimento', effectiveAt: '2020-01-01T00:00:00Z' })).status).to.equal(400);
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 100, expiresAt: '2030-01-01T00:00:00Z' })).status).to.equal(400);
    expect((await act(a, r.id, { type: 'EXTENSION', expiresAt: '2030-01-01T00:00:00Z' })).status).to.equal(400);
    const tooMuch = await act(a, r.id, { type: 'DEMAND', claimedAmount: 15000.51 });
    expect(tooMuch.status).to.equal(409);
    expect(tooMuch.body.detail).to.equal('claimedAmount must be at most the current amount, 15000.5.');
    expect((await state(r)).lastSeq).to.equal(1);

    const before = Date.now();
    const demand = await act(a, r.id, { type: 'DEMAND', claimedAmount: 5000, reason: 'inadempimento contrattuale' });
    expect(demand.status, JSON.stringify(demand.body)).to.equal(200);
    expect(demand.body).to.include({ seq: 2, type: 'DEMAND', actor: 'authority', actorOrgId: a.orgId, claimedAmount: 5000 });
    expect(demand.body.effectiveAt).to.equal(demand.body.createdAt);
    const at = Date.parse(demand.body.effectiveAt as string);
    expect(at).to.be.within(before - 5, Date.now() + 5);
    const claimed = await state(r);
    expect(claimed).to.include({ status: 'CLAIMED', claimDueAt: new Date(at + CLAIM_TERM_MS).toISOString(), lastSeq: 2 });
    for (const orgId of [r.org.orgId, a.orgId]) {
      const [told] = await events(orgId, 'guarantee.demanded');
      expect(told?.amendment).to.include({ seq: 2, type: 'DEMAND' });
      expect(told?.claimDueAt).to.equal(new Date(at + CLAIM_TERM_MS).toISOString());
    }
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 1 })).body.detail).to.equal('A demand is open already (amendment 2): one at a time.');

    // The issuer answers it, never dated before it.
    const early = await amend(r, { type: 'CLAIM_REJECTED', effectiveAt: new Date(at - 1000).toISOString() });
    expect(early.status).to.equal(400);
    expect(JSON.stringify(early.body)).to.include("must not be before the demand's");
    const withdrawn = await act(a, r.id, { type: 'DEMAND_WITHDRAWN', reason: 'accordo raggiunto' });
    expect(withdrawn.status).to.equal(200);
    expect(await state(r)).to.include({ status: 'ACTIVE', openClaim: null, claimDueAt: null, lastSeq: 3 });
    expect((await act(a, r.id, { type: 'DEMAND_WITHDRAWN' })).body.detail).to.equal('No demand is open to withdraw.');
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 3000 })).status).to.equal(200);
    // A payment is a fact: never dated ahead (the rules would see the demand closed while it is open).
    const ahead = await amend(r, { type: 'CLAIM_SETTLED', paidAmount: 3000, effectiveAt: new Date(Date.now() + 60_000).toISOString() });
    expect(ahead.status).to.equal(400);
    expect(JSON.stringify(ahead.body)).to.include('must not be in the future');
    const paid = await amend(r, { type: 'CLAIM_SETTLED', paidAmount: 3000, effectiveAt: new Date().toISOString() });
    expect(paid.status, JSON.stringify(paid.body)).to.equal(200);
    expect(await state(r)).to.include({ status: 'ACTIVE', garantedAmount: 12000.5, lastSeq: 5 });

    // The authority's release of part of it dated a second ahead: recorded now, scheduled until then.
    const from = new Date(Date.now() + 1000);
    expect((await act(a, r.id, { type: 'PARTIAL_RELEASE', garantedAmount: 10000, effectiveAt: from.toISOString() })).status).to.equal(200);
    const waiting = await state(r);
    expect(waiting).to.include({ status: 'ACTIVE', garantedAmount: 12000.5, lastSeq: 6 });
    expect(waiting.scheduled).to.deep.equal([{ seq: 6, type: 'PARTIAL_RELEASE', effectiveAt: from.toISOString() }]);
    // Today's 12,000.50 lowered by the issuer is a reduction, whatever the amount dated later: it waits for consent.
    const lower = await amend(r, { type: 'AMOUNT_CHANGE', garantedAmount: 11000, effectiveAt: new Date().toISOString() });
    expect(lower.status, JSON.stringify(lower.body)).to.equal(200);
    expect(lower.body.consent).to.equal('PENDING');
    expect((await state(r)).garantedAmount).to.equal(12000.5);
    await new Promise((resolve) => setTimeout(resolve, from.getTime() - Date.now() + 50));
    const released = await state(r);
    expect(released).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 10000, lastSeq: 7 });
    expect(released.scheduled).to.deep.equal([]);
    expect(released.pendingConsent).to.deep.equal({ seq: 7, type: 'AMOUNT_CHANGE' });

    // Each act is a row of both chains: the issuer's names the authority, the authority's its key.
    const { db } = await harness();
    const rows = await select<{ chain: string; actor: string }>(db, 'SELECT chain, actor FROM audit_log WHERE target = $1', [`amendment:${demand.body.id}`]);
    expect(rows.map((x) => [x.chain, x.actor]).sort()).to.deep.equal(
      [
        [r.org.orgId, `authority:${a.orgId}`],
        [a.orgId, a.prefix],
      ].sort(),
    );
  });

  it("keeps the issuer's amendments that would reduce the authority's cover waiting for its consent; widening ones apply at once; ACCEPT applies, REFUSE leaves the state", async () => {
    const { r, a } = await linked();
    const reduce = await amend(r, { type: 'PARTIAL_RELEASE', garantedAmount: 10000, reason: 'SAL 1' });
    expect(reduce.status, JSON.stringify(reduce.body)).to.equal(200);
    expect(reduce.body).to.include({ seq: 2, actor: 'issuer', consent: 'PENDING' });
    expect(await state(r)).to.include({ status: 'ACTIVE', garantedAmount: 15000.5, lastSeq: 2 });
    expect((await state(r)).pendingConsent).to.deep.equal({ seq: 2, type: 'PARTIAL_RELEASE' });
    const [pending] = await events(a.orgId, 'guarantee.amendment_pending');
    expect(pending?.amendment).to.include({ seq: 2, consent: 'PENDING' });
    // One at a time; a widening one applies at once.
    expect((await amend(r, { type: 'CANCELLATION' })).body.detail).to.match(/^Amendment 2 waits for the contracting authority's answer/);
    expect((await amend(r, { type: 'AMOUNT_CHANGE', garantedAmount: 20000 })).body).to.not.have.property('consent');
    expect(await state(r)).to.include({ garantedAmount: 20000, lastSeq: 3 });
    // Only the pending one can be answered.
    expect((await act(a, r.id, { type: 'AMENDMENT_RESPONSE', amendmentSeq: 3, decision: 'ACCEPT' })).body.detail).to.equal(
      'Amendment 3 does not wait for an answer (amendment 2 does).',
    );
    const refused = await act(a, r.id, { type: 'AMENDMENT_RESPONSE', amendmentSeq: 2, decision: 'REFUSE', reason: 'lavori non completati' });
    expect(refused.status, JSON.stringify(refused.body)).to.equal(200);
    expect(refused.body).to.include({ seq: 4, type: 'AMENDMENT_RESPONSE', amendmentSeq: 2, decision: 'REFUSE' });
    expect(refused.body.effectiveAt).to.equal(refused.body.createdAt);
    expect(await state(r)).to.include({ garantedAmount: 20000, pendingConsent: null, lastSeq: 4 });
    const listed = await http.get(`/api/v2/guarantees/${r.id}/amendments`).set('X-API-Key', r.org.key);
    expect(listed.body.amendments[1]).to.include({ seq: 2, consent: 'REFUSED' });
    for (const orgId of [r.org.orgId, a.orgId])
      expect((await events(orgId, 'guarantee.amendment_answered'))[0]?.answered).to.deep.equal({ seq: 2, decision: 'REFUSE' });

    // A release waits too; accepted, the guarantee is released.
    expect((await amend(r, { type: 'RELEASE' })).body).to.include({ seq: 5, consent: 'PENDING' });
    expect((await state(r)).status).to.equal('ACTIVE');
    expect((await act(a, r.id, { type: 'AMENDMENT_RESPONSE', amendmentSeq: 5, decision: 'ACCEPT' })).status).to.equal(200);
    expect(await state(r)).to.include({ status: 'RELEASED', pendingConsent: null, lastSeq: 6 });
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 1 })).body.detail).to.equal('The guarantee was released: nothing may follow a RELEASE.');
  });

  it('lets the authority release its cover itself, at once; an accepted amendment that no longer fits is a 409', async () => {
    const { r, a } = await linked();
    expect((await amend(r, { type: 'PARTIAL_RELEASE', garantedAmount: 9000 })).body.consent).to.equal('PENDING');
    const own = await act(a, r.id, { type: 'PARTIAL_RELEASE', garantedAmount: 5000, effectiveAt: '2026-06-01T00:00:00Z' });
    expect(own.status, JSON.stringify(own.body)).to.equal(200);
    expect(own.body).to.include({ actor: 'authority', garantedAmount: 5000 });
    expect(own.body).to.not.have.property('consent');
    expect(await state(r)).to.include({ status: 'PARTIALLY_RELEASED', garantedAmount: 5000 });
    const late = await act(a, r.id, { type: 'AMENDMENT_RESPONSE', amendmentSeq: 2, decision: 'ACCEPT' });
    expect(late.status).to.equal(409);
    expect(late.body.detail).to.equal('Amendment 2 can no longer apply: garantedAmount must be lower than the current amount, 5000.');
    expect((await act(a, r.id, { type: 'RELEASE', effectiveAt: '2026-07-01T00:00:00Z' })).status).to.equal(200);
    expect(await state(r)).to.include({ status: 'RELEASED', pendingConsent: null });
  });

  it("delivers the demand to both parties' webhooks, signed, through the outbox and the webhooks worker", async () => {
    const { r, a } = await linked();
    const issuerHooks = await receiver('/issuer');
    const authorityHooks = await receiver('/authority');
    let workers: RunningWorkers | undefined;
    try {
      for (const [org, hooks] of [
        [r.org, issuerHooks],
        [a, authorityHooks],
      ] as const) {
        expect((await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: hooks.url })).status).to.equal(200);
      }
      const demand = await act(a, r.id, { type: 'DEMAND', claimedAmount: 700, reason: 'inadempimento' });
      expect(demand.status).to.equal(200);
      workers = await startWorkers(['webhooks'], { config: (await harness()).config, logger: createLogger('silent') });
      for (const hooks of [issuerHooks, authorityHooks]) {
        await eventually(
          'the demand delivered',
          () => hooks.received.some((x) => (JSON.parse(x.body) as { type: string }).type === 'guarantee.demanded'),
          20_000,
        );
        const got = hooks.received.find((x) => (JSON.parse(x.body) as { type: string }).type === 'guarantee.demanded')!;
        const body = JSON.parse(got.body) as { data: { amendment: { seq: number; type: string }; claimDueAt: string } };
        expect(body.data.amendment).to.include({ seq: 2, type: 'DEMAND' });
        expect(body.data.claimDueAt).to.be.a('string');
        expect(got.headers['webhook-signature']).to.match(/^v1,/);
      }
    } finally {
      await workers?.close();
      await issuerHooks.close();
      await authorityHooks.close();
    }
  });

  it("keeps the acts to the authority's own guarantees and documents; retries and stale views are safe", async () => {
    const { r, a } = await linked();
    const other = await newAuthority();
    expect((await act(other, r.id, { type: 'DEMAND', claimedAmount: 1 })).status).to.equal(404);
    expect(
      (await http.post(`/api/authority/v1/guarantees/${r.id}/amendments`).set('X-API-Key', r.org.key).send({ type: 'DEMAND', claimedAmount: 1 })).status,
    ).to.equal(403);
    // Documents: the authority's own uploads, judged; another organization's are a 400.
    const mine = await issueFile(a.orgId, { status: 'Clean', checksum: 'a'.repeat(64), fileName: 'diffida.pdf' });
    const theirs = await issueFile(r.org.orgId, { status: 'Clean', checksum: 'b'.repeat(64) });
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 1, docs: [{ key: theirs }] })).status).to.equal(400);
    // A stale expectedSeq is a 409; the same Idempotency-Key replays the first answer.
    expect((await act(a, r.id, { type: 'DEMAND', claimedAmount: 1, expectedSeq: 0 })).status).to.equal(409);
    const body = { type: 'DEMAND', claimedAmount: 100, reason: 'diffida', docs: [{ key: mine, type: 'OTHER' }], expectedSeq: 1 };
    const first = await act(a, r.id, body, { 'Idempotency-Key': 'demand-1' });
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    expect(first.body.docs).to.deep.equal([{ type: 'OTHER', key: mine, originalFileName: 'diffida.pdf', checksum: 'a'.repeat(64) }]);
    const again = await act(a, r.id, body, { 'Idempotency-Key': 'demand-1' });
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect(again.body).to.deep.equal(first.body);
    expect((await state(r)).lastSeq).to.equal(2);
    // The authority's upload URL and file status, in its own name.
    const presign = await http.post('/api/authority/v1/presigned-url').set('X-API-Key', a.key).send({ fileType: 'pdf', fileName: 'verbale.pdf' });
    expect(presign.status, JSON.stringify(presign.body)).to.equal(200);
    const status = await http.get(`/api/authority/v1/file-status/${presign.body.key as string}`).set('X-API-Key', a.key);
    expect(status.body).to.equal('In Progress');
    expect((await http.get(`/api/v2/file-status/${presign.body.key as string}`).set('X-API-Key', r.org.key)).status).to.equal(404);
  });
});

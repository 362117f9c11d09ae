// Contracting authorities as a party (issue 29), through the API against the real servers:
// authorities as organizations whose keys reach only their own API (403 both ways), taking
// charge of a guarantee with the tender's data (one answer for every kind of miss, one
// authority per guarantee, the beneficiary the issuer named), and what taking charge records:
// the BENEFICIARY_LINKED amendment in the notarized chain with its actor, both parties' audit
// trails and events, and the issuer's CLAIM refused from then on.
import { expect } from 'chai';
import type supertest from 'supertest';
import { verifyAmendmentProof } from '../../src/notarization/proof.js';
import { v7 as uuidv7 } from 'uuid';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { select } from '../../src/shared/db/sequelize.js';
import { notarizeAll, registered } from '../support/guarantees.js';
import { appWith, harness, newAuthority, newOrg, type TestAuthority } from '../support/harness.js';

const UUID = '01890000-0000-7000-8000-000000000000';

describe('contracting authorities: their keys, and taking charge of a guarantee', function () {
  this.timeout(60_000);
  let http: ReturnType<typeof supertest>;
  before(async () => {
    // The public verification's limit off: the tests take charge many times from one address.
    http = await appWith({ VERIFY_RATE_PER_MINUTE: '0' });
  });

  const takeCharge = (a: TestAuthority, body: Record<string, unknown>, problem = false) => {
    const req = http.post('/api/authority/v1/guarantees').set('X-API-Key', a.key);
    if (problem) void req.set('Accept', 'application/problem+json');
    return req.send(body);
  };
  const tender = (r: Awaited<ReturnType<typeof registered>>, amount = 15000.5) => ({
    policyNumber: r.policyNumber,
    checkCode: r.checkCode,
    cig: 'A1B2C3D4E5',
    garantedAmount: amount,
  });

  it("keeps each kind of key to its own routes: an authority's gets 403 on every issuer route, an issuer's on every authority route; both reach their webhooks", async () => {
    const { app } = await harness();
    const issuer = await newOrg();
    const authority = await newAuthority();
    const routes = [...new Set(app.routes)].filter((r) => / \/api\/(v\d|authority)\//.test(r));
    expect(routes.filter((r) => r.includes('/api/authority/'))).to.have.length.greaterThan(2);
    let checked = 0;
    for (const route of routes) {
      const [method, template] = route.split(' ') as [string, string];
      const path = template.replace(/\{[^}]+\}/g, UUID);
      if (path.startsWith('/api/v1/webhooks')) continue;
      const key = path.startsWith('/api/authority/') ? issuer.key : authority.key;
      const res = await (http as unknown as Record<string, (p: string) => supertest.Test>)[method]!(path)
        .set('X-API-Key', key)
        .set('Accept', 'application/problem+json')
        .send({});
      expect(res.status, route).to.equal(403);
      expect(res.headers['content-type'], route).to.match(/^application\/problem\+json/);
      checked++;
    }
    expect(checked).to.be.greaterThan(20);
    // Refused before anything is read or written: the authority registered nothing.
    const { db } = await harness();
    expect(await select(db, 'SELECT id FROM guarantees WHERE org_id = $1', [authority.orgId])).to.deep.equal([]);
    // Both kinds manage their own webhook endpoints.
    for (const org of [issuer, authority]) {
      const res = await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/hook' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect((await http.get('/api/v1/webhooks').set('X-API-Key', org.key)).body).to.have.length(1);
    }
  });

  it("takes charge with the tender's data: every kind of miss is the public verification's 404, a match is the authority's view with every document", async () => {
    const r = await registered();
    const authority = await newAuthority();
    const miss = await http.post('/api/public/v1/verifications').send({ policyNumber: 'NO-SUCH', checkCode: 'Kabcdefghijklmnopq' });
    expect(miss.status).to.equal(404);
    for (const wrong of [
      { ...tender(r), checkCode: `${r.checkCode}x` },
      { ...tender(r), policyNumber: `${r.policyNumber} ` },
      { ...tender(r), cig: 'Z9Z9Z9Z9Z9' },
      tender(r, 15000.51),
    ]) {
      const res = await takeCharge(authority, wrong);
      expect(res.status, JSON.stringify(wrong)).to.equal(404);
      expect(res.body).to.deep.equal(miss.body);
    }
    // All four are required, and nothing else is taken.
    for (const field of ['policyNumber', 'checkCode', 'cig', 'garantedAmount']) {
      const body: Record<string, unknown> = tender(r);
      delete body[field];
      const res = await takeCharge(authority, body, true);
      expect(res.status, field).to.equal(400);
      expect(JSON.stringify(res.body)).to.include(field);
    }
    expect((await takeCharge(authority, { ...tender(r), note: 'x' })).status).to.equal(400);

    const res = await takeCharge(authority, tender(r));
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.headers['cache-control']).to.equal('no-store');
    const view = res.body as {
      guarantee: { id: string };
      issuer: { orgId: string };
      linkedAt: string;
      privateDocuments: number;
      documents: Array<{ key: string }>;
      state: Record<string, unknown>;
      amendments: Array<Record<string, unknown>>;
    };
    expect(view.guarantee.id).to.equal(r.id);
    expect(view.issuer.orgId).to.equal(r.org.orgId);
    expect(view.linkedAt).to.be.a('string');
    expect(view.privateDocuments).to.equal(0);
    expect(view.documents.map((d) => d.key)).to.deep.equal([r.pdf, r.p7m]);
    expect(view.state).to.include({ status: 'ACTIVE', lastSeq: 1 });
    expect(view.amendments).to.have.length(1);
    expect(view.amendments[0]).to.include({ seq: 1, type: 'BENEFICIARY_LINKED', actor: 'authority', actorOrgId: authority.orgId });
    // Dated by the server, at receipt.
    expect(view.amendments[0]?.effectiveAt).to.equal(view.amendments[0]?.createdAt);
    expect(view.amendments[0]?.effectiveAt).to.equal(view.linkedAt);

    // Again: the same view, nothing more recorded.
    const again = await takeCharge(authority, tender(r));
    expect(again.status).to.equal(200);
    expect(again.body.amendments).to.have.length(1);
    expect(again.body.linkedAt).to.equal(view.linkedAt);

    // Another authority with the same data: 409, nothing recorded.
    const other = await newAuthority();
    const taken = await takeCharge(other, tender(r), true);
    expect(taken.status).to.equal(409);
    expect(taken.body.detail).to.equal('Another contracting authority has taken charge of the guarantee.');
    expect((await http.get(`/api/authority/v1/guarantees/${r.id}`).set('X-API-Key', other.key)).status).to.equal(404);
    const state = await http.get(`/api/v2/guarantees/${r.id}/state`).set('X-API-Key', r.org.key);
    expect(state.body.lastSeq).to.equal(1);
  });

  it('honours the beneficiary the issuer named: any other authority gets the same 404, the named one takes charge', async () => {
    const named = await newAuthority();
    const other = await newAuthority();
    const r = await registered({ beneficiaryFiscalCode: named.fiscalCode });
    const got = await http.get(`/api/v2/guarantees/${r.id}`).set('X-API-Key', r.org.key);
    expect(got.body.details.beneficiaryFiscalCode).to.equal(named.fiscalCode);
    const miss = await http.post('/api/public/v1/verifications').send({ policyNumber: 'NO-SUCH', checkCode: 'Kabcdefghijklmnopq' });
    const refused = await takeCharge(other, tender(r));
    expect(refused.status).to.equal(404);
    expect(refused.body).to.deep.equal(miss.body);
    expect((await takeCharge(named, tender(r))).status).to.equal(200);
    // A beneficiary's fiscal code with a wrong check digit is a 400 on registration, and never in v1.
    const { http: issuerHttp } = await harness();
    const bad = await issuerHttp
      .post('/api/v2/guarantees')
      .set('X-API-Key', r.org.key)
      .set('Accept', 'application/problem+json')
      .send({ details: { beneficiaryFiscalCode: `${named.fiscalCode.slice(0, 10)}${(Number(named.fiscalCode[10]) + 1) % 10}` } });
    expect(bad.status).to.equal(400);
    expect(JSON.stringify(bad.body)).to.include('beneficiaryFiscalCode');
    const v1 = await issuerHttp
      .post('/api/v1/guarantees')
      .set('X-API-Key', r.org.key)
      .send({ details: { beneficiaryFiscalCode: named.fiscalCode } });
    expect(v1.status).to.equal(400);
  });

  it("records taking charge in the issuer's chain with its actor, in both audit trails and both parties' events; the issuer's CLAIM is refused from then on", async () => {
    const r = await registered();
    const authority = await newAuthority();
    expect((await takeCharge(authority, tender(r))).status).to.equal(200);
    const { db } = await harness();

    const list = await http.get(`/api/v2/guarantees/${r.id}/amendments`).set('X-API-Key', r.org.key);
    expect(list.body.amendments[0]).to.include({ type: 'BENEFICIARY_LINKED', actor: 'authority', actorOrgId: authority.orgId });
    const amendmentId = list.body.amendments[0].id as string;

    const audit = await select<{ chain: string; actor: string; action: string; target: string }>(
      db,
      'SELECT chain, actor, action, target FROM audit_log WHERE target = $1 ORDER BY chain',
      [`amendment:${amendmentId}`],
    );
    expect(audit.map((a) => [a.chain, a.actor, a.action]).sort()).to.deep.equal(
      [
        [r.org.orgId, `authority:${authority.orgId}`, 'amendment.record'],
        [authority.orgId, authority.prefix, 'amendment.record'],
      ].sort(),
    );

    for (const orgId of [r.org.orgId, authority.orgId]) {
      const events = await select<{ body: string }>(db, "SELECT body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.beneficiary_linked'", [orgId]);
      expect(events, orgId).to.have.length(1);
      expect(JSON.parse(events[0]!.body).data).to.deep.include({
        guaranteeId: r.id,
        seq: 1,
        authority: { orgId: authority.orgId, name: JSON.parse(events[0]!.body).data.authority.name, fiscalCode: authority.fiscalCode },
      });
    }

    const claim = await http
      .post(`/api/v2/guarantees/${r.id}/amendments`)
      .set('X-API-Key', r.org.key)
      .set('Accept', 'application/problem+json')
      .send({ type: 'CLAIM', claimedAmount: 100, effectiveAt: '2026-03-01T10:00:00+01:00' });
    expect(claim.status).to.equal(409);
    expect(claim.body.detail).to.match(/a demand is its act/);
    // The issuer's other amendments go on as before.
    const ext = await http
      .post(`/api/v2/guarantees/${r.id}/amendments`)
      .set('X-API-Key', r.org.key)
      .send({ type: 'EXTENSION', expiresAt: '2029-01-01T00:00:00Z', effectiveAt: '2026-03-01T10:00:00+01:00' });
    expect(ext.status).to.equal(200);
    expect(ext.body).to.include({ seq: 2, actor: 'issuer' });
    expect(ext.body).to.not.have.property('actorOrgId');
  });

  it('notarizes taking charge with its actor: the proof verifies as served, and not with the actor taken out', async () => {
    const r = await registered();
    const authority = await newAuthority();
    expect((await takeCharge(authority, tender(r))).status).to.equal(200);
    await notarizeAll();
    await notarizeAll();
    const view = await http.get(`/api/authority/v1/guarantees/${r.id}`).set('X-API-Key', authority.key);
    expect(view.status).to.equal(200);
    const [linked] = view.body.amendments as Array<Record<string, unknown> & { proof: unknown }>;
    expect(linked).to.include({ notarizationStatus: 'COMPLETE', actor: 'authority' });
    const { proof, privateDocuments: _p, ...amendment } = linked!;
    expect(verifyAmendmentProof(amendment, proof).ok).to.equal(true);
    const { actor: _a, actorOrgId: _o, ...withoutActor } = amendment;
    expect(verifyAmendmentProof(withoutActor, proof).ok).to.equal(false);
    expect(verifyAmendmentProof({ ...amendment, actorOrgId: (await newAuthority()).orgId }, proof).ok).to.equal(false);
  });

  it("lists the guarantees an authority took charge of, the latest first, paged and by CIG; another authority's is a 404 to it", async () => {
    const authority = await newAuthority();
    const taken: string[] = [];
    for (const cig of ['CIG0000001', 'CIG0000002', 'CIG0000001']) {
      const r = await registered({ cig });
      expect((await takeCharge(authority, { ...tender(r), cig })).status).to.equal(200);
      taken.push(r.id);
    }
    const page1 = await http.get('/api/authority/v1/guarantees?limit=2').set('X-API-Key', authority.key);
    expect(page1.status).to.equal(200);
    expect(page1.body.totalItems).to.equal(3);
    expect(page1.body.guarantees.map((g: { guaranteeId: string }) => g.guaranteeId)).to.deep.equal([taken[2], taken[1]]);
    expect(page1.body.guarantees[0].state).to.include({ status: 'ACTIVE', lastSeq: 1 });
    // A page's states are read together; one whose fold is behind its amendments (the previous
    // release recorded one during a rolling release) is folded on.
    const { db } = await harness();
    const repo = createAmendmentRepository(db);
    const [behind] = await select<{ org_id: string }>(db, 'SELECT org_id FROM guarantees WHERE id = $1', [taken[1]]);
    await repo.transaction(async (t) => {
      await repo.lockIssued(behind!.org_id, taken[1]!, t);
      const at = new Date();
      await repo.insert(
        behind!.org_id,
        {
          id: uuidv7(),
          guaranteeId: taken[1]!,
          seq: 2,
          type: 'EXTENSION',
          actor: 'issuer',
          actorOrgId: null,
          effectiveAt: at,
          expiresAt: new Date('2031-01-01T00:00:00Z'),
          garantedAmount: null,
          claimedAmount: null,
          paidAmount: null,
          reason: null,
          docs: [],
          createdAt: at,
          notarizationStatus: 'PENDING',
          txHash: null,
        },
        t,
      );
    });
    const healed = await http.get('/api/authority/v1/guarantees?limit=2').set('X-API-Key', authority.key);
    expect(healed.body.guarantees[1].state).to.include({ lastSeq: 2, expiresAt: '2031-01-01T00:00:00.000Z' });
    expect(healed.body.guarantees[0].state).to.include({ lastSeq: 1 });
    const page2 = await http.get('/api/authority/v1/guarantees?limit=2&page=2').set('X-API-Key', authority.key);
    expect(page2.body.guarantees.map((g: { guaranteeId: string }) => g.guaranteeId)).to.deep.equal([taken[0]]);
    const byCig = await http.get('/api/authority/v1/guarantees?cig=CIG0000001').set('X-API-Key', authority.key);
    expect(byCig.body.totalItems).to.equal(2);
    expect(byCig.body.guarantees.map((g: { guaranteeId: string }) => g.guaranteeId)).to.deep.equal([taken[2], taken[0]]);
    expect((await http.get('/api/authority/v1/guarantees?limit=0').set('X-API-Key', authority.key)).status).to.equal(400);
    // By status (as every recorded amendment applies), alone or with a CIG: a demand makes one CLAIMED.
    const demand = await http
      .post(`/api/authority/v1/guarantees/${taken[1]}/amendments`)
      .set('X-API-Key', authority.key)
      .send({ type: 'DEMAND', claimedAmount: 1, reason: 'inadempimento' });
    expect(demand.status, JSON.stringify(demand.body)).to.equal(200);
    const claimed = await http.get('/api/authority/v1/guarantees?status=CLAIMED').set('X-API-Key', authority.key);
    expect(claimed.body.totalItems).to.equal(1);
    expect(claimed.body.guarantees.map((g: { guaranteeId: string; state: { status: string } }) => [g.guaranteeId, g.state.status])).to.deep.equal([
      [taken[1], 'CLAIMED'],
    ]);
    const active = await http.get('/api/authority/v1/guarantees?status=ACTIVE&cig=CIG0000001').set('X-API-Key', authority.key);
    expect(active.body.guarantees.map((g: { guaranteeId: string }) => g.guaranteeId)).to.deep.equal([taken[2], taken[0]]);
    expect((await http.get('/api/authority/v1/guarantees?status=RELEASED').set('X-API-Key', authority.key)).body).to.deep.equal({
      totalItems: 0,
      guarantees: [],
    });
    expect((await http.get('/api/authority/v1/guarantees?status=closed').set('X-API-Key', authority.key)).status).to.equal(400);

    const stranger = await newAuthority();
    expect((await http.get('/api/authority/v1/guarantees').set('X-API-Key', stranger.key)).body).to.deep.equal({ totalItems: 0, guarantees: [] });
    for (const id of [taken[0], UUID, 'not-a-uuid']) {
      expect((await http.get(`/api/authority/v1/guarantees/${id}`).set('X-API-Key', stranger.key)).status, id).to.equal(404);
    }
  });
});

import { expect } from 'chai';
import { harness, newOrg, type TestOrg } from '../support/harness.js';
import { execute, select } from '../../src/shared/db/sequelize.js';

async function count(orgId: string): Promise<number> {
  const { db } = await harness();
  const [row] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM guarantees WHERE org_id = $1', [orgId]);
  return Number(row?.n);
}

describe('safe retries of guarantee creation', () => {
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });
  const post = async (version: 1 | 2, body: object, headers: Record<string, string> = {}) =>
    (await harness()).http.post(`/api/v${version}/guarantees`).set('X-API-Key', org.key).set(headers).send(body);

  describe('details.transactionId', () => {
    it('with the same body returns the first record and creates nothing', async () => {
      const body = { details: { transactionId: 'T-1', policyNumber: 'P', emittedAt: '2025-01-01T10:00:00+01:00' } };
      const first = await post(2, body);
      // The same content written differently (key order, an equivalent offset) is the same request.
      const again = await post(2, { details: { emittedAt: '2025-01-01T09:00:00Z', policyNumber: 'P', transactionId: 'T-1' } });
      expect(first.status).to.equal(200);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(await count(org.orgId)).to.equal(1);
    });

    it('with a different body is a 409 and changes nothing', async () => {
      const first = await post(2, { details: { transactionId: 'T-2', policyNumber: 'P' } });
      const conflict = await post(2, { details: { transactionId: 'T-2', policyNumber: 'Q' } });
      expect(conflict.status).to.equal(409);
      expect(await count(org.orgId)).to.equal(1);
      const got = await (await harness()).http.get(`/api/v2/guarantees/${first.body.id}`).set('X-API-Key', org.key);
      expect(got.body.details.policyNumber).to.equal('P');
    });

    it('compares exactly: identifiers differing in case or a trailing space are different transactions', async () => {
      for (const transactionId of ['abc', 'ABC', 'abc ']) expect((await post(2, { details: { transactionId } })).status).to.equal(200);
      expect(await count(org.orgId)).to.equal(3);
    });

    it('is scoped to the organization', async () => {
      const other = await newOrg();
      await post(2, { details: { transactionId: 'SHARED' } });
      const res = await (
        await harness()
      ).http
        .post('/api/v2/guarantees')
        .set('X-API-Key', other.key)
        .send({ details: { transactionId: 'SHARED', policyNumber: 'other' } });
      expect(res.status).to.equal(200);
      expect(res.body.orgId).to.equal(other.orgId);
    });

    it('ends concurrent duplicates in one record, each answered 200 with it, never a 500', async () => {
      const body = { details: { transactionId: 'RACE', policyNumber: 'P' } };
      const results = await Promise.all(Array.from({ length: 12 }, () => post(2, body)));
      expect(results.map((r) => r.status)).to.deep.equal(Array(12).fill(200));
      expect(new Set(results.map((r) => r.body.id as string)).size).to.equal(1);
      expect(await count(org.orgId)).to.equal(1);
    });

    it('ends concurrent conflicting creates in one record and 409s', async () => {
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => post(2, { details: { transactionId: 'RACE2', policyNumber: `P${i}` } })));
      expect(results.filter((r) => r.status === 200)).to.have.length(1);
      expect(results.filter((r) => r.status === 409)).to.have.length(7);
      expect(await count(org.orgId)).to.equal(1);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first response for the same key and body (v1 and v2)', async () => {
      for (const version of [1, 2] as const) {
        const key = `idem-v${version}`;
        const first = await post(version, { details: { policyNumber: 'P' } }, { 'Idempotency-Key': key });
        const again = await post(version, { details: { policyNumber: 'P' } }, { 'Idempotency-Key': key });
        expect(first.status).to.equal(200);
        expect(again.status).to.equal(200);
        expect(again.body).to.deep.equal(first.body);
      }
      expect(await count(org.orgId)).to.equal(2);
    });

    it('is a 409 for the same key with a different body, or on another endpoint', async () => {
      await post(2, { details: { policyNumber: 'P' } }, { 'Idempotency-Key': 'k1' });
      expect((await post(2, { details: { policyNumber: 'Q' } }, { 'Idempotency-Key': 'k1' })).status).to.equal(409);
      expect((await post(1, { details: { policyNumber: 'P' } }, { 'Idempotency-Key': 'k1' })).status).to.equal(409);
      expect(await count(org.orgId)).to.equal(1);
    });

    it('is scoped to the organization and compared exactly', async () => {
      const other = await newOrg();
      await post(2, {}, { 'Idempotency-Key': 'same' });
      await post(2, {}, { 'Idempotency-Key': 'SAME' });
      const theirs = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', other.key).set('Idempotency-Key', 'same').send({});
      expect(theirs.status).to.equal(200);
      expect(await count(org.orgId)).to.equal(2);
      expect(await count(other.orgId)).to.equal(1);
    });

    it('is a 409 while a request with the same key is still running, and taken over once its claim expires', async () => {
      const { db } = await harness();
      const { normalize } = await import('../../src/guarantees/guarantee.service.js');
      const { createGuaranteeV2 } = await import('../../src/guarantees/guarantee.schemas.js');
      const { idempotencyFingerprint, requestHash } = await import('../../src/shared/idempotency.js');
      const content = requestHash(JSON.parse(JSON.stringify(normalize(createGuaranteeV2.parse({ details: { policyNumber: 'P' } })))));
      const hash = idempotencyFingerprint('POST /api/v2/guarantees', content);
      const now = new Date();
      await execute(
        db,
        `INSERT INTO idempotency_keys (org_id, idem_key, request_hash, state, locked_until, created_at, expires_at)
        VALUES ($1, 'busy', $2, 'running', $3, $4, $5)`,
        [org.orgId, hash, new Date(now.getTime() + 60_000), now, new Date(now.getTime() + 86_400_000)],
      );
      expect((await post(2, { details: { policyNumber: 'P' } }, { 'Idempotency-Key': 'busy' })).status).to.equal(409);
      await execute(db, "UPDATE idempotency_keys SET locked_until = $1 WHERE org_id = $2 AND idem_key = 'busy'", [new Date(now.getTime() - 1000), org.orgId]);
      expect((await post(2, { details: { policyNumber: 'P' } }, { 'Idempotency-Key': 'busy' })).status).to.equal(200);
      expect(await count(org.orgId)).to.equal(1);
    });

    it('lets concurrent duplicates create one record, the others replay or 409, never a 500', async () => {
      const results = await Promise.all(Array.from({ length: 10 }, () => post(2, { note: { shared: 'x' } }, { 'Idempotency-Key': 'burst' })));
      for (const r of results) expect([200, 409]).to.include(r.status);
      expect(await count(org.orgId)).to.equal(1);
      const ids = new Set(results.filter((r) => r.status === 200).map((r) => r.body.id as string));
      expect(ids.size).to.equal(1);
    });

    it('does not keep a failed request: the key may be retried with a corrected body', async () => {
      expect((await post(2, { details: { actType: 'WRONG' } }, { 'Idempotency-Key': 'fix-me' })).status).to.equal(400);
      expect((await post(2, { details: { actType: 'OTHER' } }, { 'Idempotency-Key': 'fix-me' })).status).to.equal(200);
    });

    it('expires after 24 hours: an expired key starts afresh', async () => {
      await post(2, {}, { 'Idempotency-Key': 'old' });
      const { db } = await harness();
      await execute(db, "UPDATE idempotency_keys SET expires_at = $1 WHERE org_id = $2 AND idem_key = 'old'", [new Date(Date.now() - 1000), org.orgId]);
      const res = await post(2, { note: { shared: 'new' } }, { 'Idempotency-Key': 'old' });
      expect(res.status).to.equal(200);
      expect(await count(org.orgId)).to.equal(2);
    });

    it('treats values of ignored fields as the same request, whatever they are (even ones JSON cannot hash)', async () => {
      const first = await post(2, { details: { policyNumber: 'P' }, id: 'x' }, { 'Idempotency-Key': 'ignored' });
      const deep = '['.repeat(50_000) + ']'.repeat(50_000);
      const again = await (
        await harness()
      ).http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .set('Idempotency-Key', 'ignored')
        .set('Content-Type', 'application/json')
        .send(`{"details":{"policyNumber":"P"},"id":1e400,"txHash":${deep}}`);
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(first.body);
      expect(await count(org.orgId)).to.equal(1);
    });

    it('refuses a malformed or repeated header', async () => {
      expect((await post(2, {}, { 'Idempotency-Key': 'x'.repeat(256) })).status).to.equal(400);
      const repeated = await (
        await harness()
      ).http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .set('Idempotency-Key', ['a', 'b'] as unknown as string) /* sent as two headers */
        .send({});
      expect(repeated.status).to.equal(400);
      expect(await count(org.orgId)).to.equal(0);
    });
  });
});

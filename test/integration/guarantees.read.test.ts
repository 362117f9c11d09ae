import { expect } from 'chai';
import { harness, newOrg, type TestOrg } from '../support/harness.js';

describe('reading guarantees', () => {
  let org: TestOrg;
  let ids: string[];

  before(async () => {
    org = await newOrg();
    const { http } = await harness();
    ids = [];
    for (let i = 0; i < 25; i++) {
      const res = await http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .send({ details: { transactionId: `T${i}`, policyNumber: `P${i}` } });
      ids.push(res.body.id as string);
    }
  });

  const get = async (path: string, key = org.key) => (await harness()).http.get(path).set('X-API-Key', key);

  describe('GET /api/v{1,2}/guarantees', () => {
    it('defaults to page 1 of 10, newest first, with the exact totalItems', async () => {
      const res = await get('/api/v1/guarantees');
      expect(res.status).to.equal(200);
      expect(res.body.totalItems).to.equal(25);
      expect(res.body.guarantees.map((g: { id: string }) => g.id)).to.deep.equal(ids.slice().reverse().slice(0, 10));
      const created = res.body.guarantees.map((g: { createdAt: string }) => Date.parse(g.createdAt));
      expect(created).to.deep.equal(created.slice().sort((a: number, b: number) => b - a));
    });

    it('walks every page without gaps or repeats, and a page past the end is empty', async () => {
      const seen: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const res = await get(`/api/v2/guarantees?page=${page}&limit=10`);
        seen.push(...res.body.guarantees.map((g: { id: string }) => g.id));
      }
      expect(seen).to.deep.equal(ids.slice().reverse());
      const past = await get('/api/v2/guarantees?page=4&limit=10');
      expect(past.status).to.equal(200);
      expect(past.body).to.deep.equal({ totalItems: 25, guarantees: [] });
      const far = await get('/api/v2/guarantees?page=9007199254740991&limit=100');
      expect(far.body.guarantees).to.deep.equal([]);
    });

    it('answers the v2 shape with transactionId, the v1 shape without', async () => {
      const v2 = await get('/api/v2/guarantees?limit=1');
      const v1 = await get('/api/v1/guarantees?limit=1');
      expect(v2.body.guarantees[0].details.transactionId).to.equal('T24');
      expect(v1.body.guarantees[0].details).to.not.have.property('transactionId');
      expect(v1.body.guarantees[0].id).to.equal(v2.body.guarantees[0].id);
    });

    it('accepts limit 100', async () => {
      const res = await get('/api/v1/guarantees?limit=100');
      expect(res.body.guarantees).to.have.length(25);
    });

    for (const q of [
      'page=0',
      'page=-1',
      'page=1.5',
      'page=abc',
      'page=',
      'limit=0',
      'limit=101',
      'limit=1e2',
      'page=1&page=2',
      'limit=10&limit=10',
      'page=01',
    ]) {
      it(`refuses ${q} with 400`, async () => {
        expect((await get(`/api/v1/guarantees?${q}`)).status).to.equal(400);
        expect((await get(`/api/v2/guarantees?${q}`)).status).to.equal(400);
      });
    }

    it("shows only the caller's organization", async () => {
      const other = await newOrg();
      const res = await get('/api/v2/guarantees', other.key);
      expect(res.body).to.deep.equal({ totalItems: 0, guarantees: [] });
    });
  });

  describe('GET /api/v{1,2}/guarantees/{ID}', () => {
    it('answers one guarantee in each shape', async () => {
      const id = ids[3] as string;
      const v1 = await get(`/api/v1/guarantees/${id}`);
      const v2 = await get(`/api/v2/guarantees/${id}`);
      expect(v1.status).to.equal(200);
      expect(v1.body.id).to.equal(id);
      expect(v1.body.details).to.not.have.property('transactionId');
      expect(v2.body.details.transactionId).to.equal('T3');
      expect(v2.body.details.policyNumber).to.equal('P3');
    });

    it('answers 404 with an empty body for an unknown, malformed or differently-cased id', async () => {
      for (const id of ['00000000-0000-7000-8000-000000000000', 'not-a-uuid', (ids[0] as string).toUpperCase(), `${ids[0]} `, "' OR 1=1 --"]) {
        const res = await get(`/api/v1/guarantees/${encodeURIComponent(id)}`);
        expect(res.status, id).to.equal(404);
        expect(res.text).to.equal('');
      }
    });

    it("answers 404 for another organization's guarantee, exactly as for a missing one", async () => {
      const other = await newOrg();
      for (const v of [1, 2]) {
        const res = await get(`/api/v${v}/guarantees/${ids[0]}`, other.key);
        expect(res.status).to.equal(404);
        expect(res.text).to.equal('');
      }
    });

    it('answers a problem document when asked', async () => {
      const res = await (await harness()).http.get('/api/v2/guarantees/nope').set('X-API-Key', org.key).set('Accept', 'application/problem+json');
      expect(res.status).to.equal(404);
      expect(res.type).to.equal('application/problem+json');
      expect(res.body).to.include({ status: 404, title: 'Not Found', type: 'urn:guarantee-registry:problem:not_found' });
    });
  });
});

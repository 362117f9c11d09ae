import { expect } from 'chai';
import { execute } from '../../src/shared/db/sequelize.js';
import { harness, newOrg, type TestOrg } from '../support/harness.js';

describe('GET /api/v2/file-status/{uuid}', () => {
  let org: TestOrg;
  let key: string;
  beforeEach(async () => {
    org = await newOrg();
    const res = await (await harness()).http.post('/api/v2/presigned-url').set('X-API-Key', org.key).send({ fileType: 'pdf.p7m' });
    key = res.body.key as string;
  });
  const status = async (path: string, apiKey = org.key) => (await harness()).http.get(path).set('X-API-Key', apiKey);

  it('answers In Progress for an issued key, as a JSON string, by UUID or by whole key', async () => {
    const uuid = key.slice(0, 36);
    for (const ref of [uuid, key]) {
      const res = await status(`/api/v2/file-status/${ref}`);
      expect(res.status).to.equal(200);
      expect(res.type).to.equal('application/json');
      expect(res.text).to.equal('"In Progress"');
    }
  });

  it('answers each status the pipeline records', async () => {
    const { db } = await harness();
    for (const s of ['Clean', 'Infected', 'Error', 'Signed']) {
      await execute(db, 'UPDATE files SET status = $1 WHERE object_key = $2', [s, key]);
      expect((await status(`/api/v2/file-status/${key}`)).body).to.equal(s);
    }
  });

  it("answers 404 for an unknown, malformed or differently-cased file, and for another organization's", async () => {
    const other = await newOrg();
    for (const [ref, apiKey] of [
      ['00000000-0000-7000-8000-000000000000', org.key],
      ['nope', org.key],
      [key.toUpperCase(), org.key],
      [`${key.slice(0, 36)}.pdf`, org.key],
      [key, other.key],
      [key.slice(0, 36), other.key],
    ] as const) {
      const res = await status(`/api/v2/file-status/${encodeURIComponent(ref)}`, apiKey);
      expect(res.status, ref).to.equal(404);
      expect(res.text).to.equal('');
    }
  });

  it('answers 400 when the file key is missing, and 401 without an API key', async () => {
    expect((await status('/api/v2/file-status')).status).to.equal(400);
    expect((await status('/api/v2/file-status/')).status).to.equal(400);
    expect((await (await harness()).http.get(`/api/v2/file-status/${key}`)).status).to.equal(401);
  });
});

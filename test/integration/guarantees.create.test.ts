import { expect } from 'chai';
import { harness, issueFile, newOrg, type TestOrg } from '../support/harness.js';
import { execute, select } from '../../src/shared/db/sequelize.js';

const FULL_V2 = {
  details: {
    transactionId: 'TX-0001',
    policyNumber: 'POL-42',
    actType: 'BAIL_ACT',
    checkCode: 'CHK-1',
    emittedAt: '2025-03-01T09:30:00+01:00',
    effectiveAt: '2025-03-02T00:00:00Z',
    expiresAt: '2026-03-02T00:00:00.123Z',
    isFixedExpiry: true,
    cig: '9A1B2C3D4E',
    batchCode: 'B-7',
  },
  economics: { garantedAmount: 150000.5, contractAmount: 3000000, isAutomaticRenewal: false },
  note: { shared: 'Garanzia provvisoria' },
  sign: { emissionAt: '2025-03-01T10:00:00Z' },
};

async function rowsOf(orgId: string) {
  const { db } = await harness();
  return select<{ id: string; seq: string; garanted_amount: string; emitted_at: Date }>(
    db,
    'SELECT id, seq, garanted_amount, emitted_at FROM guarantees WHERE org_id = $1 ORDER BY seq',
    [orgId],
  );
}

describe('POST /api/v{1,2}/guarantees', () => {
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  const post = async (version: 1 | 2, body: unknown, headers: Record<string, string> = {}) =>
    (await harness()).http
      .post(`/api/v${version}/guarantees`)
      .set('X-API-Key', org.key)
      .set(headers)
      .send(body as object);

  it('registers a v2 guarantee, answers it in the v2 shape and stores it', async () => {
    const res = await post(2, FULL_V2);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      details: {
        transactionId: 'TX-0001',
        policyNumber: 'POL-42',
        actType: 'BAIL_ACT',
        checkCode: 'CHK-1',
        emittedAt: '2025-03-01T08:30:00.000Z',
        effectiveAt: '2025-03-02T00:00:00.000Z',
        expiresAt: '2026-03-02T00:00:00.123Z',
        isFixedExpiry: true,
        cig: '9A1B2C3D4E',
        batchCode: 'B-7',
      },
      economics: { garantedAmount: 150000.5, contractAmount: 3000000, isAutomaticRenewal: false },
      note: { shared: 'Garanzia provvisoria' },
      sign: { emissionAt: '2025-03-01T10:00:00.000Z' },
      txHash: null,
      notarizationStatus: 'PENDING',
      docs: [],
      createdAt: res.body.createdAt,
      id: res.body.id,
      orgId: org.orgId,
    });
    expect(res.body.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.now() - Date.parse(res.body.createdAt)).to.be.within(0, 10_000);
    const rows = await rowsOf(org.orgId);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ id: res.body.id, garanted_amount: '150000.50' });
    expect(rows[0]?.emitted_at.toISOString()).to.equal('2025-03-01T08:30:00.000Z');
  });

  it('registers an empty body as a record with defaults: nullable fields null, note "", docs []', async () => {
    const res = await (await harness()).http.post('/api/v1/guarantees').set('X-API-Key', org.key);
    expect(res.status).to.equal(200);
    expect(res.body.details).to.deep.equal({
      actType: null,
      checkCode: null,
      emittedAt: null,
      effectiveAt: null,
      expiresAt: null,
      isFixedExpiry: null,
      cig: null,
      batchCode: null,
    });
    expect(res.body.note).to.deep.equal({ shared: '' });
    expect(res.body.docs).to.deep.equal([]);
    expect(res.body.economics).to.deep.equal({ garantedAmount: null, contractAmount: null, isAutomaticRenewal: null });
  });

  it('stores note.shared null as ""', async () => {
    const res = await post(1, { note: { shared: null } });
    expect(res.status).to.equal(200);
    expect(res.body.note.shared).to.equal('');
  });

  it('ignores the values of server-assigned fields', async () => {
    const res = await post(2, {
      id: 'mine',
      orgId: 'someone-else',
      createdAt: '2000-01-01T00:00:00Z',
      txHash: '0xdead',
      notarizationStatus: 'COMPLETE',
      details: { policyNumber: 'P' },
    });
    expect(res.status).to.equal(200);
    expect(res.body.id).to.not.equal('mine');
    expect(res.body.orgId).to.equal(org.orgId);
    expect(res.body.createdAt).to.not.equal('2000-01-01T00:00:00.000Z');
    expect(res.body.txHash).to.equal(null);
    expect(res.body.notarizationStatus).to.equal('PENDING');
  });

  it('answers the v1 shape without transactionId, and refuses v2-only fields on v1', async () => {
    const ok = await post(1, { details: { policyNumber: 'P1' } });
    expect(ok.status).to.equal(200);
    expect(ok.body.details).to.not.have.property('transactionId');
    const refused = await post(1, { details: { transactionId: 'T' } }, { Accept: 'application/problem+json' });
    expect(refused.status).to.equal(400);
    expect(refused.body.errors).to.deep.equal([{ pointer: '#/details/transactionId', detail: 'is not a known field' }]);
    expect(await rowsOf(org.orgId)).to.have.length(1);
  });

  describe('validation: a 400 that changes nothing', () => {
    const cases: Array<[string, 1 | 2, unknown, string]> = [
      ['an unknown top-level field', 2, { detials: {} }, '#/detials'],
      ['an unknown nested field', 2, { economics: { guaranteedAmount: 1 } }, '#/economics/guaranteedAmount'],
      ['an unknown actType', 2, { details: { actType: 'BAIL' } }, '#/details/actType'],
      ['a date without a time', 2, { details: { emittedAt: '2025-03-31' } }, '#/details/emittedAt'],
      ['a time without an offset', 2, { details: { emittedAt: '2025-03-31T10:00:00' } }, '#/details/emittedAt'],
      ['an impossible calendar date', 2, { details: { effectiveAt: '2025-02-30T10:00:00Z' } }, '#/details/effectiveAt'],
      ['a year beyond 9999 in UTC', 2, { details: { expiresAt: '9999-12-31T23:00:00-05:00' } }, '#/details/expiresAt'],
      ['a date that is not a string', 2, { sign: { emissionAt: 1700000000 } }, '#/sign/emissionAt'],
      ['expiresAt before effectiveAt', 2, { details: { effectiveAt: '2025-03-02T00:00:00Z', expiresAt: '2025-03-01T23:59:59Z' } }, '#/details/expiresAt'],
      ['an amount with three decimals', 2, { economics: { garantedAmount: 10.123 } }, '#/economics/garantedAmount'],
      ['a negative amount', 2, { economics: { contractAmount: -1 } }, '#/economics/contractAmount'],
      ['an amount as a string', 2, { economics: { contractAmount: '100' } }, '#/economics/contractAmount'],
      ['an amount beyond DECIMAL(15,2)', 2, { economics: { contractAmount: 1e16 } }, '#/economics/contractAmount'],
      ['a boolean as a string', 2, { economics: { isAutomaticRenewal: 'true' } }, '#/economics/isAutomaticRenewal'],
      ['a string over 255 characters', 2, { details: { cig: 'x'.repeat(256) } }, '#/details/cig'],
      ['a lone surrogate in a string', 1, { note: { shared: 'ok \ud800 not' } }, '#/note/shared'],
      ['a lone low surrogate in transactionId', 2, { details: { transactionId: '\udc00' } }, '#/details/transactionId'],
      ['a note over 10,000 characters', 2, { note: { shared: 'x'.repeat(10_001) } }, '#/note/shared'],
      ['null for a non-nullable string', 2, { details: { policyNumber: null } }, '#/details/policyNumber'],
      ['null for transactionId', 2, { details: { transactionId: null } }, '#/details/transactionId'],
      ['an empty transactionId', 2, { details: { transactionId: '' } }, '#/details/transactionId'],
      ['null for an object', 2, { details: null }, '#/details'],
      ['docs that is not an array', 2, { docs: {} }, '#/docs'],
      ['a doc without key', 2, { docs: [{ type: 'OTHER' }] }, '#/docs/0/key'],
      ['a doc with an unknown type', 2, { docs: [{ type: 'X', key: 'a.pdf' }] }, '#/docs/0/type'],
      ['more than 50 docs', 2, { docs: Array.from({ length: 51 }, (_, i) => ({ key: `k${i}.pdf` })) }, '#/docs'],
      ['originalFileName on a v1 doc', 1, { docs: [{ key: 'a.pdf', originalFileName: 'a.pdf' }] }, '#/docs/0/originalFileName'],
    ];
    for (const [what, version, body, pointer] of cases) {
      it(`refuses ${what}`, async () => {
        const res = await post(version, body, { Accept: 'application/problem+json' });
        expect(res.status).to.equal(400);
        expect(res.type).to.equal('application/problem+json');
        expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).to.include(pointer);
        expect(await rowsOf(org.orgId)).to.have.length(0);
      });
    }

    it('answers an empty body by default, without a problem document', async () => {
      const res = await post(2, { details: { actType: 'NOPE' } });
      expect(res.status).to.equal(400);
      expect(res.text).to.equal('');
      expect(res.headers['content-length']).to.equal('0');
    });

    it('refuses malformed JSON', async () => {
      const res = await (
        await harness()
      ).http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .set('Content-Type', 'application/json')
        .send('{"details": {');
      expect(res.status).to.equal(400);
      expect(await rowsOf(org.orgId)).to.have.length(0);
    });

    for (const [what, raw] of [
      ['an array', '[]'],
      ['a string', '"x"'],
      ['null', 'null'],
      ['a number', '1'],
    ] as const) {
      it(`refuses a body that is ${what}`, async () => {
        const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key).set('Content-Type', 'application/json').send(raw);
        expect(res.status).to.equal(400);
      });
    }

    it('refuses a body that is not JSON', async () => {
      const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key).set('Content-Type', 'text/plain').send('details=1');
      expect(res.status).to.equal(400);
    });

    it('refuses a body over 1 MiB with 413', async () => {
      const res = await post(2, { note: { shared: 'x'.repeat(1024 * 1024) } });
      expect(res.status).to.equal(413);
      expect(await rowsOf(org.orgId)).to.have.length(0);
    });

    it('refuses more than two decimals without rounding, and keeps two exactly', async () => {
      expect((await post(2, { economics: { garantedAmount: 0.1 + 0.2 } })).status).to.equal(400);
      const ok = await post(2, { economics: { garantedAmount: 0.29, contractAmount: 9_999_999_999_999.99 } });
      expect(ok.status).to.equal(200);
      expect(ok.body.economics).to.include({ garantedAmount: 0.29, contractAmount: 9_999_999_999_999.99 });
    });
  });

  describe('docs', () => {
    it("attaches this organization's files, with originalFileName from the upload and checksum from the scan", async () => {
      const inProgress = await issueFile(org.orgId, { fileName: 'polizza.pdf' });
      const clean = await issueFile(org.orgId, { status: 'Clean', checksum: 'a'.repeat(64), ext: 'pdf.p7m' });
      const res = await post(2, {
        docs: [
          { type: 'BAIL_ACT', key: inProgress },
          { key: clean, originalFileName: 'firmato.pdf.p7m', checksum: 'ignored' },
        ],
      });
      expect(res.status).to.equal(200);
      expect(res.body.docs).to.deep.equal([
        { type: 'BAIL_ACT', key: inProgress, checksum: null, originalFileName: 'polizza.pdf' },
        { key: clean, checksum: 'a'.repeat(64), originalFileName: 'firmato.pdf.p7m' },
      ]);
      const got = await (await harness()).http.get(`/api/v1/guarantees/${res.body.id}`).set('X-API-Key', org.key);
      expect(got.body.docs).to.deep.equal([
        { type: 'BAIL_ACT', key: inProgress, checksum: null },
        { key: clean, checksum: 'a'.repeat(64) },
      ]);
    });

    it("refuses a key never issued, another organization's, one differing only in case, Infected or Error", async () => {
      const other = await newOrg();
      const foreign = await issueFile(other.orgId);
      const mine = await issueFile(org.orgId);
      const infected = await issueFile(org.orgId, { status: 'Infected' });
      const failed = await issueFile(org.orgId, { status: 'Error' });
      for (const key of ['00000000-0000-7000-8000-000000000000.pdf', foreign, mine.toUpperCase(), `${mine} `, infected, failed]) {
        const res = await post(2, { docs: [{ key }] }, { Accept: 'application/problem+json' });
        expect(res.status, key).to.equal(400);
        expect(res.body.errors[0].pointer).to.equal('#/docs/0/key');
      }
      expect(await rowsOf(org.orgId)).to.have.length(0);
    });

    it('refuses the same file twice in one record', async () => {
      const key = await issueFile(org.orgId);
      const res = await post(2, { docs: [{ key }, { key }] }, { Accept: 'application/problem+json' });
      expect(res.status).to.equal(400);
      expect(res.body.errors[0].pointer).to.equal('#/docs/1/key');
    });
  });
});

describe('a registration in one round trip (the organization’s place, the record, its docs and its event in one script)', () => {
  async function eventsOf(orgId: string) {
    const { db } = await harness();
    return select<{ id: string; body: string; created_at: Date; dispatched_at: Date | null }>(
      db,
      "SELECT id, body, created_at, dispatched_at FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.created' ORDER BY created_at, id",
      [orgId],
    );
  }

  it('writes the event the response shows: the same id and createdAt, filled in under the lock, with and without an Idempotency-Key', async () => {
    const org = await newOrg();
    const key = await issueFile(org.orgId, { status: 'Clean', checksum: 'ab'.repeat(32), fileName: 'polizza.pdf' });
    const post = (body: object, headers: Record<string, string> = {}) =>
      harness().then(({ http }) => http.post('/api/v2/guarantees').set('X-API-Key', org.key).set(headers).send(body));
    const plain = await post({ ...FULL_V2, docs: [{ type: 'BAIL_ACT', key }] });
    const claimed = await post({ ...FULL_V2, details: { ...FULL_V2.details, transactionId: 'TX-0002' } }, { 'Idempotency-Key': 'one' });
    expect([plain.status, claimed.status]).to.deep.equal([200, 200]);
    const events = await eventsOf(org.orgId);
    expect(events).to.have.length(2);
    for (const [i, response] of [plain, claimed].entries()) {
      const event = events[i] as { body: string; created_at: Date };
      const body = JSON.parse(event.body) as { type: string; timestamp: string; data: Record<string, unknown> };
      expect(body.data).to.deep.equal(response.body);
      expect(body.timestamp).to.equal(response.body.createdAt);
      expect(event.created_at.toISOString()).to.equal(response.body.createdAt);
      // The record's id and its event's: uuidv7s whose time is createdAt's milliseconds.
      const msOf = (uuid: string) => parseInt(uuid.replace('-', '').slice(0, 12), 16);
      expect(msOf(response.body.id as string)).to.equal(Date.parse(response.body.createdAt as string));
      expect(msOf((events[i] as { id: string }).id)).to.equal(Date.parse(response.body.createdAt as string));
      expect(event.body).to.not.match(/late-(id|at)-/);
    }
    // The organization has no webhook endpoint: no delivery could be made of the script's
    // event, which is written dispatched (the relay never reads it).
    expect(events[0]?.dispatched_at?.toISOString()).to.equal(plain.body.createdAt);
    expect(plain.body.docs[0]).to.include({ key, checksum: 'ab'.repeat(32), originalFileName: 'polizza.pdf' });
    const rows = await rowsOf(org.orgId);
    expect(rows.map((r) => [r.id, Number(r.seq)])).to.deep.equal([
      [plain.body.id, 1],
      [claimed.body.id, 2],
    ]);
    const { db } = await harness();
    const docs = await select<{ guarantee_id: string; file_key: string }>(db, 'SELECT guarantee_id, file_key FROM guarantee_docs WHERE guarantee_id = $1', [
      plain.body.id,
    ]);
    expect(docs).to.deep.equal([{ guarantee_id: plain.body.id, file_key: key }]);
  });

  it('leaves its event to the relay when the organization has an endpoint, which receives it', async () => {
    const org = await newOrg();
    const { http, db } = await harness();
    // An endpoint registered straight in its table (no receiver is needed to see the delivery made).
    await execute(
      db,
      `INSERT INTO webhook_endpoints (id, org_id, url, url_hash, secret_enc, status, created_at, updated_at)
       VALUES (UUID(), $1, 'https://example.com/hook', UNHEX(SHA2(UUID(), 256)), X'00', 'active', NOW(3) - INTERVAL 1 SECOND, NOW(3))`,
      [org.orgId],
    );
    const created = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'W' } });
    expect(created.status).to.equal(200);
    const [event] = await eventsOf(org.orgId);
    expect(JSON.parse(event?.body ?? '{}').data.id).to.equal(created.body.id);
    // Relayed: its delivery to the endpoint is made.
    for (let i = 0; i < 100; i++) {
      const [delivery] = await select<{ n: string }>(db, 'SELECT COUNT(*) AS n FROM webhook_deliveries WHERE event_id = $1', [event?.id]);
      if (Number(delivery?.n) === 1) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect.fail('the event was not relayed to its delivery');
  });

  it('leaves nothing behind when its script fails: no record, no event, no number taken', async () => {
    const org = await newOrg();
    const { http, db } = await harness();
    const first = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { transactionId: 'ONCE', policyNumber: 'A' } });
    expect(first.status).to.equal(200);
    // The same transactionId with other content, raced past the service's read: the script's
    // insert hits the unique index, and its whole transaction rolls back.
    const { createGuaranteeRepository, REGISTRATION } = await import('../../src/guarantees/guarantee.repository.js');
    const { registryPlaceStatements } = await import('../../src/orgs/org.repository.js');
    const { normalize } = await import('../../src/guarantees/guarantee.service.js');
    const repo = createGuaranteeRepository(db);
    const statements = [
      ...repo.registrationStatements(registryPlaceStatements(org.orgId, new Date(), REGISTRATION.ms), {
        orgId: org.orgId,
        requestHash: Buffer.alloc(32),
        idTail: '-7000-8000-000000000000',
        eventIdTail: '-7000-8000-000000000001',
        ...normalize({ details: { transactionId: 'ONCE', policyNumber: 'B' } }),
      }),
    ];
    const failed = await repo.runRegistration(statements).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((failed as { errno?: number } | undefined)?.errno).to.equal(1062);
    expect((await rowsOf(org.orgId)).map((r) => Number(r.seq))).to.deep.equal([1]);
    const list = await http.get('/api/v2/guarantees').set('X-API-Key', org.key);
    expect(list.body.totalItems).to.equal(1);
    expect(await eventsOf(org.orgId)).to.have.length(1);
    const next = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'C' } });
    expect((await rowsOf(org.orgId)).map((r) => [r.id, Number(r.seq)])).to.deep.equal([
      [first.body.id, 1],
      [next.body.id, 2],
    ]);
  });
});

import { expect } from 'chai';
import { createAuditRepository } from '../../src/audit/audit.repository.js';
import { harness, newOrg } from '../support/harness.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createGuaranteeRepository } from '../../src/guarantees/guarantee.repository.js';
import { createGuaranteeService } from '../../src/guarantees/guarantee.service.js';
import { toV2 } from '../../src/guarantees/guarantee.serializer.js';
import { createFileRepository } from '../../src/files/file.repository.js';
import { createOrgRepository } from '../../src/orgs/org.repository.js';
import { createIdempotencyStore } from '../../src/shared/idempotency.js';

describe('registration order across processes', () => {
  it('gives a later registration a later createdAt even from a process whose clock is behind, and lists it first', async () => {
    const { db, http, events } = await harness();
    const org = await newOrg();
    const first = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'first' } });
    // Another API process, its clock an hour behind.
    const behind = createGuaranteeService({
      repo: createGuaranteeRepository(db),
      registry: createOrgRepository(db),
      files: createFileRepository(db, events.outbox),
      idempotency: createIdempotencyStore(db),
      outbox: events.outbox,
      audit: createAuditRepository(db),
      now: () => new Date(Date.now() - 3_600_000),
    });
    const second = await behind.create(org.orgId, { details: { policyNumber: 'second' } }, { respond: toV2 });
    const created = [Date.parse(first.body.createdAt), Date.parse((second.body as { createdAt: string }).createdAt)];
    expect(created[1]).to.equal((created[0] as number) + 1);
    const list = await http.get('/api/v2/guarantees').set('X-API-Key', org.key);
    expect(list.body.guarantees.map((g: { details: { policyNumber: string } }) => g.details.policyNumber)).to.deep.equal(['second', 'first']);
    // createdAt descending, then id descending: the same order as registration.
    const ids = list.body.guarantees.map((g: { id: string }) => g.id);
    expect(ids).to.deep.equal(ids.slice().sort().reverse());
  });
});

describe('Idempotency-Key claims', () => {
  it("let a request that outlived its claim neither record its response nor release the retry's claim", async () => {
    const { db } = await harness();
    const org = await newOrg();
    const store = createIdempotencyStore(db);
    const hash = Buffer.alloc(32, 7);
    const a = await store.claim(org.orgId, 'slow', hash);
    expect(a.kind).to.equal('proceed');
    // A's claim expires; the client's retry B takes it over.
    await execute(db, "UPDATE idempotency_keys SET locked_until = $1 WHERE org_id = $2 AND idem_key = 'slow'", [new Date(Date.now() - 1), org.orgId]);
    const b = await store.claim(org.orgId, 'slow', hash);
    expect(b.kind).to.equal('proceed');
    if (a.kind !== 'proceed' || b.kind !== 'proceed') return;
    expect(b.owner).to.not.equal(a.owner);
    // A finally finishes: it may not record, nor release B's claim.
    let refused: unknown;
    await store.complete(org.orgId, 'slow', a.owner, { status: 200, body: { from: 'A' } }).catch((err: unknown) => {
      refused = err;
    });
    expect((refused as { status?: number } | undefined)?.status).to.equal(409);
    await store.release(org.orgId, 'slow', a.owner);
    await store.complete(org.orgId, 'slow', b.owner, { status: 200, body: { from: 'B' } });
    const [row] = await select<{ response_body: string }>(db, "SELECT response_body FROM idempotency_keys WHERE org_id = $1 AND idem_key = 'slow'", [
      org.orgId,
    ]);
    expect(JSON.parse(row?.response_body ?? 'null')).to.deep.equal({ from: 'B' });
  });

  it('rolls back the record of a create whose claim was taken over meanwhile', async () => {
    const { db } = await harness();
    const org = await newOrg();
    const store = createIdempotencyStore(db);
    // The claim is stolen between the claim and the commit of the create.
    const thief: typeof store = {
      ...store,
      async complete(orgId, key, owner, response, t) {
        await execute(db, "UPDATE idempotency_keys SET owner = 'someone-else' WHERE org_id = $1 AND idem_key = $2", [orgId, key]);
        return store.complete(orgId, key, owner, response, t);
      },
    };
    const { outbox } = (await harness()).events;
    const svc = createGuaranteeService({
      repo: createGuaranteeRepository(db),
      registry: createOrgRepository(db),
      files: createFileRepository(db, outbox),
      idempotency: thief,
      outbox,
      audit: createAuditRepository(db),
    });
    const err = await svc
      .create(org.orgId, { details: { policyNumber: 'P' } }, { respond: toV2, idempotency: { key: 'stolen', scope: 'POST /api/v2/guarantees' } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((err as { status?: number } | undefined)?.status).to.equal(409);
    const [n] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM guarantees WHERE org_id = $1', [org.orgId]);
    expect(Number(n?.n)).to.equal(0);
    const [orgRow] = await select<{ guarantee_count: string }>(db, 'SELECT guarantee_count FROM organizations WHERE id = $1', [org.orgId]);
    expect(Number(orgRow?.guarantee_count)).to.equal(0);
  });
});

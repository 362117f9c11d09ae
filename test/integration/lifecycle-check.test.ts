// The lifecycle check (src/guarantees/lifecycle-check.ts) against the real database, with the
// clock moved by the test: guarantee.expired once per expiry that passes (an extended one
// again), never with automatic renewal or an open claim; guarantee.claim_overdue once per claim
// past its due date, none once settled; a repeated run emits nothing more.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { createLifecycleCheck } from '../../src/guarantees/lifecycle-check.js';
import { harness, newOrg, type TestOrg } from '../support/harness.js';

async function guarantee(org: TestOrg, expiresAt: string, economics: Record<string, unknown> = { garantedAmount: 1000 }): Promise<string> {
  const res = await (
    await harness()
  ).http
    .post('/api/v2/guarantees')
    .set('X-API-Key', org.key)
    .send({ details: { policyNumber: 'P-CHECK', effectiveAt: '2025-01-01T00:00:00Z', expiresAt }, economics });
  expect(res.status).to.equal(200);
  return res.body.id as string;
}

async function amend(org: TestOrg, id: string, body: Record<string, unknown>): Promise<void> {
  const res = await (await harness()).http.post(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key).send(body);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
}

/** The organization's lifecycle events, oldest first: [type, data]. */
async function eventsOf(org: TestOrg): Promise<Array<[string, Record<string, unknown>]>> {
  const { db } = await harness();
  const rows = await select<{ type: string; body: string }>(
    db,
    "SELECT type, body FROM webhook_events WHERE org_id = $1 AND type IN ('guarantee.expired', 'guarantee.claim_overdue') ORDER BY id",
    [org.orgId],
  );
  return rows.map((r) => [r.type, (JSON.parse(r.body) as { data: Record<string, unknown> }).data]);
}

describe('lifecycle: the check emitting expiries and overdue claims', function () {
  this.timeout(30_000);
  let clock: Date;
  let check: ReturnType<typeof createLifecycleCheck>;
  beforeEach(async () => {
    const { db, events } = await harness();
    clock = new Date('2026-01-01T00:00:00Z');
    check = createLifecycleCheck({
      db,
      amendments: createAmendmentRepository(db),
      outbox: events.outbox,
      name: `test-${randomUUID()}`,
      since: new Date('2025-12-31T00:00:00Z'),
      now: () => clock,
    });
  });

  it('emits guarantee.expired once as the expiry passes, and again for an extended one; not with automatic renewal nor while a claim is open', async () => {
    const org = await newOrg();
    const plain = await guarantee(org, '2026-02-01T00:00:00Z');
    const renewed = await guarantee(org, '2026-02-01T00:00:00Z', { garantedAmount: 1000, isAutomaticRenewal: true });
    const claimed = await guarantee(org, '2026-02-01T00:00:00Z');
    await amend(org, claimed, { type: 'CLAIM', claimedAmount: 10, effectiveAt: '2026-01-31T00:00:00Z' });
    await check.run();
    expect(await eventsOf(org)).to.deep.equal([]);

    clock = new Date('2026-02-01T00:00:00.001Z');
    await check.run();
    const first = await eventsOf(org);
    expect(first.map(([type, data]) => [type, data.guaranteeId, data.expiresAt])).to.deep.equal([['guarantee.expired', plain, '2026-02-01T00:00:00.000Z']]);
    expect(first[0]?.[1].state).to.include({ status: 'EXPIRED', lastSeq: 0 });
    expect(renewed).to.be.a('string');

    // Run again, later: nothing more.
    clock = new Date('2026-02-05T00:00:00Z');
    await check.run();
    expect(await eventsOf(org)).to.have.length(1);

    // Extended after it expired: the new expiry, when it passes, is told too.
    await amend(org, plain, { type: 'EXTENSION', expiresAt: '2026-03-01T00:00:00Z', effectiveAt: '2026-02-05T00:00:00Z' });
    clock = new Date('2026-03-02T00:00:00Z');
    await check.run();
    const all = await eventsOf(org);
    expect(all.filter(([type]) => type === 'guarantee.expired').map(([, data]) => [data.guaranteeId, data.expiresAt])).to.deep.equal([
      [plain, '2026-02-01T00:00:00.000Z'],
      [plain, '2026-03-01T00:00:00.000Z'],
    ]);
    // The claimed one never expired meanwhile: its claim, due on 15 February, is overdue instead.
    expect(all.filter(([type]) => type === 'guarantee.claim_overdue').map(([, data]) => data.guaranteeId)).to.deep.equal([claimed]);
  });

  it('emits guarantee.claim_overdue once when a claim passes its due date (15 × 24 h), none for a claim settled in time', async () => {
    const org = await newOrg();
    const late = await guarantee(org, '2030-01-01T00:00:00Z');
    const paid = await guarantee(org, '2030-01-01T00:00:00Z');
    await amend(org, late, { type: 'CLAIM', claimedAmount: 100, effectiveAt: '2026-01-10T12:00:00Z' });
    await amend(org, paid, { type: 'CLAIM', claimedAmount: 100, effectiveAt: '2026-01-10T12:00:00Z' });
    await amend(org, paid, { type: 'CLAIM_SETTLED', paidAmount: 100, effectiveAt: '2026-01-20T00:00:00Z' });

    clock = new Date('2026-01-25T11:59:59Z'); // a second before the due date
    await check.run();
    expect(await eventsOf(org)).to.deep.equal([]);
    clock = new Date('2026-01-25T12:00:00Z');
    await check.run();
    const events = await eventsOf(org);
    expect(events.map(([type, data]) => [type, data.guaranteeId, data.claimDueAt])).to.deep.equal([
      ['guarantee.claim_overdue', late, '2026-01-25T12:00:00.000Z'],
    ]);
    expect(events[0]?.[1].claim).to.deep.equal({ seq: 1, claimedAmount: 100, effectiveAt: '2026-01-10T12:00:00.000Z' });
    clock = new Date('2026-02-01T00:00:00Z');
    await check.run();
    expect(await eventsOf(org)).to.have.length(1);
  });

  it('emits nothing twice when a run is repeated over the same window (a run that failed before moving its window)', async () => {
    const org = await newOrg();
    await guarantee(org, '2026-01-15T00:00:00Z');
    const { db, events } = await harness();
    const name = `test-${randomUUID()}`;
    const at = new Date('2026-01-16T00:00:00Z');
    const again = () =>
      createLifecycleCheck({
        db,
        amendments: createAmendmentRepository(db),
        outbox: events.outbox,
        name,
        since: new Date('2026-01-01T00:00:00Z'),
        now: () => at,
      }).run();
    await again();
    // Its window forgotten, as if the run had failed at its end.
    await execute(db, 'DELETE FROM lifecycle_checks WHERE name = $1', [name]);
    expect(await again()).to.deep.equal({ expired: 0, claimOverdue: 0 });
    expect(await eventsOf(org)).to.have.length(1);
  });
});

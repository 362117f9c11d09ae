// The lifecycle check (src/guarantees/lifecycle-check.ts) against the real database, the
// clock moved by the test (its dates in 2090, away from every other test's): guarantee.expired
// once per expiry that passes (an extended one again), never with automatic renewal or an open
// claim; guarantee.claim_overdue once per claim past its due date, none once settled; what is
// written already late (a backdated claim, a registration already expired) is told at the next
// run; a window looked at twice, or by two runs at once, emits nothing twice; an expiry given
// in Italian time is told at its instant across the change to summer time; the worker's clock
// set back moves no window back. What is told is what the state showed, as recorded at each
// instant, since the check first ran: a lapse undone before the next run (an expiry extended, a
// claim settled after its due date) is told all the same; a guarantee lapsed before the first
// run never is, whatever is recorded after.
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { createAuditRepository } from '../../src/audit/audit.repository.js';
import { createFileRepository } from '../../src/files/file.repository.js';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { createAmendmentService } from '../../src/guarantees/amendment.service.js';
import { createIdempotencyStore } from '../../src/shared/idempotency.js';
import { CLAIM_TERM_MS } from '../../src/guarantees/amendments.js';
import { createLifecycleCheck, OVERLAP_MS } from '../../src/guarantees/lifecycle-check.js';
import { migration as checkStart } from '../../src/shared/db/migrations/0025-lifecycle-check-start.js';
import { harness, newOrg, type TestOrg } from '../support/harness.js';

async function guarantee(org: TestOrg, expiresAt: string, economics: Record<string, unknown> = { garantedAmount: 1000 }): Promise<string> {
  const res = await (
    await harness()
  ).http
    .post('/api/v2/guarantees')
    .set('X-API-Key', org.key)
    .send({ details: { policyNumber: 'P-CHECK', effectiveAt: '2019-01-01T00:00:00Z', expiresAt }, economics });
  expect(res.status).to.equal(200);
  return res.body.id as string;
}

async function amend(org: TestOrg, id: string, body: Record<string, unknown>): Promise<void> {
  const res = await (await harness()).http.post(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key).send(body);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
}

/** The organization's lifecycle events, oldest first: [type, data]. */
async function eventsOf(org: TestOrg, type?: string): Promise<Array<[string, Record<string, unknown>]>> {
  const { db } = await harness();
  const rows = await select<{ type: string; body: string }>(
    db,
    "SELECT type, body FROM webhook_events WHERE org_id = $1 AND type IN ('guarantee.expired', 'guarantee.claim_overdue') ORDER BY id",
    [org.orgId],
  );
  return rows
    .map((r) => [r.type, (JSON.parse(r.body) as { data: Record<string, unknown> }).data] as [string, Record<string, unknown>])
    .filter(([t]) => !type || t === type);
}

/** Resolves once the wall clock is past `at`. */
async function after(at: Date): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, at.getTime() - Date.now() + 20)));
}

describe('lifecycle: the check emitting expiries and overdue claims', function () {
  this.timeout(30_000);
  let clock: Date;
  const checkAt = async (name: string) => {
    const { db, events } = await harness();
    return createLifecycleCheck({
      db,
      amendments: createAmendmentRepository(db),
      outbox: events.outbox,
      logger: createLogger('silent'),
      name,
      now: () => clock,
    });
  };

  it('starts its watermark at its first run, telling nothing of what came before', async () => {
    const org = await newOrg();
    await guarantee(org, '2020-01-01T00:00:00Z');
    clock = new Date();
    const check = await checkAt(`test-${randomUUID()}`);
    expect(await check.run()).to.deep.equal({ expired: 0, claimOverdue: 0, failed: 0 });
    expect(await eventsOf(org)).to.deep.equal([]);
  });

  it('emits guarantee.expired once as the expiry passes, and again for an extended one; not with automatic renewal nor while a claim is open', async () => {
    const org = await newOrg();
    clock = new Date('2090-01-01T00:00:00Z');
    const check = await checkAt(`test-${randomUUID()}`);
    await check.run();
    const plain = await guarantee(org, '2090-02-01T00:00:00Z');
    const renewed = await guarantee(org, '2090-02-01T00:00:00Z', { garantedAmount: 1000, isAutomaticRenewal: true });
    const claimed = await guarantee(org, '2090-02-01T00:00:00Z');
    await amend(org, claimed, { type: 'CLAIM', claimedAmount: 10, effectiveAt: '2090-01-31T00:00:00Z' });
    clock = new Date('2090-01-20T00:00:00Z');
    await check.run();
    expect(await eventsOf(org)).to.deep.equal([]);

    clock = new Date('2090-02-01T00:00:00.001Z');
    await check.run();
    const first = await eventsOf(org);
    expect(first.map(([type, data]) => [type, data.guaranteeId, data.expiresAt])).to.deep.equal([['guarantee.expired', plain, '2090-02-01T00:00:00.000Z']]);
    expect(first[0]?.[1].state).to.include({ status: 'EXPIRED', lastSeq: 0 });
    expect(first.map(([, data]) => data.guaranteeId)).to.not.include.members([renewed, claimed]);

    // Run again, later: nothing more.
    clock = new Date('2090-02-05T00:00:00Z');
    await check.run();
    expect(await eventsOf(org)).to.have.length(1);

    // Extended after it expired: the new expiry, when it passes, is told too.
    await amend(org, plain, { type: 'EXTENSION', expiresAt: '2090-03-01T00:00:00Z', effectiveAt: '2090-02-05T00:00:00Z' });
    clock = new Date('2090-03-02T00:00:00Z');
    await check.run();
    expect((await eventsOf(org, 'guarantee.expired')).map(([, data]) => [data.guaranteeId, data.expiresAt])).to.deep.equal([
      [plain, '2090-02-01T00:00:00.000Z'],
      [plain, '2090-03-01T00:00:00.000Z'],
    ]);
    // The claimed one never expired meanwhile: its claim, due on 15 February, is overdue instead.
    expect((await eventsOf(org, 'guarantee.claim_overdue')).map(([, data]) => data.guaranteeId)).to.deep.equal([claimed]);
  });

  it('emits guarantee.claim_overdue once when a claim passes its due date (15 × 24 h), none for a claim settled in time', async () => {
    const org = await newOrg();
    clock = new Date('2090-01-01T00:00:00Z');
    const check = await checkAt(`test-${randomUUID()}`);
    await check.run();
    const late = await guarantee(org, '2095-01-01T00:00:00Z');
    const paid = await guarantee(org, '2095-01-01T00:00:00Z');
    await amend(org, late, { type: 'CLAIM', claimedAmount: 100, effectiveAt: '2090-01-10T12:00:00Z' });
    await amend(org, paid, { type: 'CLAIM', claimedAmount: 100, effectiveAt: '2090-01-10T12:00:00Z' });
    // Paid on 20 January 2090, recorded then (a payment is never dated ahead of its recording).
    const { db, events: bus } = await harness();
    const atClock = createAmendmentService({
      repo: createAmendmentRepository(db),
      files: createFileRepository(db, bus.outbox),
      outbox: bus.outbox,
      idempotency: createIdempotencyStore(db),
      audit: createAuditRepository(db),
      now: () => clock,
    });
    clock = new Date('2090-01-20T00:00:00Z');
    const settled = await atClock.record(org.orgId, paid, {
      type: 'CLAIM_SETTLED',
      effectiveAt: clock,
      expiresAt: null,
      garantedAmount: null,
      claimedAmount: null,
      paidAmount: 100,
      reason: null,
      docs: [],
    });
    expect(settled.status).to.equal(200);

    clock = new Date('2090-01-25T11:59:59Z'); // a second before the due date
    await check.run();
    expect(await eventsOf(org)).to.deep.equal([]);
    clock = new Date('2090-01-25T12:00:00Z');
    await check.run();
    const events = await eventsOf(org);
    expect(events.map(([type, data]) => [type, data.guaranteeId, data.claimDueAt])).to.deep.equal([
      ['guarantee.claim_overdue', late, '2090-01-25T12:00:00.000Z'],
    ]);
    expect(events[0]?.[1].claim).to.deep.equal({ seq: 1, claimedAmount: 100, effectiveAt: '2090-01-10T12:00:00.000Z' });
    clock = new Date('2090-02-01T00:00:00Z');
    await check.run();
    expect(await eventsOf(org)).to.have.length(1);
  });

  it('tells at the next run what was written already late: a backdated claim, a registration already expired', async () => {
    const org = await newOrg();
    clock = new Date();
    const check = await checkAt(`test-${randomUUID()}`);
    await check.run();
    const expired = await guarantee(org, '2021-06-01T00:00:00Z');
    const claimed = await guarantee(org, '2095-01-01T00:00:00Z');
    await amend(org, claimed, { type: 'CLAIM', claimedAmount: 1, effectiveAt: new Date(Date.now() - 20 * 86_400_000).toISOString() });
    clock = new Date(Date.now() + 1000);
    // (Other guarantees written in the same minutes, in other organizations, are told too.)
    expect(await check.run()).to.include({ failed: 0 });
    expect((await eventsOf(org)).map(([type, data]) => [type, data.guaranteeId])).to.have.deep.members([
      ['guarantee.expired', expired],
      ['guarantee.claim_overdue', claimed],
    ]);
  });

  it('emits nothing twice when a window is looked at again (its overlap, or a run that did not move it)', async () => {
    const org = await newOrg();
    clock = new Date('2091-01-01T00:00:00Z');
    const name = `test-${randomUUID()}`;
    const check = await checkAt(name);
    await check.run();
    await guarantee(org, '2091-01-15T00:00:00Z');
    clock = new Date('2091-01-16T00:00:00Z');
    expect(await check.run()).to.include({ expired: 1 });
    // Its window moved back, as if the run had failed at its end, and again within the overlap.
    const { db } = await harness();
    await execute(db, 'UPDATE lifecycle_checks SET checked_until = $2 WHERE name = $1', [name, new Date('2091-01-01T00:00:00Z')]);
    expect(await check.run()).to.deep.equal({ expired: 0, claimOverdue: 0, failed: 0 });
    clock = new Date(clock.getTime() + OVERLAP_MS / 2);
    expect(await check.run()).to.deep.equal({ expired: 0, claimOverdue: 0, failed: 0 });
    expect(await eventsOf(org)).to.have.length(1);
  });

  it('tells an expiry given in Italian time at its instant across the change to summer time, and once when two runs race', async () => {
    const org = await newOrg();
    const name = `test-${randomUUID()}`;
    clock = new Date('2091-03-20T00:00:00Z');
    await (await checkAt(name)).run();
    // Midnight of 26 March 2091 in Rome, the day after clocks go forward (25 March): 22:00 UTC.
    const id = await guarantee(org, '2091-03-26T00:00:00+02:00');
    clock = new Date('2091-03-25T21:59:59.999Z');
    expect(await (await checkAt(name)).run()).to.include({ expired: 0 });
    clock = new Date('2091-03-25T22:00:00.000Z');
    // Two processes' runs at once (each its own check over the same row): one notice, one event.
    const runs = await Promise.all([(await checkAt(name)).run(), (await checkAt(name)).run()]);
    expect(runs.map((r) => r.expired).sort()).to.deep.equal([0, 1]);
    expect(runs.every((r) => r.failed === 0)).to.equal(true);
    const told = await eventsOf(org, 'guarantee.expired');
    expect(told).to.have.length(1);
    expect(told[0]?.[1]).to.include({ guaranteeId: id, expiresAt: '2091-03-25T22:00:00.000Z' });
  });

  it("survives the worker's clock going back: the window never moves back, nothing is told twice or missed", async () => {
    const org = await newOrg();
    const name = `test-${randomUUID()}`;
    clock = new Date('2091-05-01T12:00:00Z');
    await (await checkAt(name)).run();
    await guarantee(org, '2091-05-01T12:30:00Z');
    clock = new Date('2091-05-01T13:00:00Z');
    expect(await (await checkAt(name)).run()).to.include({ expired: 1 });
    // The clock is set back two hours (a bad NTP step): the run looks at nothing new.
    clock = new Date('2091-05-01T11:00:00Z');
    expect(await (await checkAt(name)).run()).to.deep.equal({ expired: 0, claimOverdue: 0, failed: 0 });
    const { db } = await harness();
    const [row] = await select<{ checked_until: Date }>(db, 'SELECT checked_until FROM lifecycle_checks WHERE name = $1', [name]);
    expect(row?.checked_until.toISOString()).to.equal('2091-05-01T13:00:00.000Z');
    // Back to the right time: an expiry passed meanwhile is told, once; the earlier one not again.
    await guarantee(org, '2091-05-01T13:30:00Z');
    clock = new Date('2091-05-01T14:00:00Z');
    expect(await (await checkAt(name)).run()).to.include({ expired: 1 });
    expect(await eventsOf(org, 'guarantee.expired')).to.have.length(2);
  });

  it('tells a lapse undone before the next run: an expiry extended after it passed, a claim settled after its due date; each with the state now', async () => {
    const org = await newOrg();
    clock = new Date();
    const check = await checkAt(`test-${randomUUID()}`);
    await check.run();
    // Both pass in a second, in real time (amendments are recorded at the wall clock's time).
    const passes = new Date(Date.now() + 1000);
    const extended = await guarantee(org, passes.toISOString());
    const settled = await guarantee(org, '2095-01-01T00:00:00Z');
    await amend(org, settled, { type: 'CLAIM', claimedAmount: 100, effectiveAt: new Date(passes.getTime() - CLAIM_TERM_MS).toISOString() });
    await after(passes);
    await amend(org, extended, { type: 'EXTENSION', expiresAt: '2095-01-01T00:00:00Z', effectiveAt: new Date().toISOString() });
    await amend(org, settled, { type: 'CLAIM_SETTLED', paidAmount: 100, effectiveAt: new Date().toISOString() });
    clock = new Date();
    expect(await check.run()).to.deep.include({ failed: 0 });
    const told = await eventsOf(org);
    expect(told.map(([type, data]) => [type, data.guaranteeId])).to.have.deep.members([
      ['guarantee.expired', extended],
      ['guarantee.claim_overdue', settled],
    ]);
    const expired = (await eventsOf(org, 'guarantee.expired'))[0]?.[1] ?? {};
    const overdue = (await eventsOf(org, 'guarantee.claim_overdue'))[0]?.[1] ?? {};
    expect(expired.expiresAt).to.equal(passes.toISOString());
    expect(expired.state).to.include({ status: 'ACTIVE', expiresAt: '2095-01-01T00:00:00.000Z', lastSeq: 1 });
    expect(overdue).to.deep.include({
      claimDueAt: passes.toISOString(),
      claim: { seq: 1, claimedAmount: 100, effectiveAt: new Date(passes.getTime() - CLAIM_TERM_MS).toISOString() },
    });
    expect(overdue.state).to.include({ status: 'ACTIVE', openClaim: null, garantedAmount: 900, lastSeq: 2 });
    const { db } = await harness();
    const notices = await select<{ guarantee_id: string; kind: string; ref: string }>(
      db,
      'SELECT guarantee_id, kind, ref FROM guarantee_notices WHERE guarantee_id IN ($1, $2) ORDER BY kind',
      [extended, settled],
    );
    expect(notices.map((n) => [n.guarantee_id, n.kind, n.ref])).to.deep.equal([
      [extended, 'expired', passes.toISOString()],
      [settled, 'claim_overdue', '1'],
    ]);
    // The next run tells nothing more.
    clock = new Date(Date.now() + 1000);
    expect(await check.run()).to.deep.equal({ expired: 0, claimOverdue: 0, failed: 0 });
  });

  it('never tells what lapsed before its first run, whatever is recorded after; tells an expiry passed under a claim when the claim is closed after', async () => {
    const org = await newOrg();
    // Lapsed before the check starts: registered expired; a claim overdue.
    const lapsed = await guarantee(org, '2020-01-01T00:00:00Z');
    const overdue = await guarantee(org, '2095-01-01T00:00:00Z');
    await amend(org, overdue, { type: 'CLAIM', claimedAmount: 10, effectiveAt: new Date(Date.now() - 20 * 86_400_000).toISOString() });
    // Its expiry passes before the start too, but under a claim open then.
    const passes = new Date(Date.now() + 1500);
    const underClaim = await guarantee(org, passes.toISOString());
    await amend(org, underClaim, { type: 'CLAIM', claimedAmount: 10, effectiveAt: new Date().toISOString() });
    await after(passes);
    clock = new Date();
    const check = await checkAt(`test-${randomUUID()}`);
    await check.run();

    const effectiveAt = new Date().toISOString();
    await amend(org, lapsed, { type: 'AMOUNT_CHANGE', garantedAmount: 500, effectiveAt });
    await amend(org, lapsed, { type: 'CLAIM', claimedAmount: 10, effectiveAt });
    await amend(org, lapsed, { type: 'CLAIM_REJECTED', effectiveAt });
    await amend(org, lapsed, { type: 'EXTENSION', expiresAt: '2021-01-01T00:00:00Z', effectiveAt });
    await amend(org, overdue, { type: 'AMOUNT_CHANGE', garantedAmount: 500, effectiveAt });
    await amend(org, underClaim, { type: 'CLAIM_REJECTED', effectiveAt });
    clock = new Date(Date.now() + 1000);
    expect(await check.run()).to.include({ failed: 0 });
    const told = await eventsOf(org);
    expect(told.map(([type, data]) => [type, data.guaranteeId, data.expiresAt])).to.deep.equal([['guarantee.expired', underClaim, passes.toISOString()]]);
    expect(told[0]?.[1].state).to.include({ status: 'EXPIRED', openClaim: null, lastSeq: 2 });
    const { db } = await harness();
    const notices = await select<{ guarantee_id: string }>(db, 'SELECT guarantee_id FROM guarantee_notices WHERE guarantee_id IN ($1, $2, $3)', [
      lapsed,
      overdue,
      underClaim,
    ]);
    expect(notices.map((n) => n.guarantee_id)).to.deep.equal([underClaim]);
  });

  it("records the check's start at its first run, never moving it; a row made before that was recorded starts at its watermark", async () => {
    const { db } = await harness();
    const name = `test-${randomUUID()}`;
    const startedAt = async () =>
      (await select<{ started_at: Date }>(db, 'SELECT started_at FROM lifecycle_checks WHERE name = $1', [name]))[0]?.started_at.toISOString();
    clock = new Date('2092-01-01T00:00:00Z');
    await (await checkAt(name)).run();
    clock = new Date('2092-01-02T00:00:00Z');
    await (await checkAt(name)).run();
    expect(await startedAt()).to.equal('2092-01-01T00:00:00.000Z');

    // Before migration 0025 (or by the previous release's code, which names no started_at).
    const q = (sql: string) => db.query(sql, { raw: true });
    const old = `test-${randomUUID()}`;
    await checkStart.down({ context: q });
    try {
      await execute(db, 'INSERT INTO lifecycle_checks (name, checked_until) VALUES ($1, $2)', [old, new Date('2092-02-01T00:00:00Z')]);
    } finally {
      await checkStart.up({ context: q });
    }
    await execute(db, 'INSERT INTO lifecycle_checks (name, checked_until) VALUES ($1, $2)', [`${old}-later`, new Date('2092-03-01T00:00:00Z')]);
    const rows = await select<{ name: string; started_at: Date }>(db, 'SELECT name, started_at FROM lifecycle_checks WHERE name IN ($1, $2) ORDER BY name', [
      old,
      `${old}-later`,
    ]);
    expect(rows.map((r) => [r.name, r.started_at.toISOString()])).to.deep.equal([
      [old, '2092-02-01T00:00:00.000Z'],
      [`${old}-later`, '2092-03-01T00:00:00.000Z'],
    ]);
  });
});

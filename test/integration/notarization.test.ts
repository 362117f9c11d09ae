import { spawnSync } from 'node:child_process';
import { expectLogIntact, testSequencer } from '../support/log.js';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { startWorkers } from '../../workers/index.js';
import { createGuaranteeRepository } from '../../src/guarantees/guarantee.repository.js';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import type { Anchor } from '../../src/notarization/anchor.js';
import { createLedgerAnchor, GENESIS_HASH, ledgerEntryHash, type LedgerEntry } from '../../src/notarization/ledger.anchor.js';
import { createNotarizationRepository } from '../../src/notarization/notarization.repository.js';
import { createNotarizationService, NOTARY_LOCK, type CycleResult } from '../../src/notarization/notarization.service.js';
import { verifyProof } from '../../src/notarization/proof.js';
import { databaseLockName, execute, select, type Sequelize } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { configWith, eventually, extraDb, harness, issueFile, newOrg, type TestOrg } from '../support/harness.js';
import { receiver } from '../support/receiver.js';
import { entry as processEntry } from '../support/entry.js';

const checksum = (s: string) => createHash('sha256').update(s).digest('hex');

async function notary(opts: { batchSize?: number; anchor?: Anchor; lockDb?: Sequelize; guarantees?: ReturnType<typeof createGuaranteeRepository> } = {}) {
  const { db, events } = await harness();
  return createNotarizationService({
    repo: createNotarizationRepository(db, opts.lockDb ?? db),
    guarantees: opts.guarantees ?? createGuaranteeRepository(db),
    amendments: createAmendmentRepository(db),
    outbox: events.outbox,
    anchor: opts.anchor ?? createLedgerAnchor(db),
    sequencer: testSequencer(db),
    batchSize: opts.batchSize ?? 1000,
    logger: createLogger('silent'),
  });
}

/** One cycle; waits for the lock if another process's cycle holds it. */
async function cycle(service: Awaited<ReturnType<typeof notary>>): Promise<CycleResult> {
  return eventually('a notarization cycle to run', () => service.cycle(), 10_000);
}

async function create(org: TestOrg, body: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
  const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key).send(body);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body as Record<string, unknown>;
}

async function read(org: TestOrg, id: string, suffix = ''): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await (await harness()).http.get(`/api/v2/guarantees/${id}${suffix}`).set('X-API-Key', org.key);
  return { status: res.status, body: res.body as Record<string, unknown> };
}

async function cleanFile(org: TestOrg, name = 'polizza.pdf'): Promise<string> {
  return issueFile(org.orgId, { status: 'Clean', checksum: checksum(`${name}-${Math.random()}`), fileName: name });
}

describe('notarization with the embedded ledger', function () {
  this.timeout(30_000);

  it("notarizes a record with clean docs: COMPLETE, the ledger entry's hash as txHash, docs notarizedAt, a proof that verifies offline", async () => {
    const org = await newOrg();
    const key = await cleanFile(org);
    const created = await create(org, {
      details: { transactionId: 'N-1', actType: 'BAIL_ACT' },
      economics: { garantedAmount: 1234.5 },
      docs: [{ type: 'BAIL_ACT', key }],
    });
    expect(created.notarizationStatus).to.equal('PENDING');
    expect((await read(org, created.id as string, '/proof')).body).to.deep.equal({ guaranteeId: created.id, notarizationStatus: 'PENDING' });

    await cycle(await notary());
    const { body: record } = await read(org, created.id as string);
    expect(record.notarizationStatus).to.equal('COMPLETE');
    const proof = (await read(org, created.id as string, '/proof')).body as {
      anchor: { kind: string; txHash: string; anchoredAt: string; entry: LedgerEntry };
      root: string;
    };
    expect(proof.anchor.kind).to.equal('ledger');
    expect(record.txHash).to.equal(proof.anchor.txHash);
    expect(ledgerEntryHash(proof.anchor.entry)).to.equal(proof.anchor.txHash);
    expect(proof.anchor.entry.root).to.equal(proof.root);
    expect((record.docs as Array<{ notarizedAt?: string }>)[0]?.notarizedAt).to.equal(proof.anchor.anchoredAt);
    const verdict = verifyProof(record, proof);
    expect(verdict.checks.filter((c) => !c.ok)).to.deep.equal([]);
    expect(verdict.ok).to.equal(true);
    // The v1 shape shows it too, without the v2-only fields.
    const v1 = await (await harness()).http.get(`/api/v1/guarantees/${created.id as string}`).set('X-API-Key', org.key);
    expect(v1.body).to.include({ notarizationStatus: 'COMPLETE', txHash: proof.anchor.txHash });
  });

  it("batches: records share a root and an anchor per batch, every record's proof verifies, and the ledger is a chain", async () => {
    const org = await newOrg();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++)
      ids.push((await create(org, { details: { transactionId: `B-${i}` }, docs: [{ key: await cleanFile(org, `d${i}.pdf`) }] })).id as string);
    const result = await cycle(await notary({ batchSize: 3 }));
    expect(result.batches).to.be.at.least(3);
    const proofs = await Promise.all(
      ids.map(async (id) => (await read(org, id, '/proof')).body as { root: string; batchSize: number; anchor: { txHash: string; entry: LedgerEntry } }),
    );
    for (const [i, id] of ids.entries()) {
      const p = proofs[i] as (typeof proofs)[number];
      expect(p.batchSize).to.be.at.most(3);
      expect(verifyProof((await read(org, id)).body, p).ok, `record ${i}`).to.equal(true);
    }
    const roots = new Map<string, string>();
    for (const p of proofs) {
      if (roots.has(p.root)) expect(roots.get(p.root)).to.equal(p.anchor.txHash);
      roots.set(p.root, p.anchor.txHash);
    }
    expect(roots.size).to.be.at.least(3);
    // Each entry names the one before it; the first names the genesis hash.
    const { db } = await harness();
    const chain = await select<{ seq: number; prev_hash: string; entry_hash: string }>(
      db,
      'SELECT seq, prev_hash, entry_hash FROM notarization_ledger ORDER BY seq',
      [],
    );
    chain.forEach((e, i) => expect(e.prev_hash).to.equal(i === 0 ? GENESIS_HASH : chain[i - 1]?.entry_hash));
    expect(await createLedgerAnchor(db).check(proofs[0]?.anchor.txHash as string)).to.include({ intact: true });
    // One guarantee.notarized per record, each with its own id and its own record.
    const events = await select<{ id: string; body: string }>(db, "SELECT id, body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.notarized'", [
      org.orgId,
    ]);
    expect(events.map((e) => (JSON.parse(e.body) as { data: { id: string } }).data.id).sort()).to.deep.equal([...ids].sort());
    expect(new Set(events.map((e) => e.id)).size).to.equal(ids.length);
  });

  it('waits for docs still In Progress, then includes the checksum the scan found', async () => {
    const org = await newOrg();
    const key = await issueFile(org.orgId, { fileName: 'later.pdf' });
    const created = await create(org, { docs: [{ key }] });
    const service = await notary();
    await cycle(service);
    expect((await read(org, created.id as string)).body).to.include({ notarizationStatus: 'PENDING', txHash: null });
    const { db } = await harness();
    const sum = checksum('the scanned bytes');
    await execute(db, "UPDATE files SET status = 'Signed', checksum = $2 WHERE object_key = $1", [key, sum]);
    await cycle(service);
    const { body: record } = await read(org, created.id as string);
    expect(record.notarizationStatus).to.equal('COMPLETE');
    expect((record.docs as Array<{ checksum: string }>)[0]?.checksum).to.equal(sum);
    expect(verifyProof(record, (await read(org, created.id as string, '/proof')).body).ok).to.equal(true);
  });

  for (const status of ['Infected', 'Error'] as const) {
    it(`never notarizes a record whose doc ends ${status}: PENDING with the reason in v2, and guarantee.notarization_blocked`, async () => {
      const org = await newOrg();
      const good = await cleanFile(org);
      const bad = await issueFile(org.orgId);
      const created = await create(org, { docs: [{ key: good }, { key: bad }] });
      const { db } = await harness();
      await execute(db, 'UPDATE files SET status = $2 WHERE object_key = $1', [bad, status]);
      const service = await notary();
      await cycle(service);
      const { body: record } = await read(org, created.id as string);
      expect(record).to.include({ notarizationStatus: 'PENDING', txHash: null });
      expect(record.notarizationReason).to.equal(`Doc ${bad} is ${status}: the record will not be notarized.`);
      const v1 = await (await harness()).http.get(`/api/v1/guarantees/${created.id as string}`).set('X-API-Key', org.key);
      expect(v1.body).to.not.have.property('notarizationReason');
      expect((await read(org, created.id as string, '/proof')).body).to.deep.equal({
        guaranteeId: created.id,
        notarizationStatus: 'PENDING',
        reason: record.notarizationReason,
      });
      const events = await select<{ type: string; body: string }>(
        db,
        "SELECT type, body FROM webhook_events WHERE org_id = $1 AND type LIKE 'guarantee.notari%'",
        [org.orgId],
      );
      expect(events.map((e) => e.type)).to.deep.equal(['guarantee.notarization_blocked']);
      expect(JSON.parse(events[0]?.body ?? '{}').data).to.include({ id: created.id, notarizationReason: record.notarizationReason });
      // Blocked for ever: even if the file were later judged clean, later cycles leave it.
      await execute(db, "UPDATE files SET status = 'Clean', checksum = $2 WHERE object_key = $1", [bad, checksum('x')]);
      await cycle(service);
      expect((await read(org, created.id as string)).body).to.include({ notarizationStatus: 'PENDING' });
    });
  }

  it('writes guarantee.notarized with the record as notarized (v2 shape), in the transaction that completes it', async () => {
    const org = await newOrg();
    const created = await create(org, { details: { transactionId: 'EV-1' } });
    await cycle(await notary());
    const { db } = await harness();
    const events = await select<{ type: string; body: string }>(
      db,
      "SELECT type, body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.notarized'",
      [org.orgId],
    );
    expect(events).to.have.length(1);
    const data = JSON.parse(events[0]?.body ?? '{}').data as Record<string, unknown>;
    expect(data).to.deep.equal((await read(org, created.id as string)).body);
  });

  it('recovers a batch anchored but not recorded (the worker died in between): anchored once, recorded once', async () => {
    const org = await newOrg();
    const created = await create(org, { details: { transactionId: 'CRASH-1' } });
    const { db } = await harness();
    const ledger = createLedgerAnchor(db);
    const dying: Anchor = {
      ...ledger,
      submit: async (batch) => {
        await ledger.submit(batch);
        throw new Error('the worker died after anchoring');
      },
    };
    let failed: unknown;
    try {
      await cycle(await notary({ anchor: dying }));
    } catch (err) {
      failed = err;
    }
    expect((failed as Error | undefined)?.message).to.equal('the worker died after anchoring');
    const [batch] = await select<{ id: number; state: string }>(
      db,
      'SELECT b.id, b.state FROM notarization_batches b JOIN notarization_proofs p ON p.batch_id = b.id WHERE p.guarantee_id = $1',
      [created.id],
    );
    expect(batch?.state).to.equal('sealed');
    expect((await read(org, created.id as string)).body).to.include({ notarizationStatus: 'PENDING' });

    await cycle(await notary());
    const entries = await select<{ entry_hash: string }>(db, 'SELECT entry_hash FROM notarization_ledger WHERE batch_id = $1', [batch?.id]);
    expect(entries).to.have.length(1);
    const { body: record } = await read(org, created.id as string);
    expect(record).to.include({ notarizationStatus: 'COMPLETE', txHash: entries[0]?.entry_hash });
    expect(verifyProof(record, (await read(org, created.id as string, '/proof')).body).ok).to.equal(true);
    const notarized = await select<{ n: number }>(db, "SELECT COUNT(*) AS n FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.notarized'", [
      org.orgId,
    ]);
    expect(Number(notarized[0]?.n)).to.equal(1);
    // Its leaf went into the transparency log with the seal, once.
    await expectLogIntact(db);
  });

  it('a batch the anchor keeps refusing: the cycle says so (a failed job), still blocks what is to be blocked, seals nothing behind it, and resumes later', async () => {
    const org = await newOrg();
    const first = await create(org, { details: { transactionId: 'STUCK-1' } });
    const { db } = await harness();
    const ledger = createLedgerAnchor(db);
    const refusing: Anchor = { ...ledger, submit: () => Promise.reject(new Error('the node refused it')) };
    let failed: unknown;
    try {
      await cycle(await notary({ anchor: refusing }));
    } catch (err) {
      failed = err;
    }
    expect((failed as Error | undefined)?.message).to.equal('the node refused it');
    const second = await create(org, { details: { transactionId: 'STUCK-2' } });
    const bad = await issueFile(org.orgId);
    const blocked = await create(org, { docs: [{ key: bad }] });
    await execute(db, "UPDATE files SET status = 'Infected' WHERE object_key = $1", [bad]);
    failed = undefined;
    try {
      await cycle(await notary({ anchor: refusing }));
    } catch (err) {
      failed = err;
    }
    expect((failed as Error | undefined)?.message).to.match(/^notarization waits for \d+ batch\(es\): batch \d+: the node refused it/);
    expect((await read(org, blocked.id as string)).body.notarizationReason).to.be.a('string');
    const [state] = await select<{ notary_state: string }>(db, 'SELECT notary_state FROM guarantees WHERE id = $1', [second.id]);
    expect(state?.notary_state).to.equal('waiting');
    await cycle(await notary());
    for (const g of [first, second]) expect((await read(org, g.id as string)).body.notarizationStatus).to.equal('COMPLETE');
  });

  it("stops before anchoring when its lock's connection was killed mid-cycle (another notarizer may have taken over)", async () => {
    const org = await newOrg();
    const created = await create(org, { details: { transactionId: 'LOCK-1' } });
    const { db, config } = await harness();
    const lockDb = extraDb(config.DATABASE_URL);
    const real = createGuaranteeRepository(db);
    // While the cycle reads the records to batch, an operator (or a timeout) kills the lock's connection.
    const killing = {
      ...real,
      findByIds: async (ids: readonly string[]) => {
        const [holder] = await select<{ id: number | null }>(db, 'SELECT IS_USED_LOCK($1) AS id', [databaseLockName(db, NOTARY_LOCK)]);
        if (holder?.id) await execute(db, `KILL ${Number(holder.id)}`, []);
        return real.findByIds(ids);
      },
    };
    const entriesBefore = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM notarization_ledger', []);
    let failed: unknown;
    try {
      await cycle(await notary({ lockDb, guarantees: killing }));
    } catch (err) {
      failed = err;
    }
    expect(failed, 'the cycle must fail').to.be.instanceOf(Error);
    const [state] = await select<{ notary_state: string }>(db, 'SELECT notary_state FROM guarantees WHERE id = $1', [created.id]);
    expect(state?.notary_state).to.equal('waiting');
    const entriesAfter = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM notarization_ledger', []);
    expect(Number(entriesAfter[0]?.n)).to.equal(Number(entriesBefore[0]?.n));
    await cycle(await notary());
    expect((await read(org, created.id as string)).body.notarizationStatus).to.equal('COMPLETE');
  });

  it('runs one cycle at a time across processes (a second one finds the lock taken and does nothing)', async () => {
    const { db } = await harness();
    const service = await notary();
    const repo = createNotarizationRepository(db);
    const inner = await repo.exclusive(NOTARY_LOCK, () => service.cycle());
    expect(inner).to.equal(undefined);
  });

  it("scopes its lock to the database: another database's notarizer on the same server is not held up, this one's is", async () => {
    const { db, config } = await harness();
    const url = new URL(config.DATABASE_URL);
    const otherName = `${url.pathname.slice(1)}_lockscope`;
    await execute(db, `CREATE DATABASE IF NOT EXISTS \`${otherName}\``, []);
    url.pathname = `/${otherName}`;
    const other = extraDb(url.toString());
    const same = extraDb(config.DATABASE_URL);
    try {
      const outcome = await createNotarizationRepository(db).exclusive(NOTARY_LOCK, async () => ({
        otherDatabase: await createNotarizationRepository(other).exclusive(NOTARY_LOCK, () => Promise.resolve('ran')),
        sameDatabase: await createNotarizationRepository(same).exclusive(NOTARY_LOCK, () => Promise.resolve('ran')),
      }));
      expect(outcome).to.deep.equal({ otherDatabase: 'ran', sameDatabase: undefined });
      expect(databaseLockName(db, NOTARY_LOCK)).to.equal(`${NOTARY_LOCK}:${config.DATABASE_URL.split('/').pop()?.split('?')[0]}`);
      // A database name too long for a lock's 64 characters: its digest, distinct per database.
      const long = (n: string) => ({ getDatabaseName: () => n }) as unknown as Sequelize;
      const [a, b] = [databaseLockName(long('d'.repeat(64)), NOTARY_LOCK), databaseLockName(long(`${'d'.repeat(63)}e`), NOTARY_LOCK)];
      expect([a.length <= 64, b.length <= 64, a !== b, a.startsWith(`${NOTARY_LOCK}:`)]).to.deep.equal([true, true, true, true]);
    } finally {
      await execute(db, `DROP DATABASE IF EXISTS \`${otherName}\``, []);
    }
  });

  it("answers 404 for another organization's proof, and for an unknown id", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const created = await create(org);
    await cycle(await notary());
    expect((await read(org, created.id as string, '/proof')).status).to.equal(200);
    expect((await read(other, created.id as string, '/proof')).status).to.equal(404);
    expect((await read(org, '01a2063e-2aeb-7015-89dd-221cf9156a3c', '/proof')).status).to.equal(404);
    expect((await read(org, 'not-an-id', '/proof')).status).to.equal(404);
  });

  it("through the worker process's notarization worker: a record reaches COMPLETE on its own", async () => {
    const org = await newOrg();
    const created = await create(org, { details: { transactionId: 'W-1' } });
    const workers = await startWorkers(['notarization'], { config: configWith({ NOTARIZATION_INTERVAL_MS: '200' }), logger: createLogger('silent') });
    try {
      await eventually('the record to be notarized', async () => (await read(org, created.id as string)).body.notarizationStatus === 'COMPLETE', 15_000);
    } finally {
      await workers.close();
    }
  });
});

describe('notarization events at a webhook receiver', function () {
  this.timeout(30_000);

  it('an endpoint receives guarantee.notarized, signed, with the record as notarized; and guarantee.notarization_blocked', async () => {
    const org = await newOrg();
    const hook = await receiver('/notary');
    const { http } = await harness();
    const reg = await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: hook.url });
    expect(reg.status).to.equal(200);
    const good = await create(org, { details: { transactionId: 'HOOK-1' } });
    const bad = await issueFile(org.orgId);
    const blocked = await create(org, { docs: [{ key: bad }] });
    const { db } = await harness();
    await execute(db, "UPDATE files SET status = 'Error' WHERE object_key = $1", [bad]);
    const workers = await startWorkers(['webhooks', 'notarization'], {
      config: configWith({ NOTARIZATION_INTERVAL_MS: '200', WEBHOOK_RETRY_SCHEDULE: '0.2,0.3' }),
      logger: createLogger('silent'),
    });
    try {
      const byType = () => {
        const events = hook.received.map(
          (r) => new Webhook(reg.body.secret as string).verify(r.body, r.headers as Record<string, string>) as { type: string; data: { id: string } },
        );
        return new Map(events.map((e) => [`${e.type} ${e.data.id}`, e]));
      };
      const seen = await eventually(
        'both notarization events at the receiver',
        () => {
          const m = byType();
          return m.has(`guarantee.notarized ${good.id as string}`) && m.has(`guarantee.notarization_blocked ${blocked.id as string}`) && m;
        },
        20_000,
      );
      const notarized = seen.get(`guarantee.notarized ${good.id as string}`)?.data as unknown as Record<string, unknown>;
      expect(notarized).to.deep.equal((await read(org, good.id as string)).body);
      expect(notarized.notarizationStatus).to.equal('COMPLETE');
    } finally {
      await workers.close();
      await hook.close();
    }
  });
});

describe('proof verification: tampering with anything breaks it', function () {
  this.timeout(60_000);
  let record: Record<string, unknown>;
  let proof: Record<string, unknown>;

  before(async () => {
    const org = await newOrg();
    const docs = [{ type: 'BAIL_ACT', key: await cleanFile(org, 'a.pdf') }, { key: await cleanFile(org, 'b.pdf') }];
    const created = await create(org, {
      details: {
        transactionId: 'T-1',
        policyNumber: 'P',
        actType: 'OTHER',
        checkCode: 'C',
        emittedAt: '2025-01-01T00:00:00Z',
        effectiveAt: '2025-01-02T00:00:00Z',
        expiresAt: '2026-01-01T00:00:00Z',
        isFixedExpiry: true,
        cig: 'CIG',
        batchCode: 'BC',
      },
      economics: { garantedAmount: 1000, contractAmount: 20000.99, isAutomaticRenewal: false },
      note: { shared: 'nota' },
      sign: { emissionAt: '2025-01-01T10:00:00Z' },
      docs,
    });
    // Two more records in the same batch, so that the path has steps.
    await create(org);
    await create(org);
    await cycle(await notary());
    record = (await read(org, created.id as string)).body;
    proof = (await read(org, created.id as string, '/proof')).body;
    expect(verifyProof(record, proof).ok).to.equal(true);
  });

  const set = (obj: Record<string, unknown>, path: string, value: unknown) => {
    const parts = path.split('.');
    let at: Record<string, unknown> = obj;
    for (const p of parts.slice(0, -1)) at = at[p] as Record<string, unknown>;
    at[parts[parts.length - 1] as string] = value;
  };

  it('any field of the record', () => {
    const changes: Array<[string, unknown]> = [
      ['details.transactionId', 'T-2'],
      ['details.policyNumber', 'Q'],
      ['details.actType', 'BAIL_ACT'],
      ['details.checkCode', 'D'],
      ['details.emittedAt', '2025-01-01T00:00:00.001Z'],
      ['details.effectiveAt', '2025-01-03T00:00:00.000Z'],
      ['details.expiresAt', null],
      ['details.isFixedExpiry', false],
      ['details.cig', 'CIG2'],
      ['details.batchCode', null],
      ['economics.garantedAmount', 1000.01],
      ['economics.contractAmount', 20000.9],
      ['economics.isAutomaticRenewal', null],
      ['note.shared', 'Nota'],
      ['sign.emissionAt', null],
      ['createdAt', '2020-01-01T00:00:00.000Z'],
      ['orgId', '01a2063d-fd0d-7406-bcb2-977977e358c8'],
      ['docs.0.checksum', 'ab'.repeat(32)],
      ['docs.1.key', 'other.pdf'],
      ['docs.0.type', 'OTHER'],
      ['docs.0.originalFileName', 'x.pdf'],
      ['txHash', 'f'.repeat(64)],
    ];
    for (const [path, value] of changes) {
      const tampered = structuredClone(record);
      set(tampered, path, value);
      expect(verifyProof(tampered, proof).ok, path).to.equal(false);
    }
    const fewerDocs = structuredClone(record);
    (fewerDocs.docs as unknown[]).pop();
    expect(verifyProof(fewerDocs, proof).ok).to.equal(false);
  });

  it('any part of the proof', () => {
    const changes: Array<[string, unknown]> = [
      ['digest', 'ab'.repeat(32)],
      ['root', 'ab'.repeat(32)],
      ['path.0.hash', 'ab'.repeat(32)],
      ['path.0.side', 'left'],
      ['anchor.txHash', 'ab'.repeat(32)],
      ['anchor.entry.root', 'ab'.repeat(32)],
      ['anchor.entry.prevHash', 'ab'.repeat(32)],
      ['anchor.entry.seq', 999999],
      ['anchor.entry.recordedAt', '2020-01-01T00:00:00.000Z'],
      ['guaranteeId', 'x'],
      ['leafIndex', 2],
      ['batchSize', 1000],
      ['anchor.entry.size', 1000],
    ];
    for (const [path, value] of changes) {
      const tampered = structuredClone(proof);
      if (path === 'path.0.side') set(tampered, path, (proof.path as Array<{ side: string }>)[0]?.side === 'left' ? 'right' : 'left');
      else set(tampered, path, value);
      expect(verifyProof(record, tampered).ok, path).to.equal(false);
    }
    expect(verifyProof(record, { ...proof, path: [] }).ok).to.equal(false);
  });

  it('npm run cli -- verify: verified for the real pair (also against the ledger), NOT verified for a tampered one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'verify-'));
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ guarantee: record, proof }));
    const run = (...args: string[]) => spawnSync(process.execPath, [...processEntry('src/cli.ts'), 'verify', ...args], { encoding: 'utf8', env: process.env });
    const ok = run(good);
    expect(ok.status, ok.stderr).to.equal(0);
    expect(ok.stdout).to.equal('verified\n');
    expect(ok.stderr).to.include("ok   the ledger's chain from this entry to its head is intact");
    // Two files work too, and offline (no database configured) the proof still holds.
    writeFileSync(join(dir, 'g.json'), JSON.stringify(record));
    writeFileSync(join(dir, 'p.json'), JSON.stringify(proof));
    const offline = spawnSync(process.execPath, [...processEntry('src/cli.ts'), 'verify', join(dir, 'g.json'), join(dir, 'p.json')], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    expect(offline.status, offline.stderr).to.equal(3);
    expect(offline.stdout).to.equal('verified offline only\n');
    expect(offline.stderr).to.include('no database configured');
    const tampered = join(dir, 'bad.json');
    writeFileSync(tampered, JSON.stringify({ guarantee: { ...record, note: { shared: 'changed' } }, proof }));
    const bad = run(tampered);
    expect(bad.status).to.equal(1);
    expect(bad.stdout).to.equal('NOT verified\n');
    expect(bad.stderr).to.include("FAIL the guarantee hashes to the proof's digest");
    expect(run(join(dir, 'missing.json')).status).to.equal(2);
    // A self-made ledger entry holding the root is consistent offline, but not in the ledger.
    const entry = { ...(proof.anchor as { entry: LedgerEntry }).entry, seq: 424242, prevHash: 'cd'.repeat(32) };
    const forgedProof = { ...proof, anchor: { ...(proof.anchor as object), entry, txHash: ledgerEntryHash(entry) } };
    const forgedRecord = { ...record, txHash: ledgerEntryHash(entry) };
    expect(verifyProof(forgedRecord, forgedProof).ok).to.equal(true);
    const forged = join(dir, 'forged.json');
    writeFileSync(forged, JSON.stringify({ guarantee: forgedRecord, proof: forgedProof }));
    const refused = run(forged);
    expect(refused.status, refused.stderr).to.equal(1);
    expect(refused.stderr).to.include('FAIL the ledger holds an entry with this hash');
  });

  it('the ledger check finds an entry rewritten in the database (whoever controls it could rewrite them all, though)', async () => {
    const { db } = await harness();
    const txHash = (proof.anchor as { txHash: string }).txHash;
    const [row] = await select<{ seq: number; root: string }>(db, 'SELECT seq, root FROM notarization_ledger WHERE entry_hash = $1', [txHash]);
    await execute(db, 'UPDATE notarization_ledger SET root = $2 WHERE seq = $1', [row?.seq, 'ab'.repeat(32)]);
    try {
      const found = await createLedgerAnchor(db).check(txHash);
      expect(found).to.include({ intact: false });
    } finally {
      await execute(db, 'UPDATE notarization_ledger SET root = $2 WHERE seq = $1', [row?.seq, row?.root]);
    }
  });
});

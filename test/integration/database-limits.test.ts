import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { appWith, harness, newOrg } from '../support/harness.js';
import { createSequelize, execute, leanTransaction, select, type Sequelize } from '../../src/shared/db/sequelize.js';

describe('database time limits', function () {
  this.timeout(30_000);
  const dbs: Sequelize[] = [];
  const limited = (statementTimeoutMs: number, clientGraceMs?: number) => {
    const db = createSequelize({ url: process.env.DATABASE_URL as string, poolMax: 2, statementTimeoutMs, clientGraceMs });
    dbs.push(db);
    return db;
  };
  after(async () => { await Promise.all(dbs.map((db) => db.close())); });

  it('answers 503 within the limit while the organization is locked, and registers once it is free', async () => {
    const org = await newOrg();
    const { db } = await harness();
    const http = await appWith({}, limited(1000));
    const holder = await db.transaction();
    try {
      await select(db, 'SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [org.orgId], holder);
      const started = Date.now();
      const res = await http.post('/api/v2/guarantees').set('X-API-Key', org.key).send({ details: { policyNumber: 'P' } });
      expect(res.status).to.equal(503);
      expect(res.headers['retry-after']).to.equal('5');
      expect(Date.now() - started).to.be.below(5000);
    } finally {
      await holder.rollback();
    }
    const again = await http.post('/api/v2/guarantees').set('X-API-Key', org.key).send({ details: { policyNumber: 'P' } });
    expect(again.status).to.equal(200);
  });

  // Only where the test run started MariaDB itself: the test pauses the server.
  const pidFile = '.data/test/mariadb/mysqld.pid';
  if (existsSync(pidFile) && process.env.DATABASE_URL?.includes(':3320/')) {
    it('gives up on a server that stops answering, destroys that connection, and recovers', async () => {
      const db = limited(200, 300);
      await select(db, 'SELECT 1', []); // a pooled connection exists
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      // Resumed after 3 s whatever happens, even if the client hangs (the failure this guards against).
      process.kill(pid, 'SIGSTOP');
      const resume = setTimeout(() => process.kill(pid, 'SIGCONT'), 3000);
      let error: unknown;
      let elapsed: number;
      try {
        const started = Date.now();
        error = await select(db, 'SELECT 1 AS one', []).then(() => undefined, (e: unknown) => e);
        elapsed = Date.now() - started;
      } finally {
        clearTimeout(resume);
        process.kill(pid, 'SIGCONT');
      }
      expect(elapsed).to.be.below(2000);
      expect((error as { code?: string } | undefined)?.code).to.equal('PROTOCOL_SEQUENCE_TIMEOUT');
      await sleep(100);
      const [row] = await select<{ one: number }>(db, 'SELECT 1 AS one', []);
      expect(row?.one).to.equal(1);
    });
  }
});

describe('lean transactions (START TRANSACTION and COMMIT on the pooled connection)', function () {
  this.timeout(30_000);
  let db: Sequelize;
  const rows = async () => (await select<{ v: string }>(db, 'SELECT v FROM lean_tx_probe ORDER BY v', [])).map((r) => r.v);

  before(async () => {
    // One connection: a connection the transaction failed to give back would hang the next statement.
    db = createSequelize({ url: process.env.DATABASE_URL as string, poolMax: 1, acquireTimeoutMs: 2000, statementTimeoutMs: 1000, clientGraceMs: 300 });
    await execute(db, 'CREATE TABLE IF NOT EXISTS lean_tx_probe (v VARCHAR(64) NOT NULL PRIMARY KEY)', [], undefined, { prepared: false });
  });
  beforeEach(async () => { await execute(db, 'DELETE FROM lean_tx_probe', []); });
  after(async () => {
    await execute(db, 'DROP TABLE lean_tx_probe', [], undefined, { prepared: false });
    await db.close();
  });

  it('commits, then runs its afterCommit hooks, which see the rows committed', async () => {
    const seen: string[][] = [];
    const { db: other } = await harness();
    const result = await leanTransaction(db, async (t) => {
      await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1), ($2)', ['a', 'b'], t);
      t.afterCommit(() => { void select<{ v: string }>(other, 'SELECT v FROM lean_tx_probe ORDER BY v', []).then((r) => seen.push(r.map((x) => x.v))); });
      // Not yet visible to another connection.
      expect(await select(other, 'SELECT v FROM lean_tx_probe', [])).to.have.length(0);
      return 'done';
    });
    expect(result).to.equal('done');
    expect(await rows()).to.deep.equal(['a', 'b']);
    for (let i = 0; i < 50 && !seen.length; i++) await sleep(10);
    expect(seen).to.deep.equal([['a', 'b']]);
  });

  it('rolls back when the work fails, runs no hook, and gives its connection back', async () => {
    let hooked = false;
    const error = await leanTransaction(db, async (t) => {
      await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1)', ['x'], t);
      t.afterCommit(() => { hooked = true; });
      await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1)', ['x'], t); // duplicate key
    }).then(() => undefined, (e: unknown) => e);
    expect((error as { errno?: number }).errno).to.equal(1062);
    expect(hooked).to.equal(false);
    expect(await rows()).to.deep.equal([]);
  });

  it('gives up on a row lock held elsewhere within the statement limit, and rolls back what it wrote', async () => {
    const { db: other } = await harness();
    await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1)', ['locked'], undefined);
    const holder = await other.transaction();
    try {
      await select(other, 'SELECT v FROM lean_tx_probe WHERE v = $1 FOR UPDATE', ['locked'], holder);
      const started = Date.now();
      const error = await leanTransaction(db, async (t) => {
        await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1)', ['written'], t);
        await execute(db, 'DELETE FROM lean_tx_probe WHERE v = $1', ['locked'], t);
      }).then(() => undefined, (e: unknown) => e);
      expect(error).to.be.instanceOf(Error);
      expect(Date.now() - started).to.be.below(5000);
    } finally {
      await holder.rollback();
    }
    expect(await rows()).to.deep.equal(['locked']);
  });

  // Only where the test run started MariaDB itself: the test pauses the server.
  const pidFile = '.data/test/mariadb/mysqld.pid';
  if (existsSync(pidFile) && process.env.DATABASE_URL?.includes(':3320/')) {
    it('gives up on a server that stops answering mid-transaction, destroys that connection, and nothing is committed', async () => {
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      const resume = setTimeout(() => process.kill(pid, 'SIGCONT'), 4000);
      let error: unknown;
      let elapsed: number;
      try {
        const started = Date.now();
        error = await leanTransaction(db, async (t) => {
          await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1)', ['half'], t);
          process.kill(pid, 'SIGSTOP');
          await execute(db, 'INSERT INTO lean_tx_probe (v) VALUES ($1)', ['never'], t);
        }).then(() => undefined, (e: unknown) => e);
        elapsed = Date.now() - started;
      } finally {
        clearTimeout(resume);
        process.kill(pid, 'SIGCONT');
      }
      expect((error as { code?: string } | undefined)?.code).to.equal('PROTOCOL_SEQUENCE_TIMEOUT');
      expect(elapsed).to.be.below(3000);
      await sleep(200);
      // The one pooled connection was replaced; the server rolled back the closed one's work.
      expect(await rows()).to.deep.equal([]);
    });
  }
});


// npm test: alone (it pauses the run's MariaDB and changes its global sql_mode, which every other test's connections would meet)
import { expect } from 'chai';
import { appWith, harness, newOrg } from '../support/harness.js';
import { context } from '../../scripts/services/index.js';
import { rootSql } from '../../scripts/services/mariadb.js';
import { createSequelize, execute, script, select, type Sequelize } from '../../src/shared/db/sequelize.js';

import { setTimeout as sleep } from 'node:timers/promises';
import { ownServer, serverPid, stopServer } from '../support/mariadb.js';

describe('database time limits', function () {
  this.timeout(30_000);
  const dbs: Sequelize[] = [];
  const limited = (statementTimeoutMs: number, clientGraceMs?: number) => {
    const db = createSequelize({ url: process.env.DATABASE_URL as string, poolMax: 2, statementTimeoutMs, clientGraceMs });
    dbs.push(db);
    return db;
  };
  after(async () => {
    await Promise.all(dbs.map((db) => db.close()));
  });

  it('answers 503 within the limit while the organization is locked, and registers once it is free', async () => {
    const org = await newOrg();
    const { db } = await harness();
    const http = await appWith({}, limited(1000));
    const holder = await db.transaction();
    try {
      await select(db, 'SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [org.orgId], holder);
      const started = Date.now();
      const res = await http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .send({ details: { policyNumber: 'P' } });
      expect(res.status).to.equal(503);
      expect(res.headers['retry-after']).to.equal('5');
      expect(Date.now() - started).to.be.below(5000);
    } finally {
      await holder.rollback();
    }
    const again = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'P' } });
    expect(again.status).to.equal(200);
  });

  if (ownServer) {
    it('gives up on a server that stops answering, destroys that connection, and recovers', async () => {
      const db = limited(200, 300);
      await select(db, 'SELECT 1', []); // a pooled connection exists
      const pid = serverPid();
      // Resumed after 3 s whatever happens, even if the client hangs (the failure this guards against).
      const resume = setTimeout(() => process.kill(pid, 'SIGCONT'), 3000);
      await stopServer(pid);
      let error: unknown;
      let elapsed: number;
      try {
        const started = Date.now();
        error = await select(db, 'SELECT 1 AS one', []).then(
          () => undefined,
          (e: unknown) => e,
        );
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

describe('scripts: statements in one transaction and one round trip', function () {
  this.timeout(30_000);
  let db: Sequelize;
  const rows = async () => (await select<{ v: string }>(db, 'SELECT v FROM script_probe ORDER BY v', [])).map((r) => r.v);

  before(async () => {
    // One connection: a connection a script failed to give back would hang the next statement.
    db = createSequelize({ url: process.env.DATABASE_URL as string, poolMax: 1, acquireTimeoutMs: 2000, statementTimeoutMs: 1000, clientGraceMs: 300 });
    await execute(db, 'CREATE TABLE IF NOT EXISTS script_probe (v VARCHAR(64) NOT NULL PRIMARY KEY)', [], undefined, { prepared: false });
  });
  beforeEach(async () => {
    await execute(db, 'DELETE FROM script_probe', []);
  });
  after(async () => {
    await execute(db, 'DROP TABLE script_probe', [], undefined, { prepared: false });
    await db.close();
  });

  it("runs its statements in one transaction and gives each one's result", async () => {
    const results = await script(db, [
      { sql: 'INSERT INTO script_probe (v) VALUES ($1), ($2)', bind: ['a', 'b'] },
      { sql: 'INSERT IGNORE INTO script_probe (v) VALUES ($1)', bind: ['a'] },
      { sql: 'SELECT v FROM script_probe WHERE v IN ($1) ORDER BY v', bind: [['a', 'b', 'c']] },
    ]);
    expect(results).to.have.length(3);
    expect((results[0] as { affectedRows: number }).affectedRows).to.equal(2);
    expect((results[1] as { affectedRows: number }).affectedRows).to.equal(0);
    expect((results[2] as Array<{ v: string }>).map((r) => r.v)).to.deep.equal(['a', 'b']);
    expect(await rows()).to.deep.equal(['a', 'b']);
  });

  it('rolls back what it wrote when a statement fails, and gives its connection back', async () => {
    const error = await script(db, [
      { sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['x'] },
      { sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['x'] }, // duplicate key
    ]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as { errno?: number }).errno).to.equal(1062);
    expect(await rows()).to.deep.equal([]);
    // The script's connection is usable again.
    await script(db, [{ sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['y'] }]);
    expect(await rows()).to.deep.equal(['y']);
  });

  it('runs values as values, never as statements, and the main pool takes one statement per query', async () => {
    const hostile = "z'); DROP TABLE script_probe; --";
    await script(db, [{ sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: [hostile] }]);
    expect(await rows()).to.deep.equal([hostile]);
    const error = await execute(db, 'SELECT 1; SELECT 2', [], undefined, { prepared: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((error as { errno?: number }).errno).to.equal(1064);
  });

  it('takes no plain object as a value (the driver would write its keys unescaped)', async () => {
    const error = await script(db, [{ sql: 'INSERT INTO script_probe SET $1', bind: [{ v: 'x' }] }]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(TypeError);
    expect(await rows()).to.deep.equal([]);
  });

  if (ownServer) {
    it('escapes values the same on a server whose sql_mode has NO_BACKSLASH_ESCAPES', async () => {
      const ctx = context('test');
      const [mode] = await select<{ m: string }>(db, 'SELECT @@GLOBAL.sql_mode AS m', []);
      const other = createSequelize({ url: process.env.DATABASE_URL as string, poolMax: 1, statementTimeoutMs: 1000 });
      const hostile = "q\\'); DELETE FROM script_probe; -- ";
      try {
        await rootSql(ctx, "SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',NO_BACKSLASH_ESCAPES')");
        await script(other, [{ sql: 'INSERT INTO script_probe (v) VALUES ($1), ($2)', bind: ['kept', hostile] }]);
      } finally {
        await rootSql(ctx, `SET GLOBAL sql_mode = '${mode?.m ?? ''}'`);
        await other.close();
      }
      expect(await rows()).to.have.members(['kept', hostile]);
    });
  }

  it('gives up on a row lock held elsewhere within the statement limit, and rolls back what it wrote', async () => {
    const { db: other } = await harness();
    await execute(db, 'INSERT INTO script_probe (v) VALUES ($1)', ['locked'], undefined);
    const holder = await other.transaction();
    try {
      await select(other, 'SELECT v FROM script_probe WHERE v = $1 FOR UPDATE', ['locked'], holder);
      const started = Date.now();
      const error = await script(db, [
        { sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['written'] },
        { sql: 'DELETE FROM script_probe WHERE v = $1', bind: ['locked'] },
      ]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
      expect(Date.now() - started).to.be.below(5000);
    } finally {
      await holder.rollback();
    }
    expect(await rows()).to.deep.equal(['locked']);
  });

  if (ownServer) {
    it('gives up on a server that stops answering within the limit and recovers; what it had sent is committed whole or not at all', async () => {
      const pid = serverPid();
      const resume = setTimeout(() => process.kill(pid, 'SIGCONT'), 4000);
      let error: unknown;
      let elapsed: number;
      try {
        const started = Date.now();
        await stopServer(pid);
        error = await script(db, [
          { sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['first'] },
          { sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['second'] },
        ]).then(
          () => undefined,
          (e: unknown) => e,
        );
        elapsed = Date.now() - started;
      } finally {
        clearTimeout(resume);
        process.kill(pid, 'SIGCONT');
      }
      expect((error as { code?: string } | undefined)?.code).to.equal('PROTOCOL_SEQUENCE_TIMEOUT');
      expect(elapsed).to.be.below(3000);
      await sleep(200);
      // The whole script was in the server's socket when it stopped: resumed, the server may
      // have run it to its COMMIT (the client cannot know, as with any COMMIT whose answer is
      // lost), but never in part.
      const left = await rows();
      expect(JSON.stringify(left)).to.be.oneOf(['[]', '["first","second"]']);
      // The connection was replaced: the next script runs.
      await script(db, [{ sql: 'INSERT INTO script_probe (v) VALUES ($1)', bind: ['after'] }]);
      expect(await rows()).to.include('after');
    });
  }
});

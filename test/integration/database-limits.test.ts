import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { appWith, harness, newOrg } from '../support/harness.js';
import { createSequelize, select, type Sequelize } from '../../src/shared/db/sequelize.js';

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

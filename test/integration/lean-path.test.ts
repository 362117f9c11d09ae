import { expect } from 'chai';
import { createSequelize, execute, script, select, type Sequelize, type Transaction } from '../../src/shared/db/sequelize.js';
import { toAppError } from '../../src/shared/http/error-handler.js';

// The lean query path (src/shared/db/sequelize.ts) takes its connections from Sequelize's pool
// without Sequelize's getConnection(), and reads DATETIME with mysql2's UTC fast path ('Z').
describe('the lean query path', function () {
  this.timeout(20_000);
  let db: Sequelize;

  before(async () => {
    db = createSequelize({ url: process.env.DATABASE_URL as string, poolMax: 1, acquireTimeoutMs: 300, statementTimeoutMs: 5000 });
    await execute(db, 'CREATE TABLE IF NOT EXISTS lean_probe (id INT NOT NULL PRIMARY KEY, at DATETIME(3) NULL)', [], undefined, { prepared: false });
  });
  beforeEach(async () => {
    await execute(db, 'DELETE FROM lean_probe', []);
  });
  after(async () => {
    await execute(db, 'DROP TABLE lean_probe', [], undefined, { prepared: false });
    await db.close();
  });

  it('gives up waiting for a connection of a full pool after the acquire timeout, as an error the API answers 503, and goes on once one is free', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The pool's one connection, held by a transaction.
    let holding: (t: Transaction) => void = () => undefined;
    const started = new Promise<Transaction>((resolve) => {
      holding = resolve;
    });
    const transaction = db.transaction(async (t) => {
      holding(t);
      await held;
    });
    await started;
    try {
      const t0 = Date.now();
      const error = await select(db, 'SELECT 1 AS one', []).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(Date.now() - t0).to.be.within(250, 3000);
      expect((error as Error | undefined)?.name).to.equal('SequelizeConnectionAcquireTimeoutError');
      expect(toAppError(error).status).to.equal(503);
    } finally {
      release();
      await transaction;
    }
    const [row] = await select<{ one: number }>(db, 'SELECT 1 AS one', []);
    expect(row?.one).to.equal(1);
  });

  it('writes and reads DATETIME in UTC to the millisecond, prepared or as text, at both ends of the years it accepts', async () => {
    const times = ['1000-01-01T00:00:00.001Z', '2025-03-30T01:59:59.999Z', '9999-12-31T23:59:59.999Z'].map((s) => new Date(s));
    for (const [i, at] of times.entries()) await execute(db, 'INSERT INTO lean_probe (id, at) VALUES ($1, $2)', [i, at]);
    await script(db, [{ sql: 'INSERT INTO lean_probe (id, at) VALUES ($1, $2)', bind: [9, times[1]] }]);
    await execute(db, 'INSERT INTO lean_probe (id, at) VALUES ($1, NULL)', [10]);
    const sql = 'SELECT id, at, DATE_FORMAT(at, "%Y-%m-%d %H:%i:%s.%f") AS text FROM lean_probe ORDER BY id';
    for (const prepared of [true, false]) {
      const rows = await select<{ id: number; at: Date | null; text: string | null }>(db, sql, [], undefined, { prepared });
      expect(rows.map((r) => r.at?.toISOString() ?? null)).to.deep.equal([...times.map((t) => t.toISOString()), times[1]?.toISOString(), null]);
      // As the server holds them: UTC (the session's time zone is +00:00).
      expect(rows[0]?.text).to.equal('1000-01-01 00:00:00.001000');
      expect(rows[3]?.text).to.equal('2025-03-30 01:59:59.999000');
    }
  });
});

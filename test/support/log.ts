// The transparency log's parts for tests that build a notarizer or a log of their own, and a
// witness run as its own process.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createLogRepository } from '../../src/log/log.repository.js';
import { createSequencer, type Sequencer } from '../../src/log/sequencer.js';
import { AUDIT_GUARDS, DROP_AUDIT_GUARDS } from '../../src/shared/db/migrations/0030-transparency-log.js';
import type { Sequelize } from '../../src/shared/db/sequelize.js';
import { entry } from './entry.js';

/** A sequencer of its own over `db` (another holder than any other): as a worker process has. */
export function testSequencer(db: Sequelize, leaseMs = 30_000): Sequencer {
  return createSequencer({ repo: createLogRepository(db), leaseMs });
}

/** Drops the triggers that keep audit rows unchanged: what a database administrator bent on rewriting them can do. */
export async function dropAuditGuards(db: Sequelize): Promise<void> {
  for (const sql of DROP_AUDIT_GUARDS) await db.query(sql, { raw: true });
}

export async function restoreAuditGuards(db: Sequelize): Promise<void> {
  await dropAuditGuards(db);
  for (const sql of AUDIT_GUARDS) await db.query(sql, { raw: true });
}

export interface RunningWitness {
  url: string;
  vkey: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `cli witness serve` watching `logs`, in `dir`, on `port` (0: any); resolves once it listens. */
export async function startWitness(dir: string, logs: string[], port = 0): Promise<RunningWitness> {
  const child = spawn(
    process.execPath,
    [...entry('src/cli.ts'), 'witness', 'serve', '--name', 'witness.test', '--dir', dir, '--port', String(port), ...logs.flatMap((l) => ['--log', l])],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_NO_WARNINGS: '1' } },
  );
  const lines = createInterface({ input: child.stderr as NodeJS.ReadableStream });
  const url = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error('the witness did not start')), 20_000);
    lines.on('line', (l) => {
      const m = / at (http:\/\/\S+) /.exec(l);
      if (m) {
        clearTimeout(timer);
        ok(m[1] as string);
      }
    });
    child.once('exit', (code) => fail(new Error(`the witness exited with ${code}`)));
  });
  const vkey = await (await fetch(`${url}/key`)).text();
  return {
    url,
    vkey: vkey.trim(),
    child,
    stop: () =>
      new Promise<void>((done) => {
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * The log's invariants after faults: its entries are 0..size-1 with no gap (nothing lost), no
 * notarization leaf is in it twice (nothing duplicated), and every leaf with a log index is the
 * entry at that index.
 */
export async function expectLogIntact(db: Sequelize): Promise<{ size: number }> {
  const { expect } = await import('chai');
  const { select } = await import('../../src/shared/db/sequelize.js');
  const [head] = await select<{ size: string | number }>(db, 'SELECT size FROM log_sequencer WHERE id = 1', []);
  const [span] = await select<{ n: string | number; top: string | number | null }>(db, 'SELECT COUNT(*) AS n, MAX(idx) AS top FROM log_entries', []);
  const size = Number(head?.size);
  expect(Number(span?.n), 'entries 0..size-1, none missing').to.equal(size);
  expect(span?.top === null ? -1 : Number(span?.top)).to.equal(size - 1);
  const [dupes] = await select<{ n: string | number }>(
    db,
    "SELECT COUNT(*) AS n FROM (SELECT entry FROM log_entries WHERE entry LIKE 'record %' OR entry LIKE 'amendment %' GROUP BY entry HAVING COUNT(*) > 1) d",
    [],
  );
  expect(Number(dupes?.n), 'no notarization leaf twice').to.equal(0);
  for (const [table, kind] of [
    ['notarization_proofs', 'record'],
    ['notarization_amendment_proofs', 'amendment'],
  ] as const) {
    const [wrong] = await select<{ n: string | number }>(
      db,
      `SELECT COUNT(*) AS n FROM ${table} p LEFT JOIN log_entries e ON e.idx = p.log_index WHERE p.log_index IS NOT NULL AND (e.entry IS NULL OR e.entry <> CONCAT('${kind} ', p.digest))`,
      [],
    );
    expect(Number(wrong?.n), `every ${kind} leaf is the entry at its index`).to.equal(0);
  }
  return { size };
}

/** Appends `n` random record entries as the notarizer would (fenced, in one transaction) through `sequencer`, over `db`. */
export async function appendRecords(db: Sequelize, sequencer: Sequencer, n: number): Promise<void> {
  const { randomBytes } = await import('node:crypto');
  const { createLogRepository } = await import('../../src/log/log.repository.js');
  await sequencer.exclusive((fence) =>
    createLogRepository(db).transaction((t) =>
      fence.append(
        Array.from({ length: n }, () => new TextEncoder().encode(`record ${randomBytes(32).toString('hex')}`)),
        t,
      ),
    ),
  );
}

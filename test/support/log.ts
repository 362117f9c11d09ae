// The transparency log's parts for tests that build a notarizer or a log of their own, and a
// witness run as its own process.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { createLogRepository } from '../../src/log/log.repository.js';
import { createSequencer, type Sequencer } from '../../src/log/sequencer.js';
import { AUDIT_GUARDS, DROP_AUDIT_GUARDS } from '../../src/shared/db/migrations/0030-transparency-log.js';
import type { Sequelize } from '../../src/shared/db/sequelize.js';

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
    ['--import', 'tsx', 'src/cli.ts', 'witness', 'serve', '--name', 'witness.test', '--dir', dir, '--port', String(port), ...logs.flatMap((l) => ['--log', l])],
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

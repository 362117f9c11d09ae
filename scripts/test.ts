// `npm test` on a fresh clone: starts the test profile's local servers (MariaDB, Redis,
// clamd, radosgw) on their own ports, gives the run a fresh database, type-checks, lints,
// checks for import cycles, runs the whole mocha suite against the real servers, and stops
// the servers this run started, whatever happens. Extra arguments go to mocha.
import { spawnSync } from 'node:child_process';
import { applyEnv, localAppEnv } from './local-env.js';
import { databaseName, rootSql } from './services/mariadb.js';
import { context, down, startedByThisProcess, up } from './services/index.js';
import { ensurePackages } from './services/process.js';

const mochaArgs = process.argv.slice(2);
let stopping = false;

/** Stops what this run started, also when it is interrupted while the servers start. */
async function stop(): Promise<void> {
  const started = [...new Set(startedByThisProcess.test)];
  if (stopping || started.length === 0) return;
  stopping = true;
  process.stderr.write(`[test] stopping ${started.join(', ')}\n`);
  await down('test', started);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void stop().then(() => process.exit(130));
  });
}

function step(name: string, command: string, args: string[]): boolean {
  process.stderr.write(`[test] ${name}\n`);
  const res = spawnSync(command, args, { stdio: 'inherit', env: process.env });
  if (res.status !== 0) process.stderr.write(`[test] ${name} failed\n`);
  return res.status === 0;
}

let ok = false;
try {
  // Tools the tests themselves use: Info-ZIP builds the archives the scanner is tested with;
  // Debian's Chromium opens the pages (npm cannot download a browser here).
  ensurePackages(['zip', 'chromium'], ['zip', 'chromium'], [], 'zip and chromium (for tests)');
  // Go's reference implementation of the transparency log's formats (golang.org/x/mod/sumdb), built offline.
  ensurePackages(['go', '/usr/share/gocode/src/golang.org/x/mod/sumdb/note/note.go'], ['golang-go', 'golang-golang-x-mod-dev'], [], 'Go and x/mod (for tests)');
  const result = await up('test');
  applyEnv(result.env, localAppEnv('test'), {
    LOG_LEVEL: 'silent',
    RUN_ID: String(Date.now()),
    QUEUE_PREFIX: `test-${Date.now()}`,
    // Webhook retries in fractions of a second (the producer sets a job's attempts from it).
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.3,0.4',
  });
  // A run never depends on what an earlier run left: the local test database starts empty.
  // (An external DATABASE_URL is the user's: it is migrated, never dropped.)
  if (result.env.DATABASE_URL) {
    const db = databaseName(context('test'));
    await rootSql(context('test'), `DROP DATABASE IF EXISTS ${db}; CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;`);
  }
  const bin = (name: string) => `node_modules/.bin/${name}`;
  ok =
    step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']) &&
    step('type-check the verification page (DOM)', bin('tsc'), ['-p', 'src/verification/page/tsconfig.json']) &&
    step('lint (eslint) and import cycles (dpdm)', 'npm', ['run', '-s', 'lint']) &&
    step('mocha', bin('mocha'), mochaArgs);
} catch (err) {
  process.stderr.write(`[test] ${(err as Error).stack ?? String(err)}\n`);
} finally {
  await stop();
}
process.exit(ok ? 0 : 1);

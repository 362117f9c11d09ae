// `npm test` on a fresh clone: starts the test profile's local servers (MariaDB, Redis,
// clamd, radosgw) on their own ports, type-checks, lints, checks for import cycles, runs the
// whole mocha suite against the real servers, and stops the servers this run started, whatever
// happens. `--node current` (the default) runs the suite on the machine's Node, `--node 24` on
// the pinned Node 24 LTS production runs on (.node-version; installed under .data/runtimes/ when
// missing); given both (as .ci/run does), the suite runs on each in turn against the same
// servers, each run with a database, queues and a log bucket of its own. Other arguments go to mocha.
import { spawnSync } from 'node:child_process';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createStorage } from '../src/shared/storage.js';
import { applyEnv, localAppEnv } from './local-env.js';
import { databaseName, rootSql } from './services/mariadb.js';
import { context, down, startedByThisProcess, up } from './services/index.js';
import { ensurePackages } from './services/process.js';
import { envFor, runtimesNamed, type Runtime } from './services/runtime.js';

/** `--node X` arguments (the runtimes, in order) apart from mocha's. */
function parseArgs(argv: string[]): { runtimes: string[]; mochaArgs: string[] } {
  const runtimes: string[] = [];
  const mochaArgs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--node') {
      if (!argv[i + 1]) throw new Error('--node needs a runtime: current, 24 or production');
      runtimes.push(argv[++i] as string);
    } else if (arg.startsWith('--node=')) runtimes.push(arg.slice('--node='.length));
    else mochaArgs.push(arg);
  }
  return { runtimes: runtimes.length ? runtimes : ['current'], mochaArgs };
}

const { runtimes: runtimeNames, mochaArgs } = parseArgs(process.argv.slice(2));
/** Each run's queues are under `<this>-<run id>` (a QUEUE_PREFIX the user set comes first). */
const queuePrefix = process.env.QUEUE_PREFIX || 'test';
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

function step(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = process.env): boolean {
  process.stderr.write(`[test] ${name}\n`);
  const res = spawnSync(command, args, { stdio: 'inherit', env });
  if (res.status !== 0) process.stderr.write(`[test] ${name} failed\n`);
  return res.status === 0;
}

/** The store's client, for the run's log bucket. */
function storeClient(bucket: string) {
  const e = process.env;
  return createStorage({
    S3_ENDPOINT: e.S3_ENDPOINT,
    S3_REGION: e.S3_REGION ?? 'us-east-1',
    S3_BUCKET: bucket,
    AWS_ACCESS_KEY_ID: e.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: e.AWS_SECRET_ACCESS_KEY,
  }).client;
}

/** Empties a bucket and removes it (the run's log bucket: tiles and checkpoints, no versions). */
async function removeBucket(bucket: string): Promise<void> {
  const client = storeClient(bucket);
  try {
    for (;;) {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, MaxKeys: 1000 }));
      const keys = (page.Contents ?? []).map((o) => o.Key as string);
      if (!keys.length) break;
      for (let i = 0; i < keys.length; i += 16)
        await Promise.all(keys.slice(i, i + 16).map((Key) => client.send(new DeleteObjectCommand({ Bucket: bucket, Key }))));
    }
    await client.send(new DeleteBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}

/**
 * What one run of the suite starts from, on servers another run may have used: an empty
 * database of its own (`registry_test`, `registry_test_node24`: a process an earlier run left
 * behind cannot reach it), queues of their own, and a transparency-log bucket of its own, since
 * the log publishes its checkpoint there and a later run's log starts again from nothing. An
 * external DATABASE_URL is the user's: it is migrated, never dropped (its runs share it). Returns
 * what removes the run's log bucket afterwards.
 */
async function freshRun(runtime: Runtime, first: boolean, localDatabase: boolean): Promise<() => Promise<void>> {
  const id = `${Date.now()}`;
  Object.assign(process.env, { RUN_ID: id, QUEUE_PREFIX: `${queuePrefix}-${id}` });
  if (localDatabase) {
    const db = `${databaseName(context('test'))}${first ? '' : `_node${runtime.version.slice(1).split('.')[0]}`}`;
    await rootSql(context('test'), `DROP DATABASE IF EXISTS ${db}; CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;`);
    const url = new URL(process.env.DATABASE_URL as string);
    url.pathname = `/${db}`;
    process.env.DATABASE_URL = url.toString();
  }
  const bucket = `${process.env.S3_BUCKET}-log-${id}`;
  const client = storeClient(bucket);
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  process.env.LOG_S3_BUCKET = bucket;
  return () => removeBucket(bucket);
}

/** The whole suite on one runtime; its processes (mocha, and whatever it starts with `node`) run on it. */
function mocha(runtime: Runtime): boolean {
  // The suite checks it runs where it was asked to (test/unit/scripts/runtime.test.ts).
  const env = { ...envFor(runtime), REGISTRY_TEST_NODE: runtime.version };
  return step(`mocha on Node ${runtime.version}`, 'node_modules/.bin/mocha', mochaArgs, env);
}

let ok: boolean;
try {
  // Tools the tests themselves use: Info-ZIP builds the archives the scanner is tested with;
  // Debian's Chromium opens the pages (npm cannot download a browser here).
  ensurePackages(['zip', 'chromium'], ['zip', 'chromium'], [], 'zip and chromium (for tests)');
  // Go's reference implementation of the transparency log's formats (golang.org/x/mod/sumdb), built offline.
  ensurePackages(['go', '/usr/share/gocode/src/golang.org/x/mod/sumdb/note/note.go'], ['golang-go', 'golang-golang-x-mod-dev'], [], 'Go and x/mod (for tests)');
  // Each runtime asked for, installed first (a pinned Node missing fails before any server starts).
  const runtimes = runtimesNamed(runtimeNames);
  const result = await up('test');
  const localDatabase = Boolean(result.env.DATABASE_URL);
  applyEnv(result.env, localAppEnv('test'), {
    LOG_LEVEL: 'silent',
    // Webhook retries in fractions of a second (the producer sets a job's attempts from it).
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.3,0.4',
  });
  const bin = (name: string) => `node_modules/.bin/${name}`;
  ok =
    step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']) &&
    step('type-check the verification page (DOM)', bin('tsc'), ['-p', 'src/verification/page/tsconfig.json']) &&
    step('lint (eslint) and import cycles (dpdm)', 'npm', ['run', '-s', 'lint']);
  // Every runtime's run, even after one failed: CI says which of them fail.
  const failed: string[] = [];
  const passed: string[] = [];
  for (const [i, runtime] of (ok ? runtimes : []).entries()) {
    // A run never depends on what an earlier run (this one's other runtime included) left.
    const cleanUp = await freshRun(runtime, i === 0, localDatabase);
    (mocha(runtime) ? passed : failed).push(runtime.version);
    await cleanUp().catch((err: unknown) => process.stderr.write(`[test] could not remove the run's log bucket: ${String(err)}\n`));
  }
  if (runtimes.length > 1 && ok)
    process.stderr.write(
      `[test] ${[passed.length && `passed on Node ${passed.join(' and ')}`, failed.length && `failed on Node ${failed.join(' and ')}`].filter(Boolean).join('; ')}\n`,
    );
  ok &&= failed.length === 0 && passed.length === runtimes.length;
} catch (err) {
  // Whatever failed after the checks passed (a run's database, its bucket) fails the run.
  ok = false;
  process.stderr.write(`[test] ${(err as Error).stack ?? String(err)}\n`);
} finally {
  await stop();
}
process.exit(ok ? 0 : 1);

// `npm test` on a fresh clone: starts the test profile's local servers (MariaDB, Redis, clamd,
// radosgw) on their own ports, type-checks, lints and checks for import cycles while they start,
// runs the whole mocha suite against the real servers on the Node production runs on (Node 24
// LTS, .node-version, installed under .data/runtimes/ when missing), and stops the servers this
// run started, whatever happens (an interrupted or killed run too).
//
// The suite's files run on two of mocha's parallel workers at once (`--jobs`, the machine's cores
// by default), each with its own database, queues and log bucket (test/support/worker-world.ts);
// the files that change the servers under the others' feet (pause the run's MariaDB, set its
// globals) or measure the machine (latency, memory) say so in a line of their own,
// `// npm test: alone (why)`, and run afterwards, one at a time.
//
// `--node <runtime>` picks the runtime (`production` or `24`, the default; `current` or `20`, the
// machine's); `--node <runtime>:quick` or `--quick` runs the quick check instead of the whole
// suite: the unit suite and the start test. Given several (as .ci/run does: the whole suite on
// 24, the quick check on the machine's 20), each runs in turn against the same servers, each run
// with a database, queues and a log bucket of its own. Other arguments go to mocha: test files
// (`test/integration/log.test.ts`) narrow the run to them, `--grep` and the like apply to each.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { availableParallelism } from 'node:os';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, ListBucketsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { createStorage } from '../src/shared/storage.js';
import { createCommands } from './commands.js';
import { applyEnv, localAppEnv } from './local-env.js';
import { databaseName, rootSql } from './services/mariadb.js';
import { context, down, startedByThisProcess, up } from './services/index.js';
import { ensurePackages } from './services/process.js';
import { envFor, runtimesNamed, type Runtime } from './services/runtime.js';
import { buildForTests } from './test-build.js';
import { aloneBecause, longestFirst, parseTestArgs, quickFiles, suiteFiles } from './test-plan.js';

let stopped: Promise<void> | undefined;
/** A signal came: nothing more is started, and the run exits with this code. */
let interrupted: number | undefined;
/** The commands running now (the checks, mocha), stopped with the run. */
const commands = createCommands();

/**
 * Stops what this run started, also when it is interrupted while the servers start: once, every
 * caller waiting for the same stop (the run's end and a signal's handler may both ask; whichever
 * exits first must not cut the servers' shutdown short).
 */
function stop(): Promise<void> {
  return (stopped ??= (async () => {
    const started = [...new Set(startedByThisProcess.test)];
    if (started.length === 0) return;
    process.stderr.write(`[test] stopping ${started.join(', ')}\n`);
    await down('test', started);
  })());
}

async function step(name: string, cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; quiet?: boolean } = {}): Promise<boolean> {
  const t0 = Date.now();
  if (!opts.quiet) process.stderr.write(`[test] ${name}\n`);
  const ok = await commands.run(cmd, args, opts);
  process.stderr.write(`[test] ${name}: ${ok ? 'passed' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  return ok;
}

/** What the run must undo if it is stopped: the current runtime's log buckets. */
let cleanUpRun: (() => Promise<void>) | undefined;

for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
  ['SIGHUP', 129],
] as const) {
  process.once(signal, () => {
    interrupted = code;
    commands.refuse();
    process.stderr.write(`[test] ${signal}: stopping\n`);
    void commands
      .end(5000)
      .then(() => cleanUpRun?.())
      .catch(() => undefined)
      .then(stop)
      .finally(() => process.exit(code));
  });
}

/** The store's client, for the run's log buckets. */
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

/** Empties and removes the buckets named `bucket` or `bucket-w<n>` (the run's log buckets: tiles and checkpoints, no versions). */
async function removeBuckets(bucket: string): Promise<void> {
  const client = storeClient(bucket);
  try {
    const { Buckets = [] } = await client.send(new ListBucketsCommand({}));
    for (const name of Buckets.map((b) => b.Name as string).filter((n) => n === bucket || new RegExp(`^${bucket}-w\\d+$`).test(n))) {
      for (;;) {
        const page = await client.send(new ListObjectsV2Command({ Bucket: name, MaxKeys: 1000 }));
        const keys = (page.Contents ?? []).map((o) => o.Key as string);
        if (!keys.length) break;
        for (let i = 0; i < keys.length; i += 16)
          await Promise.all(keys.slice(i, i + 16).map((Key) => client.send(new DeleteObjectCommand({ Bucket: name, Key }))));
      }
      await client.send(new DeleteBucketCommand({ Bucket: name }));
    }
  } finally {
    client.destroy();
  }
}

/**
 * What one run of the suite starts from, on servers another run may have used: an empty
 * database of its own (`registry_test`, `registry_test_node20`: a process an earlier run left
 * behind cannot reach it; the parallel workers' are named after it), queues of their own, and a
 * transparency-log bucket of its own, since the log publishes its checkpoint there and a later
 * run's log starts again from nothing. An external DATABASE_URL is the user's: it is migrated,
 * never dropped (its runs share it). Returns what removes the run's log buckets afterwards.
 */
async function freshRun(runtime: Runtime, first: boolean, localDatabase: boolean, base: NodeJS.ProcessEnv): Promise<() => Promise<void>> {
  const id = `${Date.now()}`;
  Object.assign(process.env, { RUN_ID: id, QUEUE_PREFIX: `${base.QUEUE_PREFIX || 'test'}-${id}` });
  if (localDatabase) {
    const db = `${databaseName(context('test'))}${first ? '' : `_node${runtime.version.slice(1).split('.')[0]}`}`;
    await rootSql(context('test'), `DROP DATABASE IF EXISTS ${db}; CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;`);
    const url = new URL(base.DATABASE_URL as string);
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
  // Once, whoever asks first (the run, or a signal's handler while the run is at it).
  let removed: Promise<void> | undefined;
  return () => (removed ??= removeBuckets(bucket));
}

/** Seconds by test file: the last run's on this machine (.data/test/durations.json), else the project's (test/durations.json). */
function readDurations(): Record<string, number> {
  for (const file of [join(context('test').dataDir, 'durations.json'), 'test/durations.json'])
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
  return {};
}

/** Keeps the durations the workers noted in `noted` (a line a file) in .data/test/durations.json, and names the slowest files. */
function keepDurations(noted: string): void {
  if (!existsSync(noted)) return;
  const durations = readDurations();
  const measured: Array<[string, number]> = readFileSync(noted, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { file: string; ms: number })
    .map(({ file, ms }) => [relative(process.cwd(), file), Math.round(ms / 100) / 10]);
  for (const [file, s] of measured) durations[file] = s;
  writeFileSync(join(context('test').dataDir, 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
  rmSync(noted, { force: true });
  const slowest = measured.sort((a, b) => b[1] - a[1]).slice(0, 8);
  process.stderr.write(
    `[test] the slowest files: ${slowest.map(([f, s]) => `${f.replace(/^test\/(integration|unit)\//, '')} ${s.toFixed(0)} s`).join(', ')}\n`,
  );
}

/**
 * One run of the suite on `runtime` (mocha, and whatever it starts with `node`, run on it): the
 * files that may share the servers on `jobs` parallel workers, then those that must run alone,
 * one mocha process at a time.
 */
async function suite(runtime: Runtime, files: string[], jobs: number, mochaArgs: string[]): Promise<boolean> {
  // The suite checks it runs where it was asked to (test/unit/scripts/runtime.test.ts). Node 22
  // and later keep the modules they compile in NODE_COMPILE_CACHE: the hundreds of processes the
  // suite starts compile the same dependencies once (a CLI command: a quarter less CPU); Node 20
  // ignores it.
  const env = { ...envFor(runtime), REGISTRY_TEST_NODE: runtime.version, NODE_COMPILE_CACHE: join(context('test').dataDir, 'compile-cache') };
  const alone = files.filter((f) => aloneBecause(readFileSync(f, 'utf8')));
  const shared = longestFirst(
    files.filter((f) => !alone.includes(f)),
    readDurations(),
  );
  const mocha = 'node_modules/.bin/mocha';
  let ok = true;
  if (shared.length) {
    const parallel = jobs > 1 && shared.length > 1 ? ['--parallel', '--jobs', String(jobs)] : [];
    const how = parallel.length ? `on ${jobs} workers` : 'in one process';
    const noted = join(context('test').dataDir, `durations-${process.env.RUN_ID}.jsonl`);
    rmSync(noted, { force: true });
    ok =
      (await step(`mocha on Node ${runtime.version}: ${shared.length} files ${how}`, mocha, [...parallel, ...mochaArgs, ...shared], {
        env: { ...env, TEST_DURATIONS_FILE: noted },
      })) && ok;
    keepDurations(noted);
  }
  if (alone.length)
    ok = (await step(`mocha on Node ${runtime.version}: ${alone.length} files that run alone, one at a time`, mocha, [...mochaArgs, ...alone], { env })) && ok;
  return ok;
}

const { runs, jobs = Math.min(2, availableParallelism()), files: named, mochaArgs } = parseTestArgs(process.argv.slice(2));
let ok: boolean;
const t0 = Date.now();
try {
  // The type-check and the lint (a minute of CPU each) run side by side while the packages install and the servers start.
  const bin = (name: string) => `node_modules/.bin/${name}`;
  const checks = Promise.all([
    (async () =>
      (await step('type-check (tsc --noEmit)', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json'], { quiet: true })) &&
      (await step('type-check the verification page (DOM)', bin('tsc'), ['-p', 'src/verification/page/tsconfig.json'], { quiet: true })))(),
    step('lint (prettier, eslint, import cycles, table owners)', 'npm', ['run', '-s', 'lint'], { quiet: true }),
  ]).then((passed) => passed.every(Boolean));
  // Tools the tests themselves use: Info-ZIP builds the archives the scanner is tested with;
  // Debian's Chromium opens the pages (npm cannot download a browser here).
  ensurePackages(['zip', 'chromium'], ['zip', 'chromium'], [], 'zip and chromium (for tests)');
  // Go's reference implementation of the transparency log's formats (golang.org/x/mod/sumdb), built offline.
  ensurePackages(['go', '/usr/share/gocode/src/golang.org/x/mod/sumdb/note/note.go'], ['golang-go', 'golang-golang-x-mod-dev'], [], 'Go and x/mod (for tests)');
  // Each runtime asked for, installed first (a pinned Node missing fails before any server starts).
  const runtimes = runtimesNamed(runs.map((r) => r.runtime));
  // One runtime named twice (`current` on a Node 24 machine) runs the whole suite once.
  const wholeOn = new Set(runtimesNamed(runs.filter((r) => !r.quick).map((r) => r.runtime)).map((r) => r.version));
  process.stderr.write(
    `[test] ${runtimes.map((r) => `${wholeOn.has(r.version) ? 'the whole suite' : 'the quick check (unit suite and start test)'} on Node ${r.version}`).join(', then ')}${
      runtimes.some((r) => r.version === process.version) ? '' : ` (this machine's Node is ${process.version})`
    }\n`,
  );
  const result = await up('test');
  const localDatabase = Boolean(result.env.DATABASE_URL);
  applyEnv(result.env, localAppEnv('test'), {
    LOG_LEVEL: 'silent',
    // Webhook retries in fractions of a second (the producer sets a job's attempts from it).
    WEBHOOK_RETRY_SCHEDULE: '0.2,0.3,0.4',
  });
  // The registry's processes the suite starts run from its sources compiled once (scripts/test-build.ts).
  const build = join(context('test').dataDir, 'build');
  await buildForTests(process.cwd(), build);
  process.env.REGISTRY_TEST_BUILD = build;
  const base = { ...process.env };
  ok = await checks;
  const all = suiteFiles();
  for (const f of named)
    if (!all.includes(f.replace(/^\.\//, ''))) throw new Error(`${f}: not a test file of the suite (test/unit or test/integration, *.test.ts)`);
  // Every runtime's run, even after one failed: CI says which of them fail.
  const failed: string[] = [];
  const passed: string[] = [];
  for (const [i, runtime] of (ok ? runtimes : []).entries()) {
    if (interrupted !== undefined) break;
    const whole = wholeOn.has(runtime.version);
    const files = named.length ? named.map((f) => f.replace(/^\.\//, '')) : whole ? all : quickFiles(all);
    // A run never depends on what an earlier run (this one's other runtime included) left.
    const cleanUp = (cleanUpRun = await freshRun(runtime, i === 0, localDatabase, base));
    ((await suite(runtime, files, jobs, mochaArgs)) ? passed : failed).push(`${runtime.version}${whole ? '' : ' (quick)'}`);
    await cleanUp().catch((err: unknown) => process.stderr.write(`[test] could not remove the run's log buckets: ${String(err)}\n`));
    cleanUpRun = undefined;
  }
  if (ok && interrupted === undefined)
    process.stderr.write(
      `[test] ${[passed.length && `passed on Node ${passed.join(' and ')}`, failed.length && `FAILED on Node ${failed.join(' and ')}`].filter(Boolean).join('; ')} in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`,
    );
  ok &&= failed.length === 0 && passed.length === runtimes.length;
} catch (err) {
  // Whatever failed after the checks passed (a run's database, its bucket) fails the run.
  ok = false;
  process.stderr.write(`[test] ${(err as Error).stack ?? String(err)}\n`);
} finally {
  // The checks, when what follows them failed first.
  await commands.end(5000);
  await stop();
}
process.exit(interrupted ?? (ok ? 0 : 1));

#!/usr/bin/env node
// Entry point of every npm script that must work on a fresh clone. It has no dependencies of
// its own: it installs node_modules when they are missing or older than package-lock.json,
// then runs the named TypeScript task in this same process through tsx (so signals reach the
// task directly; `npm start` on a Node other than production's runs it in a child on that
// Node, signals passed on: startOnProductionNode below). Everything it says goes to stderr: stdout belongs to the task (the CLI
// prints values a script may capture).
import { createHash } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import os from 'node:os';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// On Node 20 the AWS SDK warns at its first client that its versions published after the first
// week of January 2027 require Node 22 (aws/aws-sdk-js-v3#7983): eight lines in every start, CLI
// command and test run. Production runs on Node 24 LTS, where it says nothing; Node 20 stays
// supported for development while it must (README, "Runtimes"), and `npm start` says so in one
// line of its own, so the SDK's documented switch turns its warning off for the tasks run from
// here on Node 20 (and the processes they start); a value the user set wins.
if (Number(process.versions.node.split('.')[0]) < 22) process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const tasks = {
  start: 'scripts/dev.ts',
  test: 'scripts/test.ts',
  services: 'scripts/services/cli.ts',
  cli: 'scripts/with-local-services.ts',
  migrate: 'scripts/with-local-services.ts',
  bench: 'bench/index.ts',
};

function lockDigest() {
  const lock = join(root, 'package-lock.json');
  const pkg = join(root, 'package.json');
  const h = createHash('sha256');
  h.update(readFileSync(pkg));
  if (existsSync(lock)) h.update(readFileSync(lock));
  return h.digest('hex');
}

function ensureDependencies() {
  const stamp = join(root, 'node_modules', '.registry-install-stamp');
  const want = lockDigest();
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return;
  // `npm install` rather than `npm ci`: it installs the locked versions all the same, and
  // npm 11's `ci` refuses this lock file, whose optional platform builds of msgpackr-extract
  // for other systems the registry mirror here does not list.
  process.stderr.write('[run] installing dependencies (npm install)...\n');
  const res = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: root,
    // npm's own output must not reach stdout, where the task's values go.
    stdio: ['ignore', process.stderr, process.stderr],
  });
  if (res.status !== 0) {
    process.stderr.write('[run] dependency installation failed\n');
    process.exit(res.status ?? 1);
  }
  writeFileSync(stamp, want);
}

const [task, ...args] = process.argv.slice(2);
if (!task || !(task in tasks)) {
  process.stderr.write(`usage: node scripts/run.mjs <${Object.keys(tasks).join('|')}> [args...]\n`);
  process.exit(2);
}
ensureDependencies();
process.chdir(root);
// The task sees its own arguments; `cli` and `migrate` share one wrapper that needs the name.
process.argv = [process.argv[0], join(root, tasks[task]), ...(task === 'cli' || task === 'migrate' ? [task] : []), ...args];
const { register } = await import('tsx/esm/api');
register();
if (task === 'start') await startOnProductionNode(args);
await import(pathToFileURL(join(root, tasks[task])).href);

/**
 * `npm start` runs the registry on the Node production runs on (.node-version, Node 24 LTS): on
 * a machine whose Node is another, it fetches that one into .data/runtimes/ (once), says so in
 * one line and runs the start there, in a child process this one waits for (its signals passed
 * on). `npm start -- --node current` runs on the machine's Node instead, while it is supported.
 */
async function startOnProductionNode(startArgs) {
  const at = startArgs.findIndex((a) => a === '--node' || a.startsWith('--node='));
  const name = at < 0 ? 'production' : startArgs[at] === '--node' ? startArgs[at + 1] : startArgs[at].slice('--node='.length);
  if (at >= 0) process.argv.splice(2 + at, startArgs[at] === '--node' ? 2 : 1);
  const { envFor, runtimeNamed } = await import(pathToFileURL(join(root, 'scripts/services/runtime.ts')).href);
  const runtime = runtimeNamed(name ?? '');
  if (runtime.version === process.version) return;
  process.stderr.write(
    `[start] running on Node ${runtime.version}, the one production runs on (this machine's is ${process.version}; --node current runs on it)\n`,
  );
  const child = spawn(join(runtime.binDir, 'node'), [join(root, 'scripts/run.mjs'), 'start', ...process.argv.slice(2)], {
    // The channel tells the start when this process is gone, however it ended (scripts/dev.ts).
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: envFor(runtime),
  });
  // Ctrl-C reaches both processes (the start ignores a second one while it stops); a signal sent to this one alone is passed on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    process.stderr.write(`[start] could not run Node ${runtime.version} (${join(runtime.binDir, 'node')}): ${err.message}\n`);
    process.exit(1);
  });
  const [code, signal] = await new Promise((resolve) => child.on('close', (c, s) => resolve([c, s])));
  process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 1) : 1));
}

// `npm start` on a fresh clone: starts the dev profile's local services that the environment
// does not point elsewhere, migrates, makes sure a development organization and API key
// exist, prints the key, then serves the API and runs the workers in this process.
// Ctrl-C stops the API and workers; the local servers keep running for a fast restart
// (`npm run services -- down` stops them).
//
// What it prints: a line per local server it starts, one for the migrations, one for the
// bucket, then its banner. The log lines of the API and the workers (every request's among
// them, warnings and errors too) are appended to .data/dev/api.log, as is what `cli migrate`
// reports, unless LOG_LEVEL is set: then they go to the terminal, as the Procfile's processes'
// do. The banner says which.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';
import { applyEnv, localAppEnv } from './local-env.js';
import { LOCAL_PASSWORD } from './oidc/users.js';
import { DEV_CHAIN_KEY } from './services/evm.js';
import { context, up } from './services/index.js';

const say = (line: string) => process.stderr.write(`[start] ${line}\n`);

// scripts/run.mjs runs this on Node 24 LTS, production's, unless asked for the machine's Node
// (`npm start -- --node current`); on Node 20 the AWS SDK's Node-version warning is turned off
// there, and one line says what it would have.
if (Number(process.versions.node.split('.')[0]) < 22) {
  say(`Node ${process.version}: accepted for development until January 2027; production runs on Node 24 LTS (README, "Runtimes")`);
}
// Started by run.mjs on Node 24, it is told through their channel when run.mjs is gone, however
// it ended (killed, too): it stops rather than serve on without the process its user started.
// Listened for from the first line: run.mjs killed during the start (a minute on a first one)
// ends it there, before it serves; once serving, the API and workers are stopped (below).
let parentGone = (): void => {
  say('the npm start that ran this is gone: not starting');
  process.exit(1);
};
if (process.channel) {
  process.channel.unref();
  process.once('disconnect', () => parentGone());
  if (!process.connected) parentGone();
}
const dataDir = context('dev').dataDir;
/** Where the logs go: the file, unless LOG_LEVEL asks for them (then the terminal). */
const logFile = process.env.LOG_LEVEL ? undefined : join(dataDir, 'api.log');
/** A path as the user can type it from the checkout (where npm runs this). */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

const { env } = await up('dev');
applyEnv(env, localAppEnv('dev'));

const { getConfig } = await import('../config/index.js');
const { runCli, withCore, withOrganizations } = await import('../src/cli.js');
const { pendingMigrations } = await import('../src/shared/db/migrator.js');
const { migrations } = await import('../src/shared/db/migrations/index.js');
const { createLogger } = await import('../src/shared/logger.js');
const { startServer } = await import('../src/server.js');
const { startWorkers } = await import('../workers/index.js');

const config = getConfig();
const logger = createLogger(config.LOG_LEVEL, undefined, { file: logFile });

/**
 * Migrations and the bucket's versioning, CORS rule and upload events, as the release phase
 * applies them (`cli migrate`). With the logs in the file, what it reports goes there too (one
 * log line a line it says, kept by runCli's sink), and the terminal gets a line for the database
 * and one for the bucket; when it fails, its report is shown.
 */
async function releasePhase(): Promise<void> {
  if (!logFile) {
    if ((await runCli(['migrate'])) !== 0) process.exit(1);
    return;
  }
  const pending = await pendingMigrations(config.DATABASE_URL);
  const lines: string[] = [];
  const outcome = await runCli(['migrate'], { say: (line) => lines.push(line) }).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
  for (const line of lines) logger.info({ release: 'cli migrate' }, line);
  if (outcome !== 0) {
    process.stderr.write(`${lines.join('\n')}\n`);
    if (outcome instanceof Error) throw outcome;
    process.exit(1);
  }
  const latest = migrations.at(-1)?.name ?? 'none';
  say(
    pending.length
      ? `database: ${pending.length} migration${pending.length === 1 ? '' : 's'} applied, up to ${latest}`
      : `database: up to date (${migrations.length} migrations, up to ${latest})`,
  );
  say(`bucket ${config.S3_BUCKET} and the log's: configured (\`cli migrate\`'s report is in ${shown(logFile)})`);
}

/** The development key is kept in .data/dev/api-key so that every `npm start` prints a working one. */
async function developmentKey(): Promise<string> {
  const file = join(dataDir, 'api-key');
  // The CLI's own organizations service (what `cli org create` and `cli key create` use).
  return withOrganizations(config, async (orgs) => {
    if (existsSync(file)) {
      const key = readFileSync(file, 'utf8').trim();
      if (await orgs.authenticate(key)) return key;
    }
    const org = await orgs.createOrganization('Development');
    const { key } = await orgs.createApiKey(org.id);
    writeFileSync(file, key, { mode: 0o600 });
    return key;
  });
}

/** NOTARIZATION_ANCHOR=evm on the local chain: its first development account anchors (unless a key is set). */
async function developmentAnchorKey(): Promise<void> {
  if (config.NOTARIZATION_ANCHOR !== 'evm' || !env.EVM_RPC_URL) return;
  // The CLI's core (what `cli evm set-key` uses).
  await withCore(config, async ({ repos: { anchorKeys } }) => {
    if (!(await anchorKeys.evmKey()))
      logger.info({ address: await anchorKeys.setEvmKey(DEV_CHAIN_KEY) }, "the local chain's development account anchors notarization batches");
  });
}

await releasePhase();
const key = await developmentKey();
await developmentAnchorKey();
const server = await startServer({ logFile });
const workers = await startWorkers(undefined, { logger });
const base = `http://localhost:${server.port}`;
const logs = logFile
  ? `${shown(logFile)}   (tail -f ${shown(logFile)}; LOG_LEVEL=info npm start shows them here instead)`
  : `this terminal (LOG_LEVEL=${config.LOG_LEVEL}; without LOG_LEVEL they go to ${shown(join(dataDir, 'api.log'))})`;
process.stdout.write(`
Guarantee Registry is running (development).
  API          ${base}/api/v2/guarantees
  Docs         ${base}/docs   (OpenAPI: ${base}/openapi.json)
  Authorities  ${base}/authority   (local sign-in: mario.rossi / ${LOCAL_PASSWORD}, once bound: docs/authorities.md)
  API key      ${key}
  Logs         ${logs}

  curl -H 'X-API-Key: ${key}' ${base}/api/v2/guarantees

Ctrl-C stops the API and workers; \`npm run services -- down\` stops the local servers.
`);

let stopping = false;
/** Stops the API and the workers, once. */
function stopAll(): void {
  if (stopping) return;
  stopping = true;
  say('stopping the API and workers');
  // Both finish what is under way and close their own connections: the workers first (a
  // checkpoint they are publishing still logs), then the API, whose "shut down" is the log's
  // last line; the API answers until then.
  void (async () => [...(await Promise.allSettled([workers.close()])), ...(await Promise.allSettled([server.close()]))])().then((results) => {
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    for (const f of failed) say(`could not stop cleanly: ${(f.reason as Error).stack ?? String(f.reason)}`);
    say(failed.length ? 'stopped, not cleanly' : 'stopped');
    process.exit(failed.length ? 1 : 0);
  });
}
// Ctrl-C reaches this process twice when run.mjs started it on Node 24 (the terminal's, and the
// one run.mjs passes on): the first stops it, the rest change nothing.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stopAll);
// run.mjs gone from now on: the API and workers stop (the channel's listener is at the top).
parentGone = stopAll;
if (process.channel && !process.connected) stopAll();

// `npm start` on a fresh clone: starts the dev profile's local services that the environment
// does not point elsewhere, migrates, makes sure a development organization and API key
// exist, prints the key, then serves the API and runs the workers in this process.
// Ctrl-C stops the API and workers; the local servers keep running for a fast restart
// (`npm run services -- down` stops them).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyEnv, localAppEnv } from './local-env.js';
import { LOCAL_PASSWORD } from './oidc/users.js';
import { DEV_CHAIN_KEY } from './services/evm.js';
import { context, up } from './services/index.js';

const { env } = await up('dev');
applyEnv(env, localAppEnv('dev'));

const { getConfig } = await import('../config/index.js');
const { runCli, withCore, withOrganizations } = await import('../src/cli.js');
const { createLogger } = await import('../src/shared/logger.js');
const { startServer } = await import('../src/server.js');
const { startWorkers } = await import('../workers/index.js');

const config = getConfig();
const logger = createLogger(config.LOG_LEVEL);
// Migrations and the bucket's CORS rule, as the release phase applies them.
if ((await runCli(['migrate'])) !== 0) process.exit(1);

/** The development key is kept in .data/dev/api-key so that every `npm start` prints a working one. */
async function developmentKey(): Promise<string> {
  const file = join(context('dev').dataDir, 'api-key');
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

const key = await developmentKey();
await developmentAnchorKey();
const server = await startServer();
const workers = await startWorkers(undefined, { logger });
const base = `http://localhost:${server.port}`;
process.stdout.write(`
Guarantee Registry is running (development).
  API          ${base}/api/v1/guarantees
  Docs         ${base}/docs   (OpenAPI: ${base}/openapi.json)
  Authorities  ${base}/authority   (local sign-in: mario.rossi / ${LOCAL_PASSWORD}, once bound: README, "The authority's people")
  API key      ${key}

  curl -H 'X-API-Key: ${key}' ${base}/api/v2/guarantees

Ctrl-C stops the API and workers; \`npm run services -- down\` stops the local servers.
`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void Promise.allSettled([server.close(), workers.close()]).then(() => process.exit(0));
  });
}

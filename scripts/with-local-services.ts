// `npm run cli -- ...` and `npm run migrate`: the CLI against the same configuration as the
// development server. When DATABASE_URL is unset, the dev profile's MariaDB is started (if it
// is not running) and migrated; `migrate` also needs the store (it sets the bucket's CORS
// rule), so it starts every dev service. The other settings come from the dev profile too.
import { applyEnv, localAppEnv } from './local-env.js';
import { ALL, context, up } from './services/index.js';

const [task, ...args] = process.argv.slice(2);
const { env } = await up('dev', task === 'migrate' ? undefined : ['mariadb']);
const ctx = context('dev');
applyEnv(env, ...ALL.map((s) => s.env(ctx)), localAppEnv('dev'));
const { runCli } = await import('../src/cli.js');
if (task === 'migrate') {
  process.exitCode = await runCli(['migrate']);
} else {
  const { getConfig } = await import('../config/index.js');
  const { migrate } = await import('../src/shared/db/migrator.js');
  const { createLogger } = await import('../src/shared/logger.js');
  await migrate(getConfig().DATABASE_URL, createLogger('warn', process.stderr));
  process.exitCode = await runCli(args);
}

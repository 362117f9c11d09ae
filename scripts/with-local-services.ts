// `npm run cli -- ...` and `npm run migrate`: the CLI against the same configuration as the
// development server. When DATABASE_URL is unset, the dev profile's MariaDB is started (if it
// is not running) and migrated; the other settings come from the dev profile too.
import { applyEnv, localAppEnv } from './local-env.js';
import { ALL, context, up } from './services/index.js';

const [task, ...args] = process.argv.slice(2);
const { env } = await up('dev', ['mariadb']);
const ctx = context('dev');
applyEnv(env, ...ALL.map((s) => s.env(ctx)), localAppEnv('dev'));
const { runCli } = await import('../src/cli.js');
if (task !== 'migrate') {
  const code = await runCli(['migrate']);
  if (code !== 0) process.exit(code);
}
process.exitCode = await runCli(task === 'migrate' ? ['migrate'] : args);

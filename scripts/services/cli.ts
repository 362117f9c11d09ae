// npm run services -- up|down|status [--profile dev|test|bench] [--only mariadb,redis,clamd,s3]
// `up` prints on stdout (`export NAME=value` lines) every variable the application's processes
// need on these servers, the profile's own settings (ENCRYPTION_KEY, the admin password...)
// included: enough to run the Procfile's compiled processes by hand (`eval "$(npm run -s
// services -- up)"`, then `node dist/src/server.js`, `node dist/workers/index.js`).
// `down` says on stderr, one line a service, what it stopped (its pid) or that it was not running.
// `node 24` installs, when missing, the pinned Node 24 (.node-version) the tests and benchmarks
// also run on, and prints the directory holding its `node`: `PATH="$(npm run -s services -- node
// 24):$PATH" npm start` runs the project on it.
import { localAppEnv } from '../local-env.js';
import { ALL, PROFILES, down, status, up, type Profile, type ServiceName } from './index.js';
import { log } from './process.js';
import { runtimeNamed } from './runtime.js';

function parse(argv: string[]): { command: string; profile: Profile; only?: ServiceName[] } {
  const [command = 'status', ...rest] = argv;
  let profile: Profile = 'dev';
  let only: ServiceName[] | undefined;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    const value = rest[i + 1];
    if (arg === '--profile' && PROFILES.includes(value as Profile)) {
      profile = value as Profile;
      i++;
    } else if (arg === '--only' && value) {
      only = value.split(',') as ServiceName[];
      const unknown = only.filter((n) => !ALL.some((s) => s.name === n));
      if (unknown.length) throw new Error(`unknown service: ${unknown.join(', ')}`);
      i++;
    } else throw new Error(`unexpected argument: ${arg}`);
  }
  if (!['up', 'down', 'status'].includes(command)) throw new Error(`unknown command: ${command}`);
  return { command, profile, only };
}

try {
  const [first, second, ...more] = process.argv.slice(2);
  if (first === 'node') {
    if (!second || more.length) throw new Error('node takes one argument: the major version (24) or current');
    process.stdout.write(`${runtimeNamed(second).binDir}\n`);
    process.exit(0);
  }
  const { command, profile, only } = parse(process.argv.slice(2));
  if (command === 'up') {
    const { env } = await up(profile, only);
    for (const [k, v] of Object.entries({ ...localAppEnv(profile), ...env })) process.stdout.write(`export ${k}='${v}'\n`);
  } else if (command === 'down') {
    // One line a service, on stderr: what it stopped, or that it was not running.
    for (const { name, pids } of await down(profile, only)) {
      log(pids.length ? `stopped ${name} (pid${pids.length > 1 ? 's' : ''} ${pids.join(', ')})` : `${name} was not running`);
    }
  } else {
    for (const [name, state] of Object.entries(await status(profile))) process.stdout.write(`${name}\t${state}\n`);
  }
} catch (err) {
  process.stderr.write(`[services] ${(err as Error).message}\n`);
  process.stderr.write('usage: npm run services -- up|down|status [--profile dev|test|bench] [--only mariadb,redis,clamd,s3] | node 24\n');
  process.exitCode = 1;
}

// `npm run bench -- <name> [options] [--node 24]`: the benchmarks, run by hand; figures go to
// bench/results/, each run saying the Node it ran on. `--node 24` runs a bench (its own process
// and the servers it starts) on the pinned Node 24 LTS production runs on; the api and hostile
// benches take `--node current,24` themselves (the api bench measures both side by side by
// default, the hostile bench Node 24 alone).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { envFor, runtimeNamed } from '../scripts/services/runtime.js';
import { benchAmendments } from './amendments.js';
import { benchApi } from './api.js';
import { benchAuditScript } from './audit-script.js';
import { benchAuthority } from './authority.js';
import { benchHostile } from './hostile.js';
import { benchLog } from './log.js';
import { benchNotarize } from './notarize.js';
import { benchP7m } from './p7m.js';
import { benchP7mCorpus } from './p7m-corpus.js';
import { benchScan } from './scan.js';
import { benchStore } from './store.js';
import { benchVerify } from './verify.js';
import { benchWebhooks } from './webhooks.js';

const benches: Record<string, (argv: string[]) => Promise<void>> = {
  amendments: benchAmendments,
  api: benchApi,
  'audit-script': benchAuditScript,
  authority: benchAuthority,
  hostile: benchHostile,
  log: benchLog,
  scan: benchScan,
  p7m: benchP7m,
  'p7m-corpus': benchP7mCorpus,
  store: benchStore,
  webhooks: benchWebhooks,
  notarize: benchNotarize,
  verify: benchVerify,
};

const [name, ...argv] = process.argv.slice(2);
const bench = name === undefined ? undefined : benches[name];
if (!bench) {
  process.stderr.write(`usage: npm run bench -- <${Object.keys(benches).join('|')}> [options]\n`);
  process.exit(2);
}
const at = argv.indexOf('--node');
if (name !== 'api' && name !== 'hostile' && at >= 0) {
  // The same command again, on that runtime (unless this is it already).
  if (!argv[at + 1]) throw new Error('--node needs a runtime: current, 24 or production');
  const runtime = runtimeNamed(argv[at + 1] as string);
  const rest = argv.filter((_, i) => i !== at && i !== at + 1);
  if (runtime.version !== process.version) {
    const res = spawnSync(join(runtime.binDir, 'node'), ['scripts/run.mjs', 'bench', name as string, ...rest], { stdio: 'inherit', env: envFor(runtime) });
    process.exit(res.status ?? 1);
  }
  argv.splice(at, 2);
}
try {
  await bench(argv);
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
}

// `npm run bench -- <name> [options]`: the benchmarks, run by hand; figures go to bench/results/.
import { benchAmendments } from './amendments.js';
import { benchApi } from './api.js';
import { benchAuditScript } from './audit-script.js';
import { benchAuthority } from './authority.js';
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
try {
  await bench(argv);
} catch (err) {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
}

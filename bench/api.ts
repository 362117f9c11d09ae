// `npm run bench -- api [--fresh] [--duration S] [--rounds N] [--connections N] [--only NAME]... [--no-append] [--no-build] [--also DIR] [--node current,24]`
//
// Seeds 1,000,000 guarantees in one organization (and a few small organizations) in the bench
// profile's MariaDB (a 2 GB buffer pool: the data fits), then measures with autocannon, in one
// run, the application and a raw baseline (bench/raw-server.ts: node:http + mysql2, the same
// statements): create v2, get by id, list page 1, list page 50,000. Both run on each runtime
// --node names (by default the machine's Node and the Node 24 LTS production runs on, side by
// side in the same rounds). Prints one line per figure and runtime and appends them, dated, to
// bench/results/api.md. The seed is kept between runs (--fresh redoes it).
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { context, down, up } from '../scripts/services/index.js';
import { runtimesNamed, type Runtime } from '../scripts/services/runtime.js';
import { databaseName, rootSql } from '../scripts/services/mariadb.js';
import { migrate } from '../src/shared/db/migrator.js';
import {
  cpuSeconds,
  figureOf,
  idleCpuSeconds,
  log,
  median,
  newKey,
  procfileFlags,
  processCpuSeconds,
  startServer,
  peakRss,
  resetPeakRss,
  type Figure,
  appendResult,
  apiEnv,
  buildDist,
} from './support.js';
import { createLogger } from '../src/shared/logger.js';

export const BIG = 1_000_000;
const SMALL_ORGS = 4;
const SMALL = 10_000;
export const BIG_ORG_NAME = 'bench-big';

interface Options {
  fresh: boolean;
  duration: number;
  connections: number;
  rounds: number;
  /** Figures whose name starts with one of these (`--only get`): all when empty. */
  only: string[];
  /** false (`--no-append`): print the figures without appending them to bench/results/api.md. */
  append: boolean;
  /** Another build of the app to measure in the same rounds (`--also DIR`: DIR/dist, compiled there). */
  also?: string;
  /** false (`--no-build`): measure dist/ as it is. */
  build: boolean;
  /** The runtimes the app and the baseline run on (`--node current,24`): `current` is the machine's Node. */
  runtimes: string[];
}

function options(argv: string[]): Options {
  const o: Options = { fresh: false, duration: 12, connections: 64, rounds: 4, only: [], append: true, build: true, runtimes: ['current', '24'] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--fresh') o.fresh = true;
    else if (argv[i] === '--duration') o.duration = Number(argv[++i]);
    else if (argv[i] === '--connections') o.connections = Number(argv[++i]);
    else if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
    else if (argv[i] === '--only') o.only.push(String(argv[++i]));
    else if (argv[i] === '--no-append') o.append = false;
    else if (argv[i] === '--also') o.also = String(argv[++i]);
    else if (argv[i] === '--no-build') o.build = false;
    else if (argv[i] === '--node') o.runtimes = String(argv[++i]).split(',');
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

async function seedOrg(pool: Pool, name: string, n: number): Promise<string> {
  const orgId = uuidv7();
  const start = Date.now() - n * 10; // createdAt ascending, 10 ms apart, ending now
  await pool.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [orgId, name]);
  const batch = 5000;
  const hash = randomBytes(32);
  const insertBatch = async (from: number) => {
    const rows: unknown[][] = [];
    for (let seq = from; seq < Math.min(from + batch, n + 1); seq++) {
      const at = new Date(start + seq * 10);
      rows.push([
        uuidv7({ msecs: at.getTime() }),
        orgId,
        seq,
        `seed-${seq}`,
        `POL-${seq}`,
        'BAIL_ACT',
        null,
        at,
        at,
        null,
        0,
        `CIG${seq % 9973}`,
        null,
        (seq % 100000) + 0.5,
        100000,
        0,
        '',
        null,
        null,
        'PENDING',
        hash,
        at,
      ]);
    }
    await pool.query(
      `INSERT INTO guarantees (id, org_id, seq, transaction_id, policy_number, act_type, check_code, emitted_at,
      effective_at, expires_at, is_fixed_expiry, cig, batch_code, garanted_amount, contract_amount, is_automatic_renewal, note_shared,
      sign_emission_at, tx_hash, notarization_status, request_hash, created_at) VALUES ?`,
      [rows],
    );
  };
  const t0 = Date.now();
  const starts: number[] = [];
  for (let s = 1; s <= n; s += batch) starts.push(s);
  // Two writers: the bench machine has two cores and MariaDB wants one of them.
  await Promise.all(
    [0, 1].map(async (lane) => {
      for (let i = lane; i < starts.length; i += 2) await insertBatch(starts[i] as number);
    }),
  );
  await pool.query('UPDATE organizations SET guarantee_count = ?, last_created_ms = ? WHERE id = ?', [n, start + n * 10, orgId]);
  if (n >= 100_000) log(`seeded ${n} guarantees in ${((Date.now() - t0) / 1000).toFixed(1)} s (${Math.round(n / ((Date.now() - t0) / 1000))} rows/s)`);
  return orgId;
}

export async function prepareDatabase(url: string, fresh: boolean): Promise<{ bigOrg: string; seeded: boolean }> {
  const ctx = context('bench');
  const db = databaseName(ctx);
  if (fresh) await rootSql(ctx, `DROP DATABASE IF EXISTS ${db}; CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;`);
  await migrate(url, createLogger('warn'));
  const pool = mysql.createPool({ uri: url, connectionLimit: 4 });
  try {
    const [rows] = await pool.query<RowDataPacket[]>('SELECT id, guarantee_count FROM organizations WHERE name = ?', [BIG_ORG_NAME]);
    if (rows[0] && Number(rows[0].guarantee_count) >= BIG) return { bigOrg: rows[0].id as string, seeded: false };
    const bigOrg = await seedOrg(pool, BIG_ORG_NAME, BIG);
    for (let i = 0; i < SMALL_ORGS; i++) await seedOrg(pool, `bench-small-${i}`, SMALL);
    await pool.query('ANALYZE TABLE guarantees, organizations');
    return { bigOrg, seeded: true };
  } finally {
    await pool.end();
  }
}

export async function sampleIds(url: string, orgId: string, n: number): Promise<string[]> {
  const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
  const seqs = Array.from({ length: n }, () => 1 + Math.floor(Math.random() * BIG));
  const [rows] = await pool.query<RowDataPacket[]>('SELECT id FROM guarantees WHERE org_id = ? AND seq IN (?)', [orgId, seqs]);
  await pool.end();
  return rows.map((r) => r.id as string);
}

/** What one server's rounds of a figure cost: its requests, and CPU seconds by process (its own, MariaDB's, the load generator's, the machine's idle). */
interface Spent {
  requests: number;
  cpu: Record<string, number>;
}

/** CPU seconds so far of the server `pid`, of MariaDB, of this process, and the machine's idle time. */
function cpuNow(pid: number): Record<string, number> {
  return {
    server: processCpuSeconds(pid),
    mariadb: cpuSeconds({ mariadb: (c) => c.includes('mariadbd') && c.includes('.data/bench/') }).mariadb ?? 0,
    bench: processCpuSeconds('self'),
    idle: idleCpuSeconds(),
  };
}

/** A server under test: its name in the lines, its origin, its process, and the raw baseline its rounds are paired with (its index; none for a baseline). */
interface Server {
  name: string;
  url: string;
  pid: number;
  baseline?: number;
}

/**
 * Measures the servers (the app, any other build of it, the raw baseline last) in alternating
 * rounds (app, raw, app, raw...), so that the machine's drift during a figure falls on all
 * alike; req/s is total requests over total time, p50 and p99 the medians of the rounds'. Also
 * each round's ratio to the raw round of the same turn, which the machine's slow spells disturb
 * less, and the CPU each server's rounds cost.
 */
async function measureAll(
  servers: Server[],
  key: string,
  scenario: Scenario,
  opts: Options,
): Promise<Array<{ figure: Figure; pairs: number[]; spent: Spent }>> {
  const run = (url: string, duration: number) =>
    autocannon({
      url,
      connections: opts.connections,
      duration,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      requests: [scenario.request()],
    });
  await Promise.all(servers.map(async (s) => run(s.url, 2))); // warm-up, all at once: JIT, pools, buffer pool pages
  const rounds = Math.max(1, opts.rounds);
  const results = servers.map(() => [] as autocannon.Result[]);
  const spent = servers.map((): Spent => ({ requests: 0, cpu: {} }));
  for (let i = 0; i < rounds; i++) {
    // Each round in another order, so that no server always follows the same one (a create round leaves MariaDB work behind).
    for (const j of servers.map((_, k) => (k + i) % servers.length)) {
      const server = servers[j] as Server;
      const before = cpuNow(server.pid);
      const result = await run(server.url, opts.duration / rounds);
      const after = cpuNow(server.pid);
      results[j]?.push(result);
      const into = spent[j] as Spent;
      into.requests += result.requests.total;
      for (const [k, v] of Object.entries(after)) into.cpu[k] = (into.cpu[k] ?? 0) + v - (before[k] ?? 0);
    }
  }
  const rate = (r: autocannon.Result) => r.requests.total / r.duration;
  return results.map((rs, j) => {
    const raw = results[servers[j]?.baseline ?? j] ?? [];
    return {
      figure: figureOf(rs),
      pairs: rs.map((r, i) => rate(r) / rate(raw[i] as autocannon.Result)),
      spent: spent[j] as Spent,
    };
  });
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** CPU µs per request, one server's rounds: `app 215, mariadb 158, bench 73, idle 72`. */
const perRequest = (name: string, s: Spent) =>
  Object.entries(s.cpu)
    .map(([k, v]) => `${k === 'server' ? name : k} ${((v / Math.max(1, s.requests)) * 1e6).toFixed(0)}`)
    .join(', ');

interface Scenario {
  name: string;
  request: () => autocannon.Request;
}

function scenarios(ids: string[]): Scenario[] {
  let n = 0;
  const run = Date.now().toString(36);
  return [
    {
      name: 'create v2',
      request: () => ({
        method: 'POST',
        path: '/api/v2/guarantees',
        setupRequest: (req) => ({
          ...req,
          body: JSON.stringify({
            details: { transactionId: `bench-${run}-${n++}`, policyNumber: 'P-1', actType: 'BAIL_ACT' },
            economics: { garantedAmount: 1000.5 },
          }),
        }),
      }),
    },
    { name: 'get by id', request: () => ({ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v2/guarantees/${ids[n++ % ids.length]}` }) }) },
    { name: 'list page 1', request: () => ({ method: 'GET', path: '/api/v2/guarantees?page=1&limit=10' }) },
    { name: 'list page 50000', request: () => ({ method: 'GET', path: '/api/v2/guarantees?page=50000&limit=10' }) },
  ];
}

export async function benchApi(argv: string[]): Promise<void> {
  const opts = options(argv);
  const loadAtStart = loadavg();
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'));
  const url = process.env.DATABASE_URL as string;
  const { bigOrg, seeded } = await prepareDatabase(url, opts.fresh);
  log(seeded ? 'seeded the bench database' : 'reusing the seeded bench database (--fresh to reseed)');
  const key = await newKey(url, bigOrg);
  const ids = await sampleIds(url, bigOrg, 20_000);

  const appEnv = apiEnv({ DATABASE_POOL_MAX: '20' });
  buildDist(opts.build);
  // BENCH_NODE_FLAGS: more flags for the API process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it.
  const webFlags = [...procfileFlags('web'), ...(process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean)];
  log(`API started as the Procfile's web process: node ${[...webFlags, 'dist/src/server.js'].join(' ')}`);
  // Each runtime's app and raw baseline, measured in the same alternating rounds: apps first, then baselines.
  const runtimes = runtimesNamed(opts.runtimes);
  const tag = (r: Runtime) => (runtimes.length > 1 ? `${r.version.split('.')[0]} ` : '');
  const procs: ChildProcess[] = [];
  const servers: Server[] = [];
  // Each server's peak resident memory: up to the first figure, then each figure's (the kernel's mark started again before it).
  const peaks = new Map<string, number>();
  const foldPeaks = () =>
    servers.map(({ name, pid }) => {
      const bytes = peakRss(pid);
      peaks.set(name, Math.max(peaks.get(name) ?? 0, bytes));
      return { name, bytes };
    });
  const launch = async (name: string, script: string, port: number, flags: string[], runtime: Runtime, baseline?: number) => {
    const p = await startServer(name, script, appEnv, port, flags, join(runtime.binDir, 'node'));
    procs.push(p);
    servers.push({ name, url: `http://127.0.0.1:${port}`, pid: p.pid as number, ...(baseline !== undefined && { baseline }) });
  };
  const apps = runtimes.length + (opts.also === undefined ? 0 : 1);
  for (const [i, r] of runtimes.entries()) await launch(`${tag(r)}app`, 'dist/src/server.js', 3901 + 10 * i, webFlags, r, apps + i);
  // --also DIR: another build of the app (DIR/dist, compiled there beforehand), measured in the same rounds, on the first runtime.
  if (opts.also !== undefined) await launch('also', `${opts.also}/dist/src/server.js`, 3903, webFlags, runtimes[0] as Runtime, apps);
  // The baseline with the Procfile's flags for web (not BENCH_NODE_FLAGS), so that each runtime's
  // app/raw compares like with like: with semi-spaces of 8 MB and no heap limit, V8 grew the
  // baseline's heap to 213-272 MB and spent more CPU collecting.
  const rawFlags = procfileFlags('web');
  for (const [i, r] of runtimes.entries()) await launch(`${tag(r)}raw`, 'dist/bench/raw-server.js', 3902 + 10 * i, rawFlags, r);
  log(`on ${runtimes.map((r) => `Node ${r.version}`).join(' and ')}`);
  const lines: string[] = [];
  if (opts.also !== undefined) lines.push(`also: the app built in ${opts.also}`);
  try {
    for (const s of scenarios(ids).filter((x) => !opts.only.length || opts.only.some((o) => x.name.startsWith(o)))) {
      foldPeaks();
      for (const server of servers) resetPeakRss(server.pid);
      const measured = await measureAll(servers, key, s, opts);
      const figurePeaks = foldPeaks();
      const fig = (f: Figure) => `${f.reqs.toFixed(0).padStart(6)} req/s p50 ${f.p50} ms p99 ${f.p99} ms`;
      const errs = measured.map((m) => m.figure.non2xx + m.figure.errors).reduce((x, y) => x + y, 0)
        ? ` | non-2xx/errors ${measured.map((m, j) => `${servers[j]?.name} ${m.figure.non2xx}/${m.figure.errors}`).join(' ')}`
        : '';
      // One line an app: it, its runtime's baseline, their ratio.
      const appLines = measured.flatMap((m, j) => {
        const server = servers[j] as Server;
        if (server.baseline === undefined) return [];
        const raw = measured[server.baseline]?.figure as Figure;
        return [
          `${(j === 0 ? s.name : '').padEnd(16)} ${server.name} ${fig(m.figure)} | ${servers[server.baseline]?.name} ${fig(raw)} | app/raw ${(m.figure.reqs / raw.reqs).toFixed(2)}`,
        ];
      });
      // Side by side: each later runtime's app against the first's, req/s and p50.
      const first = measured[0]?.figure as Figure;
      const across = runtimes.slice(1).map((r, i) => {
        const f = measured[i + 1]?.figure as Figure;
        return `${''.padEnd(16)} ${tag(r).trim()}/${tag(runtimes[0] as Runtime).trim()} app: req/s ${(f.reqs / first.reqs).toFixed(2)}, p50 ${(f.p50 / first.p50).toFixed(2)}`;
      });
      const detail = [
        ...measured.flatMap((m, j) =>
          servers[j]?.baseline === undefined
            ? []
            : [`   round pairs ${servers[j]?.name}/raw: median ${median(m.pairs).toFixed(2)} (${m.pairs.map((x) => x.toFixed(2)).join(' ')})`],
        ),
        `   CPU µs per request: ${measured.map((m, j) => perRequest(servers[j]?.name ?? '', m.spent)).join(' | ')}`,
        `   peak RSS in this figure: ${figurePeaks.map((f) => `${f.name} ${mb(f.bytes)}`).join(', ')}`,
      ];
      const shown = [...appLines.map((l, i) => (i === appLines.length - 1 ? `${l}${errs}` : l)), ...across];
      for (const l of [...shown, ...detail]) process.stdout.write(`${l}\n`);
      lines.push(...shown, ...detail);
    }
    const peakLine = `peak RSS: ${[...peaks].map(([name, bytes]) => `${name} ${mb(bytes)}`).join(', ')}`;
    process.stdout.write(`${peakLine}\n`);
    lines.push(peakLine);
  } finally {
    // Stopped before the database they use (and a profiled API writes its profile on the way
    // out), once the requests autocannon left in flight at its last round's end are answered
    // (the raw server closes its pool under them otherwise: "Pool is closed.").
    await sleep(1000);
    const exited = procs.map((p) => new Promise((resolve) => p.once('exit', resolve)));
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(exited);
  }
  const [page1, page50k] = [lines.find((l) => l.startsWith('list page 1 ')), lines.find((l) => l.startsWith('list page 50000'))];
  const p50 = (l?: string) => Number(/app .*? p50 (\d+(?:\.\d+)?) ms/.exec(l ?? '')?.[1]);
  if (page1 && page50k) {
    const deep = `page 50000 p50 / page 1 p50 = ${(p50(page50k) / p50(page1)).toFixed(2)}`;
    process.stdout.write(`${deep}\n`);
    lines.push(deep);
  }
  const load = `load average at the start ${loadAtStart.map((x) => x.toFixed(2)).join(' ')}, at the end ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} (1, 5, 15 min)`;
  process.stdout.write(`${load}\n`);
  lines.push(load);
  if (opts.append)
    appendResult(
      'api',
      `\n### api, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${runtimes.map((r) => r.version).join(' and ')} (the app and its baseline on each), ${opts.connections} connections, ${opts.duration} s per server and figure in ${opts.rounds} alternating rounds after a 2 s warm-up; ${BIG.toLocaleString('en')} guarantees in the measured organization.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
    );
  // The seed stays on disk under .data/bench for the next run; the server does not stay up.
  if (started.length) await down('bench', started);
}

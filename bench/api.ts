// `npm run bench -- api [--fresh] [--duration S] [--rounds N] [--connections N]`
//
// Seeds 1,000,000 guarantees in one organization (and a few small organizations) in the bench
// profile's MariaDB (a 2 GB buffer pool: the data fits), then measures with autocannon, in one
// run, the application and a raw baseline (bench/raw-server.ts: node:http + mysql2, the same
// statements): create v2, get by id, list page 1, list page 50,000. Prints one line per figure
// and appends them, dated, to bench/README.md. The seed is kept between runs (--fresh redoes it).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { cpus } from 'node:os';
import autocannon from 'autocannon';
import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { context, down, up } from '../scripts/services/index.js';
import { databaseName, rootSql } from '../scripts/services/mariadb.js';
import { migrate } from '../src/shared/db/migrator.js';
import { figureOf, log, newKey, procfileFlags, startServer, watchRss, type Figure } from './support.js';
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
}

function options(argv: string[]): Options {
  const o: Options = { fresh: false, duration: 12, connections: 64, rounds: 4 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--fresh') o.fresh = true;
    else if (argv[i] === '--duration') o.duration = Number(argv[++i]);
    else if (argv[i] === '--connections') o.connections = Number(argv[++i]);
    else if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
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

/**
 * Measures the app and the raw baseline in alternating rounds (app, raw, app, raw...), so that
 * the machine's drift during a figure falls on both alike; req/s is total requests over total
 * time, p50 and p99 the medians of the rounds'.
 */
async function measurePair(urls: [string, string], key: string, scenario: Scenario, opts: Options): Promise<[Figure, Figure]> {
  const run = (url: string, duration: number) =>
    autocannon({
      url,
      connections: opts.connections,
      duration,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      requests: [scenario.request()],
    });
  await Promise.all(urls.map(async (u) => run(u, 2))); // warm-up, both at once: JIT, pools, buffer pool pages
  const rounds = Math.max(1, opts.rounds);
  const results: autocannon.Result[][] = [[], []];
  for (let i = 0; i < rounds; i++) {
    for (const j of [0, 1] as const) results[j]?.push(await run(urls[j], opts.duration / rounds));
  }
  return [figureOf(results[0] ?? []), figureOf(results[1] ?? [])];
}

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
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'));
  const url = process.env.DATABASE_URL as string;
  const { bigOrg, seeded } = await prepareDatabase(url, opts.fresh);
  log(seeded ? 'seeded the bench database' : 'reusing the seeded bench database (--fresh to reseed)');
  const key = await newKey(url, bigOrg);
  const ids = await sampleIds(url, bigOrg, 20_000);

  // The API process gets a complete production-like configuration. Redis runs, as in
  // production: the web process relays each create's guarantee.created event from the outbox
  // to the delivery queue after the commit. S3 and clamd are not on the request path of these
  // endpoints, so their addresses are never dialled.
  const appEnv = {
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '0',
    DATABASE_POOL_MAX: '20',
    S3_BUCKET: 'bench',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '1',
  };
  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const webFlags = procfileFlags('web');
  log(`API started as the Procfile's web process: node ${[...webFlags, 'dist/src/server.js'].join(' ')}`);
  const app = await startServer('app', 'dist/src/server.js', appEnv, 3901, webFlags);
  const raw = await startServer('raw', 'dist/bench/raw-server.js', appEnv, 3902);
  const peakRss = watchRss(app.pid as number);
  const rawPeakRss = watchRss(raw.pid as number);
  const lines: string[] = [];
  try {
    for (const s of scenarios(ids)) {
      const [a, r] = await measurePair(['http://127.0.0.1:3901', 'http://127.0.0.1:3902'], key, s, opts);
      const line =
        `${s.name.padEnd(16)} app ${a.reqs.toFixed(0).padStart(6)} req/s p50 ${a.p50} ms p99 ${a.p99} ms | raw ${r.reqs.toFixed(0).padStart(6)} req/s p50 ${r.p50} ms p99 ${r.p99} ms | app/raw ${(a.reqs / r.reqs).toFixed(2)}` +
        (a.non2xx + a.errors + r.non2xx + r.errors ? ` | non-2xx/errors app ${a.non2xx}/${a.errors} raw ${r.non2xx}/${r.errors}` : '');
      process.stdout.write(`${line}\n`);
      lines.push(line);
    }
    const rss = `api peak RSS ${(peakRss() / 1024 / 1024).toFixed(0)} MB (raw baseline ${(rawPeakRss() / 1024 / 1024).toFixed(0)} MB)`;
    process.stdout.write(`${rss}\n`);
    lines.push(rss);
  } finally {
    app.kill('SIGTERM');
    raw.kill('SIGTERM');
  }
  const [page1, page50k] = [lines.find((l) => l.startsWith('list page 1 ')), lines.find((l) => l.startsWith('list page 50000'))];
  const p50 = (l?: string) => Number(/app .*? p50 (\d+(?:\.\d+)?) ms/.exec(l ?? '')?.[1]);
  const deep = `page 50000 p50 / page 1 p50 = ${(p50(page50k) / p50(page1)).toFixed(2)}`;
  process.stdout.write(`${deep}\n`);
  appendFileSync(
    'bench/README.md',
    `\n### api, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, ${opts.connections} connections, ${opts.duration} s per server and figure in ${opts.rounds} alternating rounds after a 2 s warm-up; ${BIG.toLocaleString('en')} guarantees in the measured organization.\n\n\`\`\`\n${[...lines, deep].join('\n')}\n\`\`\`\n`,
  );
  // The seed stays on disk under .data/bench for the next run; the server does not stay up.
  if (started.length) await down('bench', started);
}

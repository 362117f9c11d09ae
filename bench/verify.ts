// `npm run bench -- verify [--duration S] [--rounds N] [--connections N] [--samples N] [--webhook]`
//
// On the API bench's database (1,000,000 guarantees in one organization, seeded by
// `npm run bench -- api` or here when absent), each given a checkCode: measures in one run,
// against the same production-like API process with the verification limit off,
//   1. public verifications per second (matching codes, random records across the million)
//      against get-by-id per second (random ids, API key), in alternating autocannon rounds;
//   2. the time of each kind of miss (unknown policy, wrong code, short code, other amount),
//      one request at a time, interleaved, so that the answer's time can be compared: medians
//      in microseconds and the largest ratio between two kinds.
// With --webhook, the organization has a webhook endpoint for the run, so that each verification
// also writes its guarantee.verified event and delivery and queues it in Redis (no worker runs:
// the deliveries' cost is the worker's, elsewhere). Without it, the organization has none.
// Appends the figures, dated, to bench/results/verify.md.
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import autocannon from 'autocannon';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { context, down, up } from '../scripts/services/index.js';
import { databaseName } from '../scripts/services/mariadb.js';
import { BIG, BIG_ORG_NAME, prepareDatabase, sampleIds } from './api.js';
import { cpuSeconds, figureOf, idleCpuSeconds, log, median, newKey, procfileFlags, processCpuSeconds, startServer, appendResult } from './support.js';

interface Options {
  duration: number;
  connections: number;
  rounds: number;
  samples: number;
  webhook: boolean;
}

function options(argv: string[]): Options {
  const o: Options = { duration: 12, connections: 64, rounds: 4, samples: 2000, webhook: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--duration') o.duration = Number(argv[++i]);
    else if (argv[i] === '--connections') o.connections = Number(argv[++i]);
    else if (argv[i] === '--rounds') o.rounds = Number(argv[++i]);
    else if (argv[i] === '--samples') o.samples = Number(argv[++i]);
    else if (argv[i] === '--webhook') o.webhook = true;
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

/** The check code of the big organization's guarantee `seq` (at least 8 characters). */
const codeOf = (seq: number) => `VK-${seq.toString(36).toUpperCase()}-2026`;
/** One record keeps a 7-character code: the "short code" miss. */
const SHORT_SEQ = 7;
const SHORT_CODE = 'SHORT-7';

/** Gives the big organization's guarantees their check codes, once (in chunks: no long lock). */
async function ensureCheckCodes(url: string, orgId: string): Promise<void> {
  const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
  try {
    const [rows] = await pool.query<RowDataPacket[]>('SELECT check_code FROM guarantees WHERE org_id = ? AND seq = ?', [orgId, BIG]);
    if (rows[0]?.check_code === codeOf(BIG)) return;
    log('giving the seeded guarantees their check codes (once)');
    const t0 = Date.now();
    for (let from = 1; from <= BIG; from += 20_000) {
      await pool.query(
        `UPDATE guarantees SET check_code = CONCAT('VK-', UPPER(CONV(seq, 10, 36)), '-2026')
        WHERE org_id = ? AND seq BETWEEN ? AND ?`,
        [orgId, from, from + 19_999],
      );
    }
    await pool.query('UPDATE guarantees SET check_code = ? WHERE org_id = ? AND seq = ?', [SHORT_CODE, orgId, SHORT_SEQ]);
    await pool.query('ANALYZE TABLE guarantees');
    log(`check codes set in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  } finally {
    await pool.end();
  }
}

/**
 * Every run starts from the same state: no counts, events or deliveries (each run writes a
 * few hundred thousand; the tables of earlier runs made later ones slower, measured), and no
 * endpoint of the big organization (one a --webhook run could not remove). The bench database
 * is the bench's own.
 */
async function emptyVerificationTables(url: string, orgId: string): Promise<void> {
  // Only the bench profile's own database, never one a DATABASE_URL of the shell names.
  if (new URL(url).pathname !== `/${databaseName(context('bench'))}`)
    throw new Error(`bench verify empties its tables only in the bench database, not ${new URL(url).pathname.slice(1)}`);
  const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
  try {
    for (const table of ['verification_counts', 'webhook_attempts', 'webhook_deliveries', 'webhook_events']) await pool.query(`TRUNCATE TABLE ${table}`);
    await pool.query('DELETE FROM webhook_endpoints WHERE org_id = ?', [orgId]);
  } finally {
    await pool.end();
  }
}

/** Empties the bench profile's own Redis of the delivery jobs of earlier --webhook runs (never a Redis the shell names). */
async function emptyBenchRedis(): Promise<void> {
  const url = new URL(process.env.REDIS_URL as string);
  if (!['127.0.0.1', 'localhost'].includes(url.hostname) || Number(url.port) !== context('bench').ports.redis)
    throw new Error(`bench verify --webhook empties only the bench's own Redis, not ${url.host}`);
  const redis = new Redis(url.toString(), { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
}

const randomSeq = () => 1 + SHORT_SEQ + Math.floor(Math.random() * (BIG - SHORT_SEQ));

export async function benchVerify(argv: string[]): Promise<void> {
  const opts = options(argv);
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'));
  const url = process.env.DATABASE_URL as string;
  const { bigOrg } = await prepareDatabase(url, false);
  await ensureCheckCodes(url, bigOrg);
  await emptyVerificationTables(url, bigOrg);
  if (opts.webhook) await emptyBenchRedis();
  const key = await newKey(url, bigOrg);
  const ids = await sampleIds(url, bigOrg, 20_000);

  const appEnv = {
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '0',
    VERIFY_RATE_PER_MINUTE: '0',
    DATABASE_POOL_MAX: '20',
    S3_BUCKET: 'bench',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '1',
  };
  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const origin = 'http://127.0.0.1:3903';
  // BENCH_NODE_FLAGS: more flags for the API process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it.
  const extraFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  const app = await startServer('app', 'dist/src/server.js', appEnv, 3903, [...procfileFlags('web'), ...extraFlags]);
  const lines: string[] = [];
  try {
    if (opts.webhook) {
      // Nothing listens there: no worker runs, and the API only writes and queues.
      const res = await request(`${origin}/api/v1/webhooks`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ endpoint: 'https://127.0.0.1:9/verified' }),
      });
      const body = (await res.body.json()) as { success?: boolean };
      if (res.statusCode !== 200 || !body.success) throw new Error(`the webhook endpoint was refused (${res.statusCode}): ${JSON.stringify(body)}`);
    }
    let n = 0;
    const getById: autocannon.Request = { method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/v2/guarantees/${ids[n++ % ids.length]}` }) };
    const verify: autocannon.Request = {
      method: 'POST',
      path: '/api/public/v1/verifications',
      setupRequest: (req) => {
        const seq = randomSeq();
        return { ...req, body: JSON.stringify({ policyNumber: `POL-${seq}`, checkCode: codeOf(seq) }) };
      },
    };
    const run = (req: autocannon.Request, duration: number) =>
      autocannon({
        url: origin,
        connections: opts.connections,
        duration,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        requests: [req],
      });
    // CPU per request of each process (what saturates the two cores: the API, MariaDB or the
    // load generator), of the API's main thread (one core at most: its bottleneck when the
    // machine idles), and the machine's idle time.
    const processes = { web: (c: string) => c.includes('dist/src/server.js'), mariadb: (c: string) => c.includes('mariadbd') };
    const cpuNow = (): Record<string, number> => ({
      ...cpuSeconds(processes),
      'web main thread': processCpuSeconds(app.pid as number, true),
      bench: processCpuSeconds('self'),
      idle: idleCpuSeconds(),
    });
    const cpu: Array<Record<string, number>> = [{}, {}];
    const measured = async (kind: 0 | 1, req: autocannon.Request, duration: number): Promise<autocannon.Result> => {
      const before = cpuNow();
      const result = await run(req, duration);
      const after = cpuNow();
      const into = cpu[kind] as Record<string, number>;
      for (const [k, v] of Object.entries(after)) into[k] = (into[k] ?? 0) + v - (before[k] ?? 0);
      return result;
    };
    await run(getById, 2);
    await run(verify, 2);
    const results: autocannon.Result[][] = [[], []];
    for (let i = 0; i < opts.rounds; i++) {
      results[0]?.push(await measured(0, getById, opts.duration / opts.rounds));
      results[1]?.push(await measured(1, verify, opts.duration / opts.rounds));
    }
    const [g, v] = [figureOf(results[0] ?? []), figureOf(results[1] ?? [])];
    lines.push(
      `get by id        ${g.reqs.toFixed(0).padStart(6)} req/s p50 ${g.p50} ms p99 ${g.p99} ms${g.non2xx + g.errors ? ` | non-2xx/errors ${g.non2xx}/${g.errors}` : ''}`,
    );
    // Each verify round against the get round just before it: the machine's slow spells fall on both of a pair.
    const rate = (r: autocannon.Result) => r.requests.total / r.duration;
    const pairs = (results[1] ?? []).map((r, i) => rate(r) / rate(results[0]?.[i] as autocannon.Result));
    lines.push(
      `${(opts.webhook ? 'verify (endpoint)' : 'verify (match)').padEnd(17)}${v.reqs.toFixed(0).padStart(6)} req/s p50 ${v.p50} ms p99 ${v.p99} ms${v.non2xx + v.errors ? ` | non-2xx/errors ${v.non2xx}/${v.errors}` : ''} | verify/get ${(v.reqs / g.reqs).toFixed(2)}, median of the ${pairs.length} round pairs ${median(pairs).toFixed(2)} (${pairs.map((x) => x.toFixed(2)).join(' ')})`,
    );
    results.forEach((rs, kind) => {
      const n = rs.reduce((s, r) => s + r.requests.total, 0);
      const perRequest = Object.entries(cpu[kind] ?? {})
        .map(([k, v]) => `${k} ${((v / n) * 1e6).toFixed(0)}`)
        .join(', ');
      lines.push(`   CPU µs per request, ${kind === 0 ? 'get by id' : 'verify'}: ${perRequest}`);
    });
    for (const l of lines) process.stdout.write(`${l}\n`);

    // The misses, one request at a time and interleaved: the machine's drift falls on all alike.
    if (opts.samples > 0) {
      const misses: Record<string, () => object> = {
        'unknown policy': () => ({ policyNumber: `NOPE-${randomSeq()}`, checkCode: codeOf(randomSeq()) }),
        'wrong code': () => {
          const s = randomSeq();
          return { policyNumber: `POL-${s}`, checkCode: codeOf(s + 1) };
        },
        'short code': () => ({ policyNumber: `POL-${SHORT_SEQ}`, checkCode: SHORT_CODE }),
        'other amount': () => {
          const s = randomSeq();
          return { policyNumber: `POL-${s}`, checkCode: codeOf(s), garantedAmount: 0.01 };
        },
      };
      const agent = new Agent({ connections: 1 });
      const times: Record<string, number[]> = Object.fromEntries(Object.keys(misses).map((k) => [k, []]));
      const once = async (body: object): Promise<number> => {
        const t0 = process.hrtime.bigint();
        const res = await request(`${origin}/api/public/v1/verifications`, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        await res.body.dump();
        if (res.statusCode !== 404) throw new Error(`a miss answered ${res.statusCode}`);
        return Number(process.hrtime.bigint() - t0) / 1000;
      };
      for (let i = 0; i < 200; i++) for (const make of Object.values(misses)) await once(make()); // warm-up
      for (let i = 0; i < opts.samples; i++) {
        for (const [kind, make] of Object.entries(misses)) times[kind]?.push(await once(make()));
      }
      await agent.close();
      const medians = Object.entries(times).map(([kind, ts]) => [kind, median(ts)] as const);
      const values = medians.map(([, m]) => m);
      const missLine = `misses, p50 of ${opts.samples} each, one at a time: ${medians.map(([k, m]) => `${k} ${m.toFixed(0)} µs`).join(', ')} | largest/smallest ${(Math.max(...values) / Math.min(...values)).toFixed(3)}`;
      process.stdout.write(`${missLine}\n`);
      lines.push(missLine);
    }
  } finally {
    // Stopped before the database it uses (and, profiled, it writes its profile on the way out).
    const exited = new Promise((resolve) => app.once('exit', resolve));
    app.kill('SIGTERM');
    await exited;
  }
  appendResult(
    'verify',
    `\n### verify, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, ${opts.connections} connections, ${opts.duration} s per figure in ${opts.rounds} alternating rounds; ${BIG.toLocaleString('en')} guarantees in ${BIG_ORG_NAME}.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  if (started.length) await down('bench', started);
}

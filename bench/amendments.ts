// `npm run bench -- amendments [--count N] [--sample N] [--reads N]`
//
// What a guarantee's history costs its requests (issue 27, bounded work per request): against
// one production-like API process (compiled, the Procfile's web flags) on the bench profile's
// MariaDB (a database of its own, made afresh) and Redis, one client over one connection
// records N - S amendments (N 10,000, S 500 by default) on one guarantee, EXTENSION and
// AMOUNT_CHANGE in turn; then its last S and the first S of a new guarantee in turn, timing
// each, so that the machine's drift falls on both alike. The figure is the ratio of their
// medians (1 when recording reads the same whatever the history; it grew with N when every
// amendment folded all those before it). Then, `reads` times each, in turn: GET .../amendments
// (the new one's first page; the long one's first page, a page near its end and a page of
// 500) and GET .../state of each. Appends the figures, dated, to bench/results/amendments.md.
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import mysql from 'mysql2/promise';
import { Agent, request } from 'undici';
import { v7 as uuidv7 } from 'uuid';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { log, median, newKey, ownDatabase, procfileFlags, startServer, appendResult } from './support.js';

interface Options {
  count: number;
  sample: number;
  reads: number;
}

function options(argv: string[]): Options {
  const o: Options = { count: 10_000, sample: 500, reads: 200 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--count') o.count = Number(argv[++i]);
    else if (argv[i] === '--sample') o.sample = Number(argv[++i]);
    else if (argv[i] === '--reads') o.reads = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  // The new guarantee's amendments fill a page of 100; the long one's, a page of 500 and one near its end.
  if (!(o.sample >= 100 && o.count >= o.sample + 600)) throw new Error('--sample must be at least 100, and --count at least --sample + 600');
  return o;
}

const PORT = 3915;
const origin = `http://127.0.0.1:${PORT}`;

export async function benchAmendments(argv: string[]): Promise<void> {
  const opts = options(argv);
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'));
  // A database of its own, made afresh each run.
  const url = await ownDatabase('amendments');
  const orgId = uuidv7();
  const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
  await pool.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [orgId, 'bench-amendments']);
  await pool.end();
  const key = await newKey(url, orgId);

  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const appEnv = {
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '0',
    DATABASE_POOL_MAX: '10',
    S3_BUCKET: 'bench',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '1',
  };
  const app = await startServer('app', 'dist/src/server.js', appEnv, PORT, procfileFlags('web'));
  const agent = new Agent({ connections: 1 });
  const lines: string[] = [];
  try {
    const call = async (method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; json: unknown; us: number }> => {
      const t0 = process.hrtime.bigint();
      const res = await request(`${origin}${path}`, {
        method,
        dispatcher: agent,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const json = await res.body.json();
      return { status: res.statusCode, json, us: Number(process.hrtime.bigint() - t0) / 1000 };
    };
    const guarantee = async (): Promise<string> => {
      const created = await call('POST', '/api/v2/guarantees', {
        details: { policyNumber: 'BENCH-AMENDMENTS', effectiveAt: '2026-01-01T00:00:00Z', expiresAt: '2030-01-01T00:00:00Z' },
        economics: { garantedAmount: 100_000 },
      });
      if (created.status !== 200) throw new Error(`the guarantee was refused (${created.status}): ${JSON.stringify(created.json)}`);
      return (created.json as { id: string }).id;
    };
    const recorded = new Map<string, number>();
    /** Records the guarantee's next amendment (extensions a day later each time, and amount changes, in turn); its time. */
    const record = async (id: string): Promise<number> => {
      const n = (recorded.get(id) ?? 0) + 1;
      const body =
        n % 2
          ? { type: 'EXTENSION', effectiveAt: '2026-02-01T00:00:00Z', expiresAt: new Date(Date.UTC(2030, 0, 1 + n)).toISOString() }
          : { type: 'AMOUNT_CHANGE', effectiveAt: '2026-02-01T00:00:00Z', garantedAmount: 100_000 + n };
      const res = await call('POST', `/api/v2/guarantees/${id}/amendments`, body);
      if (res.status !== 200) throw new Error(`amendment ${n} answered ${res.status}: ${JSON.stringify(res.json)}`);
      recorded.set(id, n);
      return res.us;
    };
    const long = await guarantee();
    const fresh = await guarantee();

    log(`recording ${opts.count - opts.sample} amendments on one guarantee`);
    const t0 = Date.now();
    const early: number[] = [];
    while ((recorded.get(long) ?? 0) < opts.count - opts.sample) {
      const us = await record(long);
      const n = recorded.get(long) ?? 0;
      if (n <= opts.sample) early.push(us);
      if (n % 1000 === 0) log(`${n} recorded`);
    }
    const seconds = (Date.now() - t0) / 1000;
    // Its last ones and a new guarantee's first ones in turn: the machine's drift falls on both alike.
    log(`recording its last ${opts.sample} and a new guarantee's first ${opts.sample}, in turn`);
    const late: number[] = [];
    const first: number[] = [];
    for (let i = 0; i < opts.sample; i++) {
      late.push(await record(long));
      first.push(await record(fresh));
    }
    const [f, l] = [median(first), median(late)];
    lines.push(
      `record an amendment, in turn: amendments 1-${opts.sample} of a new guarantee p50 ${f.toFixed(0)} µs | ${opts.count - opts.sample + 1}-${opts.count} of the long one p50 ${l.toFixed(0)} µs | long/new ${(l / f).toFixed(2)}`,
    );
    lines.push(
      `   (the long one's first ${opts.sample}, recorded at the start: p50 ${median(early).toFixed(0)} µs; its first ${(opts.count - opts.sample).toLocaleString('en')} in ${seconds.toFixed(0)} s)`,
    );

    // The reads, interleaved, on the long guarantee and on the new one (as many amendments as a page of 500).
    const count = (j: unknown) => (j as { amendments: unknown[] }).amendments.length;
    const reads: Record<string, { path: string; check: (json: unknown) => boolean }> = {
      'amendments of the new one, first page (100)': { path: `/api/v2/guarantees/${fresh}/amendments`, check: (j) => count(j) === 100 },
      'amendments of the long one, first page (100)': { path: `/api/v2/guarantees/${long}/amendments`, check: (j) => count(j) === 100 },
      'amendments of the long one, near its end (100)': {
        path: `/api/v2/guarantees/${long}/amendments?after=${opts.count - 150}`,
        check: (j) => count(j) === 100,
      },
      'amendments of the long one, a page of 500': {
        path: `/api/v2/guarantees/${long}/amendments?after=${opts.count - 600}&limit=500`,
        check: (j) => count(j) === 500,
      },
      'state of the new one': { path: `/api/v2/guarantees/${fresh}/state`, check: (j) => (j as { lastSeq: number }).lastSeq === opts.sample },
      'state of the long one': { path: `/api/v2/guarantees/${long}/state`, check: (j) => (j as { lastSeq: number }).lastSeq === opts.count },
    };
    const readTimes: Record<string, number[]> = Object.fromEntries(Object.keys(reads).map((k) => [k, []]));
    const kinds = Object.keys(reads);
    let x = 1;
    for (let i = 0; i < opts.reads + 20; i++) {
      // Each round in another order (shuffled, the same each run): what a read follows (a page of 500's garbage, say) falls on every kind alike.
      const order = [...kinds];
      for (let j = order.length - 1; j > 0; j--) {
        x = (x * 1103515245 + 12345) % 2 ** 31;
        const k = x % (j + 1);
        [order[j], order[k]] = [order[k] as string, order[j] as string];
      }
      for (const kind of order) {
        const r = reads[kind] as (typeof reads)[string];
        const res = await call('GET', r.path);
        if (res.status !== 200 || !r.check(res.json)) throw new Error(`${kind} answered ${res.status}: ${JSON.stringify(res.json).slice(0, 200)}`);
        if (i >= 20) readTimes[kind]?.push(res.us); // the first 20 warm up
      }
    }
    const p50 = (kind: string) => median(readTimes[kind] ?? []);
    for (const kind of Object.keys(reads)) lines.push(`GET ${kind.padEnd(47)} p50 ${p50(kind).toFixed(0).padStart(6)} µs`);
    lines.push(
      `   long/new: state ${(p50('state of the long one') / p50('state of the new one')).toFixed(2)}, a page near the end ${(p50('amendments of the long one, near its end (100)') / p50('amendments of the new one, first page (100)')).toFixed(2)} (${opts.reads} reads each, in turn)`,
    );
    for (const line of lines) process.stdout.write(`${line}\n`);
  } finally {
    await agent.close();
    const exited = new Promise((resolve) => app.once('exit', resolve));
    app.kill('SIGTERM');
    await exited;
  }
  appendResult(
    'amendments',
    `\n### amendments, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, one client over one connection, a guarantee of ${opts.count.toLocaleString('en')} amendments and a new one of ${opts.sample}, medians.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  log('done');
  if (started.length) await down('bench', started);
}

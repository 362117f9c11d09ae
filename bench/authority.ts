// `npm run bench -- authority [--demands N] [--clients C] [--links N] [--reads N]`
//
// The contracting authority as a party (issue 29), against production-like processes (compiled,
// the Procfile's flags: one API process and one webhooks worker) on the bench profile's MariaDB
// (a database of its own, made afresh) and Redis:
// 1. Demands under load: N guarantees (400) registered by an issuer and taken charge of by one
//    authority through the API; then C clients (16) file a DEMAND on each at once. For each:
//    the API's answer (POST to 200), and the demand reaching the issuer's webhook endpoint
//    (POST sent to `guarantee.demanded` received by a local receiver: the outbox, the relay, the
//    worker, the signed delivery). p50 and p99 of both.
// 2. The authority's list at `links` (100,000) linked guarantees, seeded straight into the
//    database (each with its BENEFICIARY_LINKED amendment and its fold, as the service writes
//    them): GET /api/authority/v1/guarantees page 1 and its last page, `reads` times each in
//    turn over one connection; p50, p99 and the ratio deep/first.
// Appends the figures, dated, to bench/results/authority.md.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { cpus } from 'node:os';
import mysql from 'mysql2/promise';
import { Agent, request } from 'undici';
import { v7 as uuidv7 } from 'uuid';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { log, median, newKey, ownDatabase, procfileFlags, startServer, appendResult } from './support.js';

interface Options {
  demands: number;
  clients: number;
  links: number;
  reads: number;
}

function options(argv: string[]): Options {
  const o: Options = { demands: 400, clients: 16, links: 100_000, reads: 200 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]?.replace(/^--/, '') as keyof Options;
    if (!(flag in o)) throw new Error(`unknown option ${argv[i]}`);
    o[flag] = Number(argv[++i]);
  }
  if (!(o.demands >= 10 && o.clients >= 1 && o.links >= 100 && o.reads >= 10))
    throw new Error('--demands >= 10, --clients >= 1, --links >= 100, --reads >= 10');
  return o;
}

const PORT = 3916;
const origin = `http://127.0.0.1:${PORT}`;
const pct = (xs: number[], p: number) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;
/** A valid fiscal code of a public body (ten digits and their check digit). */
const AUTHORITY_FISCAL_CODE = '80012345671';

export async function benchAuthority(argv: string[]): Promise<void> {
  const opts = options(argv);
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'), {
    QUEUE_PREFIX: `bench-authority-${Date.now()}`,
    S3_BUCKET: 'unused',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '9',
    RATE_LIMIT_PER_MINUTE: '0',
    VERIFY_RATE_PER_MINUTE: '0',
    VERIFY_RATE_PER_MINUTE_PER_NETWORK: '0',
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    WEBHOOK_ALLOW_HTTP: 'true',
  });
  // A database of its own, made afresh each run.
  const url = await ownDatabase('authority');
  const db = mysql.createPool({ uri: url, connectionLimit: 4 });
  const issuerId = uuidv7();
  const authorityId = uuidv7();
  await db.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [issuerId, 'Assicurazioni Bench S.p.A.']);
  await db.query("INSERT INTO organizations (id, name, guarantee_count, created_at, kind, fiscal_code) VALUES (?, ?, 0, NOW(3), 'authority', ?)", [
    authorityId,
    'Comune di Bench',
    AUTHORITY_FISCAL_CODE,
  ]);
  const issuerKey = await newKey(url, issuerId);
  const authorityKey = await newKey(url, authorityId);

  // The issuer's webhook endpoint: when each demand arrived, by guarantee.
  const demandedAt = new Map<string, number>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { type: string; data: { amendment?: { guaranteeId?: string } } };
      const id = body.data.amendment?.guaranteeId;
      if (body.type === 'guarantee.demanded' && id && !demandedAt.has(id)) demandedAt.set(id, at);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const target = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;

  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const appEnv = { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  const app = await startServer('app', 'dist/src/server.js', appEnv, PORT, procfileFlags('web'));
  const worker = await new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(process.execPath, [...procfileFlags('worker'), 'dist/workers/index.js', 'webhooks'], {
      env: { ...appEnv, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('workers started')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`the webhooks worker exited (${code})`)));
  });
  const agent = new Agent({ connections: opts.clients + 2 });
  const lines: string[] = [];
  const say = (l: string) => {
    process.stdout.write(`${l}\n`);
    lines.push(l);
  };
  try {
    const call = async (key: string, method: 'GET' | 'POST', path: string, body?: unknown) => {
      const t0 = performance.now();
      const res = await request(`${origin}${path}`, {
        method,
        dispatcher: agent,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const json = (await res.body.json()) as Record<string, unknown>;
      const ms = performance.now() - t0;
      if (res.statusCode !== 200) throw new Error(`${method} ${path} answered ${res.statusCode}: ${JSON.stringify(json).slice(0, 300)}`);
      return { json, ms, at: t0 };
    };
    const inParallel = async <T>(items: T[], clients: number, work: (item: T) => Promise<void>) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (next < items.length) await work(items[next++] as T);
        }),
      );
    };

    await call(issuerKey, 'POST', '/api/v1/webhooks', { endpoint: target });
    log(`registering ${opts.demands} guarantees and taking charge of each`);
    const ids: string[] = [];
    await inParallel(
      Array.from({ length: opts.demands }, (_, i) => i),
      8,
      async (i) => {
        const policyNumber = `BENCH-AUTH-${i}`;
        const checkCode = `K${uuidv7().replace(/-/g, '').slice(-17)}`;
        const created = await call(issuerKey, 'POST', '/api/v2/guarantees', {
          details: { policyNumber, checkCode, cig: 'B1E2N3C4H5', effectiveAt: '2026-01-01T00:00:00Z', expiresAt: '2030-01-01T00:00:00Z' },
          economics: { garantedAmount: 50_000 },
        });
        await call(authorityKey, 'POST', '/api/authority/v1/guarantees', { policyNumber, checkCode, cig: 'B1E2N3C4H5', garantedAmount: 50_000 });
        ids.push(created.json.id as string);
      },
    );

    log(`${opts.clients} clients file a demand on each of the ${opts.demands}`);
    const answered = new Map<string, number>();
    const sentAt = new Map<string, number>();
    const wall0 = Date.now();
    const perf0 = performance.now();
    await inParallel(ids, opts.clients, async (id) => {
      const res = await call(authorityKey, 'POST', `/api/authority/v1/guarantees/${id}/amendments`, { type: 'DEMAND', claimedAmount: 1000, reason: 'bench' });
      answered.set(id, res.ms);
      sentAt.set(id, wall0 + (res.at - perf0));
    });
    const filedInMs = Date.now() - wall0;
    const deadline = Date.now() + 120_000;
    while (demandedAt.size < ids.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (demandedAt.size < ids.length) throw new Error(`only ${demandedAt.size} of ${ids.length} demands reached the issuer within 2 minutes`);
    const api = [...answered.values()];
    const delivered = ids.map((id) => (demandedAt.get(id) as number) - (sentAt.get(id) as number));
    say(
      `DEMAND, ${ids.length} by ${opts.clients} clients at once (${((ids.length * 1000) / filedInMs).toFixed(0)}/s): answered p50 ${pct(api, 50).toFixed(0)} ms, p99 ${pct(api, 99).toFixed(0)} ms | at the issuer's webhook (guarantee.demanded, signed, through the outbox) p50 ${pct(delivered, 50).toFixed(0)} ms, p99 ${pct(delivered, 99).toFixed(0)} ms`,
    );

    log(`seeding ${opts.links.toLocaleString('en')} guarantees taken charge of`);
    const t0 = Date.now();
    const start = Date.now() - opts.links * 10;
    const hash = Buffer.alloc(32, 1);
    const base = ids.length;
    for (let from = 1; from <= opts.links; from += 5000) {
      const guarantees: unknown[][] = [];
      const links: unknown[][] = [];
      const amendments: unknown[][] = [];
      const folds: unknown[][] = [];
      for (let n = from; n < Math.min(from + 5000, opts.links + 1); n++) {
        const at = new Date(start + n * 10);
        const id = uuidv7({ msecs: at.getTime() });
        guarantees.push([id, issuerId, base + n, `seed-${n}`, `POL-SEED-${n}`, 'BAIL_ACT', at, at, 0, 'B1E2N3C4H5', 50_000, 0, '', 'PENDING', hash, at]);
        links.push([id, authorityId, base + n, at]);
        amendments.push([uuidv7({ msecs: at.getTime() }), id, issuerId, 1, 'BENEFICIARY_LINKED', at, at, 'authority', authorityId]);
        folds.push([id, 50_000, 0, 1, authorityId]);
      }
      await db.query(
        `INSERT INTO guarantees (id, org_id, seq, transaction_id, policy_number, act_type, emitted_at, effective_at, is_fixed_expiry, cig,
        garanted_amount, is_automatic_renewal, note_shared, notarization_status, request_hash, created_at) VALUES ?`,
        [guarantees],
      );
      await db.query('INSERT INTO guarantee_beneficiaries (guarantee_id, authority_id, seq, linked_at) VALUES ?', [links]);
      await db.query('INSERT INTO guarantee_amendments (id, guarantee_id, org_id, seq, type, effective_at, created_at, actor, actor_org_id) VALUES ?', [
        amendments,
      ]);
      await db.query('INSERT INTO guarantee_folds (guarantee_id, garanted_amount, partially_released, last_seq, beneficiary_id) VALUES ?', [folds]);
    }
    log(`seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    const total = base + opts.links;
    const limit = 20;
    const last = Math.ceil(total / limit);
    const pages: Record<string, string> = { 'page 1': '?page=1&limit=20', [`page ${last} (the last)`]: `?page=${last}&limit=20` };
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(pages).map((k) => [k, []]));
    const one = new Agent({ connections: 1 });
    for (let i = 0; i < opts.reads + 20; i++) {
      for (const [name, query] of i % 2 ? Object.entries(pages).reverse() : Object.entries(pages)) {
        const t = performance.now();
        const res = await request(`${origin}/api/authority/v1/guarantees${query}`, { dispatcher: one, headers: { 'x-api-key': authorityKey } });
        const json = (await res.body.json()) as { totalItems: number; guarantees: unknown[] };
        if (res.statusCode !== 200 || json.totalItems !== total || json.guarantees.length === 0)
          throw new Error(`${name}: ${res.statusCode} ${JSON.stringify(json).slice(0, 200)}`);
        if (i >= 20) times[name]?.push(performance.now() - t);
      }
    }
    await one.close();
    const [first, deep] = Object.keys(pages).map((k) => times[k] ?? []) as [number[], number[]];
    say(
      `GET /api/authority/v1/guarantees at ${total.toLocaleString('en')} linked, 20 a page, ${opts.reads} reads each in turn: page 1 p50 ${median(first).toFixed(1)} ms, p99 ${pct(first, 99).toFixed(1)} ms | page ${last} p50 ${median(deep).toFixed(1)} ms, p99 ${pct(deep, 99).toFixed(1)} ms | last/first p50 ${(median(deep) / median(first)).toFixed(2)}`,
    );
  } finally {
    await agent.close();
    for (const child of [app, worker]) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    receiver.closeAllConnections();
    receiver.close();
    await db.end();
  }
  appendResult(
    'authority',
    `\n### authority, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}; one API process and one webhooks worker (compiled, the Procfile's flags).\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  log('done');
  if (started.length) await down('bench', started);
}

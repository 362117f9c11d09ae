// `npm run bench -- webhooks [--events N] [--burst N] [--rounds N] [--paced R]`
//
// Webhook deliveries against the bench profile's real servers, the service run as production
// runs it (compiled; the Procfile's web and `worker webhooks` processes):
// - throughput: N guarantees are created through the API while no worker runs (their
//   guarantee.created events are relayed to the queue); then the worker starts, and
//   deliveries/s are taken at a local receiver from the first delivery to the last. The raw
//   baseline, in the same run, delivers N jobs of the same bodies with a minimal BullMQ worker
//   process (HMAC-SHA256, an undici Pool, one INSERT per attempt: bench/webhooks-raw-worker.ts)
//   at the same concurrency, timed the same way; the two alternate, 2 rounds each by default.
//   Also a bare undici POST loop to the receiver.
// - latency: a burst of M guarantees created at once through the API with the worker running;
//   event committed (its timestamp) → received, p50 and p99. Then M more offered at R/s (300
//   by default; 0: none), which measures the delivery path at a load that does not depend on
//   how fast creates are.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus } from 'node:os';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { Pool } from 'undici';
import { v7 as uuidv7 } from 'uuid';
import { parseConfig } from '../config/index.js';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { migrate } from '../src/shared/db/migrator.js';
import { firstAttemptsKey } from '../src/webhooks/webhook.jobs.js';
import { createLogger } from '../src/shared/logger.js';
import { cpuDelta, cpuSeconds, log, newKey, procfileFlags, startServer, appendResult } from './support.js';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

/**
 * Seconds each process's main thread has spent ready to run but waiting for a core
 * (schedstat's run_delay); for MariaDB, all its threads (one per connection).
 */
function runQueueSeconds(patterns: Record<string, (cmdline: string) => boolean>): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(Object.keys(patterns).map((k) => [k, 0]));
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const name = Object.keys(patterns).find((k) => patterns[k]?.(cmdline));
      if (!name) continue;
      const threads = name === 'mariadb' ? readdirSync(`/proc/${pid}/task`) : [pid];
      for (const t of threads) out[name] = (out[name] ?? 0) + Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[1]) / 1e9;
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

export async function benchWebhooks(argv: string[]): Promise<void> {
  let events = 5000;
  let burst = 1000;
  let rounds = 2;
  let paced = 300;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--events') events = Number(argv[++i]);
    else if (argv[i] === '--burst') burst = Number(argv[++i]);
    else if (argv[i] === '--rounds') rounds = Number(argv[++i]);
    else if (argv[i] === '--paced') paced = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  // Only the database and Redis are used; the store and clamd settings satisfy the configuration.
  applyEnv(env, localAppEnv('bench'), {
    QUEUE_PREFIX: `bench-${Date.now()}`,
    S3_BUCKET: 'unused',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '9',
    RATE_LIMIT_PER_MINUTE: '0',
    WEBHOOK_ALLOWED_NETWORKS: '127.0.0.0/8',
    WEBHOOK_ALLOW_HTTP: 'true',
  });
  const config = parseConfig(process.env);
  await migrate(config.DATABASE_URL, createLogger('warn'));
  const db = mysql.createPool({ uri: config.DATABASE_URL, connectionLimit: 4 });
  const orgId = uuidv7();
  await db.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [orgId, `bench-webhooks-${Date.now()}`]);
  const apiKey = await newKey(config.DATABASE_URL, orgId);

  // The receiver: answers 204 at once, notes when each delivery arrived.
  let arrivals: number[] = [];
  const byId = new Map<string, number>();
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      arrivals.push(at);
      const id = req.headers['webhook-id'];
      if (typeof id === 'string' && !byId.has(id)) byId.set(id, at);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const target = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;

  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const appEnv = { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  const web = await startServer('web', 'dist/src/server.js', appEnv, 3912, procfileFlags('web'));
  const api = 'http://127.0.0.1:3912';
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: null });
  const lines: string[] = [];
  const say = (l: string) => {
    process.stdout.write(`${l}\n`);
    lines.push(l);
  };
  const startProcess = (args: string[], ready: string): Promise<ChildProcess> => {
    // At info level, so that the worker's 'workers started' line is seen.
    // BENCH_CPU_PROFILE=dir: the processes write V8 CPU profiles there (for a look in DevTools).
    const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
    const child = spawn(process.execPath, [...profile, ...args], { env: { ...appEnv, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'] });
    return new Promise((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes(ready)) resolve(child);
      });
      child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code})`)));
    });
  };
  const stop = async (child: ChildProcess) => {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  };
  const post = (path: string, body: unknown) =>
    fetch(`${api}${path}`, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  // `perSecond`: the i-th create starts no sooner than i/perSecond seconds after the first.
  const createMany = async (n: number, concurrency: number, tag: string, perSecond?: number) => {
    let next = 0;
    const start = Date.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < n) {
          const i = next++;
          const due = perSecond ? start + (i * 1000) / perSecond - Date.now() : 0;
          if (due > 0) await new Promise((r) => setTimeout(r, due));
          const res = await post('/api/v2/guarantees', {
            details: { policyNumber: `${tag}-${i}`, actType: 'BAIL_ACT' },
            economics: { garantedAmount: 15000.5 },
          });
          if (res.status !== 200) throw new Error(`create answered ${res.status}`);
          await res.arrayBuffer();
        }
      }),
    );
  };
  const waitArrivals = async (n: number) => {
    while (arrivals.length < n) await new Promise((r) => setTimeout(r, 20));
  };
  // What the database was asked per delivery: statements, prepares and new connections.
  const dbStatus = async () => {
    const [rows] = await db.query(
      "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_stmt_execute', 'Connections', 'Com_commit', 'Com_begin')",
    );
    return Object.fromEntries((rows as Array<{ Variable_name: string; Value: string }>).map((r) => [r.Variable_name, Number(r.Value)]));
  };
  const redisCommands = async () => Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1] ?? NaN);
  const perDelivery = (a: Record<string, number>, b: Record<string, number>, n: number) =>
    Object.keys(b)
      .map((k) => `${k} ${(((b[k] ?? 0) - (a[k] ?? 0)) / n).toFixed(2)}`)
      .join(', ');
  const rate = (xs: number[]) => (xs.length - 1) / ((Math.max(...xs) - Math.min(...xs)) / 1000);
  const port = (url: string) => new URL(url).port || '6379';
  const processes: Record<string, (c: string) => boolean> = {
    mariadb: (c) => c.startsWith('mariadbd ') && c.includes('/.data/bench/'),
    redis: (c) => c.startsWith(`redis-server 127.0.0.1:${port(config.REDIS_URL)}`),
    web: (c) => c.includes('dist/src/server.js'),
    worker: (c) => c.includes('dist/workers/index.js') || c.includes('webhooks-raw-worker'),
    'bench+receiver': (c) => c.includes('run.mjs bench'),
  };

  try {
    const reg = await post('/api/v1/webhooks', { endpoint: target });
    const { webhookId } = (await reg.json()) as { webhookId: string };
    if (reg.status !== 200) throw new Error(`register answered ${reg.status}`);

    // Throughput: the service and the raw baseline, alternating, `rounds` times each (this
    // machine's noise moves either by a fifth from one run to the next).
    // One timed run of a delivering process over `events` queued deliveries: rate, CPU, statements.
    const deliverAll = async (args: string[], ready: string) => {
      arrivals = [];
      const child = await startProcess(args, ready);
      const cpu0 = cpuSeconds(processes);
      const db0 = await dbStatus();
      await waitArrivals(events);
      const measured = { rate: rate(arrivals), cpu: cpuDelta(cpu0, cpuSeconds(processes)), db: perDelivery(db0, await dbStatus(), events) };
      await stop(child);
      return measured;
    };
    const serviceRates: number[] = [];
    const rawRates: number[] = [];
    let service = { rate: 0, cpu: '', db: '' };
    let raw = { rate: 0, cpu: '', db: '' };
    let rows: Array<{ id: string; body: string }> = [];
    for (let round = 1; round <= rounds; round++) {
      log(`round ${round}: creating ${events} guarantees (no worker running)`);
      await createMany(events, 32, `tp${round}`);
      for (let i = 0; i < 200 && (await redis.llen(firstAttemptsKey(config.QUEUE_PREFIX))) < events; i++) await new Promise((r) => setTimeout(r, 50));
      service = await deliverAll([...procfileFlags('worker'), 'dist/workers/index.js', 'webhooks'], 'workers started');
      serviceRates.push(service.rate);

      // The raw baseline: the same bodies, the same concurrency.
      const [latest] = await db.query('SELECT id, body FROM webhook_events WHERE org_id = ? ORDER BY id DESC LIMIT ?', [orgId, events]);
      rows = latest as Array<{ id: string; body: string }>;
      const rawQueue = new Queue('raw-deliveries', { connection: redis, prefix: config.QUEUE_PREFIX });
      await rawQueue.addBulk(rows.map((r) => ({ name: 'raw', data: { id: r.id, body: r.body }, opts: { removeOnComplete: true } })));
      raw = await deliverAll(
        ['--import', 'tsx', 'bench/webhooks-raw-worker.ts', 'raw-deliveries', config.QUEUE_PREFIX, target, String(config.WEBHOOK_CONCURRENCY), webhookId],
        'raw worker ready',
      );
      rawRates.push(raw.rate);
      await rawQueue.close();
      say(`round ${round}: service ${service.rate.toFixed(0)}/s | raw ${raw.rate.toFixed(0)}/s | service/raw ${(service.rate / raw.rate).toFixed(2)}`);
    }
    const serviceRate = serviceRates.reduce((a, b) => a + b, 0) / rounds;
    const rawRate = rawRates.reduce((a, b) => a + b, 0) / rounds;

    // A bare undici POST loop, same concurrency.
    const body = rows[0]?.body ?? '{}';
    const pool = new Pool(new URL(target).origin, { connections: 32 });
    arrivals = [];
    let sent = 0;
    await Promise.all(
      Array.from({ length: config.WEBHOOK_CONCURRENCY }, async () => {
        while (sent < events) {
          sent++;
          const res = await pool.request({ path: '/hooks', method: 'POST', body, headers: { 'content-type': 'application/json' } });
          await res.body.dump();
        }
      }),
    );
    const bareRate = rate(arrivals);
    await pool.close();
    say(
      `throughput, ${events} deliveries x ${rounds} rounds, concurrency ${config.WEBHOOK_CONCURRENCY}, means: service ${serviceRate.toFixed(0)}/s | raw BullMQ+HMAC+undici+INSERT ${rawRate.toFixed(0)}/s | bare undici loop ${bareRate.toFixed(0)}/s | service/raw ${(serviceRate / rawRate).toFixed(2)} | service/bare ${(serviceRate / bareRate).toFixed(3)}`,
    );
    say(`   CPU seconds, last round, service: ${service.cpu}`);
    say(`   CPU seconds, last round, raw: ${raw.cpu}`);
    say(`   database, per delivery, last round, service: ${service.db}`);
    say(`   database, per delivery, last round, raw: ${raw.db}`);

    // Latency: bursts with the worker running, as fast as 50 clients can create (the rate
    // then depends on how fast a create is), and offered at a fixed rate (`--paced`), which
    // compares the delivery path at the same load whatever the creates cost.
    const latencyWorker = await startProcess([...procfileFlags('worker'), 'dist/workers/index.js', 'webhooks'], 'workers started');
    const latency = async (label: string, perSecond: number | undefined) => {
      byId.clear();
      const cpu0 = cpuSeconds(processes);
      const waited0 = runQueueSeconds(processes);
      const db0 = await dbStatus();
      const redis0 = await redisCommands();
      const before = Date.now();
      await createMany(burst, 50, `burst-${label}`, perSecond);
      const createdInMs = Date.now() - before;
      const [burstRows] = await db.query('SELECT id, created_at FROM webhook_events WHERE org_id = ? AND created_at >= ? ORDER BY id', [
        orgId,
        new Date(before - 1),
      ]);
      const ids = burstRows as Array<{ id: string; created_at: Date }>;
      while (ids.some((r) => !byId.has(r.id))) await new Promise((r) => setTimeout(r, 20));
      const deliveredInMs = Date.now() - before;
      const cpu = cpuDelta(cpu0, cpuSeconds(processes));
      const waited = runQueueSeconds(processes);
      const redisPerEvent = ((await redisCommands()) - redis0) / burst;
      const dbPerEvent = perDelivery(db0, await dbStatus(), burst);
      const latencies = ids.map((r) => (byId.get(r.id) as number) - r.created_at.getTime());
      say(
        `event committed -> delivered, burst of ${ids.length} ${label} (50 clients): p50 ${pct(latencies, 50).toFixed(0)} ms, p99 ${pct(latencies, 99).toFixed(0)} ms`,
      );
      // Where the time went: written -> relayed to the queue -> attempted by the worker -> received.
      const [stages] = await db.query(
        `SELECT ev.id, ev.created_at, ev.dispatched_at, MIN(a.attempted_at) AS attempted_at FROM webhook_events ev
        JOIN webhook_attempts a ON a.event_id = ev.id WHERE ev.id IN (?) GROUP BY ev.id`,
        [ids.map((r) => r.id)],
      );
      type Stages = { id: string; created_at: Date; dispatched_at: Date; attempted_at: Date };
      const stage = (f: (r: Stages) => number) => {
        const xs = (stages as Stages[]).map(f);
        return `p50 ${pct(xs, 50).toFixed(0)} / p99 ${pct(xs, 99).toFixed(0)} ms`;
      };
      say(
        `   written -> relayed ${stage((r) => r.dispatched_at.getTime() - r.created_at.getTime())}; relayed -> attempted ${stage((r) => r.attempted_at.getTime() - r.dispatched_at.getTime())}; attempted -> received ${stage((r) => (byId.get(r.id) as number) - r.attempted_at.getTime())}`,
      );
      say(
        `   created in ${createdInMs} ms (${((burst * 1000) / createdInMs).toFixed(0)}/s), all delivered in ${deliveredInMs} ms; CPU seconds meanwhile: ${cpu}`,
      );
      // Seconds each process's main thread was ready to run but waited for a core: when every
      // one waits about as long as it runs, the two cores are the limit.
      say(
        `   waiting for a core meanwhile, s: ${Object.keys(waited)
          .map((k) => `${k} ${((waited[k] ?? 0) - (waited0[k] ?? 0)).toFixed(2)}`)
          .join(', ')}`,
      );
      say(`   per event (its create and its delivery): Redis commands ${redisPerEvent.toFixed(1)}; database ${dbPerEvent}`);
    };
    await latency('created at once', undefined);
    if (paced > 0) await latency(`offered at ${paced}/s`, paced);
    await stop(latencyWorker);
  } finally {
    redis.disconnect();
    web.kill('SIGTERM');
    receiver.closeAllConnections();
    receiver.close();
    await db.end();
  }
  appendResult(
    'webhooks',
    `\n### webhooks, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  if (started.length) await down('bench', started);
}

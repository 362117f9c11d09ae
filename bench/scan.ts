// `npm run bench -- scan [--files1 N] [--files20 N]`
//
// The uploads pipeline against the bench profile's real servers, run as production runs it
// (compiled; the Procfile's web and `worker scan` processes):
// - throughput: N objects of 1 MB and of 20 MB are uploaded while no worker runs; then the
//   worker starts; files/s and MB/s are taken from the first verdict to the last (steady state,
//   the start-up and first poll left out; the wall time from start-up is printed too).
//   The raw baseline, in the same run, streams objects of the same sizes from S3 straight into
//   clamd INSTREAM (a minimal client, no clamscan) with as many streams, timed the same way.
//   Its objects have contents of their own: clamd keeps a cache of the clean files it has
//   scanned (by hash), and scanning the pipeline's objects again cost it a fifth of the first
//   scan (measured: 20 MB of random bytes, 0.49 s then 0.09 s), which made the baseline look
//   four to six times cheaper per byte than any first scan.
// - latency: one upload at a time, upload finished → terminal status, p50 and p99, with
//   radosgw's events pushed to the web process, and with the polling watch alone.
// - memory: the worker's peak RSS after the 1 MB files and after a file of MAX_UPLOAD_BYTES.
// Prints the figures and appends them, dated, to bench/results/scan.md.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { appendFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { parseConfig } from '../config/index.js';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { configureUploadEvents } from '../src/files/storage-events.setup.js';
import { migrate } from '../src/shared/db/migrator.js';
import { createLogger } from '../src/shared/logger.js';
import { createStorage } from '../src/shared/storage.js';
import { cpuDelta, cpuSeconds, log, newKey, procfileFlags, startServer, watchRss, appendResult } from './support.js';

const MB = 1024 * 1024;
const TERMINAL = new Set(['Clean', 'Infected', 'Error', 'Signed']);

interface Options {
  files1: number;
  files20: number;
  latencyRuns: number;
}

function options(argv: string[]): Options {
  const o: Options = { files1: 60, files20: 12, latencyRuns: 40 };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--files1') o.files1 = Number(argv[++i]);
    else if (argv[i] === '--files20') o.files20 = Number(argv[++i]);
    else if (argv[i] === '--latency-runs') o.latencyRuns = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

/** A file of `bytes` that no signature matches and that clamd must read whole (no long runs of one byte). */
function content(bytes: number, seed: number): Buffer {
  const b = Buffer.allocUnsafe(bytes);
  let x = (seed * 2654435761) >>> 0;
  for (let i = 0; i < bytes; i += 4) {
    x = (x * 1664525 + 1013904223) >>> 0;
    b.writeUInt32LE(x, Math.min(i, bytes - 4));
  }
  return b;
}

async function presign(api: string, key: string): Promise<{ key: string; url: string; fields: Record<string, string> }> {
  const res = await fetch(`${api}/api/v1/presigned-url`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ fileType: 'pdf' }),
  });
  if (res.status !== 200) throw new Error(`presigned-url answered ${res.status}`);
  const body = (await res.json()) as { key: string; presignedUrl: string; fields: Record<string, string> };
  return { key: body.key, url: body.presignedUrl, fields: body.fields };
}

async function upload(p: { url: string; fields: Record<string, string> }, bytes: Buffer): Promise<void> {
  const form = new FormData();
  for (const [k, v] of Object.entries(p.fields)) form.append(k, v);
  form.append('file', new Blob([bytes]), 'bench.pdf');
  const res = await fetch(p.url, { method: 'POST', body: form });
  if (res.status !== 204) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
}

/** The raw baseline: GetObject streamed into clamd INSTREAM with backpressure, nothing else. */
function rawInstream(port: number, body: Readable): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let answer = '';
    sock.on('data', (d: Buffer) => {
      answer += d.toString();
    });
    sock.on('end', () => resolve(answer.replace(/\0/g, '').trim()));
    sock.on('error', reject);
    sock.write('zINSTREAM\0');
    body.on('data', (chunk: Buffer) => {
      const len = Buffer.alloc(4);
      len.writeUInt32BE(chunk.length);
      sock.write(len);
      if (!sock.write(chunk)) {
        body.pause();
        sock.once('drain', () => body.resume());
      }
    });
    body.on('end', () => sock.end(Buffer.alloc(4)));
    body.on('error', reject);
  });
}

async function runPool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

export async function benchScan(argv: string[]): Promise<void> {
  const opts = options(argv);
  const { env, started } = await up('bench');
  applyEnv(env, localAppEnv('bench'), { QUEUE_PREFIX: `bench-${Date.now()}`, SCAN_CONCURRENCY: '2' });
  const config = parseConfig(process.env);
  await migrate(config.DATABASE_URL, createLogger('warn'));
  const pool = mysql.createPool({ uri: config.DATABASE_URL, connectionLimit: 2 });
  const orgId = uuidv7();
  await pool.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [orgId, `bench-scan-${Date.now()}`]);
  const apiKey = await newKey(config.DATABASE_URL, orgId);
  const storage = createStorage(config);
  const statusOf = async (keys: string[]) => {
    const [rows] = await pool.query<RowDataPacket[]>('SELECT object_key, status FROM files WHERE object_key IN (?)', [keys]);
    return rows as Array<{ object_key: string; status: string }>;
  };

  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const appEnv = { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' };
  const web = await startServer('web', 'dist/src/server.js', appEnv, 3911, procfileFlags('web'));
  const api = 'http://127.0.0.1:3911';
  let worker: ChildProcess | undefined;
  const startWorker = async () => {
    const extra = process.env.BENCH_WORKER_FLAGS?.split(/\s+/).filter(Boolean) ?? [];
    const child = spawn(process.execPath, [...procfileFlags('worker'), ...extra, 'dist/workers/index.js', 'scan'], {
      env: { ...appEnv, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('workers started')) resolve();
      });
      child.once('exit', () => reject(new Error('worker exited')));
    });
    child.stdout?.on('data', (d: Buffer) => {
      if (process.env.BENCH_WORKER_LOG) appendFileSync(process.env.BENCH_WORKER_LOG, d);
    });
    return child;
  };
  // Where the CPU goes in each phase, per process (two cores: the pipeline's overhead is what
  // clamd does not get).
  const port = (u: string | undefined) => (u ? new URL(u).port : '-');
  const processes: Record<string, (c: string) => boolean> = {
    clamd: (c) => c.startsWith('clamd ') && c.includes('/.data/bench/'),
    radosgw: (c) => c.startsWith('radosgw ') && c.includes('/.data/bench/'),
    'ceph-osd': (c) => c.startsWith('ceph-osd ') && c.includes('/.data/bench/'),
    'ceph-mon': (c) => c.startsWith('ceph-mon ') && c.includes('/.data/bench/'),
    mariadb: (c) => c.startsWith('mariadbd ') && c.includes('/.data/bench/'),
    redis: (c) => c.startsWith(`redis-server 127.0.0.1:${port(config.REDIS_URL)}`),
    web: (c) => c.includes('dist/src/server.js'),
    worker: (c) => c.includes('dist/workers/index.js'),
    bench: (c) => c.includes('run.mjs bench') || c.includes('scripts/run.mjs'),
  };
  const lines: string[] = [];
  const say = (l: string) => {
    process.stdout.write(`${l}\n`);
    lines.push(l);
  };

  try {
    await configureUploadEvents(storage, config, undefined, config.ENCRYPTION_KEY[0] as Buffer);
    // Throughput, pipeline then raw, per size.
    let rssAfterSmall = 0;
    for (const [size, n] of [
      [1 * MB, opts.files1],
      [20 * MB, opts.files20],
    ] as const) {
      const issued = await Promise.all(Array.from({ length: n }, () => presign(api, apiKey)));
      await runPool(issued, 4, async (p) => upload(p, content(size, issued.indexOf(p) + size)));
      // The baseline's own objects: contents clamd has not seen either.
      const rawKeys = Array.from({ length: n }, (_, i) => `bench-raw-${Date.now()}-${size}-${i}`);
      await runPool(rawKeys, 4, async (k) => {
        await storage.client.send(new PutObjectCommand({ Bucket: config.S3_BUCKET, Key: k, Body: content(size, 1_000_003 + rawKeys.indexOf(k) + size) }));
      });
      worker = await startWorker();
      const cpu0 = cpuSeconds(processes); // after start-up, which the steady state leaves out too
      const peak = watchRss(worker.pid as number);
      const t0 = performance.now();
      const keys = issued.map((p) => p.key);
      for (;;) {
        const rows = await statusOf(keys);
        if (rows.filter((r) => TERMINAL.has(r.status)).length === n) break;
        // The span is read from the rows' own times, not from this loop: polling a 200-key IN
        // every 20 ms cost MariaDB (and so the pipeline, on the same two cores) a few percent.
        await sleep(250);
      }
      const wallS = (performance.now() - t0) / 1000;
      const pipelineCpu = cpuDelta(cpu0, cpuSeconds(processes));
      // Steady state: from the first verdict to the last (n - 1 files), which leaves out the
      // worker's start-up and the first poll; the raw baseline is timed the same way.
      const [span] = (
        await pool.query<RowDataPacket[]>('SELECT TIMESTAMPDIFF(MICROSECOND, MIN(updated_at), MAX(updated_at)) / 1e6 AS s FROM files WHERE object_key IN (?)', [
          keys,
        ])
      )[0];
      const pipelineS = Number(span?.s) * (n / (n - 1));
      const rows = await statusOf(keys);
      const notClean = rows.filter((r) => r.status !== 'Clean').length;
      const peakRss = peak();
      if (size === MB) rssAfterSmall = peakRss;
      worker.kill('SIGTERM');
      await new Promise((r) => worker?.once('exit', r));
      const done: number[] = [];
      const cpu1 = cpuSeconds(processes);
      await runPool(rawKeys, 2, async (k) => {
        const verdict = await rawInstream(config.CLAMD_PORT ?? 0, await storage.read(k));
        if (!verdict.endsWith('OK')) throw new Error(`raw scan: ${verdict}`);
        done.push(performance.now());
      });
      const rawS = ((Math.max(...done) - Math.min(...done)) / 1000) * (n / (n - 1));
      const rawCpu = cpuDelta(cpu1, cpuSeconds(processes));
      const mb = (size * n) / MB;
      say(
        `${String(size / MB).padStart(2)} MB x ${n}: from worker start to last verdict ${wallS.toFixed(2)} s; steady state: pipeline ${(n / pipelineS).toFixed(2)} files/s ${(mb / pipelineS).toFixed(1)} MB/s | raw ${(n / rawS).toFixed(2)} files/s ${(mb / rawS).toFixed(1)} MB/s | pipeline/raw ${(rawS / pipelineS).toFixed(2)}${notClean ? ` | ${notClean} not Clean` : ''}`,
      );
      say(`   CPU seconds, pipeline (from worker start): ${pipelineCpu}`);
      say(`   CPU seconds, raw: ${rawCpu}`);
    }

    // Memory: one file of the largest allowed size through a fresh worker.
    worker = await startWorker();
    const peak = watchRss(worker.pid as number);
    const largest = await presign(api, apiKey);
    await upload(largest, content(config.MAX_UPLOAD_BYTES, 7));
    for (;;) {
      if (TERMINAL.has((await statusOf([largest.key]))[0]?.status ?? '')) break;
      await sleep(50);
    }
    say(
      `worker peak RSS: ${(rssAfterSmall / MB).toFixed(0)} MB scanning 1 MB files, ${(peak() / MB).toFixed(0)} MB scanning one ${(config.MAX_UPLOAD_BYTES / MB).toFixed(0)} MB file`,
    );

    // Latency, polling alone then with events (the worker from above keeps running).
    for (const mode of ['polling', 'events'] as const) {
      await configureUploadEvents(storage, config, mode === 'events' ? api : undefined, config.ENCRYPTION_KEY[0] as Buffer);
      const latencies: number[] = [];
      for (let i = 0; i < opts.latencyRuns; i++) {
        const p = await presign(api, apiKey);
        await upload(p, content(MB, 1000 + i));
        const done = performance.now();
        for (;;) {
          if (TERMINAL.has((await statusOf([p.key]))[0]?.status ?? '')) break;
          await sleep(5);
        }
        latencies.push(performance.now() - done);
      }
      say(
        `upload finished -> terminal status (1 MB, ${mode}): p50 ${pct(latencies, 50).toFixed(0)} ms p99 ${pct(latencies, 99).toFixed(0)} ms (${opts.latencyRuns} uploads, one at a time)`,
      );
    }
  } finally {
    await configureUploadEvents(storage, config, undefined, config.ENCRYPTION_KEY[0] as Buffer).catch(() => undefined);
    worker?.kill('SIGTERM');
    web.kill('SIGTERM');
    storage.client.destroy();
    await pool.end();
  }
  appendResult(
    'scan',
    `\n### scan, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, SCAN_CONCURRENCY 2, clamd ${config.CLAMD_PORT ? 'over TCP' : 'over its socket'}.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  if (started.length) await down('bench', started);
}

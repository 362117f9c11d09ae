// What the benchmarks share: logging, compiled processes started as the Procfile starts them,
// their peak memory, API keys made straight in the database, and autocannon rounds' figures.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type autocannon from 'autocannon';
import mysql from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { context } from '../scripts/services/index.js';
export { procfileFlags } from '../scripts/procfile.js';
import { databaseName } from '../scripts/services/mariadb.js';
import { generateApiKey } from '../src/orgs/api-key.js';
import { migrate } from '../src/shared/db/migrator.js';
import { createLogger } from '../src/shared/logger.js';

export const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

/** Appends a run's figures (dated Markdown) to its log, bench/results/<bench>.md; docs/benchmarks.md quotes the latest. */
export function appendResult(bench: string, text: string): void {
  mkdirSync('bench/results', { recursive: true });
  appendFileSync(`bench/results/${bench}.md`, text);
}

/**
 * The API process's environment in a bench: a complete production-like configuration over this
 * process's (the bench profile's MariaDB and Redis, applied by the caller), with `more` on top.
 * Redis runs, as in production: the web process relays each create's guarantee.created event
 * from the outbox to the delivery queue after the commit. S3 and clamd are not on the request
 * path of the endpoints the benches call, so their addresses are never dialled.
 */
export function apiEnv(more: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '0',
    S3_BUCKET: 'bench',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '1',
    ...more,
  };
}

/** Compiles the project into dist/ (npm run build), unless `build` is false (--no-build). */
export function buildDist(build: boolean): void {
  if (!build) return;
  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
}

/**
 * Starts compiled code (dist/), as production runs it: on this process's Node, or on the `node`
 * given (another runtime's). Its standard output (its log lines, and what node flags such as
 * --trace-gc print) is dropped, or goes to the file descriptor `stdout`.
 */
export function startServer(
  name: string,
  script: string,
  env: NodeJS.ProcessEnv,
  port: number,
  flags: string[] = [],
  node = process.execPath,
  stdout: 'ignore' | number = 'ignore',
): Promise<ChildProcess> {
  const child = spawn(node, [...flags, script], { env: { ...env, PORT: String(port) }, stdio: ['ignore', stdout, 'inherit'] });
  return (async () => {
    for (let i = 0; i < 200; i++) {
      const ok = await fetch(`http://127.0.0.1:${port}/api/v2/guarantees/x`).then(
        (r) => r.status === 401,
        () => false,
      );
      if (ok) return child;
      await sleep(100);
    }
    child.kill();
    throw new Error(`${name} did not start`);
  })();
}

/** The kernel's high-water mark of a process's resident memory (VmHWM), in bytes; 0 once it has exited. */
export function peakRss(pid: number): number {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0; // exited
  }
}

/** Starts a process's high-water mark again from its resident memory now (Linux's clear_refs "5"), so that the next peakRss is one phase's. */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    /* exited */
  }
}

/** Peak resident memory of a process while it runs: sampled, and the kernel's high-water mark. */
export function watchRss(pid: number): () => number {
  let peak = 0;
  const read = () => {
    peak = Math.max(peak, peakRss(pid));
  };
  const timer = setInterval(read, 250);
  return () => {
    read();
    clearInterval(timer);
    return peak;
  };
}

export async function newKey(url: string, orgId: string): Promise<string> {
  const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
  const { key, prefix, hash } = generateApiKey();
  await pool.query('INSERT INTO api_keys (id, org_id, prefix, key_hash, created_at) VALUES (?, ?, ?, ?, NOW(3))', [uuidv7(), orgId, prefix, hash]);
  await pool.end();
  return key;
}

const CLOCK_TICKS = 100;

/** CPU seconds (user + system) used so far by one process (`self` for this one), or by its main thread only. */
export function processCpuSeconds(pid: number | 'self', mainThreadOnly = false): number {
  const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
  // Fields after the parenthesised command: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Seconds the machine's CPUs have been idle (idle + iowait, all CPUs), from /proc/stat. */
export function idleCpuSeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/) ?? [];
  return (Number(fields[4]) + Number(fields[5])) / CLOCK_TICKS;
}

/** CPU seconds (user + system) used so far by each process whose command line matches a pattern. */
export function cpuSeconds(patterns: Record<string, (cmdline: string) => boolean>): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(Object.keys(patterns).map((k) => [k, 0]));
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      const name = Object.keys(patterns).find((k) => patterns[k]?.(cmdline));
      if (name) out[name] = (out[name] ?? 0) + processCpuSeconds(Number(pid));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** What each process spent between two cpuSeconds() readings, largest first, as one line. */
export function cpuDelta(before: Record<string, number>, after: Record<string, number>): string {
  return Object.keys(after)
    .map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)] as const)
    .filter(([, s]) => s >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([k, s]) => `${k} ${s.toFixed(1)}`)
    .join(', ');
}

/** A server's figure over autocannon rounds: requests per second over them all, the median of their p50s and p99s. */
export interface Figure {
  reqs: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export const median = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export function figureOf(rs: autocannon.Result[]): Figure {
  return {
    reqs: rs.reduce((n, r) => n + r.requests.total, 0) / rs.reduce((t, r) => t + r.duration, 0),
    p50: median(rs.map((r) => r.latency.p50)),
    p99: median(rs.map((r) => r.latency.p99)),
    non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
    errors: rs.reduce((n, r) => n + r.errors + r.timeouts, 0),
  };
}

/**
 * A database of its own on the bench profile's server (DATABASE_URL), made afresh and migrated:
 * its URL, which process.env.DATABASE_URL then names (the api bench's seed is left alone).
 */
export async function ownDatabase(suffix: string): Promise<string> {
  const benchUrl = process.env.DATABASE_URL;
  if (!benchUrl) throw new Error('no DATABASE_URL for the bench profile');
  const own = new URL(benchUrl);
  own.pathname = `/${databaseName(context('bench'))}_${suffix}`;
  const url = own.toString();
  process.env.DATABASE_URL = url;
  const admin = await mysql.createConnection({ uri: benchUrl });
  await admin.query(`DROP DATABASE IF EXISTS ${own.pathname.slice(1)}`);
  await admin.query(`CREATE DATABASE ${own.pathname.slice(1)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  await admin.end();
  await migrate(url, createLogger('silent'));
  return url;
}

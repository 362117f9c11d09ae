// `npm run bench -- hostile [--rounds N] [--hold S] [--after S] [--probe-every MS] [--probe-timeout MS] [--flags "..."]... [--also DIR]... [--source] [--fresh-bodies] [--contend N] [--loop] [--timeline] [--no-build] [--no-append] [--node 24|current,24]`
//
// The web process under hostile bodies, as test/integration/hostile-bodies.test.ts attacks it,
// and how long it keeps answering its health check meanwhile. Each episode starts the compiled
// API as the Procfile's web process (its node flags, on the runtime --node names: by default the
// Node 24 LTS production runs on, from .data/runtimes/) on the bench profile's MariaDB (a
// database of its own, made afresh) and Redis, warms it up (20 creates by another key), then:
//   1. one API key opens 200 POSTs that each declare a body of 1 MiB - 1 bytes, send all but 1
//      byte (one body buffer shared by all) and stall: the per-key budget,
//      BODY_BYTES_IN_FLIGHT_PER_KEY 8 MiB, admits 8 and refuses 192 at once with 429;
//   2. another key lists and creates (it must be served at once);
//   3. --hold seconds (3) after the attack's start the 200 sockets are destroyed, and the hostile
//      key creates once (its share must be back);
//   4. probing goes on --after seconds more (2).
// Throughout, from 1 s before the attack, a prober of its own (test/support/health-prober.mjs, another
// process, so that the attack's writes never delay a probe) sends GET /healthz every
// --probe-every ms (25), each on a new connection with its own time limit (--probe-timeout,
// 5000 ms). Each episode prints: the probes' latency from the attack's start to the end (max,
// p99, p50, failures) and each phase's worst; when the refusals came; the web process's peak RSS
// over the attack (the kernel's high-water mark, VmHWM, started again just before it) and at
// start-up; the statements MariaDB ran; the bytes the web process read; how long its main thread
// (and all its threads) ran and waited for a CPU (the scheduler's /proc/PID/task/TID/schedstat),
// the machine's idle share and each process's CPU; and, for the worst probe, how long the main
// thread ran, waited for a CPU or neither (blocked) while that probe waited.
//
// --contend N starts N processes that spin on the CPUs from just before the probing to the
// attack's end, as a test suite running beside it would (the bench machine has 2 cores).
// --fresh-bodies also attacks each variant as the test first did, each request's body made
// afresh (1 MiB allocated and copied per request in this process: the attacker's own CPU then
// competes with the web process on the same machine). --loop preloads bench/loop-delay.ts into
// the web process: its event loop's stalls and its collector's pauses, the worst of each and
// when, and those during the worst probe. --timeline prints per 250 ms the main thread's ms on
// a CPU and waiting for one (read by the prober as each probe starts) and the worst probe.
//
// Variants, measured in alternating rounds (each round in another order, each episode a new
// process): the Procfile's web flags; each --flags set instead of them; each --also DIR, another
// build of the app (DIR/dist, compiled there beforehand, e.g. from `git archive`; named by DIR's
// last part) with the Procfile's flags; with --source the TypeScript source through tsx with the
// Procfile's flags (as a bare mocha run of the test starts it); on each runtime --node names.
// BENCH_NODE_FLAGS adds node flags to every web process (`--cpu-prof --cpu-prof-dir=DIR`,
// `--trace-gc-nvp`), whose standard output is then kept in a file beside the --loop record.
// Appends the figures, dated, to bench/results/hostile.md.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { runtimesNamed, type Runtime } from '../scripts/services/runtime.js';
import { startProber, stalledBody, stalledPost, type Probe } from '../test/support/hostile-client.js';
import {
  apiEnv,
  appendResult,
  buildDist,
  cpuDelta,
  cpuSeconds,
  idleCpuSeconds,
  median,
  newKey,
  ownDatabase,
  peakRss,
  procfileFlags,
  processCpuSeconds,
  resetPeakRss,
  startServer,
} from './support.js';

interface Options {
  rounds: number;
  holdS: number;
  afterS: number;
  probeEveryMs: number;
  probeTimeoutMs: number;
  /** Other web flag sets, each measured instead of the Procfile's. */
  flags: string[][];
  /** Other builds of the app (DIR/dist), each measured with the Procfile's flags. */
  also: string[];
  /** Also the source through tsx (`--import tsx src/server.ts`), as the hostile-bodies test runs it. */
  source: boolean;
  /**
   * Each variant also attacked with each request's body made afresh (1 MiB allocated and copied
   * per request in this process, as the test did before it shared one), so that the attacker's
   * own CPU, on the same machine, competes with the web process.
   */
  freshBodies: boolean;
  /** Processes that spin on the CPUs from just before the attack to its end, as a test suite running beside it would. */
  contend: number;
  loop: boolean;
  /** Print, per 250 ms of the attack, the web process's main thread's ms on a CPU and waiting for one, and the worst probe started then. */
  timeline: boolean;
  build: boolean;
  append: boolean;
  runtimes: string[];
}

function options(argv: string[]): Options {
  const o: Options = {
    rounds: 5,
    holdS: 3,
    afterS: 2,
    probeEveryMs: 25,
    probeTimeoutMs: 5000,
    flags: [],
    also: [],
    source: false,
    freshBodies: false,
    contend: 0,
    loop: false,
    timeline: false,
    build: true,
    append: true,
    runtimes: ['24'],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--rounds') o.rounds = Number(argv[++i]);
    else if (a === '--hold') o.holdS = Number(argv[++i]);
    else if (a === '--after') o.afterS = Number(argv[++i]);
    else if (a === '--probe-every') o.probeEveryMs = Number(argv[++i]);
    else if (a === '--probe-timeout') o.probeTimeoutMs = Number(argv[++i]);
    else if (a === '--flags') o.flags.push(String(argv[++i]).split(/\s+/).filter(Boolean));
    else if (a === '--also') o.also.push(String(argv[++i]));
    else if (a === '--source') o.source = true;
    else if (a === '--fresh-bodies') o.freshBodies = true;
    else if (a === '--contend') o.contend = Number(argv[++i]);
    else if (a === '--loop') o.loop = true;
    else if (a === '--timeline') o.timeline = true;
    else if (a === '--no-build') o.build = false;
    else if (a === '--no-append') o.append = false;
    else if (a === '--node') o.runtimes = String(argv[++i]).split(',');
    else throw new Error(`unknown option ${a}`);
  }
  if (!(o.rounds >= 1 && o.holdS >= 1 && o.afterS >= 0 && o.probeEveryMs >= 5 && o.probeTimeoutMs >= 100 && o.contend >= 0)) {
    throw new Error('--rounds >= 1, --hold >= 1, --after >= 0, --probe-every >= 5, --probe-timeout >= 100, --contend >= 0');
  }
  return o;
}

const BODIES = 200;
const BODY_BYTES = 1024 * 1024 - 1;
const ADMITTED = 8;
const PORT = 3921;

/** What the web process's event loop and collector did (bench/loop-delay.ts). */
interface LoopRecord {
  stalls: Array<[number, number]>;
  gcs: Array<[number, number, number]>;
  maxDelayMs: number;
}

interface Variant {
  name: string;
  script: string;
  flags: string[];
  runtime: Runtime;
  /** The attacker makes each body afresh rather than sending one shared body. */
  freshBodies?: boolean;
}

interface Episode {
  variant: string;
  round: number;
  /** Probes from the attack's start to the end. */
  n: number;
  failed: number;
  max: number;
  p99: number;
  p50: number;
  /** The worst probe before the attack, and in each phase of it. */
  before: number;
  burst: number;
  hold: number;
  after: number;
  /** ms from the attack's start until the last refusal (or cut-off) arrived. */
  refusedInMs: number;
  refused: number;
  pending: number;
  otherKey: string;
  shareBack: number;
  peakAttack: number;
  peakStart: number;
  /** Over the attack (its start to the end): bytes the web process read, and its scheduling (ms). */
  readBytes: number;
  /** Statements MariaDB ran from the attack's start until its answers were counted (5 s), and in the 1 s before it (the processes' background work). */
  statements: { burst: number; before: number };
  /** The machine's idle share of its CPUs over the attack, and CPU seconds by process (`web 1.2, bench 0.9, ...`). */
  idle: number;
  cpu: string;
  sched: { mainRan: number; mainWaited: number; allRan: number; allWaited: number };
  /** Where the worst probe's time went on the server's main thread; how long that thread ran meanwhile (ms). */
  worstProbe?: string;
  worstRan?: number;
  /** ms the main thread ran from the attack's start until the last refusal (read from the probes around them). */
  burstRan?: number;
  loop?: string;
  /** With --loop: the collector's pauses over the attack, in all and the worst (ms). */
  gcMs?: number;
  gcWorst?: number;
  timeline?: string;
}

/** CPU seconds so far of the web process, this bench (the attacker), the prober, and the bench profile's MariaDB and Redis. */
function cpuNow(web: number, prober: number): Record<string, number> {
  const servers = cpuSeconds({
    mariadb: (c) => c.includes('mariadbd') && c.includes('.data/bench/'),
    redis: (c) => c.startsWith('redis-server') && c.includes(`:${new URL(process.env.REDIS_URL ?? 'redis://x:6379').port}`),
  });
  const own = (pid: number) => {
    try {
      return processCpuSeconds(pid);
    } catch {
      return 0;
    }
  };
  return { web: own(web), bench: processCpuSeconds('self'), prober: own(prober), ...servers };
}

/** Bytes the process has read through read(2) and recv(2) so far, sockets included (rchar of /proc/PID/io). */
function bytesRead(pid: number): number {
  try {
    return Number(/rchar:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/**
 * CPU time so far of a process's threads (ms on a CPU, and ms runnable but waiting for one: the
 * scheduler's run delay, /proc/PID/task/TID/schedstat): its main thread's, and all its threads'.
 */
function schedMs(pid: number): { mainRan: number; mainWaited: number; allRan: number; allWaited: number } {
  const read = (tid: string) => {
    try {
      const [ran, waited] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number) as [number, number];
      return { ran: ran / 1e6, waited: waited / 1e6 };
    } catch {
      return { ran: 0, waited: 0 }; // ended meanwhile
    }
  };
  const main = read(String(pid));
  let allRan = 0;
  let allWaited = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const t = read(tid);
    allRan += t.ran;
    allWaited += t.waited;
  }
  return { mainRan: main.ran, mainWaited: main.waited, allRan, allWaited };
}

const pct = (xs: number[], p: number) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil((s.length * p) / 100) - 1)] ?? NaN;
};
const worst = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');

/** Statements the bench profile's MariaDB has run so far, from every client (its Questions counter). */
async function statements(db: mysql.Connection): Promise<number> {
  const [rows] = await db.query<mysql.RowDataPacket[]>("SHOW GLOBAL STATUS LIKE 'Questions'");
  return Number(rows[0]?.Value ?? NaN);
}

async function episode(
  variant: Variant,
  round: number,
  port: number,
  keys: { hostile: string; other: string },
  env: NodeJS.ProcessEnv,
  opts: Options,
  db: mysql.Connection,
): Promise<Episode> {
  // Kept after the run, beside any --cpu-prof profile, for a closer look (its clock pair places the profile's samples).
  const loopFile = join(tmpdir(), `bench-hostile-loop-${process.pid}-r${round}-${variant.name.replace(/\W+/g, '-')}.json`);
  rmSync(loopFile, { force: true });
  const preload = opts.loop ? ['--import', './dist/bench/loop-delay.js'] : [];
  const extra = (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
  // With BENCH_NODE_FLAGS, the web process's standard output (its log lines, --trace-gc's) is kept in a file.
  const outFile = extra.length ? loopFile.replace(/\.json$/, '.out') : undefined;
  const out = outFile === undefined ? 'ignore' : openSync(outFile, 'w');
  const server: ChildProcess = await startServer(
    variant.name,
    variant.script,
    { ...env, ...(opts.loop && { BENCH_LOOP_FILE: loopFile }) },
    port,
    [...variant.flags, ...extra, ...preload],
    join(variant.runtime.binDir, 'node'),
    out,
  );
  if (typeof out === 'number') closeSync(out);
  const pid = server.pid as number;
  const origin = `http://127.0.0.1:${port}`;
  const create = (key: string, policyNumber: string) =>
    fetch(`${origin}/api/v2/guarantees`, {
      method: 'POST',
      headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ details: { policyNumber } }),
    }).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
  let spinners: ChildProcess[] = [];
  try {
    // Warm-up: the routes the episode uses, as a process that has been serving would have them compiled.
    for (let i = 0; i < 20; i++) {
      await create(keys.other, `warm-${i}`);
      await fetch(`${origin}/healthz`).then((r) => r.arrayBuffer());
    }
    const peakStart = peakRss(pid);
    resetPeakRss(pid);
    // Each spins until killed below, or until the bench is gone however it ended.
    const spin = `for (let i = 1; ; i++) if (i % 1e7 === 0) try { process.kill(${process.pid}, 0); } catch { process.exit(0); }`;
    spinners = Array.from({ length: opts.contend }, () => spawn(process.execPath, ['-e', spin], { stdio: 'ignore' }));
    const prober = startProber(port, opts.probeEveryMs, opts.probeTimeoutMs, pid);
    await prober.ready;
    const q0 = await statements(db);
    await sleep(1000);
    const q1 = await statements(db);

    const [read0, sched0, idle0, cpu0] = [bytesRead(pid), schedMs(pid), idleCpuSeconds(), cpuNow(pid, prober.pid)];
    const t0 = Date.now();
    // One body for all (the attack's bytes, not 400 MiB of allocation in this process), unless --fresh-bodies.
    const shared = variant.freshBodies ? undefined : stalledBody(BODY_BYTES, 1);
    const posts = Array.from({ length: BODIES }, () => stalledPost(port, keys.hostile, BODY_BYTES, shared ?? stalledBody(BODY_BYTES, 1)));
    // Each request's answer (or cut-off) and when it came, or 'pending' after 5 s without one.
    const answered = await Promise.all(posts.map((p) => Promise.race([p.status.then((s) => ({ s, at: Date.now() })), sleep(5000, 'pending' as const)])));
    const settled = answered.flatMap((a) => (a === 'pending' ? [] : [a]));
    const lastSettled = Math.max(t0, ...settled.map((a) => a.at));
    const refused = settled.length;
    const pending = answered.length - settled.length;
    const q2 = await statements(db);
    const otherStart = Date.now();
    const list = await fetch(`${origin}/api/v1/guarantees`, { headers: { 'X-API-Key': keys.other } }).then(async (r) => {
      await r.arrayBuffer();
      return r.status;
    });
    const created = await create(keys.other, 'meanwhile');
    const otherKey = `${list}/${created} in ${Date.now() - otherStart} ms`;
    await sleep(Math.max(0, t0 + opts.holdS * 1000 - Date.now()));
    const tDestroy = Date.now();
    for (const p of posts) p.socket.destroy();
    const shareBack = await create(keys.hostile, 'after');
    await sleep(Math.max(0, tDestroy + opts.afterS * 1000 - Date.now()));
    const tEnd = Date.now();
    const [read1, sched1, idle1, cpu1] = [bytesRead(pid), schedMs(pid), idleCpuSeconds(), cpuNow(pid, prober.pid)];
    for (const c of spinners) c.kill('SIGKILL');
    const probes = await prober.stop();
    const peakAttack = peakRss(pid);

    const during = probes.filter((p) => p.at >= t0 && p.at <= tEnd);
    const inPhase = (from: number, to: number) => worst(probes.filter((p) => p.at >= from && p.at < to).map((p) => p.ms));
    const ep: Episode = {
      variant: variant.name,
      round,
      n: during.length,
      failed: during.filter((p) => p.status !== 200).length,
      max: worst(during.map((p) => p.ms)),
      p99: pct(
        during.map((p) => p.ms),
        99,
      ),
      p50: pct(
        during.map((p) => p.ms),
        50,
      ),
      before: inPhase(0, t0),
      burst: inPhase(t0, lastSettled + 1),
      hold: inPhase(lastSettled + 1, tDestroy),
      after: inPhase(tDestroy, tEnd + 1),
      refusedInMs: lastSettled - t0,
      refused,
      pending,
      otherKey,
      shareBack,
      peakAttack,
      peakStart,
      readBytes: read1 - read0,
      // Less this bench's own two status queries.
      statements: { burst: q2 - q1 - 1, before: q1 - q0 - 1 },
      idle: (idle1 - idle0) / ((cpus().length * (tEnd - t0)) / 1000),
      cpu: cpuDelta(cpu0, cpu1),
      sched: {
        mainRan: sched1.mainRan - sched0.mainRan,
        mainWaited: sched1.mainWaited - sched0.mainWaited,
        allRan: sched1.allRan - sched0.allRan,
        allWaited: sched1.allWaited - sched0.allWaited,
      },
    };
    const firstAfter = (at: number) => probes.find((p) => p.at >= at);
    const [b0, b1] = [probes.filter((p) => p.at <= t0).at(-1), firstAfter(lastSettled)];
    if (b0 && b1) ep.burstRan = b1.ran - b0.ran;
    // The worst probe: while it waited, how long the server's main thread ran, waited for a CPU,
    // and neither (blocked: asleep in the kernel, not polling for events).
    const slowest = during.reduce<Probe | undefined>((a, p) => (a === undefined || p.ms > a.ms ? p : a), undefined);
    const next = slowest && probes.find((p) => p.at >= slowest.at + slowest.ms);
    if (slowest && next) {
      const [ran, waited] = [next.ran - slowest.ran, next.waited - slowest.waited];
      ep.worstRan = ran;
      const span = next.at - slowest.at;
      ep.worstProbe = `worst probe at t+${((slowest.at - t0) / 1000).toFixed(2)} s, ${ms(slowest.ms)} ms: over the ${ms(span)} ms from its start to the next probe after it, the main thread ran ${ms(ran)} ms, waited for a CPU ${ms(waited)} ms, neither ${ms(span - ran - waited)} ms`;
    }
    if (opts.timeline) {
      const slots: string[] = [];
      for (let from = t0; from < tEnd; from += 250) {
        const slot = probes.filter((p) => p.at >= from && p.at < from + 250);
        const next = probes.find((p) => p.at >= from + 250);
        const first = slot[0];
        if (!first || !next) continue;
        slots.push(
          `${((from - t0) / 1000).toFixed(2)}: ran ${ms(next.ran - first.ran)} waited ${ms(next.waited - first.waited)} worst ${ms(worst(slot.map((p) => p.ms)))}`,
        );
      }
      ep.timeline = `main thread per 250 ms (ms; from the probes' readings): ${slots.join(' | ')}`;
    }
    // Stopped before its loop record is read (it writes it as it exits).
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
    if (opts.loop && existsSync(loopFile)) {
      const rec = JSON.parse(readFileSync(loopFile, 'utf8')) as LoopRecord;
      const stalls = rec.stalls.filter(([at]) => at >= t0 && at <= tEnd + 1000);
      const gcs = rec.gcs.filter(([at]) => at >= t0 && at <= tEnd);
      const top = stalls.reduce<[number, number]>((a, s) => (s[1] > a[1] ? s : a), [0, 0]);
      const gcTop = gcs.reduce<[number, number, number]>((a, g) => (g[1] > a[1] ? g : a), [0, 0, 0]);
      const stalled = stalls.reduce((n, [, late]) => n + late, 0);
      ep.gcMs = gcs.reduce((n, g) => n + g[1], 0);
      ep.gcWorst = gcTop[1];
      if (slowest && ep.worstProbe) {
        const inWorst = rec.gcs.filter(([at, d]) => at + d >= slowest.at && at <= slowest.at + slowest.ms);
        const stallsIn = rec.stalls.filter(([end, late]) => end >= slowest.at && end - late <= slowest.at + slowest.ms);
        ep.worstProbe +=
          `; meanwhile the collector paused it ${inWorst.reduce((n, g) => n + g[1], 0).toFixed(0)} ms (${inWorst.map((g) => `${g[1].toFixed(0)} kind ${g[2]}`).join(', ') || 'none'})` +
          ` and its loop stalled ${stallsIn.map(([, late]) => late).join(' + ') || 0} ms`;
      }
      ep.loop =
        `loop: worst stall ${top[1]} ms ending at t+${((top[0] - t0) / 1000).toFixed(2)} s, ${stalls.length} stalls of 20 ms or more (${stalled} ms in all); ` +
        `gc: ${gcs.length} pauses, ${gcs.reduce((n, g) => n + g[1], 0).toFixed(0)} ms in all, worst ${gcTop[1]} ms (kind ${gcTop[2]}) at t+${((gcTop[0] - t0) / 1000).toFixed(2)} s; ` +
        `t0 ${t0}, ${loopFile}${outFile === undefined ? '' : `, its output ${outFile}`}`;
    }
    return ep;
  } finally {
    for (const c of spinners) c.kill('SIGKILL');
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
  }
}

function episodeLine(e: Episode): string {
  return (
    `round ${e.round} ${e.variant.padEnd(18)} healthz max ${ms(e.max)} p99 ${ms(e.p99)} p50 ${ms(e.p50)} ms (${e.n} probes, ${e.failed} failed) | ` +
    `worst before ${ms(e.before)}, burst ${ms(e.burst)}, hold ${ms(e.hold)}, after ${ms(e.after)} ms | ` +
    `refused ${e.refused} in ${e.refusedInMs} ms, pending ${e.pending}, other key ${e.otherKey}, share back ${e.shareBack} | ` +
    `peak RSS attack ${mb(e.peakAttack)}, start-up ${mb(e.peakStart)}\n` +
    `   database statements in the 5 s from the attack's start ${e.statements.burst} (in the second before it ${e.statements.before})\n` +
    `   web process over the attack: read ${mb(e.readBytes)}; main thread on a CPU ${ms(e.sched.mainRan)} ms, waiting for one ${ms(e.sched.mainWaited)} ms; ` +
    `all its threads on a CPU ${ms(e.sched.allRan)} ms, waiting ${ms(e.sched.allWaited)} ms; the machine's CPUs idle ${(e.idle * 100).toFixed(0)}%, CPU s: ${e.cpu}`
  );
}

export async function benchHostile(argv: string[]): Promise<void> {
  const opts = options(argv);
  const loadAtStart = loadavg();
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'), { QUEUE_PREFIX: `bench-hostile-${Date.now()}` });
  const url = await ownDatabase('hostile');
  const db = mysql.createPool({ uri: url, connectionLimit: 1 });
  const [hostileOrg, otherOrg] = [uuidv7(), uuidv7()];
  for (const [id, name] of [
    [hostileOrg, 'bench-hostile'],
    [otherOrg, 'bench-other'],
  ] as const)
    await db.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [id, name]);
  await db.end();
  const status = await mysql.createConnection({ uri: url });
  const keys = { hostile: await newKey(url, hostileOrg), other: await newKey(url, otherOrg) };
  const appEnv = apiEnv();
  buildDist(opts.build);
  if (opts.loop && !existsSync('dist/bench/loop-delay.js')) throw new Error('dist/bench/loop-delay.js is missing: build first (npm run build)');

  const runtimes = runtimesNamed(opts.runtimes);
  const tag = (r: Runtime) => `v${r.version.slice(1).split('.')[0]}`;
  const web = procfileFlags('web');
  const servers: Variant[] = runtimes.flatMap((r) => [
    { name: `${tag(r)} procfile`, script: 'dist/src/server.js', flags: web, runtime: r },
    ...opts.flags.map((f, i) => ({ name: `${tag(r)} flags${i + 1}`, script: 'dist/src/server.js', flags: f, runtime: r })),
    ...opts.also.map((dir) => ({ name: `${tag(r)} ${basename(dir)}`, script: `${dir}/dist/src/server.js`, flags: web, runtime: r })),
    ...(opts.source ? [{ name: `${tag(r)} source`, script: 'src/server.ts', flags: [...web, '--import', 'tsx'], runtime: r }] : []),
  ]);
  const variants = opts.freshBodies ? servers.flatMap((v) => [v, { ...v, name: `${v.name} fresh`, freshBodies: true }]) : servers;
  const lines: string[] = [];
  const say = (l: string) => {
    process.stdout.write(`${l}\n`);
    lines.push(l);
  };
  for (const v of servers) say(`${v.name}: Node ${v.runtime.version}, node ${[...v.flags, v.script].join(' ')}`);
  if (opts.freshBodies)
    say("'fresh': the attacker makes each request's body afresh (1 MiB allocated and copied per request) instead of sending one shared body");
  if (process.env.BENCH_NODE_FLAGS) say(`BENCH_NODE_FLAGS: ${process.env.BENCH_NODE_FLAGS}`);

  const episodes: Episode[] = [];
  try {
    for (let round = 1; round <= opts.rounds; round++) {
      // Each round in another order, so that no variant always follows the same one.
      for (let k = 0; k < variants.length; k++) {
        const j = (k + round - 1) % variants.length;
        const e = await episode(variants[j] as Variant, round, PORT + j, keys, appEnv, opts, status);
        episodes.push(e);
        say(episodeLine(e));
        if (e.worstProbe) say(`   ${e.worstProbe}`);
        if (e.loop) say(`   ${e.loop}`);
        if (e.timeline) say(`   ${e.timeline}`);
      }
    }
  } finally {
    await status.end();
    if (started.length) await down('bench', started);
  }
  say('over the rounds (attack start to end, median [range]; the worst peak RSS):');
  for (const v of variants) {
    const es = episodes.filter((e) => e.variant === v.name);
    const range = (xs: number[]) => `${ms(median(xs))} [${ms(Math.min(...xs))}-${ms(Math.max(...xs))}]`;
    say(
      `  ${v.name.padEnd(18)} max ${range(es.map((e) => e.max))} ms, p99 ${range(es.map((e) => e.p99))} ms, failed probes ${es.reduce((n, e) => n + e.failed, 0)}, ` +
        `peak RSS attack ${mb(Math.max(...es.map((e) => e.peakAttack)))}, start-up ${mb(Math.max(...es.map((e) => e.peakStart)))}; ` +
        `main thread on a CPU ${range(es.map((e) => e.sched.mainRan))} ms (${range(es.map((e) => e.burstRan ?? NaN))} of it until the last refusal, ${range(es.map((e) => e.worstRan ?? NaN))} while the worst probe waited), waiting ${range(es.map((e) => e.sched.mainWaited))} ms` +
        (es.every((e) => e.gcMs !== undefined)
          ? `; collector's pauses ${range(es.map((e) => e.gcMs ?? 0))} ms in all, the worst ${range(es.map((e) => e.gcWorst ?? 0))} ms`
          : ''),
    );
  }
  const wrong = episodes.filter((e) => e.pending !== ADMITTED || e.refused !== BODIES - ADMITTED || e.shareBack !== 200 || !e.otherKey.startsWith('200/200'));
  if (wrong.length) say(`behaviour differed from the test's in ${wrong.length} episodes (admitted, refused, other key or share back)`);
  say(
    `load average at the start ${loadAtStart.map((x) => x.toFixed(2)).join(' ')}, at the end ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')} (1, 5, 15 min)`,
  );
  if (opts.append)
    appendResult(
      'hostile',
      `\n### hostile, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${runtimes.map((r) => r.version).join(' and ')}; ` +
        `${BODIES} stalled bodies of ${BODY_BYTES} bytes from one key, held ${opts.holdS} s, probed ${opts.afterS} s more; ` +
        `/healthz probed every ${opts.probeEveryMs} ms (time limit ${opts.probeTimeoutMs} ms); ${opts.rounds} alternating rounds` +
        `${opts.contend ? `; ${opts.contend} processes spinning on the CPUs during each attack` : ''}.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
    );
}

// `npm run bench -- log [--seconds S] [--rate R] [--batch N] [--mirror N] [--connections C]`
//
// The transparency log (issue 30) on the bench profile's MariaDB (a database of its own, made
// afresh) and radosgw:
// 1. Appends: for S seconds (20), entries appended as the notarizer appends a batch's leaves
//    (one fenced transaction of N entries, 1000, the default NOTARIZATION_BATCH_SIZE), while the
//    log's ticks publish a checkpoint every second (tiles to the store, signed note), both in one
//    process taking turns on the sequencer, as in the notarization worker. Entries per second,
//    checkpoints published, and the time a checkpoint takes (p50, p99). Then paced at R entries a
//    second (3000, the goal) for S seconds: the interval between checkpoints (p50, p99).
// 2. Tiles: the compiled API process (the Procfile's flags) serving random full hash tiles and
//    entries bundles to C connections (64) for 10 s (autocannon): requests/s, p50 and p99.
// 3. Mirror: the log grown to `mirror` entries (1,000,000; the rest bulk-inserted straight into
//    the database, then published by the log's own code), then `cli log mirror` of it from the
//    API into an empty directory, every entry hashed and checked, and `cli log verify` of the
//    copy: seconds each.
// Appends the figures, dated, to bench/results/log.md.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import mysql from 'mysql2/promise';
import { getConfig } from '../config/index.js';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { openCore, transparencyLog } from '../src/composition.js';
import { createLogRepository } from '../src/log/log.repository.js';
import { tilePath } from '../src/log/tiles.js';
import { leafHashOf, TILE_WIDTH } from '../src/log/tree.js';
import { createLogger } from '../src/shared/logger.js';
import { log, ownDatabase, procfileFlags, startServer, appendResult } from './support.js';

interface Options {
  seconds: number;
  rate: number;
  batch: number;
  mirror: number;
  connections: number;
}

function options(argv: string[]): Options {
  const o: Options = { seconds: 20, rate: 3000, batch: 1000, mirror: 1_000_000, connections: 64 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]?.replace(/^--/, '') as keyof Options;
    if (!(flag in o)) throw new Error(`unknown option ${argv[i]}`);
    o[flag] = Number(argv[++i]);
  }
  if (!(o.seconds >= 2 && o.rate >= 10 && o.batch >= 1 && o.mirror >= 1000 && o.connections >= 1))
    throw new Error('--seconds >= 2, --batch >= 1, --mirror >= 1000, --connections >= 1');
  return o;
}

const PORT = 3917;
const pct = (xs: number[], p: number) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;
const entry = (i: number) => new TextEncoder().encode(`record ${i.toString(16).padStart(64, '0')}`);

function time(command: string[]): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, command, { stdio: ['ignore', 'ignore', 'inherit'], env: process.env });
  if (r.status !== 0) throw new Error(`${command.join(' ')} exited ${r.status}`);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

export async function benchLog(argv: string[]): Promise<void> {
  const opts = options(argv);
  const { env, started } = await up('bench', ['mariadb', 'redis', 's3']);
  applyEnv(env, localAppEnv('bench'), {
    QUEUE_PREFIX: `bench-log-${Date.now()}`,
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '9',
    LOG_CHECKPOINT_INTERVAL_MS: '1000',
  });
  const url = await ownDatabase('log');
  // The log's bucket of its own for this run: tiles of an earlier run's log would be another tree's.
  process.env.LOG_S3_BUCKET = `${env.S3_BUCKET}-log-${Date.now()}`;
  const config = getConfig();
  spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'migrate'], { stdio: ['ignore', 'ignore', 'inherit'], env: process.env });
  const core = openCore(config, createLogger('silent'));
  const { service, sequencer } = transparencyLog(core);
  const repo = createLogRepository(core.db);
  let stopServerProcess: (() => void) | undefined;
  try {
    // 1. Appends with a checkpoint every second.
    log(`appending for ${opts.seconds} s in batches of ${opts.batch}, a checkpoint every second`);
    let appended = 0;
    const checkpointMs: number[] = [];
    let ticking = true;
    const ticks = (async () => {
      while (ticking) {
        const t0 = performance.now();
        const r = await service.tick();
        if (r?.published !== undefined) checkpointMs.push(performance.now() - t0);
        await new Promise((ok) => setTimeout(ok, Math.max(0, 1000 - (performance.now() - t0))));
      }
    })();
    const start = performance.now();
    while (performance.now() - start < opts.seconds * 1000) {
      const from = appended;
      await sequencer.exclusive((fence) =>
        repo.transaction((t) =>
          fence.append(
            Array.from({ length: opts.batch }, (_, i) => entry(from + i)),
            t,
          ),
        ),
      );
      appended += opts.batch;
    }
    const appendSeconds = (performance.now() - start) / 1000;
    ticking = false;
    await ticks;
    await service.tick({ force: true });
    const rate = appended / appendSeconds;
    log(
      `${appended} entries in ${appendSeconds.toFixed(1)} s: ${rate.toFixed(0)}/s; ${checkpointMs.length} checkpoints, each p50 ${pct(checkpointMs, 50).toFixed(0)} ms, p99 ${pct(checkpointMs, 99).toFixed(0)} ms`,
    );

    // 1b. Paced at `rate` entries a second (3000): does a checkpoint still come every second?
    log(`appending ${opts.rate}/s for ${opts.seconds} s: the checkpoints' cadence`);
    const published: number[] = [];
    const publishMs: number[] = [];
    ticking = true;
    const pacedTicks = (async () => {
      while (ticking) {
        const t0 = performance.now();
        const r = await service.tick();
        if (r?.published !== undefined) {
          published.push(performance.now());
          publishMs.push(performance.now() - t0);
        }
        await new Promise((ok) => setTimeout(ok, Math.max(0, 1000 - (performance.now() - t0))));
      }
    })();
    const pacedStart = performance.now();
    let paced = 0;
    const per = Math.max(1, Math.round(opts.rate / 10));
    while (performance.now() - pacedStart < opts.seconds * 1000) {
      const from = appended + paced;
      await sequencer.exclusive((fence) =>
        repo.transaction((t) =>
          fence.append(
            Array.from({ length: per }, (_, i) => entry(from + i)),
            t,
          ),
        ),
      );
      paced += per;
      const due = pacedStart + (paced / opts.rate) * 1000;
      await new Promise((ok) => setTimeout(ok, Math.max(0, due - performance.now())));
    }
    const pacedRate = paced / ((performance.now() - pacedStart) / 1000);
    ticking = false;
    await pacedTicks;
    const gaps = published.slice(1).map((t, i) => t - (published[i] as number));
    log(
      `paced: ${pacedRate.toFixed(0)}/s; ${published.length} checkpoints, every p50 ${pct(gaps, 50).toFixed(0)} ms / p99 ${pct(gaps, 99).toFixed(0)} ms, each taking p50 ${pct(publishMs, 50).toFixed(0)} / p99 ${pct(publishMs, 99).toFixed(0)} ms`,
    );

    // 3 (first, so that the tiles bench reads a big log). The log grown to `mirror` entries.
    const size = await repo.size();
    if (size < opts.mirror) {
      log(`growing the log to ${opts.mirror} entries (bulk inserts, then published by the log's code)`);
      const db = await mysql.createConnection({ uri: url });
      for (let at = size; at < opts.mirror; at += 10_000) {
        const rows = Array.from({ length: Math.min(10_000, opts.mirror - at) }, (_, i) => {
          const e = entry(at + i);
          return [at + i, Buffer.from(e), Buffer.from(leafHashOf(e)), new Date()];
        });
        await db.query('INSERT INTO log_entries (idx, entry, leaf_hash, created_at) VALUES ?', [rows]);
      }
      await db.query('UPDATE log_sequencer SET size = ? WHERE id = 1', [opts.mirror]);
      await db.end();
    }
    const t0 = performance.now();
    await service.tick({ force: true });
    log(`published a checkpoint of ${opts.mirror} entries in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

    log('compiling (npm run build)');
    if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
    const app = await startServer('app', 'dist/src/server.js', { ...process.env, NODE_ENV: 'production' }, PORT, procfileFlags('web'));
    stopServerProcess = () => app.kill();
    const base = `http://127.0.0.1:${PORT}/log`;
    const dir = mkdtempSync(join(tmpdir(), 'bench-mirror-'));
    const mirrorSeconds = time(['dist/src/cli.js', 'log', 'mirror', base, dir]);
    const verifySeconds = time(['dist/src/cli.js', 'log', 'verify', dir]);
    rmSync(dir, { recursive: true, force: true });
    log(`cli log mirror of ${opts.mirror} entries: ${mirrorSeconds.toFixed(1)} s; cli log verify: ${verifySeconds.toFixed(1)} s`);

    // 2. Tiles at C connections: random full tiles, hashes and entries.
    const fullTiles = Math.floor(opts.mirror / TILE_WIDTH);
    const paths = Array.from({ length: 4096 }, () => {
      const index = Math.floor(Math.random() * fullTiles);
      return `/log/${tilePath({ level: Math.random() < 0.5 ? 0 : 'entries', index, width: TILE_WIDTH })}`;
    });
    let n = 0;
    const tiles = await autocannon({
      url: `http://127.0.0.1:${PORT}`,
      connections: opts.connections,
      duration: 10,
      requests: [{ setupRequest: (req) => ({ ...req, path: paths[n++ % paths.length] }) }],
    });
    const non2xx = tiles.non2xx;
    log(
      `tiles: ${tiles.requests.average.toFixed(0)}/s, p50 ${tiles.latency.p50} ms, p99 ${tiles.latency.p99} ms at ${opts.connections} connections (${non2xx} non-2xx)`,
    );

    const when = new Date().toISOString().slice(0, 16).replace('T', ' ');
    appendResult(
      'log',
      `\n### The transparency log, ${when} (${cpus().length} cores, node ${process.version})\n\n` +
        `\`npm run bench -- log --seconds ${opts.seconds} --rate ${opts.rate} --batch ${opts.batch} --mirror ${opts.mirror} --connections ${opts.connections}\`\n\n` +
        `| figure | value |\n|---|---|\n` +
        `| entries appended per second (transactions of ${opts.batch}, a checkpoint every second) | ${rate.toFixed(0)} |\n` +
        `| checkpoints published meanwhile; time each took, p50 / p99 | ${checkpointMs.length}; ${pct(checkpointMs, 50).toFixed(0)} / ${pct(checkpointMs, 99).toFixed(0)} ms |\n` +
        `| paced at ${opts.rate}/s (transactions of ${per}): achieved; checkpoints, the interval between them p50 / p99; time each took p50 / p99 | ${pacedRate.toFixed(0)}/s; ${published.length}, ${pct(gaps, 50).toFixed(0)} / ${pct(gaps, 99).toFixed(0)} ms; ${pct(publishMs, 50).toFixed(0)} / ${pct(publishMs, 99).toFixed(0)} ms |\n` +
        `| tile GET at ${opts.connections} connections (full tiles and bundles of a ${opts.mirror}-entry log): requests/s, p50 / p99 | ${tiles.requests.average.toFixed(0)}, ${tiles.latency.p50} / ${tiles.latency.p99} ms${non2xx ? ` (${non2xx} non-2xx)` : ''} |\n` +
        `| \`cli log mirror\` of ${opts.mirror} entries into an empty directory | ${mirrorSeconds.toFixed(1)} s |\n` +
        `| \`cli log verify\` of that copy | ${verifySeconds.toFixed(1)} s |\n`,
    );
  } finally {
    stopServerProcess?.();
    await core.close();
    if (started.length) await down('bench', started);
  }
}

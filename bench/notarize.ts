// `npm run bench -- notarize [--records N] [--batch N] [--merkle N]`
//
// Notarization against the bench profile's real MariaDB and Redis, in a database of its own
// (registry_bench_notary, made afresh each run, so that no earlier bench's records join in):
// - end to end: N guarantees (default 20,000; every other one with a Clean doc) registered
//   through the compiled API while no worker runs; then `worker notarization` starts (the
//   Procfile's flags, NOTARIZATION_BATCH_SIZE --batch, default 1000) and records/s are taken
//   until every one is COMPLETE on the embedded ledger: from the worker's start, and in the
//   steady state (first batch anchored to last).
// - in process: canonical form + SHA-256 digests of M synthetic records (default 100,000), then
//   one Merkle tree over them with every record's path.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpus } from 'node:os';
import mysql from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { parseConfig } from '../config/index.js';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { toV2 } from '../src/guarantees/guarantee.serializer.js';
import type { GuaranteeRecord } from '../src/guarantees/guarantee.types.js';
import { guaranteeDigest } from '../src/notarization/canonical.js';
import { buildTree } from '../src/notarization/merkle.js';
import { migrate } from '../src/shared/db/migrator.js';
import { createLogger } from '../src/shared/logger.js';
import { cpuDelta, cpuSeconds, log, newKey, procfileFlags, startServer, appendResult } from './support.js';

function syntheticRecord(i: number): GuaranteeRecord {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 1000);
  return {
    id: uuidv7({ msecs: at.getTime() }),
    orgId: '01a2063d-fd0d-7406-bcb2-977977e358c8',
    transactionId: `TX-${i}`,
    details: {
      policyNumber: `P-${i}`,
      actType: 'BAIL_ACT',
      checkCode: null,
      emittedAt: at,
      effectiveAt: at,
      expiresAt: null,
      isFixedExpiry: true,
      cig: `CIG${i}`,
      batchCode: null,
      beneficiaryFiscalCode: null,
    },
    economics: { garantedAmount: 15000.5 + i, contractAmount: 200000, isAutomaticRenewal: false },
    noteShared: 'nota condivisa',
    signEmissionAt: at,
    txHash: null,
    notarizationStatus: 'PENDING',
    notarizationReason: null,
    createdAt: at,
    docs:
      i % 2
        ? [
            {
              type: 'BAIL_ACT',
              key: `${uuidv7()}.pdf`,
              originalFileName: 'polizza.pdf',
              checksum: createHash('sha256').update(String(i)).digest('hex'),
              notarizedAt: null,
            },
          ]
        : [],
  };
}

export async function benchNotarize(argv: string[]): Promise<void> {
  let records = 20_000;
  let batch = 1000;
  let merkle = 100_000;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--records') records = Number(argv[++i]);
    else if (argv[i] === '--batch') batch = Number(argv[++i]);
    else if (argv[i] === '--merkle') merkle = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  const lines: string[] = [];
  const say = (l: string) => {
    process.stdout.write(`${l}\n`);
    lines.push(l);
  };

  // In process: digests, then the tree.
  const synthetic = Array.from({ length: merkle }, (_, i) => toV2(syntheticRecord(i)));
  let t = performance.now();
  const digests = synthetic.map((g) => guaranteeDigest(g));
  const digestMs = performance.now() - t;
  t = performance.now();
  const { paths } = buildTree(digests);
  const treeMs = performance.now() - t;
  if (paths.length !== merkle) throw new Error('tree incomplete');
  say(
    `in process, ${merkle} records: canonical form + SHA-256 ${(merkle / (digestMs / 1000)).toFixed(0)} records/s (${digestMs.toFixed(0)} ms); Merkle tree with every path ${(merkle / (treeMs / 1000)).toFixed(0)} leaves/s (${treeMs.toFixed(0)} ms); together ${(merkle / ((digestMs + treeMs) / 1000)).toFixed(0)} records/s`,
  );

  // End to end, in a database of its own.
  const { env, started } = await up('bench', ['mariadb', 'redis']);
  applyEnv(env, localAppEnv('bench'), {
    QUEUE_PREFIX: `bench-notary-${Date.now()}`,
    S3_BUCKET: 'unused',
    CLAMD_HOST: '127.0.0.1',
    CLAMD_PORT: '9',
    RATE_LIMIT_PER_MINUTE: '0',
  });
  const url = new URL(process.env.DATABASE_URL ?? '');
  const admin = mysql.createPool({ uri: url.toString(), connectionLimit: 1 });
  await admin.query('DROP DATABASE IF EXISTS registry_bench_notary');
  await admin.query('CREATE DATABASE registry_bench_notary CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci');
  await admin.end();
  url.pathname = '/registry_bench_notary';
  process.env.DATABASE_URL = url.toString();
  const config = parseConfig(process.env);
  await migrate(config.DATABASE_URL, createLogger('warn'));
  const db = mysql.createPool({ uri: config.DATABASE_URL, connectionLimit: 4 });
  const orgId = uuidv7();
  await db.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [orgId, 'bench-notary']);
  const apiKey = await newKey(config.DATABASE_URL, orgId);

  log('compiling (npm run build)');
  if (spawnSync('npm', ['run', '-s', 'build'], { stdio: ['ignore', process.stderr, process.stderr] }).status !== 0) throw new Error('build failed');
  const appEnv = { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', NOTARIZATION_BATCH_SIZE: String(batch), NOTARIZATION_INTERVAL_MS: '1000' };
  const web = await startServer('web', 'dist/src/server.js', appEnv, 3913, procfileFlags('web'));
  let worker: ChildProcess | undefined;
  try {
    // Clean files for every other record, made straight in the database (the scan is not what is measured).
    const keys: string[] = [];
    for (let i = 0; i < records; i += 2) keys.push(`${uuidv7()}.pdf`);
    for (let i = 0; i < keys.length; i += 1000) {
      const rows = keys
        .slice(i, i + 1000)
        .map((k) => [
          k.slice(0, 36),
          k,
          orgId,
          'pdf',
          'polizza.pdf',
          'Clean',
          createHash('sha256').update(k).digest('hex'),
          new Date(),
          new Date(),
          new Date(),
        ]);
      await db.query(
        'INSERT INTO files (uuid, object_key, org_id, file_type, original_file_name, status, checksum, expires_at, created_at, updated_at) VALUES ?',
        [rows],
      );
    }
    log(`registering ${records} guarantees through the API (no worker running)`);
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < records) {
          const i = next++;
          const body = {
            details: { transactionId: `N-${i}`, policyNumber: `P-${i}`, actType: 'BAIL_ACT', effectiveAt: '2026-01-01T00:00:00Z' },
            economics: { garantedAmount: 15000.5 },
            ...(i % 2 === 0 && { docs: [{ type: 'BAIL_ACT', key: keys[i / 2] }] }),
          };
          const res = await fetch('http://127.0.0.1:3913/api/v2/guarantees', {
            method: 'POST',
            headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
            body: JSON.stringify(body),
          });
          if (res.status !== 200) throw new Error(`create answered ${res.status}`);
          await res.arrayBuffer();
        }
      }),
    );

    const processes: Record<string, (c: string) => boolean> = {
      mariadb: (c) => c.startsWith('mariadbd ') && c.includes('/.data/bench/'),
      worker: (c) => c.includes('dist/workers/index.js'),
      redis: (c) => c.startsWith('redis-server'),
    };
    const cpu0 = cpuSeconds(processes);
    const startedAt = Date.now();
    worker = spawn(process.execPath, [...procfileFlags('worker'), 'dist/workers/index.js', 'notarization'], {
      env: { ...appEnv, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    for (;;) {
      const [[row]] = (await db.query("SELECT COUNT(*) AS n FROM guarantees WHERE notary_state = 'done'")) as unknown as [[{ n: number }]];
      if (Number(row.n) >= records) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const wallS = (Date.now() - startedAt) / 1000;
    const cpu = cpuDelta(cpu0, cpuSeconds(processes));
    const [batches] = (await db.query("SELECT size, anchored_at FROM notarization_batches WHERE state = 'anchored' ORDER BY id")) as unknown as [
      Array<{ size: number; anchored_at: Date }>,
    ];
    const first = batches[0];
    const last = batches[batches.length - 1];
    const steady = first && last && batches.length > 1 ? (records - first.size) / ((last.anchored_at.getTime() - first.anchored_at.getTime()) / 1000) : NaN;
    say(
      `end to end, ${records} records (half with a Clean doc), batches of ${batch} on the embedded ledger: ${(records / wallS).toFixed(0)} records/s from the worker's start (${wallS.toFixed(1)} s, the first tick within 1 s included); steady state ${steady.toFixed(0)} records/s over ${batches.length} batches`,
    );
    say(`   CPU seconds: ${cpu}`);
  } finally {
    worker?.kill('SIGTERM');
    web.kill('SIGTERM');
    await db.end();
  }
  appendResult(
    'notarize',
    `\n### notarize, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
  );
  if (started.length) await down('bench', started);
}

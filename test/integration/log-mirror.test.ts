// Mirrors of the transparency log (issue 30): `cli log mirror <base URL> <dir>` copies the
// running registry's log and checks every entry, again as it grows; `cli log verify <dir>`
// checks the copy offline. Then the registry turns hostile, holding its own log key: it serves a
// history with an old entry rewritten (re-signed, tiles recomputed), a rollback, or a view that
// its witness never cosigned; the mirror exits 1 naming the entry or what is missing.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parseConfig } from '../../config/index.js';
import { openCore, transparencyLog } from '../../src/composition.js';
import { formatCheckpoint } from '../../src/log/checkpoint.js';
import { openLogKey } from '../../src/log/log-key.js';
import { createLogRepository } from '../../src/log/log.repository.js';
import { mirrorEntries } from '../../src/log/mirror.js';
import { signNote, type Signer } from '../../src/log/note.js';
import { encodeBundle, tilePath } from '../../src/log/tiles.js';
import { leafHashOf, memoryLevels, TILE_WIDTH, treeHashes } from '../../src/log/tree.js';
import { createLogger } from '../../src/shared/logger.js';
import { createSecretBox } from '../../src/shared/secrets.js';
import { harness } from '../support/harness.js';
import { appendRecords, dropAuditGuards, restoreAuditGuards, startWitness, type RunningWitness } from '../support/log.js';
import { create, unique } from '../support/guarantees.js';
import { newOrg } from '../support/harness.js';
import { auditHash } from '../../src/audit/audit-chain.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { entry } from '../support/entry.js';

const run = promisify(execFile);

/** `cli log ...`: its exit code and what it said. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...entry('src/cli.ts'), 'log', ...args], {
      encoding: 'utf8',
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

async function listen(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A log served from memory: the tiles and bundles of `entries` and a checkpoint signed by `signer` (plus `extraLines`), at <url>/log/... */
async function servedLog(entries: Uint8Array[], signer: Signer, vkey: string, extraLines = ''): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  const leaves = entries.map((e) => leafHashOf(e));
  const levels = memoryLevels(leaves);
  levels.forEach((hashes, level) => {
    for (let t = 0; t * TILE_WIDTH < hashes.length; t++) {
      const slice = hashes.slice(t * TILE_WIDTH, (t + 1) * TILE_WIDTH);
      const bytes = new Uint8Array(slice.length * 32);
      slice.forEach((h, i) => bytes.set(h, i * 32));
      files.set(tilePath({ level, index: t, width: slice.length }), bytes);
      if (level === 0)
        files.set(tilePath({ level: 'entries', index: t, width: slice.length }), encodeBundle(entries.slice(t * TILE_WIDTH, (t + 1) * TILE_WIDTH)));
    }
  });
  const root = await treeHashes((level, from, to) => Promise.resolve((levels[level] ?? []).slice(from, to))).root(entries.length);
  files.set(
    'checkpoint',
    new TextEncoder().encode(signNote(formatCheckpoint({ origin: signer.name, size: entries.length, root, extensions: [] }), [signer]) + extraLines),
  );
  files.set('key', new TextEncoder().encode(`${vkey}\n`));
  return files;
}

describe('mirrors of the transparency log', function () {
  this.timeout(300_000);
  let registry: { server: Server; url: string };
  let witness: RunningWitness;
  let forged: { server: Server; url: string; files: Map<string, Uint8Array> };

  before(async () => {
    const h = await harness();
    const handle = h.app.callback();
    registry = await listen((req, res) => {
      void handle(req, res);
    });
    const probe = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
    witness = await startWitness(mkdtempSync(join(tmpdir(), 'witness-')), [await probe.service.verifierKey()]);
    const files = new Map<string, Uint8Array>();
    forged = {
      files,
      ...(await listen((req, res) => {
        const body = files.get((req.url ?? '').replace(/^\/log\//, ''));
        res.writeHead(body ? 200 : 404, body ? { 'Content-Length': body.length } : {});
        res.end(body ?? '');
      })),
    };
  });
  after(async () => {
    registry.server.close();
    forged.server.close();
    await witness.stop();
  });

  it('copies the log and checks every entry, again as it grows; verify checks the copy offline and finds a changed file; the registry, rewriting an old entry, rolling back or showing the mirror a view its witness did not cosign, is caught', async () => {
    const h = await harness();
    const { service: log, sequencer } = transparencyLog(
      openCore(parseConfig({ ...process.env, LOG_WITNESSES: `${witness.url} ${witness.vkey}` }), createLogger('silent'), { db: h.db }),
    );
    const grow = async (n: number) => {
      await appendRecords(h.db, sequencer, n);
      await log.tick({ force: true });
    };
    await grow(600);
    const dir = mkdtempSync(join(tmpdir(), 'mirror-'));
    const base = `${registry.url}/log`;
    const first = await cli('mirror', base, dir, '--witness', witness.vkey);
    expect(first.code, first.stderr).to.equal(0);
    const size = Number(first.stdout.trim());
    await grow(300);
    const second = await cli('mirror', base, dir, '--witness', witness.vkey);
    expect(second.code, second.stderr).to.equal(0);
    expect(Number(second.stdout.trim())).to.equal(size + 300);
    // A log's key passed as a witness's is refused: the log's own signature must not pass for a cosignature.
    const logAsWitness = await cli('mirror', base, dir, '--witness', await log.verifierKey());
    expect(logAsWitness.code).to.equal(1);
    expect(logAsWitness.stderr).to.include("not a witness's key");
    const checked = await cli('verify', dir, '--witness', witness.vkey);
    expect(checked.code, checked.stderr).to.equal(0);
    expect(checked.stdout.trim()).to.equal(String(size + 300));

    // The registry turns hostile, with its own key: entry 100 (in a full tile the mirror holds) rewritten.
    const { signer, verifierKey } = await openLogKey(h.config, createLogRepository(h.db), createSecretBox(h.config.ENCRYPTION_KEY));
    const honest = [...mirrorEntries(dir)].map((e) => new TextEncoder().encode(e.line));
    const rewritten = honest.map((e, i) => (i === 100 ? new TextEncoder().encode(`record ${'0'.repeat(64)}`) : e));
    rewritten.push(new TextEncoder().encode(`record ${'1'.repeat(64)}`));
    for (const [k, v] of await servedLog(rewritten, signer, verifierKey)) forged.files.set(k, v);
    const caught = await cli('mirror', `${forged.url}/log`, dir);
    expect(caught.code, caught.stderr).to.equal(1);
    expect(caught.stderr).to.match(/FAIL entry 100: the log rewrote it/);

    // A rollback: a smaller tree, honest otherwise.
    forged.files.clear();
    for (const [k, v] of await servedLog(honest.slice(0, 500), signer, verifierKey)) forged.files.set(k, v);
    const rolledBack = await cli('mirror', `${forged.url}/log`, dir);
    expect(rolledBack.code).to.equal(1);
    expect(rolledBack.stderr).to.match(/FAIL the log's checkpoint is of size 500, smaller than the \d+ this mirror holds: a rollback/);

    // A view shown to the mirror alone: grown honestly in appearance, with the witness's
    // cosignature line of the real checkpoint copied on: the pinned witness's key refuses it.
    const real = new TextDecoder().decode(new Uint8Array(await (await fetch(`${base}/checkpoint`)).arrayBuffer()));
    const witnessLine = real.split('\n').find((l) => l.startsWith('\u2014 witness.test ')) as string;
    expect(witnessLine, 'the real checkpoint is cosigned').to.be.a('string');
    forged.files.clear();
    const split = [...honest, new TextEncoder().encode(`record ${'2'.repeat(64)}`)];
    for (const [k, v] of await servedLog(split, signer, verifierKey, `${witnessLine}\n`)) forged.files.set(k, v);
    const splitView = await cli('mirror', `${forged.url}/log`, dir, '--witness', witness.vkey);
    expect(splitView.code).to.equal(1);
    expect(splitView.stderr).to.match(/FAIL the checkpoint does not open .*invalid signature by witness.test|not cosigned by the witness witness.test/);
    // Without the copied line, the same.
    forged.files.set('checkpoint', new TextEncoder().encode(new TextDecoder().decode(forged.files.get('checkpoint')).replace(`${witnessLine}\n`, '')));
    expect((await cli('mirror', `${forged.url}/log`, dir, '--witness', witness.vkey)).stderr).to.match(/not cosigned by the witness witness.test/);

    // The honest log still mirrors; then a file of the copy changed is found offline.
    expect((await cli('mirror', base, dir, '--witness', witness.vkey)).code).to.equal(0);
    const bundle = join(dir, tilePath({ level: 'entries', index: 0, width: TILE_WIDTH }));
    const bytes = readFileSync(bundle);
    bytes[10] = (bytes[10] as number) ^ 1;
    writeFileSync(bundle, bytes);
    const broken = await cli('verify', dir);
    expect(broken.code).to.equal(1);
    expect(broken.stderr).to.match(/FAIL entry \d+: its hash is not the one in tile 0\/0/);
  });

  it('refuses an answer larger than the file it asks for can be, before reading it whole: with its length said, or streamed without one', async () => {
    const { signer, verifierKey } = await openLogKey(
      (await harness()).config,
      createLogRepository((await harness()).db),
      createSecretBox((await harness()).config.ENCRYPTION_KEY),
    );
    const entries = Array.from({ length: 3 }, (_, i) => new TextEncoder().encode(`record ${String(i).repeat(64)}`));
    // A checkpoint of 100 KiB, its length said.
    forged.files.clear();
    for (const [k, v] of await servedLog(entries, signer, verifierKey)) forged.files.set(k, v);
    forged.files.set('checkpoint', new Uint8Array(100 * 1024).fill(0x61));
    const big = await cli('mirror', `${forged.url}/log`, mkdtempSync(join(tmpdir(), 'mirror-')));
    expect(big.code).to.equal(1);
    expect(big.stderr).to.include('/log/checkpoint: the answer is larger than the 65536 bytes such a file can hold');
    // An entry longer than any the log writes (its bundle within the size a bundle may have).
    forged.files.clear();
    for (const [k, v] of await servedLog([...entries, new TextEncoder().encode(`record ${'f'.repeat(2000)}`)], signer, verifierKey)) forged.files.set(k, v);
    const long = await cli('mirror', `${forged.url}/log`, mkdtempSync(join(tmpdir(), 'mirror-')));
    expect(long.code).to.equal(1);
    expect(long.stderr).to.include('entry 3: 2007 bytes, longer than any entry the log writes (1024)');
    forged.files.clear();
    for (const [k, v] of await servedLog(entries, signer, verifierKey)) forged.files.set(k, v);
    // A hash tile streamed on and on, with no length.
    const endless = await listen((req, res) => {
      const path = (req.url ?? '').replace(/^\/log\//, '');
      if (path.startsWith('tile/0/')) {
        res.writeHead(200, { 'Transfer-Encoding': 'chunked' });
        const more = () => (res.write(Buffer.alloc(4096)) ? setImmediate(more) : res.once('drain', more));
        res.on('close', () => res.removeAllListeners('drain'));
        more();
        return;
      }
      const body = forged.files.get(path);
      res.writeHead(body ? 200 : 404);
      res.end(body ?? '');
    });
    forged.files.set('checkpoint', (await servedLog(entries, signer, verifierKey)).get('checkpoint') as Uint8Array);
    try {
      const streamed = await cli('mirror', `${endless.url}/log`, mkdtempSync(join(tmpdir(), 'mirror-')));
      expect(streamed.code).to.equal(1);
      expect(streamed.stderr).to.include('/log/tile/0/000.p/3: the answer is larger than the 8192 bytes such a file can hold');
    } finally {
      endless.server.closeAllConnections();
      endless.server.close();
    }
  });

  it('asks again when a connection is closed under a request (a keep-alive connection the server let go as it was reused), and copies the log', async () => {
    const { signer, verifierKey } = await openLogKey(
      (await harness()).config,
      createLogRepository((await harness()).db),
      createSecretBox((await harness()).config.ENCRYPTION_KEY),
    );
    const files = await servedLog(
      Array.from({ length: 300 }, (_, i) => new TextEncoder().encode(`record ${String(i % 10).repeat(64)}`)),
      signer,
      verifierKey,
    );
    const closed = new Set<string>();
    const flaky = await listen((req, res) => {
      const path = (req.url ?? '').replace(/^\/log\//, '');
      // The first request for each file finds its connection closed.
      if (!closed.has(path)) {
        closed.add(path);
        req.socket.destroy();
        return;
      }
      const body = files.get(path);
      res.writeHead(body ? 200 : 404, body ? { 'Content-Length': body.length } : {});
      res.end(body ?? '');
    });
    try {
      const copied = await cli('mirror', `${flaky.url}/log`, mkdtempSync(join(tmpdir(), 'mirror-')));
      expect(copied.code, copied.stderr).to.equal(0);
      expect(copied.stdout.trim()).to.equal('300');
    } finally {
      flaky.server.closeAllConnections();
      flaky.server.close();
    }
  });

  it("audit verify --log catches a chain's end rewritten or cut, which the chain alone cannot", async () => {
    const h = await harness();
    const { service: log } = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
    const org = await newOrg();
    for (const n of [1, 2, 3]) await create(org, { details: { policyNumber: `AUD-${n}-${unique()}` } });
    await log.tick({ force: true });
    const dir = mkdtempSync(join(tmpdir(), 'mirror-'));
    expect((await cli('mirror', `${registry.url}/log`, dir)).code).to.equal(0);
    const audit = async (...extra: string[]) => {
      try {
        const { stdout, stderr } = await run(process.execPath, [...entry('src/cli.ts'), 'audit', 'verify', ...extra], {
          encoding: 'utf8',
          env: { ...process.env, NODE_NO_WARNINGS: '1' },
        });
        return { code: 0, stdout, stderr };
      } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
      }
    };
    expect((await audit('--log', dir)).code).to.equal(0);

    const [row] = await select<Record<string, unknown>>(h.db, 'SELECT * FROM audit_log WHERE chain = $1 AND seq = 3', [org.orgId]);
    const r = row as Record<string, unknown>;
    await dropAuditGuards(h.db);
    try {
      // The last row rewritten, its hash recomputed: the chain alone holds.
      const forged = auditHash({
        chain: org.orgId,
        seq: 3,
        at: r.at as Date,
        orgId: r.org_id as string,
        actor: r.actor as string,
        action: r.action as string,
        target: 'guarantee:forged',
        requestId: r.request_id as string | null,
        outcome: r.outcome as string,
        prevHash: r.prev_hash as string,
      });
      await execute(h.db, "UPDATE audit_log SET target = 'guarantee:forged', hash = $2 WHERE chain = $1 AND seq = 3", [org.orgId, forged]);
      expect((await audit()).code, 'the chain alone cannot tell').to.equal(0);
      const rewritten = await audit('--log', dir);
      expect(rewritten.code).to.equal(1);
      expect(rewritten.stderr).to.include(`FAIL chain ${org.orgId}: row 3: its hash is not the one the transparency log holds`);
      await execute(h.db, 'UPDATE audit_log SET target = $2, hash = $3 WHERE chain = $1 AND seq = 3', [org.orgId, r.target, r.hash]);
      // The last row cut, and the organization's head moved back with it.
      await execute(h.db, 'DELETE FROM audit_log WHERE chain = $1 AND seq = 3', [org.orgId]);
      await execute(h.db, 'UPDATE organizations SET audit_seq = 2 WHERE id = $1', [org.orgId]);
      expect((await audit()).code, 'the chain alone cannot tell').to.equal(0);
      const cut = await audit('--log', dir);
      expect(cut.code).to.equal(1);
      expect(cut.stderr).to.include(`FAIL chain ${org.orgId}: row 3: the transparency log holds row 3 as the chain's head`);
    } finally {
      await execute(
        h.db,
        'INSERT IGNORE INTO audit_log (chain, seq, at, org_id, actor, action, target, request_id, outcome, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)',
        [r.chain, r.seq, r.at, r.org_id, r.actor, r.action, r.target, r.request_id, r.outcome, r.prev_hash, r.hash],
      );
      await execute(h.db, 'UPDATE organizations SET audit_seq = 3 WHERE id = $1', [org.orgId]);
      await restoreAuditGuards(h.db);
    }
    expect((await audit('--log', dir)).code).to.equal(0);
  });
});

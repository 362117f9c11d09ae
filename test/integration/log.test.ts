// The transparency log (issue 30) against the real MariaDB and radosgw: notarization leaves
// appended with their batch, audit heads and key changes appended by the log's ticks, tiles
// written to the log's bucket and served at /log/tile/..., a signed checkpoint at
// /log/checkpoint that the tiles' hashes lead to; the sequencer's lease (one holder at a time,
// an append of a holder whose lease was taken over fenced off).
// npm test: alone (it pauses the run's MariaDB for three seconds under a running worker)
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { signReceipt } from '../../src/verification/receipt.js';
import { createSigningKeys } from '../../src/verification/signing-keys.js';
import { createSecretBox } from '../../src/shared/secrets.js';
import { openCore, transparencyLog } from '../../src/composition.js';
import { parseCheckpoint } from '../../src/log/checkpoint.js';
import { parseEntry } from '../../src/log/entries.js';
import { createLogRepository, FencedError } from '../../src/log/log.repository.js';
import { openNote, parseVerifierKey } from '../../src/log/note.js';
import { createSequencer } from '../../src/log/sequencer.js';
import { createTileStore, type TileStore } from '../../src/log/tile-store.js';
import { decodeBundle, tileHashes, tilePath } from '../../src/log/tiles.js';
import { leafHashOf, memoryLevels, TILE_WIDTH, treeHashes, verifyInclusion } from '../../src/log/tree.js';
import { select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { create, notarizeAll, unique } from '../support/guarantees.js';
import { appWith, configWith, eventually, harness, newOrg } from '../support/harness.js';
import { appendRecords, expectLogIntact } from '../support/log.js';
import { ownServer, serverPid, stopServer } from '../support/mariadb.js';
import { startWorkers } from '../../workers/index.js';
import { entry } from '../support/entry.js';

const text = new TextDecoder();

async function logOfHarness() {
  const h = await harness();
  return transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
}

/** GET path as bytes. */
async function getBytes(path: string): Promise<{ status: number; bytes: Uint8Array; headers: Record<string, string> }> {
  const res = await (
    await harness()
  ).http
    .get(path)
    .buffer(true)
    .parse((r, done) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => done(null, Buffer.concat(chunks)));
    });
  return { status: res.status, bytes: new Uint8Array(res.body as Buffer), headers: res.headers };
}

/** Every leaf hash of the published tree of `size`, read from the tiles the API serves, each entry checked against its leaf. */
async function leavesFromTiles(size: number): Promise<{ hashes: Uint8Array[]; entries: string[] }> {
  const hashes: Uint8Array[] = [];
  const entries: string[] = [];
  for (let t = 0; t * TILE_WIDTH < size; t++) {
    const width = Math.min(TILE_WIDTH, size - t * TILE_WIDTH);
    const tile = await getBytes(`/log/${tilePath({ level: 0, index: t, width })}`);
    expect(tile.status, `tile 0/${t} of width ${width}: ${Buffer.from(tile.bytes).toString()}`).to.equal(200);
    const bundle = await getBytes(`/log/${tilePath({ level: 'entries', index: t, width })}`);
    expect(bundle.status).to.equal(200);
    const level0 = tileHashes(tile.bytes);
    const got = decodeBundle(bundle.bytes);
    expect(got).to.have.length(width);
    got.forEach((e, i) => expect(Buffer.from(leafHashOf(e)).equals(Buffer.from(level0[i] as Uint8Array)), `entry ${t * TILE_WIDTH + i}`).to.equal(true));
    hashes.push(...level0);
    entries.push(...got.map((e) => text.decode(e)));
  }
  return { hashes, entries };
}

describe('the transparency log', function () {
  this.timeout(60_000);

  it("appends each notarization leaf with its batch, and the audit heads; publishes tiles and a checkpoint signed by the log's key that they lead to", async () => {
    const { http } = await harness();
    const log = await logOfHarness();
    const org = await newOrg();
    const created = await create(org, { details: { policyNumber: `LOG-${unique()}` } });
    await notarizeAll();
    const [proofRow] = await select<{ log_index: string | number | null; digest: string }>(
      (await harness()).db,
      'SELECT log_index, digest FROM notarization_proofs WHERE guarantee_id = $1',
      [created.id],
    );
    expect(proofRow?.log_index, 'the leaf has its place in the log').to.not.equal(null);
    const index = Number(proofRow?.log_index);
    await log.service.tick({ force: true });

    const key = await http.get('/log/key');
    expect(key.status).to.equal(200);
    const verifier = parseVerifierKey(key.text.trim());
    const res = await http.get('/log/checkpoint');
    expect(res.status).to.equal(200);
    expect(res.headers['content-type']).to.match(/^text\/plain/);
    const opened = openNote(res.text, [verifier]);
    const checkpoint = parseCheckpoint(opened.text);
    expect(checkpoint.origin).to.equal(verifier.name);
    expect(checkpoint.size).to.be.greaterThan(index);

    const { hashes, entries } = await leavesFromTiles(checkpoint.size);
    // The log's bucket holds the same bytes, for any static host: the tiles and the checkpoint.
    const last = Math.floor((checkpoint.size - 1) / TILE_WIDTH);
    for (const level of [0, 'entries'] as const) {
      const path = tilePath({ level, index: last, width: checkpoint.size - last * TILE_WIDTH });
      expect(Buffer.from((await log.store.get(path)) ?? []).equals(Buffer.from((await getBytes(`/log/${path}`)).bytes)), path).to.equal(true);
    }
    expect(new TextDecoder().decode(await log.store.get('checkpoint'))).to.equal(res.text);
    expect(entries[index]).to.equal(`record ${proofRow?.digest}`);
    // The organization's audit chain's head is in the log too (its registration is row 1).
    expect(entries.map((e) => parseEntry(e)).some((e) => e.kind === 'audit' && e.chain === org.orgId && e.seq === 1)).to.equal(true);
    // The root of the leaves the tiles hold is the checkpoint's.
    const levels = memoryLevels(hashes);
    const root = await treeHashes((level, from, to) => Promise.resolve((levels[level] ?? []).slice(from, to))).root(checkpoint.size);
    expect(Buffer.from(root).toString('base64')).to.equal(Buffer.from(checkpoint.root).toString('base64'));
    // And the log's proof of the leaf leads there.
    const proof = await log.service.proof(index);
    verifyInclusion(
      index,
      checkpoint.size,
      leafHashOf(new TextEncoder().encode(entries[index])),
      (proof?.inclusion ?? []).map((h) => Buffer.from(h, 'hex')),
      checkpoint.root,
    );
  });

  it("a guarantee's proof, and its amendment's, carry their leaf's inclusion in a checkpoint signed by the log's key", async () => {
    const { http } = await harness();
    const log = await logOfHarness();
    const org = await newOrg();
    const created = await create(org, {
      details: { policyNumber: `LOG-${unique()}`, effectiveAt: '2025-01-01T00:00:00Z', expiresAt: '2030-01-01T00:00:00Z' },
      economics: { garantedAmount: 1000 },
    });
    const amended = await http
      .post(`/api/v2/guarantees/${created.id as string}/amendments`)
      .set('X-API-Key', org.key)
      .send({ type: 'EXTENSION', effectiveAt: '2026-03-01T10:00:00+01:00', expiresAt: '2031-06-30T00:00:00Z', reason: 'appendice n. 1' });
    expect(amended.status, JSON.stringify(amended.body)).to.be.oneOf([200, 201]);
    await notarizeAll();
    await notarizeAll();
    const before = await http.get(`/api/v2/guarantees/${created.id as string}/proof`).set('X-API-Key', org.key);
    expect(before.body.notarizationStatus).to.equal('COMPLETE');
    await log.service.tick({ force: true });
    const vkey = parseVerifierKey(await log.service.verifierKey());
    for (const [path, kind] of [
      [`/api/v2/guarantees/${created.id as string}/proof`, 'record'],
      [`/api/v2/guarantees/${created.id as string}/amendments/1/proof`, 'amendment'],
    ] as const) {
      const res = await http.get(path).set('X-API-Key', org.key);
      expect(res.status, path).to.equal(200);
      const proof = res.body as { digest: string; log?: { index: number; checkpoint: string; inclusion: string[] } };
      expect(proof.log, `${path} carries its log inclusion`).to.not.equal(undefined);
      const { index, checkpoint, inclusion } = proof.log as NonNullable<typeof proof.log>;
      const c = parseCheckpoint(openNote(checkpoint, [vkey]).text);
      const leaf = leafHashOf(new TextEncoder().encode(`${kind} ${proof.digest}`));
      verifyInclusion(
        index,
        c.size,
        leaf,
        inclusion.map((h) => Buffer.from(h, 'hex')),
        c.root,
      );
      // Another digest is not in the log there.
      expect(() =>
        verifyInclusion(
          index,
          c.size,
          leafHashOf(new TextEncoder().encode(`${kind} ${'0'.repeat(64)}`)),
          inclusion.map((h) => Buffer.from(h, 'hex')),
          c.root,
        ),
      ).to.throw();
    }
  });

  it('serves full tiles as immutable, refuses paths that are not canonical tiles, and 404s a tile not written', async () => {
    const log = await logOfHarness();
    await log.service.tick({ force: true });
    const size = parseCheckpoint(openNote((await log.service.checkpoint()) as string, [parseVerifierKey(await log.service.verifierKey())]).text).size;
    const width = size % TILE_WIDTH || TILE_WIDTH;
    const last = Math.floor((size - 1) / TILE_WIDTH);
    const tile = await getBytes(`/log/${tilePath({ level: 0, index: last, width })}`);
    expect(tile.status).to.equal(200);
    expect(tile.headers['cache-control']).to.equal('public, max-age=31536000, immutable');
    expect(tile.headers['content-type']).to.equal('application/octet-stream');
    for (const bad of [
      '/log/tile/0/5',
      '/log/tile/0/x000/005',
      '/log/tile/64/000',
      '/log/tile/0/000.p/0',
      '/log/tile/0/000.p/256',
      '/log/tile/entries/000.p/07',
    ]) {
      expect((await getBytes(bad)).status, bad).to.equal(404);
    }
    expect((await getBytes(`/log/${tilePath({ level: 0, index: last + 1000, width: 1 })}`)).status).to.equal(404);
  });

  it('lets one sequencer hold the lease at a time, and fences off the appends of a holder whose lease another took over', async () => {
    const { db } = await harness();
    const repo = createLogRepository(db);
    const a = createSequencer({ repo, leaseMs: 400, holder: `a-${unique()}` });
    const b = createSequencer({ repo, leaseMs: 400, holder: `b-${unique()}` });
    // Both race for it: exactly one runs.
    let inside = 0;
    let most = 0;
    const work = async () => {
      inside++;
      most = Math.max(most, inside);
      await new Promise((r) => setTimeout(r, 100));
      inside--;
      return true;
    };
    const runs = await Promise.all([a.exclusive(work), b.exclusive(work), a.exclusive(work), b.exclusive(work)]);
    expect(most).to.equal(1);
    expect(runs.filter((r) => r === true).length).to.be.greaterThan(0);
    expect(runs.filter((r) => r === undefined).length, 'the other found it held').to.be.greaterThan(0);

    // a holds it and stalls past its lease; b takes it over; a's append then writes nothing.
    const sizeBefore = await repo.size();
    let fenced: unknown;
    await a.exclusive(async (fence) => {
      await new Promise((r) => setTimeout(r, 600));
      const taken = await b.exclusive(async (other) => {
        expect(other.token).to.be.greaterThan(fence.token);
        expect(await fence.held(), "a's lease is gone").to.equal(false);
        fenced = await repo.transaction((t) => fence.append([new TextEncoder().encode(`record ${'ab'.repeat(32)}`)], t)).catch((err: unknown) => err);
        return true;
      });
      expect(taken).to.equal(true);
    });
    expect(fenced).to.be.instanceOf(FencedError);
    expect(await repo.size()).to.equal(sizeBefore);
  });

  it("publishes with the sequencer's lease given back: a notarization cycle appends while a checkpoint's tiles are being written", async () => {
    const h = await harness();
    const real = createTileStore(h.config);
    let writing!: () => void;
    const written = new Promise<void>((r) => (writing = r));
    let letGo!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    // The real store, each write held at the gate until the test lets it go.
    const held: TileStore = {
      ...real,
      put: async (path, bytes, kind) => {
        writing();
        await gate;
        return real.put(path, bytes, kind);
      },
    };
    const { service, sequencer } = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }), { store: held });
    await appendRecords(h.db, sequencer, 3);
    const ticking = service.tick({ force: true });
    try {
      await Promise.race([written, new Promise((_, fail) => setTimeout(() => fail(new Error('no tile was written: nothing to publish?')), 10_000))]);
      const during = await Promise.race([
        sequencer.exclusive(() => Promise.resolve('appended')),
        new Promise((r) => setTimeout(() => r('waited for the publication'), 2000)),
      ]);
      expect(during).to.equal('appended');
    } finally {
      letGo();
    }
    const result = await ticking;
    expect(result?.published).to.equal(await createLogRepository(h.db).size());
  });

  it("publishes from one process at a time (the publisher lease): another process's tick appends, and leaves the publication to the one publishing", async () => {
    const h = await harness();
    const a = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
    const b = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
    await appendRecords(h.db, a.sequencer, 2);
    let letGo!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    let taken!: () => void;
    const publishing = new Promise<void>((r) => (taken = r));
    const holding = a.sequencer.publishing(async () => {
      taken();
      await gate;
    });
    await publishing;
    try {
      const during = await b.service.tick({ force: true });
      expect(during, 'b appended (it held the sequencer)').to.not.equal(undefined);
      expect(during?.published, 'b did not publish while a did').to.equal(undefined);
    } finally {
      letGo();
      await holding;
    }
    const after = await b.service.tick({ force: true });
    expect(after?.published).to.equal(await createLogRepository(h.db).size());
  });

  it('cli verification-key retire: the JWKS marks the key, the log records it, and a receipt it signed after its compromise time fails with the reason', async () => {
    const h = await harness();
    const keys = createSigningKeys(h.db, createSecretBox(h.config.ENCRYPTION_KEY));
    const key = await keys.current(generateKeyPairSync('ed25519').privateKey);
    const receipt = (verifiedAt: string) => signReceipt(key, { verifiedAt, query: { policyNumber: 'P-1' }, matches: [] });
    const before = receipt('2026-10-01T00:00:00.000Z');
    const after = receipt('2026-11-02T00:00:00.000Z');
    const cliRun = (...args: string[]) =>
      spawnSync(process.execPath, [...entry('src/cli.ts'), ...args], { encoding: 'utf8', env: { ...process.env, NODE_NO_WARNINGS: '1' } });
    const dir = mkdtempSync(join(tmpdir(), 'jwks-'));
    const jwks = async () => {
      const file = join(dir, `jwks-${unique()}.json`);
      writeFileSync(file, JSON.stringify((await (await appWith({}, h.db)).get('/.well-known/jwks.json')).body));
      return file;
    };
    const fresh = await jwks();
    for (const r of [before, after]) expect(cliRun('receipt', 'verify', r, '--jwks', fresh).status).to.equal(0);

    const retired = cliRun('verification-key', 'retire', key.kid, '--compromised-since', '2026-11-01T00:00:00Z');
    expect(retired.status, retired.stderr).to.equal(0);
    const set = JSON.parse(readFileSync(await jwks(), 'utf8')) as { keys: Array<Record<string, string>> };
    const marked = set.keys.find((k) => k.kid === key.kid);
    expect(marked?.compromisedSince).to.equal('2026-11-01T00:00:00.000Z');
    expect(marked?.retiredAt).to.be.a('string');
    const file = await jwks();
    // Dated before the compromise: the thief could have dated it so, and without the log's binding (--witness) it proves nothing.
    const unbound = cliRun('receipt', 'verify', before, '--jwks', file);
    expect(unbound.status, 'dated before the compromise, unbound').to.equal(1);
    expect(unbound.stderr).to.include('its date is bound only by the transparency log (give --log-key and --witness)');
    const refused = cliRun('receipt', 'verify', after, '--jwks', file);
    expect(refused.status).to.equal(1);
    expect(refused.stderr).to.include(`FAIL signed by key ${key.kid}, compromised since 2026-11-01T00:00:00.000Z`);
    expect(cliRun('verification-key', 'retire', 'no-such-kid').status).to.equal(1);
    // A retired key signs nothing more.
    let refusedKey: unknown;
    await keys.current(key.privateKey).catch((err: unknown) => (refusedKey = err));
    expect((refusedKey as Error).message).to.match(/was retired/);

    // The log records the change at its next tick.
    const log = await logOfHarness();
    await log.service.tick({ force: true });
    const size = log.service.parse((await log.service.checkpoint()) as string).size;
    const { entries } = await leavesFromTiles(size);
    expect(entries).to.include(`key-retired ${key.kid} ${marked?.retiredAt} compromised-since 2026-11-01T00:00:00.000Z`);
    expect(entries.some((e) => e.startsWith(`key-added ${key.kid} `))).to.equal(true);
  });

  // Only where the run started MariaDB itself (it is paused here).
  if (ownServer)
    it('with MariaDB frozen for a while under a running notarization worker, every leaf reaches the log once, with no gap, and a checkpoint covers them', async () => {
      const h = await harness();
      const org = await newOrg();
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) ids.push((await create(org, { details: { policyNumber: `FRZ-${i}-${unique()}` } })).id as string);
      const running = await startWorkers(['notarization'], {
        config: configWith({ NOTARIZATION_INTERVAL_MS: '200', LOG_CHECKPOINT_INTERVAL_MS: '200', LOG_LEASE_MS: '2000', DATABASE_STATEMENT_TIMEOUT_MS: '1000' }),
        logger: createLogger('silent'),
        keepSchedulesEveryMs: 500,
      });
      try {
        await new Promise((r) => setTimeout(r, 300));
        const pid = serverPid();
        await stopServer(pid);
        await new Promise((r) => setTimeout(r, 3000));
        process.kill(pid, 'SIGCONT');
        for (let i = 0; i < 10; i++) ids.push((await create(org, { details: { policyNumber: `FRZ-after-${i}-${unique()}` } })).id as string);
        await eventually(
          'every record notarized',
          async () => {
            const rows = await select<{ n: string | number }>(
              h.db,
              "SELECT COUNT(*) AS n FROM guarantees WHERE org_id = $1 AND notarization_status = 'COMPLETE'",
              [org.orgId],
            );
            return Number(rows[0]?.n) === ids.length;
          },
          40_000,
        );
        const { size } = await expectLogIntact(h.db);
        const leaves = await select<{ n: string | number }>(
          h.db,
          'SELECT COUNT(*) AS n FROM notarization_proofs WHERE guarantee_id IN ($1) AND log_index IS NOT NULL',
          [ids],
          undefined,
          { prepared: false },
        );
        expect(Number(leaves[0]?.n)).to.equal(ids.length);
        const log = await logOfHarness();
        await eventually('a checkpoint of them all', async () => {
          const note = await log.service.checkpoint();
          return !!note && log.service.parse(note).size >= size;
        });
      } finally {
        process.kill(serverPid(), 'SIGCONT');
        await running.close();
      }
    });
});

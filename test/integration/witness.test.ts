// The witness (issue 30): `cli witness serve` as a process of its own, with its own small
// database (a file); the registry's log sends it each checkpoint with its consistency proof and
// publishes its cosignature; it refuses what the specification says it refuses (a log it does not
// watch, another key's signature, a rollback, a bad proof) and catches a fork: two different
// trees of the same size, each signed with the log's key. While it is down the log goes on, and
// /readyz and the metric say so; back, it cosigns again from where it was.
import { generateKeyPairSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseConfig } from '../../config/index.js';
import { openCore, transparencyLog } from '../../src/composition.js';
import { formatCheckpoint, parseCheckpoint } from '../../src/log/checkpoint.js';
import { COSIGNATURE_V1, ed25519Signer, openNote, parseVerifierKey, signNote, verifierKey, type Signer } from '../../src/log/note.js';
import { leafHashOf, memoryLevels, treeHashes } from '../../src/log/tree.js';
import { createLogger } from '../../src/shared/logger.js';
import { appWith, harness, newOrg } from '../support/harness.js';
import { create, notarizeAll, unique } from '../support/guarantees.js';
import { startWitness, type RunningWitness } from '../support/log.js';
import { entry } from '../support/entry.js';

const post = async (url: string, body: string) => {
  const res = await fetch(`${url}/add-checkpoint`, { method: 'POST', body });
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
};

/** A log held in memory, signed by `signer`: its entries' checkpoints and consistency proofs, as a forger with the log's key could make. */
function memoryLog(signer: Signer, entries: string[]) {
  const leaves = entries.map((e) => leafHashOf(new TextEncoder().encode(e)));
  const tree = (size: number) => {
    const levels = memoryLevels(leaves.slice(0, size));
    return treeHashes((level, from, to) => Promise.resolve((levels[level] ?? []).slice(from, to)));
  };
  return {
    async checkpoint(size: number): Promise<string> {
      return signNote(formatCheckpoint({ origin: signer.name, size, root: await tree(size).root(size), extensions: [] }), [signer]);
    },
    async request(old: number, size: number): Promise<string> {
      const proof = old > 0 && old < size ? await tree(size).consistency(old, size) : [];
      return `old ${old}\n${proof.map((h) => `${Buffer.from(h).toString('base64')}\n`).join('')}\n${await this.checkpoint(size)}`;
    },
  };
}

describe('the witness', function () {
  this.timeout(120_000);
  const running: RunningWitness[] = [];
  after(async () => {
    for (const w of running) if (w.child.exitCode === null) await w.stop();
  });

  it('refuses what is not its log, not its key, malformed, a rollback or a bad proof; cosigns growth; and catches a fork of the same size', async () => {
    const key = generateKeyPairSync('ed25519').privateKey;
    const origin = `example.test/log-${unique().toLowerCase()}`;
    const signer = ed25519Signer(origin, key);
    const w = await startWitness(mkdtempSync(join(tmpdir(), 'witness-')), [verifierKey(origin, key)]);
    running.push(w);
    const honest = memoryLog(
      signer,
      Array.from({ length: 300 }, (_, i) => `record ${String(i).padStart(64, '0')}`),
    );

    const first = await post(w.url, await honest.request(0, 10));
    expect(first.status, first.text).to.equal(200);
    const cosigned = openNote(`${await honest.checkpoint(10)}${first.text}`, [parseVerifierKey(w.vkey)]);
    expect(cosigned.verified.map((s) => s.name)).to.include('witness.test');

    expect((await post(w.url, await honest.request(10, 300))).status, 'growth, proven').to.equal(200);
    const rollback = await post(w.url, await honest.request(10, 200));
    expect(rollback.status, 'an old size it does not hold').to.equal(409);
    expect(rollback.type).to.equal('text/x.tlog.size');
    expect(rollback.text).to.equal('300\n');

    // A fork: another tree of the same size (one entry changed), signed with the log's own key.
    const forked = memoryLog(
      signer,
      Array.from({ length: 300 }, (_, i) => `record ${String(i === 7 ? 999 : i).padStart(64, '0')}`),
    );
    const fork = await post(w.url, await forked.request(300, 300));
    expect(fork.status, 'two trees of size 300').to.equal(409);
    expect(fork.text).to.equal('300\n');
    // The fork grown further, with a "proof" from the honest size: it cannot be consistent.
    const forkedLonger = memoryLog(
      signer,
      Array.from({ length: 400 }, (_, i) => `record ${String(i === 7 ? 999 : i).padStart(64, '0')}`),
    );
    expect((await post(w.url, await forkedLonger.request(300, 400))).status, 'a fork grown').to.equal(422);

    const stranger = ed25519Signer(origin, generateKeyPairSync('ed25519').privateKey);
    expect((await post(w.url, `old 300\n\n${await memoryLog(stranger, Array<string>(301).fill('x')).checkpoint(301)}`)).status, 'another key').to.equal(403);
    expect((await post(w.url, `old 301\n\n${await honest.checkpoint(300)}`)).status, 'an old size beyond the checkpoint').to.equal(400);
    const otherLog = ed25519Signer(`other.test/log-${unique().toLowerCase()}`, key);
    expect((await post(w.url, await memoryLog(otherLog, ['x']).request(0, 1))).status, 'a log it does not watch').to.equal(404);
    for (const bad of ['', 'old x\n\n', 'old 300\nnot-base64\n\n', `old 300\n\n${(await honest.checkpoint(300)).replace(/— \S+ \S+\n$/, '— oops\n')}`]) {
      expect((await post(w.url, bad)).status, JSON.stringify(bad)).to.equal(400);
    }
    // Restarted, it remembers: the size it holds is still 300.
    await w.stop();
    const again = await startWitness(w.child.spawnargs[w.child.spawnargs.indexOf('--dir') + 1] as string, [verifierKey(origin, key)]);
    running.push(again);
    expect(again.vkey).to.equal(w.vkey);
    expect((await post(again.url, await honest.request(0, 10))).text).to.equal('300\n');
  });

  it('runs one witness at a time over a directory (two could cosign two forks), and starts again at once after one was killed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'witness-'));
    const logKey = verifierKey('log.test', generateKeyPairSync('ed25519').privateKey);
    const first = await startWitness(dir, [logKey]);
    const second = spawnSync(process.execPath, [...entry('src/cli.ts'), 'witness', 'serve', '--dir', dir, '--port', '0', '--log', logKey], {
      encoding: 'utf8',
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
      timeout: 30_000,
    });
    expect(second.status, second.stderr).to.equal(1);
    expect(second.stderr).to.include(`another witness runs over ${dir}`);
    // Killed, it leaves nothing behind that stops the next.
    await new Promise<void>((done) => {
      first.child.once('exit', () => done());
      first.child.kill('SIGKILL');
    });
    const again = await startWitness(dir, [logKey]);
    expect(again.vkey).to.equal(first.vkey);
    await again.stop();
  });

  it("the registry's log is cosigned by a running witness; while it is down checkpoints go on and /readyz and the metric say so; back, it cosigns from where it was", async () => {
    const h = await harness();
    const probe = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
    const dir = mkdtempSync(join(tmpdir(), 'witness-'));
    const w = await startWitness(dir, [await probe.service.verifierKey()]);
    running.push(w);
    const settings = { LOG_WITNESSES: `${w.url} ${w.vkey}`, LOG_WITNESS_TIMEOUT_MS: '2000' };
    const log = transparencyLog(openCore(parseConfig({ ...process.env, ...settings }), createLogger('silent'), { db: h.db })).service;
    const http = await appWith(settings, h.db);

    const org = await newOrg();
    const created = await create(org, { details: { policyNumber: `W-${unique()}` } });
    await notarizeAll();
    await log.tick({ force: true });
    const note = (await http.get('/log/checkpoint')).text;
    const opened = openNote(note, [parseVerifierKey(await log.verifierKey()), parseVerifierKey(w.vkey)]);
    expect(opened.verified.map((s) => s.name).sort()).to.deep.equal([log.origin, 'witness.test'].sort());
    const ready = await http.get('/readyz');
    expect(ready.body.log).to.deep.include({ status: 'ok' });

    // cli verify checks the proof's log inclusion with the pinned keys: the log's and the witness's.
    const guarantee = (await http.get(`/api/v2/guarantees/${created.id as string}`).set('X-API-Key', org.key)).body as Record<string, unknown>;
    const proof = (await http.get(`/api/v2/guarantees/${created.id as string}/proof`).set('X-API-Key', org.key)).body as Record<string, unknown> & {
      log: { inclusion: string[] };
    };
    const files = mkdtempSync(join(tmpdir(), 'proof-'));
    const write = (name: string, p: unknown) => {
      writeFileSync(join(files, name), JSON.stringify({ guarantee, proof: p }));
      return join(files, name);
    };
    const verify = (file: string, ...keys: string[]) =>
      spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', file, ...keys], {
        encoding: 'utf8',
        env: { ...process.env, NODE_NO_WARNINGS: '1' },
      });
    const pins = ['--log-key', await log.verifierKey(), '--witness', w.vkey];
    const good = verify(write('good.json', proof), ...pins);
    expect(good.status, good.stderr).to.equal(0);
    expect(good.stderr).to.include('ok   the checkpoint is cosigned by the witness witness.test');
    expect(good.stderr).to.match(/ok {3}the guarantee's leaf is in the log's checkpoint \(entry \d+ of \d+\)/);
    expect(good.stderr).to.match(/cosigned by witness.test \(at \d{4}-/);
    const stranger = verifierKey('witness.test', generateKeyPairSync('ed25519').privateKey, COSIGNATURE_V1);
    const unwitnessed = verify(write('good.json', proof), '--log-key', await log.verifierKey(), '--witness', stranger);
    expect(unwitnessed.status).to.equal(1);
    expect(unwitnessed.stderr).to.include('FAIL the checkpoint is cosigned by the witness witness.test');
    const moved = { ...proof, log: { ...proof.log, inclusion: proof.log.inclusion.map((h, i) => (i === 0 ? 'f'.repeat(64) : h)) } };
    const bad = verify(write('bad.json', moved), ...pins);
    expect(bad.status).to.equal(1);
    expect(bad.stderr).to.include("FAIL the guarantee's leaf is in the log's checkpoint");

    await w.stop();
    await create(org, { details: { policyNumber: `W-${unique()}` } });
    await notarizeAll();
    await log.tick({ force: true });
    const uncosigned = parseCheckpoint(openNote((await http.get('/log/checkpoint')).text, [parseVerifierKey(await log.verifierKey())]).text);
    const down = await http.get('/readyz');
    expect(down.status, 'the log goes on: ready all the same').to.equal(200);
    expect(down.body.log.status).to.equal('degraded');
    expect(down.body.log.witnesses[0]).to.deep.include({ name: 'witness.test', up: false });
    // Meanwhile a proof carries the newest checkpoint the witness did cosign, not the uncosigned one.
    const held = (await http.get(`/api/v2/guarantees/${created.id as string}/proof`).set('X-API-Key', org.key)).body as { log: { checkpoint: string } };
    const heldOpened = openNote(held.log.checkpoint, [parseVerifierKey(await log.verifierKey()), parseVerifierKey(w.vkey)]);
    expect(heldOpened.verified.map((s) => s.name)).to.include('witness.test');
    expect(parseCheckpoint(heldOpened.text).size).to.be.below(uncosigned.size);
    const metrics = (await http.get('/metrics')).text;
    expect(metrics).to.match(/registry_log_witness_up\{witness="witness.test"\} 0/);

    const back = await startWitness(dir, [await log.verifierKey()], Number(new URL(w.url).port));
    running.push(back);
    await log.tick({ force: true });
    const cosignedAgain = openNote((await http.get('/log/checkpoint')).text, [parseVerifierKey(await log.verifierKey()), parseVerifierKey(back.vkey)]);
    expect(parseCheckpoint(cosignedAgain.text).size).to.be.at.least(uncosigned.size);
    expect(cosignedAgain.verified.map((s) => s.name)).to.include('witness.test');
    expect((await http.get('/readyz')).body.log.status).to.equal('ok');
    expect((await http.get('/metrics')).text).to.match(/registry_log_witness_up\{witness="witness.test"\} 1/);
  });
});

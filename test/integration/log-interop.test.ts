// The transparency log's formats against Go's reference implementation (issue 30):
// golang.org/x/mod/sumdb/note and sumdb/tlog, from Debian's golang-go and
// golang-golang-x-mod-dev (npm test installs them), built offline. Go opens the checkpoints the
// registry signs, and the registry opens the notes Go signs with the same key: the same key ids,
// verifier keys and signatures. And Go reads the running registry's log over HTTP as a monitor
// would: the checkpoint with a witness's cosignature, the hash tiles (authenticated against the
// root), an entry from its bundle, an inclusion and a consistency proof, each the registry's own.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import { parseConfig } from '../../config/index.js';
import { openCore, transparencyLog } from '../../src/composition.js';
import { parseEntry } from '../../src/log/entries.js';
import { createLogger } from '../../src/shared/logger.js';
import { harness } from '../support/harness.js';
import { appendRecords, startWitness } from '../support/log.js';
import { formatCheckpoint, parseCheckpoint } from '../../src/log/checkpoint.js';
import { ed25519FromSeed, ed25519Signer, NoteError, openNote, parseVerifierKey, signNote, verifierKey } from '../../src/log/note.js';

const root = process.cwd();
const cache = join(root, '.data', 'test', 'gocache');
const binary = join(root, '.data', 'test', 'go-note');
const tlogBinary = join(root, '.data', 'test', 'go-tlog');

/** Runs the Go side (built once per run). */
function goNote(command: 'sign' | 'open', key: string, input: string): string {
  return execFileSync(binary, [command, key], { input, encoding: 'utf8', timeout: 30_000 });
}

/** Go's signer key form: PRIVATE+KEY+<name>+<hex id>+base64(0x01 || seed). */
function goSignerKey(name: string, seed: Buffer): string {
  const vkey = verifierKey(name, ed25519FromSeed(seed));
  const id = vkey.split('+')[1] as string;
  return `PRIVATE+KEY+${name}+${id}+${Buffer.concat([Buffer.from([1]), seed]).toString('base64')}`;
}

describe("the log's signed notes against Go's golang.org/x/mod/sumdb/note", function () {
  this.timeout(120_000);
  before(() => {
    mkdirSync(cache, { recursive: true });
    // GOPATH mode over Debian's sources: offline, no module download.
    for (const [out, dir] of [
      [binary, './test/interop/note'],
      [tlogBinary, './test/interop/tlog'],
    ])
      execFileSync('go', ['build', '-o', out as string, dir as string], {
        env: { ...process.env, GO111MODULE: 'off', GOPATH: '/usr/share/gocode', GOPROXY: 'off', GOFLAGS: '', GOCACHE: cache },
        stdio: ['ignore', 'ignore', 'inherit'],
        timeout: 100_000,
      });
  });

  it('Go opens a checkpoint the registry signs, with the verifier key the registry writes', () => {
    const seed = Buffer.alloc(32, 0x2a);
    const origin = 'registry.example.it/log';
    const signer = ed25519Signer(origin, ed25519FromSeed(seed));
    const text = formatCheckpoint({ origin, size: 70_000, root: Buffer.alloc(32, 0xcd), extensions: [] });
    const note = signNote(text, [signer]);
    expect(goNote('open', verifierKey(origin, ed25519FromSeed(seed)), note)).to.equal(`verified by ${origin}\n${text}`);
    // Changed by one byte, Go refuses it too.
    expect(() => goNote('open', verifierKey(origin, ed25519FromSeed(seed)), note.replace('70000', '70001'))).to.throw();
  });

  it('the registry opens a note Go signs with the same key: the same key id, signature line and text', () => {
    const seed = Buffer.alloc(32, 0x07);
    const name = 'witness.example.org';
    const text = 'registry.example.it/log\n3\nn4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=\n';
    const fromGo = goNote('sign', goSignerKey(name, seed), text);
    const opened = openNote(fromGo, [parseVerifierKey(verifierKey(name, ed25519FromSeed(seed)))]);
    expect(opened.text).to.equal(text);
    expect(opened.verified.map((s) => s.name)).to.deep.equal([name]);
    expect(opened.verified[0]?.id).to.equal(parseVerifierKey(verifierKey(name, ed25519FromSeed(seed))).id);
    // Ed25519 is deterministic: the registry's signature of the same text is Go's, byte for byte.
    expect(signNote(text, [ed25519Signer(name, ed25519FromSeed(seed))])).to.equal(fromGo);
    expect(parseCheckpoint(opened.text).size).to.equal(3);
    expect(() => openNote(fromGo.replace('\n3\n', '\n4\n'), [parseVerifierKey(verifierKey(name, ed25519FromSeed(seed)))])).to.throw(NoteError);
  });

  it("Go's tlog reads the registry's log over HTTP: the cosigned checkpoint, the tiles, an entry, and the registry's inclusion and consistency proofs are Go's", async () => {
    const h = await harness();
    const probe = transparencyLog(openCore(h.config, createLogger('silent'), { db: h.db }));
    const w = await startWitness(mkdtempSync(join(tmpdir(), 'witness-')), [await probe.service.verifierKey()]);
    const handle = h.app.callback();
    const server = createServer((req, res) => {
      void handle(req, res);
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const settings = { LOG_WITNESSES: `${w.url} ${w.vkey}` };
      const { service: log, sequencer } = transparencyLog(openCore(parseConfig({ ...process.env, ...settings }), createLogger('silent'), { db: h.db }));
      /** Appends n entries as the notarizer would, then publishes a checkpoint. */
      const grow = async (n: number) => {
        await appendRecords(h.db, sequencer, n);
        await log.tick({ force: true });
        return parseCheckpoint(openNote((await log.checkpoint()) as string, [parseVerifierKey(await log.verifierKey())]).text);
      };
      const old = await grow(300);
      const now = await grow(700);
      const index = old.size - 5;
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/log`;
      // Not execFileSync: the registry answering Go runs in this very process.
      const { stdout: out } = await promisify(execFile)(
        tlogBinary,
        ['check', base, await log.verifierKey(), w.vkey, String(index), String(old.size), Buffer.from(old.root).toString('base64')],
        { encoding: 'utf8', timeout: 60_000 },
      );
      const said = Object.fromEntries(
        out
          .trim()
          .split('\n')
          .map((l) => [l.slice(0, l.indexOf(' ')), l.slice(l.indexOf(' ') + 1)]),
      );
      expect(said.cosigners?.split(',').sort()).to.deep.equal([log.origin, 'witness.test'].sort());
      expect(Number(said.size)).to.equal(now.size);
      const proof = await log.proof(index);
      expect(said.inclusion).to.equal(proof?.inclusion.join(','));
      expect(said.consistency).to.equal((await log.consistency(old.size, now.size)).join(','));
      // Whatever it is (a record appended here, or an audit head of another test's), it is one of the log's entries.
      expect(() => parseEntry(said.entry as string)).to.not.throw();
    } finally {
      server.close();
      await w.stop();
    }
  });
});

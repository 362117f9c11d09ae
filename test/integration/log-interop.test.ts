// The transparency log's formats against Go's reference implementation (issue 30):
// golang.org/x/mod/sumdb/note, from Debian's golang-go and golang-golang-x-mod-dev (npm test
// installs them), built offline. Go opens the checkpoints the registry signs, and the registry
// opens the notes Go signs with the same key: the same key ids, verifier keys and signatures.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { formatCheckpoint, parseCheckpoint } from '../../src/log/checkpoint.js';
import { ed25519FromSeed, ed25519Signer, NoteError, openNote, parseVerifierKey, signNote, verifierKey } from '../../src/log/note.js';

const root = process.cwd();
const cache = join(root, '.data', 'test', 'gocache');
const binary = join(root, '.data', 'test', 'go-note');

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
    execFileSync('go', ['build', '-o', binary, './test/interop/note'], {
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
});

// C2SP signed notes and checkpoints (src/log): the specification's own example, keys and their
// ids, signing and opening, and what a verifier must refuse.
import { generateKeyPairSync } from 'node:crypto';
import { expect } from 'chai';
import { formatCheckpoint, parseCheckpoint } from '../../../src/log/checkpoint.js';
import {
  COSIGNATURE_V1,
  cosignatureTime,
  cosigner,
  ed25519FromSeed,
  ed25519Signer,
  NoteError,
  openNote,
  parseVerifierKey,
  signNote,
  verifierKey,
} from '../../../src/log/note.js';

// signed-note v1.0.0, "Example": the key and note the specification gives (also accepted by Go's golang.org/x/mod/sumdb/note).
const SPEC_VKEY = 'example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k';
const SPEC_NOTE =
  'This is an example message.\n\n\u2014 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n';

const newKey = () => generateKeyPairSync('ed25519').privateKey;

describe('signed notes (C2SP signed-note)', () => {
  it("opens the specification's example with its verifier key, and refuses it changed by one character", () => {
    const v = parseVerifierKey(SPEC_VKEY);
    expect(v).to.include({ name: 'example.com/foo', id: 0x530d903a });
    const opened = openNote(SPEC_NOTE, [v]);
    expect(opened.text).to.equal('This is an example message.\n');
    expect(opened.verified.map((s) => s.name)).to.deep.equal(['example.com/foo']);
    expect(() => openNote(SPEC_NOTE.replace('example message', 'exemple message'), [v])).to.throw(NoteError, /invalid signature by example.com\/foo/);
  });

  it('writes a verifier key whose id is SHA-256(name, newline, type, key), and reads it back', () => {
    // A key whose base64 holds a '+' (the separator of the key's parts) is read back all the same.
    const plus = Array.from({ length: 50 }, newKey).map((k) => verifierKey('registry.example.it/log', k));
    for (const v of plus) expect(parseVerifierKey(v).name).to.equal('registry.example.it/log');
    expect(plus.some((v) => v.split('+').length > 3)).to.equal(true);
    const key = newKey();
    const vkey = verifierKey('registry.example.it/log', key);
    expect(vkey).to.match(/^registry\.example\.it\/log\+[0-9a-f]{8}\+A[Q-Za-f][A-Za-z0-9+/]{42}$/);
    const signer = ed25519Signer('registry.example.it/log', key);
    expect(parseVerifierKey(vkey).id).to.equal(signer.id);
    // A key id that does not match, a name with a space or a plus, another algorithm: refused.
    const [name, id] = vkey.split('+') as [string, string];
    const k = vkey.slice(name.length + id.length + 2);
    expect(() => parseVerifierKey(`${name}+${id === '00000000' ? '00000001' : '00000000'}+${k}`)).to.throw(NoteError, /id does not match/);
    expect(() => parseVerifierKey(`bad name+${id}+${k}`)).to.throw(NoteError);
    expect(() => parseVerifierKey(`${name}+${id}`)).to.throw(NoteError, /malformed/);
    expect(() => verifierKey('a+b', key)).to.throw(NoteError, /invalid key name/);
  });

  it('signs a text and opens it with the key; another key is unknown, kept apart; a known key that does not verify is refused', () => {
    const log = ed25519Signer('registry.example.it/log', newKey());
    const witnessKey = newKey();
    const witness = ed25519Signer('witness.example.org', witnessKey);
    const note = signNote('registry.example.it/log\n3\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n', [log, witness]);
    const logVerifier = { name: log.name, id: log.id, verify: () => true };
    const opened = openNote(note, [parseVerifierKey(verifierKey('witness.example.org', witnessKey))]);
    expect(opened.verified.map((s) => s.name)).to.deep.equal(['witness.example.org']);
    expect(opened.unknown.map((s) => s.name)).to.deep.equal(['registry.example.it/log']);
    expect(openNote(note, [logVerifier]).verified).to.have.length(1);
    expect(() => openNote(note, [{ ...logVerifier, verify: () => false }])).to.throw(NoteError, /invalid signature/);
    expect(() => openNote(note, [])).to.throw(NoteError, /no signature by a known key/);
    // Signing again with a key already there replaces its line rather than adding one.
    const again = signNote(opened.text, [witness], [...opened.verified, ...opened.unknown]);
    expect(again.split('\u2014').length - 1).to.equal(2);
  });

  it('refuses malformed notes: no blank line, a signature line of another form, control characters, a short signature', () => {
    const v = parseVerifierKey(SPEC_VKEY);
    for (const bad of [
      'no signatures at all\n',
      'text\n\n- example.com/foo AAAA\n',
      'text\n\n\u2014 example.com/foo Uw2QOkn8\n',
      'text\r\n\n\u2014 example.com/foo Uw2QOkn8srV1\n',
      SPEC_NOTE.slice(0, -1),
    ]) {
      expect(() => openNote(bad, [v]), JSON.stringify(bad)).to.throw(NoteError);
    }
    expect(() => signNote('no final newline', [ed25519Signer('a', newKey())])).to.throw(NoteError);
  });

  it("takes an Ed25519 key from the 32-byte seed Go's note package keeps", () => {
    const seed = Buffer.alloc(32, 7);
    const a = ed25519Signer('k', ed25519FromSeed(seed));
    const b = ed25519Signer('k', ed25519FromSeed(seed));
    expect(Buffer.from(a.sign(Buffer.from('x\n'))).equals(Buffer.from(b.sign(Buffer.from('x\n'))))).to.equal(true);
  });
});

describe('checkpoints (C2SP tlog-checkpoint)', () => {
  it('writes origin, size and root hash, one a line, and reads them back; refuses what is none', () => {
    const root = Buffer.alloc(32, 0xab);
    const text = formatCheckpoint({ origin: 'registry.example.it/log', size: 70000, root, extensions: [] });
    expect(text).to.equal(`registry.example.it/log\n70000\n${root.toString('base64')}\n`);
    expect(parseCheckpoint(text)).to.deep.include({ origin: 'registry.example.it/log', size: 70000, extensions: [] });
    for (const bad of [
      'o\n01\nAA==\n',
      'o\n1\nAAAA\n',
      `o\n-1\n${root.toString('base64')}\n`,
      `o\n1\n${root.toString('base64')}`,
      `\n1\n${root.toString('base64')}\n`,
    ]) {
      expect(() => parseCheckpoint(bad), JSON.stringify(bad)).to.throw(NoteError);
    }
    expect(() => formatCheckpoint({ origin: 'o', size: 1, root: Buffer.alloc(31), extensions: [] })).to.throw(NoteError);
  });

  it("cosigns as tlog-cosignature v1 says: its time, then Ed25519 over the header and the checkpoint; a witness's key is type 0x04", () => {
    const key = ed25519FromSeed(Buffer.alloc(32, 9));
    const vkey = verifierKey('witness.example', key, COSIGNATURE_V1);
    expect(Buffer.from(vkey.split('+')[2] as string, 'base64')[0]).to.equal(4);
    // Another id than the same key's as a log key: the type is in it.
    expect(vkey.split('+')[1]).to.not.equal(verifierKey('witness.example', key).split('+')[1]);
    const text = formatCheckpoint({ origin: 'example.com/log', size: 20852163, root: Buffer.alloc(32, 7), extensions: [] });
    const note = signNote(text, [cosigner('witness.example', key, () => 1679315147)]);
    const opened = openNote(note, [parseVerifierKey(vkey)]);
    expect(cosignatureTime(opened.verified[0]?.bytes as Uint8Array)).to.equal(1679315147);
    // The time is signed: another one does not verify.
    const raw = Buffer.from(note.trim().split(' ').pop() as string, 'base64');
    raw.writeBigUInt64BE(1679315148n, 4);
    const moved = note.replace(/ \S+\n$/, ` ${raw.toString('base64')}\n`);
    expect(() => openNote(moved, [parseVerifierKey(vkey)])).to.throw(NoteError, /invalid signature/);
    // A cosignature is not a log's signature: the log's key of the same bytes does not take it.
    expect(() => openNote(note, [parseVerifierKey(verifierKey('witness.example', key))])).to.throw(NoteError);
  });
});

// C2SP signed notes (signed-note v1.0.0), the envelope of the transparency log's checkpoints and
// of their witnesses' cosignatures (issue 30): a text of lines, a blank line, and signature
// lines `— <key name> base64(key id || signature)`. A key is named and identified by its id, the
// first four bytes of SHA-256(name || "\n" || type || public key); its verifier key is written
// `<name>+<hex id>+base64(type || public key)`. Type 0x01 is Ed25519 over the text itself.
// Pure: no I/O. Checked against the specification's example and, in `npm test`, against Go's
// reference implementation (golang.org/x/mod/sumdb/note).
import { createHash, createPrivateKey, createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';

/** The signature type of a log's key: Ed25519 over the note's text. */
export const ED25519 = 0x01;
/**
 * A witness's cosignature (tlog-cosignature v1): Ed25519 over "cosignature/v1\ntime <t>\n" and
 * the checkpoint's text, the signature being t (8 bytes, big-endian seconds) and the 64 bytes.
 */
export const COSIGNATURE_V1 = 0x04;

const EM_DASH = '\u2014';
/** The most signature lines a note may carry (Go's reference accepts up to 100; the specification asks for at least 16). */
const MAX_SIGNATURES = 100;

export class NoteError extends Error {}

/** A name may be any non-empty text without spaces or `+` (signed-note §Signatures). */
export function isValidName(name: string): boolean {
  return name.length > 0 && !/[\s+]/u.test(name);
}

/** The key id: the first four bytes of SHA-256(name || "\n" || type || key), as a big-endian number. */
export function keyId(name: string, typeAndKey: Uint8Array): number {
  const digest = createHash('sha256').update(name, 'utf8').update('\n').update(typeAndKey).digest();
  return digest.readUInt32BE(0);
}

const hex8 = (id: number) => id.toString(16).padStart(8, '0');

/** A verifier key: who it is, its id, and how to check its signatures (`verify` sees the note's text and the signature without the id). */
export interface Verifier {
  name: string;
  id: number;
  /** ED25519 (a log's key) or COSIGNATURE_V1 (a witness's). */
  type?: number;
  verify(text: Uint8Array, signature: Uint8Array): boolean;
}

/** A signer: its name, its id, and how it signs a note's text. */
export interface Signer {
  name: string;
  id: number;
  sign(text: Uint8Array): Uint8Array;
}

/** The raw 32 bytes of an Ed25519 public key. */
function rawPublic(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new NoteError('not an Ed25519 key');
  return Buffer.from(jwk.x, 'base64url');
}

const publicFromRaw = (raw: Uint8Array) => createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' });

/** The verifier key string of an Ed25519 key named `name` (type ED25519, or COSIGNATURE_V1 for a witness's). */
export function verifierKey(name: string, key: KeyObject, type: number = ED25519): string {
  if (!isValidName(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}`);
  const typeAndKey = Buffer.concat([Buffer.from([type]), rawPublic(key.type === 'private' ? createPublicKey(key) : key)]);
  return `${name}+${hex8(keyId(name, typeAndKey))}+${typeAndKey.toString('base64')}`;
}

/** An Ed25519 signer named `name` (its private key). */
export function ed25519Signer(name: string, privateKey: KeyObject): Signer {
  if (!isValidName(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}`);
  if (privateKey.asymmetricKeyType !== 'ed25519' || privateKey.type !== 'private') throw new NoteError('not an Ed25519 private key');
  const typeAndKey = Buffer.concat([Buffer.from([ED25519]), rawPublic(createPublicKey(privateKey))]);
  return { name, id: keyId(name, typeAndKey), sign: (text) => edSign(null, text, privateKey) };
}

/** What a cosignature signs: its header, then the checkpoint's text. */
export function cosignedMessage(text: Uint8Array, time: number): Uint8Array {
  return Buffer.concat([Buffer.from(`cosignature/v1\ntime ${time}\n`, 'utf8'), text]);
}

/** A witness's cosigner named `name`: it signs a checkpoint's text as of `now()` (seconds since the epoch). */
export function cosigner(name: string, privateKey: KeyObject, now: () => number = () => Math.floor(Date.now() / 1000)): Signer {
  if (!isValidName(name)) throw new NoteError(`invalid key name ${JSON.stringify(name)}`);
  if (privateKey.asymmetricKeyType !== 'ed25519' || privateKey.type !== 'private') throw new NoteError('not an Ed25519 private key');
  const typeAndKey = Buffer.concat([Buffer.from([COSIGNATURE_V1]), rawPublic(createPublicKey(privateKey))]);
  return {
    name,
    id: keyId(name, typeAndKey),
    sign: (text) => {
      const time = now();
      const stamp = Buffer.alloc(8);
      stamp.writeBigUInt64BE(BigInt(time));
      return Buffer.concat([stamp, edSign(null, cosignedMessage(text, time), privateKey)]);
    },
  };
}

/** The time a cosignature (the signature without its key id) says it was made, in seconds. */
export function cosignatureTime(signature: Uint8Array): number {
  if (signature.length !== 72) throw new NoteError('a cosignature is 72 bytes');
  return Number(Buffer.from(signature).readBigUInt64BE(0));
}

/**
 * The verifier of a verifier key string (`<name>+<hex id>+<base64(type || key)>`): a log's
 * Ed25519 key (type 0x01) or a witness's cosignature key (0x04); a NoteError if malformed, of
 * another type, or if its id does not match.
 */
export function parseVerifierKey(vkey: string): Verifier {
  // The name holds no '+', the id is hex: the key's base64 after them may hold '+' itself.
  const first = vkey.indexOf('+');
  const second = vkey.indexOf('+', first + 1);
  if (first < 0 || second < 0) throw new NoteError('malformed verifier key');
  const [name, hexId, encoded] = [vkey.slice(0, first), vkey.slice(first + 1, second), vkey.slice(second + 1)];
  if (!isValidName(name) || !/^[0-9a-f]{8}$/.test(hexId)) throw new NoteError('malformed verifier key');
  const typeAndKey = Buffer.from(encoded, 'base64');
  if (typeAndKey.toString('base64') !== encoded) throw new NoteError('malformed verifier key');
  const id = Number.parseInt(hexId, 16);
  if (keyId(name, typeAndKey) !== id) throw new NoteError('verifier key id does not match its key');
  if ((typeAndKey[0] !== ED25519 && typeAndKey[0] !== COSIGNATURE_V1) || typeAndKey.length !== 33) throw new NoteError('unknown verifier algorithm');
  const key = publicFromRaw(typeAndKey.subarray(1));
  if (typeAndKey[0] === COSIGNATURE_V1) {
    return {
      name,
      id,
      type: COSIGNATURE_V1,
      verify: (text, signature) =>
        signature.length === 72 && edVerify(null, cosignedMessage(text, cosignatureTime(signature)), key, Buffer.from(signature).subarray(8)),
    };
  }
  return { name, id, type: ED25519, verify: (text, signature) => signature.length === 64 && edVerify(null, text, key, signature) };
}

export interface Signature {
  name: string;
  id: number;
  /** The signature without its four-byte key id. */
  bytes: Uint8Array;
}

/** A note's text (every line ending in "\n") signed by each of `signers`, after `existing` signatures (kept, but a signer's own replaced). */
export function signNote(text: string, signers: readonly Signer[], existing: readonly Signature[] = []): string {
  checkText(text);
  const bytes = Buffer.from(text, 'utf8');
  const mine = new Set(signers.map((s) => `${s.name}\0${s.id}`));
  const lines = [...existing.filter((s) => !mine.has(`${s.name}\0${s.id}`)), ...signers.map((s) => ({ name: s.name, id: s.id, bytes: s.sign(bytes) }))].map(
    (s) => signatureLine(s),
  );
  if (!lines.length) throw new NoteError('a note needs at least one signature');
  return `${text}\n${lines.join('')}`;
}

function signatureLine(s: Signature): string {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(s.id);
  return `${EM_DASH} ${s.name} ${Buffer.concat([id, Buffer.from(s.bytes)]).toString('base64')}\n`;
}

/** Whether `s` holds a control character other than a newline (a note is text: signed-note §Note text). */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 && c !== 0x0a) return true;
  }
  return false;
}

function checkText(text: string): void {
  if (!text.endsWith('\n')) throw new NoteError('a note text ends with a newline');
  if (hasControl(text)) throw new NoteError('a note holds no control characters but newlines');
}

export interface OpenedNote {
  text: string;
  /** The signatures verified by a known key. */
  verified: Signature[];
  /** Those of keys not given (kept as they are: another witness's, say). */
  unknown: Signature[];
}

/**
 * The note `message` opened with `verifiers`: its text and signatures. A NoteError when it is
 * malformed, when a known key's signature does not verify, or when no known key signed it.
 */
export function openNote(message: string, verifiers: readonly Verifier[]): OpenedNote {
  if (hasControl(message)) throw new NoteError('malformed note');
  const split = message.lastIndexOf('\n\n');
  if (split < 0) throw new NoteError('malformed note: no signatures');
  const text = message.slice(0, split + 1);
  const block = message.slice(split + 2);
  if (!block.endsWith('\n')) throw new NoteError('malformed note: its signatures do not end with a newline');
  const lines = block.slice(0, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw new NoteError('too many signatures');
  const verified: Signature[] = [];
  const unknown: Signature[] = [];
  const textBytes = Buffer.from(text, 'utf8');
  for (const line of lines) {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/u.exec(line);
    if (!m) throw new NoteError('malformed note: a signature line');
    const [, name, encoded] = m as unknown as [string, string, string];
    const raw = Buffer.from(encoded, 'base64');
    if (raw.length < 5 || raw.toString('base64') !== encoded || !isValidName(name)) throw new NoteError('malformed note: a signature');
    const signature = { name, id: raw.readUInt32BE(0), bytes: raw.subarray(4) };
    const verifier = verifiers.find((v) => v.name === name && v.id === signature.id);
    if (!verifier) unknown.push(signature);
    else if (verifier.verify(textBytes, signature.bytes)) verified.push(signature);
    else throw new NoteError(`invalid signature by ${name}`);
  }
  if (!verified.length) throw new NoteError('no signature by a known key');
  return { text, verified, unknown };
}

/** An Ed25519 private key from its 32-byte seed (the form Go's note package keeps). */
export function ed25519FromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== 32) throw new NoteError('an Ed25519 seed is 32 bytes');
  return createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seed)]), format: 'der', type: 'pkcs8' });
}

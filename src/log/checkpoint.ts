// C2SP tlog-checkpoint v1.0.0: the text a log signs to commit to its tree, as a signed note
// (./note.ts): its origin (the log's name, which its key also bears), the tree's size in
// decimal, and the RFC 6962 root hash in base64, each on its line; extension lines may follow.
import { NoteError } from './note.js';

export interface Checkpoint {
  origin: string;
  size: number;
  /** The 32-byte RFC 6962 Merkle tree hash of the first `size` entries. */
  root: Uint8Array;
  extensions: string[];
}

/** The checkpoint's note text. */
export function formatCheckpoint(c: Checkpoint): string {
  if (!c.origin || /\n/.test(c.origin)) throw new NoteError('a checkpoint has a one-line origin');
  if (!Number.isSafeInteger(c.size) || c.size < 0) throw new NoteError('a checkpoint size is a whole number');
  if (c.root.length !== 32) throw new NoteError('a checkpoint root hash is 32 bytes');
  if (c.extensions.some((e) => !e || /\n/.test(e))) throw new NoteError('an extension is one non-empty line');
  return [c.origin, String(c.size), Buffer.from(c.root).toString('base64'), ...c.extensions].map((l) => `${l}\n`).join('');
}

/** The checkpoint a note's text holds; a NoteError when it is none (a size with a leading zero, a root of another length...). */
export function parseCheckpoint(text: string): Checkpoint {
  if (!text.endsWith('\n')) throw new NoteError('malformed checkpoint');
  const lines = text.slice(0, -1).split('\n');
  const [origin, size, root, ...extensions] = lines;
  if (!origin || size === undefined || root === undefined || extensions.some((e) => !e)) throw new NoteError('malformed checkpoint');
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size))) throw new NoteError('malformed checkpoint size');
  const hash = Buffer.from(root, 'base64');
  if (hash.length !== 32 || hash.toString('base64') !== root) throw new NoteError('malformed checkpoint root hash');
  return { origin, size: Number(size), root: hash, extensions };
}

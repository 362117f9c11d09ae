// A mirror of the transparency log: anyone's full copy, checked entry by entry
// (`cli log mirror <base URL> <dir>`, `cli log verify <dir>`).
//
// The directory holds what the log serves, at the same paths (so that it can itself be served by
// any static host): `checkpoint`, `tile/<L>/...` and `tile/entries/...`, and `key`, the log's
// verifier key, pinned on the first copy (or given with --key). Each run:
//   1. opens the log's checkpoint with the pinned key, and with every witness key given
//      (--witness): a checkpoint a pinned witness did not cosign is refused (a split view, shown
//      to the mirror and not to the witness, is caught there);
//   2. refuses a checkpoint smaller than the one it holds (a rollback);
//   3. fetches the entries bundles from the first tile not held whole, hashes every entry, checks
//      that the entries it held are the ones served (a rewrite names the index), and that every
//      hash tile the log serves is the one computed from the entries (a tile that lies names it);
//   4. computes the root of the whole tree from the entries and compares it with the
//      checkpoint's: a log that rewrote history it had published (even beyond the tiles fetched)
//      cannot match. The first differing entry is then looked for and named;
//   5. writes the tiles, then the checkpoint (renamed into place last).
// `verify` runs 3-4 over the directory alone, offline.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseCheckpoint, type Checkpoint } from './checkpoint.js';
import type { NoteError } from './note.js';
import { COSIGNATURE_V1, openNote, parseVerifierKey, type Verifier } from './note.js';
import { decodeBundle, tileHashes, tilePath } from './tiles.js';
import { leafHashOf, memoryLevels, TILE_WIDTH, treeHashes } from './tree.js';

export class MirrorError extends Error {
  override readonly name = 'MirrorError';
}

/** Where the tiles come from: the log over HTTP, or the mirror's own directory. */
type Fetch = (path: string) => Promise<Uint8Array | undefined>;

const CONCURRENCY = 16;

export interface MirrorResult {
  size: number;
  previous: number;
  fetched: number;
}

const same = (a: Uint8Array | undefined, b: Uint8Array | undefined) => !!a && !!b && Buffer.from(a).equals(Buffer.from(b));

/** The longest entry the registry writes (log_entries.entry is VARBINARY(1024); its lines are about 150 bytes). */
export const MAX_ENTRY = 1024;

/**
 * The most a path may hold: a hash tile 256 hashes, an entries bundle 256 entries of at most
 * 65,535 bytes each with their 2-byte lengths, a checkpoint or a key a few lines. A log that
 * answers more is refused before it is read whole (a hostile log cannot fill the mirror's memory).
 */
export function largestBody(path: string): number {
  if (path.startsWith('tile/entries/')) return TILE_WIDTH * (2 + MAX_ENTRY);
  if (path.startsWith('tile/')) return TILE_WIDTH * 32;
  return 64 * 1024;
}

/** A GET's connection failing (a keep-alive connection the server closed as it was reused, a reset): tried again, twice at most. */
async function get(url: string, timeoutMs: number): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code;
      if (attempt >= 3 || !code || !['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE', 'UND_ERR_CLOSED'].includes(code)) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

function httpFetch(base: string, timeoutMs: number): Fetch {
  return async (path) => {
    const url = `${base}/${path}`;
    const res = await get(url, timeoutMs);
    if (res.status === 404) {
      await res.body?.cancel();
      return undefined;
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new MirrorError(`GET ${url}: ${res.status}`);
    }
    const limit = largestBody(path);
    const tooLarge = () => new MirrorError(`GET ${url}: the answer is larger than the ${limit} bytes such a file can hold`);
    if (Number(res.headers.get('content-length') ?? 0) > limit) {
      await res.body?.cancel();
      throw tooLarge();
    }
    const chunks: Uint8Array[] = [];
    let length = 0;
    for await (const chunk of res.body ?? []) {
      length += (chunk as Uint8Array).length;
      if (length > limit) throw tooLarge();
      chunks.push(chunk as Uint8Array);
    }
    return new Uint8Array(Buffer.concat(chunks, length));
  };
}

function dirFetch(dir: string): Fetch {
  return (path) => Promise.resolve(existsSync(join(dir, path)) ? new Uint8Array(readFileSync(join(dir, path))) : undefined);
}

function writeAtomically(file: string, bytes: Uint8Array | string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, bytes);
  renameSync(`${file}.tmp`, file);
}

/** A witness's verifier key: a cosignature key (type 0x04), never a log's (a log's own signature must not pass for a witness's). */
export function witnessKey(vkey: string): Verifier {
  const v = parseVerifierKey(vkey);
  if (v.type !== COSIGNATURE_V1) throw new MirrorError(`${v.name}: not a witness's key (a cosignature key, type 0x04)`);
  return v;
}

/** Opens a checkpoint note with the log's key and requires each pinned witness's cosignature. */
export function openCheckpoint(note: string, logKey: Verifier, witnesses: readonly Verifier[]): Checkpoint {
  let opened;
  try {
    opened = openNote(note, [logKey, ...witnesses]);
  } catch (err) {
    throw new MirrorError(`the checkpoint does not open with the log's key and the witnesses' keys: ${(err as Error).message}`);
  }
  if (!opened.verified.some((s) => s.name === logKey.name && s.id === logKey.id)) throw new MirrorError("the checkpoint is not signed by the log's key");
  for (const w of witnesses)
    if (!opened.verified.some((s) => s.name === w.name && s.id === w.id))
      throw new MirrorError(`the checkpoint is not cosigned by the witness ${w.name}: it may be a view of the log shown to this mirror alone`);
  const c = parseCheckpoint(opened.text);
  if (c.size >= 2 ** 32) throw new MirrorError(`the checkpoint claims ${c.size} entries: more than a mirror takes`);
  if (c.origin !== logKey.name) throw new MirrorError(`the checkpoint is of ${c.origin}, not of ${logKey.name}`);
  return c;
}

async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/**
 * The entries of the tree of `size`, tile by tile: those of tiles below `fromTile` from `held`
 * (the mirror's own copy), the others from `source`; each tile's entries checked against the
 * hash tile `source` serves. Each bundle fetched is handed to `stage` (written aside, never
 * all held in memory). Returns every leaf hash, how many bundles were fetched, and where held
 * and served entries differ.
 */
async function readEntries(
  size: number,
  fromTile: number,
  source: Fetch,
  held: Fetch | undefined,
  stage: (t: number, bundle: Uint8Array) => void = () => undefined,
): Promise<{ leaves: Uint8Array[]; fetched: number; rewritten?: number }> {
  const tiles = Math.ceil(size / TILE_WIDTH);
  const leaves: Uint8Array[] = new Array<Uint8Array>(size);
  let fetched = 0;
  let rewritten: number | undefined;
  const note = (i: number) => {
    if (rewritten === undefined || i < rewritten) rewritten = i;
  };
  const indexes = Array.from({ length: tiles }, (_, t) => t);
  await inParallel(indexes, async (t) => {
    const width = Math.min(TILE_WIDTH, size - t * TILE_WIDTH);
    const fromSource = t >= fromTile;
    const from = fromSource ? source : (held as Fetch);
    const bundle = await from(tilePath({ level: 'entries', index: t, width }));
    if (!bundle) throw new MirrorError(`entries bundle ${t} (width ${width}) is missing${fromSource ? ' from the log' : ' from the mirror'}`);
    let entries: Uint8Array[];
    try {
      entries = decodeBundle(bundle);
    } catch (err) {
      throw new MirrorError(`entries bundle ${t}: ${(err as Error).message}`);
    }
    const long = entries.findIndex((e) => e.length > MAX_ENTRY);
    if (long >= 0) throw new MirrorError(`entry ${t * TILE_WIDTH + long}: ${entries[long]?.length} bytes, longer than any entry the log writes (${MAX_ENTRY})`);
    if (entries.length !== width)
      throw new MirrorError(`entries bundle ${t} holds ${entries.length} entries, not ${width}: entry ${t * TILE_WIDTH + Math.min(entries.length, width)}`);
    const hashes = entries.map((e) => leafHashOf(e));
    hashes.forEach((h, i) => (leaves[t * TILE_WIDTH + i] = h));
    if (fromSource) {
      stage(t, bundle);
      fetched++;
      // The entries the mirror held of this tile (a partial one it had) must be the same.
      const mine = held && (await heldPrefix(held, t));
      if (mine)
        mine.forEach((e, i) => {
          if (!same(e, entries[i])) note(t * TILE_WIDTH + i);
        });
    }
    // The log's hash tile must be the hashes of its entries.
    const tile = await from(tilePath({ level: 0, index: t, width }));
    if (!tile) throw new MirrorError(`hash tile 0/${t} (width ${width}) is missing`);
    const served = tileHashes(tile);
    hashes.forEach((h, i) => {
      if (!same(h, served[i])) throw new MirrorError(`entry ${t * TILE_WIDTH + i}: its hash is not the one in tile 0/${t}`);
    });
  });
  return { leaves, fetched, ...(rewritten !== undefined && { rewritten }) };
}

/** The entries of tile `t` the mirror holds (a full bundle, or its widest partial one), if any. */
async function heldPrefix(held: Fetch, t: number): Promise<Uint8Array[] | undefined> {
  for (let w = TILE_WIDTH; w >= 1; w--) {
    const b = await held(tilePath({ level: 'entries', index: t, width: w }));
    if (b) return decodeBundle(b);
  }
  return undefined;
}

/** The hash tiles above level 0, computed from the leaves, checked against `source` when it serves them. */
async function upperTiles(leaves: Uint8Array[], size: number, source: Fetch | undefined): Promise<Map<string, Uint8Array>> {
  const levels = memoryLevels(leaves);
  const out = new Map<string, Uint8Array>();
  for (let level = 0; level < levels.length; level++) {
    const hashes = levels[level] as Uint8Array[];
    const count = Math.floor(size / TILE_WIDTH ** level);
    for (let t = 0; t * TILE_WIDTH < count; t++) {
      const width = Math.min(TILE_WIDTH, count - t * TILE_WIDTH);
      const bytes = new Uint8Array(width * 32);
      hashes.slice(t * TILE_WIDTH, t * TILE_WIDTH + width).forEach((h, i) => bytes.set(h, i * 32));
      const path = tilePath({ level, index: t, width });
      out.set(path, bytes);
      if (source && level > 0) {
        const served = await source(path);
        if (served && !same(served, bytes))
          throw new MirrorError(`tile ${level}/${t}: not the hashes of the entries below it (entries ${t * TILE_WIDTH * TILE_WIDTH ** level} on)`);
      }
    }
  }
  return out;
}

const rootOf = (leaves: Uint8Array[], size: number) => {
  const levels = memoryLevels(leaves);
  return treeHashes((level, from, to) => Promise.resolve((levels[level] ?? []).slice(from, to))).root(size);
};

/** Copies the log at `base` (its prefix: https://registry.example/log) into `dir`, checking everything; what it now holds. */
export async function mirrorLog(
  base: string,
  dir: string,
  opts: { key?: string; witnesses?: readonly string[]; timeoutMs?: number } = {},
): Promise<MirrorResult> {
  const source = httpFetch(base.replace(/\/+$/, ''), opts.timeoutMs ?? 30_000);
  const keyFile = join(dir, 'key');
  const pinned = existsSync(keyFile) ? readFileSync(keyFile, 'utf8').trim() : undefined;
  if (pinned && opts.key && pinned !== opts.key.trim()) throw new MirrorError(`the mirror holds the log key ${pinned}, not ${opts.key}`);
  let vkey = opts.key?.trim() ?? pinned;
  if (!vkey) {
    const served = await source('key');
    if (!served) throw new MirrorError('the log serves no key at <base>/key: give it with --key');
    vkey = new TextDecoder().decode(served).trim();
  }
  let logKey: Verifier;
  let witnesses: Verifier[];
  try {
    logKey = parseVerifierKey(vkey);
    witnesses = (opts.witnesses ?? []).map((w) => witnessKey(w));
  } catch (err) {
    throw new MirrorError(`a key: ${(err as NoteError).message}`);
  }
  const noteBytes = await source('checkpoint');
  if (!noteBytes) throw new MirrorError('the log has no checkpoint');
  const note = new TextDecoder().decode(noteBytes);
  const c = openCheckpoint(note, logKey, witnesses);
  const held = dirFetch(dir);
  const heldNote = existsSync(join(dir, 'checkpoint')) ? readFileSync(join(dir, 'checkpoint'), 'utf8') : undefined;
  const previous = heldNote ? openCheckpoint(heldNote, logKey, []) : undefined;
  if (previous && c.size < previous.size)
    throw new MirrorError(`the log's checkpoint is of size ${c.size}, smaller than the ${previous.size} this mirror holds: a rollback`);
  const fromTile = previous ? Math.floor(previous.size / TILE_WIDTH) : 0;
  // The bundles fetched are written aside (.incoming) as they come, and moved into place once everything checked.
  const incoming = join(dir, '.incoming');
  rmSync(incoming, { recursive: true, force: true });
  const staged: string[] = [];
  const stage = (t: number, bundle: Uint8Array) => {
    const path = tilePath({ level: 'entries', index: t, width: Math.min(TILE_WIDTH, c.size - t * TILE_WIDTH) });
    writeAtomically(join(incoming, path), bundle);
    staged.push(path);
  };
  let read: Awaited<ReturnType<typeof readEntries>>;
  try {
    read = await readEntries(c.size, fromTile, source, previous ? held : undefined, stage);
  } catch (err) {
    rmSync(incoming, { recursive: true, force: true });
    throw err;
  }
  const { leaves, fetched, rewritten } = read;
  const checked = () => rmSync(incoming, { recursive: true, force: true });
  if (rewritten !== undefined) throw new MirrorError(`entry ${rewritten}: the log now serves another entry than the one this mirror holds (a rewrite)`);
  if (previous && !same(await rootOf(leaves.slice(0, previous.size), previous.size), previous.root))
    throw new MirrorError('the entries this mirror holds do not lead to the checkpoint it holds: run cli log verify');
  if (!same(await rootOf(leaves, c.size), c.root)) {
    // The log signed a root its entries do not lead to: find where the served history differs from the held one.
    const served = previous ? await readEntries(c.size, 0, source, held) : undefined;
    const at = served?.rewritten;
    throw new MirrorError(
      at !== undefined
        ? `entry ${at}: the log rewrote it (its checkpoint's root is over another entry than the one this mirror holds)`
        : `the entries do not lead to the checkpoint's root: the log signed a tree it does not serve (size ${c.size})`,
    );
  }
  const upper = await upperTiles(leaves, c.size, source);
  for (const path of staged) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    renameSync(join(incoming, path), join(dir, path));
  }
  checked();
  for (const [path, bytes] of upper) if (!previous || !existsSync(join(dir, path))) writeAtomically(join(dir, path), bytes);
  if (!pinned) writeAtomically(keyFile, `${vkey}\n`);
  writeAtomically(join(dir, 'checkpoint'), note);
  return { size: c.size, previous: previous?.size ?? 0, fetched };
}

/** Checks a mirror's directory offline: every entry against its tiles, the tiles against each other, the root against the checkpoint. */
export async function verifyMirror(dir: string, opts: { witnesses?: readonly string[] } = {}): Promise<{ size: number; origin: string }> {
  if (!existsSync(join(dir, 'key')) || !existsSync(join(dir, 'checkpoint'))) throw new MirrorError(`${dir} holds no mirror (no key or checkpoint)`);
  const logKey = parseVerifierKey(readFileSync(join(dir, 'key'), 'utf8').trim());
  const c = openCheckpoint(
    readFileSync(join(dir, 'checkpoint'), 'utf8'),
    logKey,
    (opts.witnesses ?? []).map((w) => parseVerifierKey(w)),
  );
  const local = dirFetch(dir);
  const { leaves } = await readEntries(c.size, 0, local, undefined);
  await upperTiles(leaves, c.size, local);
  if (!same(await rootOf(leaves, c.size), c.root)) throw new MirrorError("the mirror's entries do not lead to its checkpoint's root");
  return { size: c.size, origin: c.origin };
}

/** Reads every entry of a mirror (for `cli audit verify --log`): index and line. */
export function* mirrorEntries(dir: string): Generator<{ index: number; line: string }> {
  const logKey = parseVerifierKey(readFileSync(join(dir, 'key'), 'utf8').trim());
  const c = openCheckpoint(readFileSync(join(dir, 'checkpoint'), 'utf8'), logKey, []);
  const text = new TextDecoder();
  for (let t = 0; t * TILE_WIDTH < c.size; t++) {
    const width = Math.min(TILE_WIDTH, c.size - t * TILE_WIDTH);
    const entries = decodeBundle(new Uint8Array(readFileSync(join(dir, tilePath({ level: 'entries', index: t, width })))));
    for (let i = 0; i < entries.length; i++) yield { index: t * TILE_WIDTH + i, line: text.decode(entries[i]) };
  }
}

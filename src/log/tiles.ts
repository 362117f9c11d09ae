// tlog-tiles: where the log's hashes and entries are published, and in what bytes.
//   tile/<L>/<N>[.p/<W>]        level L's hashes 256N.. (W of them in a partial tile), 32 bytes each
//   tile/entries/<N>[.p/<W>]    the entries of level 0's tile N, each as a big-endian uint16
//                               length and its bytes
// N is written in groups of three digits, all but the last prefixed with x (1234067 is
// x001/x234/067); W, 1 to 255, only for a partial tile. A tile of a given path never changes:
// a partial tile is another path than the full one it grows into.
import { TILE_WIDTH } from './tree.js';

export interface TileRef {
  /** A hash level (0 the leaves), or 'entries' for an entries bundle. */
  level: number | 'entries';
  index: number;
  /** How many hashes or entries: TILE_WIDTH for a full tile. */
  width: number;
}

/** The largest entry a bundle can hold (its length is a uint16); the log's entries are far smaller. */
export const MAX_ENTRY_BYTES = 65_535;

function encodeIndex(n: number): string {
  let rest = n;
  let path = String(rest % 1000).padStart(3, '0');
  rest = Math.floor(rest / 1000);
  while (rest > 0) {
    path = `x${String(rest % 1000).padStart(3, '0')}/${path}`;
    rest = Math.floor(rest / 1000);
  }
  return path;
}

/** The tile's path under the log's prefix (tile/...). */
export function tilePath(t: TileRef): string {
  const base = `tile/${t.level}/${encodeIndex(t.index)}`;
  return t.width === TILE_WIDTH ? base : `${base}.p/${t.width}`;
}

/** The tile a path names, or undefined when it names none (any form but the canonical one included). */
export function parseTilePath(path: string): TileRef | undefined {
  const m = /^tile\/(entries|0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*)([0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(path);
  if (!m) return undefined;
  const [, level, groups, last, width] = m as unknown as [string, string, string, string, string | undefined];
  if (level !== 'entries' && Number(level) > 63) return undefined;
  const digits = [
    ...groups
      .split('/')
      .filter(Boolean)
      .map((g) => g.slice(1)),
    last,
  ];
  if (digits.length > 6) return undefined;
  const index = digits.reduce((n, d) => n * 1000 + Number(d), 0);
  const w = width === undefined ? TILE_WIDTH : Number(width);
  if (w < 1 || w >= TILE_WIDTH + (width === undefined ? 1 : 0)) return undefined;
  const ref: TileRef = { level: level === 'entries' ? 'entries' : Number(level), index, width: w };
  // Canonical only: 0 written as 000, no leading x000 group.
  return tilePath(ref) === path ? ref : undefined;
}

/** The entries bundle of `entries`: each as its uint16 big-endian length and its bytes. */
export function encodeBundle(entries: readonly Uint8Array[]): Uint8Array {
  const size = entries.reduce((n, e) => n + 2 + e.length, 0);
  const out = new Uint8Array(size);
  let at = 0;
  for (const e of entries) {
    if (e.length > MAX_ENTRY_BYTES) throw new Error('a log entry is at most 65535 bytes');
    out[at] = e.length >> 8;
    out[at + 1] = e.length & 0xff;
    out.set(e, at + 2);
    at += 2 + e.length;
  }
  return out;
}

/** The entries of a bundle; throws when its bytes do not divide into whole entries. */
export function decodeBundle(bundle: Uint8Array): Uint8Array[] {
  const entries: Uint8Array[] = [];
  let at = 0;
  while (at < bundle.length) {
    if (at + 2 > bundle.length) throw new Error('an entries bundle ends inside a length');
    const length = ((bundle[at] as number) << 8) | (bundle[at + 1] as number);
    if (at + 2 + length > bundle.length) throw new Error('an entries bundle ends inside an entry');
    entries.push(bundle.subarray(at + 2, at + 2 + length));
    at += 2 + length;
  }
  return entries;
}

/** The hashes of a tile's bytes; throws unless they are whole 32-byte hashes. */
export function tileHashes(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length % 32 !== 0) throw new Error('a tile is a whole number of 32-byte hashes');
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += 32) out.push(bytes.subarray(i, i + 32));
  return out;
}

/** The tiles of level `level` a tree of `size` leaves has: its full ones, and its partial one if any (width 0: none). */
export function tilesAt(level: number, size: number): { full: number; partialWidth: number } {
  const hashes = Math.floor(size / TILE_WIDTH ** level);
  return { full: Math.floor(hashes / TILE_WIDTH), partialWidth: hashes % TILE_WIDTH };
}

// The transparency log's Merkle tree (RFC 6962 / RFC 9162 section 2.1, the hashing of the
// notarization batches, src/notarization/merkle.ts): a leaf is SHA-256(0x00 || entry), a node
// SHA-256(0x01 || left || right), the tree of n > 1 entries split at the largest power of two
// below n, the empty tree SHA-256("").
//
// Proofs are built from the hashes the log stores (tlog-tiles): level 0 holds every leaf hash,
// level L > 0 the root of each full subtree of 256^L leaves (a full tile of the level below).
// Any subtree's hash is folded from the stored level under it, at most 255 hashes away, so an
// inclusion or consistency proof reads a few hundred hashes whatever the log's size.
//
// The checks (verifyInclusion, verifyConsistency) are RFC 9162's algorithms, in whole numbers
// up to 2^53 (never 32-bit bit operations). Runs in the browser too (the /verify page).
import { bytesToHex, sha256 } from '../shared/sha256.js';

export const TILE_HEIGHT = 8;
export const TILE_WIDTH = 256;

const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);

export const leafHashOf = (entry: Uint8Array): Uint8Array => sha256(LEAF, entry);
export const nodeHashOf = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(NODE, left, right);
/** The root of the empty tree. */
export const EMPTY_ROOT: Uint8Array = sha256();

export class ProofError extends Error {}

/** The largest power of two strictly below n (n > 1). */
function maxPow2Below(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

const odd = (n: number) => n % 2 === 1;
const isPowerOfTwo = (n: number) => {
  let k = 1;
  while (k < n) k *= 2;
  return k === n;
};
const half = (n: number) => Math.floor(n / 2);

/** Reads stored hashes: level `level`'s hashes `from` (inclusive) to `to` (exclusive), each 32 bytes. */
export type HashReader = (level: number, from: number, to: number) => Promise<Uint8Array[]>;

/** Folds 2^k hashes of one level into the root of their subtree. */
function fold(hashes: Uint8Array[]): Uint8Array {
  let row = hashes;
  while (row.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < row.length; i += 2) next.push(nodeHashOf(row[i] as Uint8Array, row[i + 1] as Uint8Array));
    row = next;
  }
  return row[0] as Uint8Array;
}

/** Hashes of a tree that reads its stored levels through `read`. */
export function treeHashes(read: HashReader) {
  /** The hash of the full subtree of 2^height leaves that starts at leaf index * 2^height. */
  async function subtree(height: number, index: number): Promise<Uint8Array> {
    const level = Math.floor(height / TILE_HEIGHT);
    const width = 2 ** (height - level * TILE_HEIGHT);
    const hashes = await read(level, index * width, (index + 1) * width);
    if (hashes.length !== width) throw new Error(`stored hashes missing at level ${level} from ${index * width}`);
    return fold(hashes);
  }

  /**
   * MTH(D[from:to]) for the ranges RFC 6962's recursion meets (`from` aligned to the largest
   * power of two the range holds): its aligned full subtrees, largest first, folded right to left.
   */
  async function range(from: number, to: number): Promise<Uint8Array> {
    if (to <= from) throw new Error('an empty range has no subtree hash');
    const parts: Uint8Array[] = [];
    let at = from;
    while (at < to) {
      let h = 0;
      while (at % 2 ** (h + 1) === 0 && at + 2 ** (h + 1) <= to) h++;
      parts.push(await subtree(h, at / 2 ** h));
      at += 2 ** h;
    }
    let root = parts.pop() as Uint8Array;
    while (parts.length) root = nodeHashOf(parts.pop() as Uint8Array, root);
    return root;
  }

  return {
    subtree,
    /** The root of the tree of the first `size` leaves. */
    async root(size: number): Promise<Uint8Array> {
      return size === 0 ? EMPTY_ROOT : range(0, size);
    },

    /** The inclusion proof of leaf `index` in the tree of `size` leaves (RFC 9162 2.1.3.1), leaf first. */
    async inclusion(index: number, size: number): Promise<Uint8Array[]> {
      if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new ProofError(`no leaf ${index} in a tree of ${size}`);
      const proof: Uint8Array[] = [];
      let [lo, hi] = [0, size];
      while (hi - lo > 1) {
        const k = maxPow2Below(hi - lo);
        if (index < lo + k) {
          proof.push(await range(lo + k, hi));
          hi = lo + k;
        } else {
          proof.push(await range(lo, lo + k));
          lo += k;
        }
      }
      return proof.reverse();
    },

    /** The consistency proof from the tree of `oldSize` leaves to the tree of `newSize` (RFC 9162 2.1.4.1), bottom first. */
    async consistency(oldSize: number, newSize: number): Promise<Uint8Array[]> {
      if (!Number.isSafeInteger(oldSize) || oldSize < 0 || oldSize > newSize) throw new ProofError(`no consistency proof from ${oldSize} to ${newSize}`);
      if (oldSize === 0 || oldSize === newSize) return [];
      const proof: Uint8Array[] = [];
      let [m, lo, hi, whole] = [oldSize, 0, newSize, true];
      for (;;) {
        const n = hi - lo;
        if (m === n) {
          if (!whole) proof.push(await range(lo, hi));
          break;
        }
        const k = maxPow2Below(n);
        if (m <= k) {
          proof.push(await range(lo + k, hi));
          hi = lo + k;
        } else {
          proof.push(await range(lo, lo + k));
          lo += k;
          m -= k;
          whole = false;
        }
      }
      return proof.reverse();
    },
  };
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

/** Throws a ProofError unless `proof` shows the leaf `leafHash` at `index` in the tree of `size` whose root is `root` (RFC 9162 2.1.3.2). */
export function verifyInclusion(index: number, size: number, leafHash: Uint8Array, proof: readonly Uint8Array[], root: Uint8Array): void {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) throw new ProofError(`no leaf ${index} in a tree of ${size}`);
  let [fn, sn] = [index, size - 1];
  let r = leafHash;
  for (const p of proof) {
    if (sn === 0) throw new ProofError('the inclusion proof is too long');
    if (odd(fn) || fn === sn) {
      r = nodeHashOf(p, r);
      if (!odd(fn)) {
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHashOf(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw new ProofError('the inclusion proof is too short');
  if (!same(r, root)) throw new ProofError(`the inclusion proof leads to ${bytesToHex(r)}, not to the root`);
}

/** Throws a ProofError unless `proof` shows the tree of `oldSize` (root `oldRoot`) to be the start of the tree of `newSize` (root `newRoot`) (RFC 9162 2.1.4.2). */
export function verifyConsistency(oldSize: number, newSize: number, proof: readonly Uint8Array[], oldRoot: Uint8Array, newRoot: Uint8Array): void {
  if (!Number.isSafeInteger(oldSize) || !Number.isSafeInteger(newSize) || oldSize < 0 || oldSize > newSize)
    throw new ProofError(`no consistency between ${oldSize} and ${newSize}`);
  if (oldSize === newSize) {
    if (proof.length) throw new ProofError('a consistency proof between equal sizes is empty');
    if (!same(oldRoot, newRoot)) throw new ProofError('two different trees of the same size');
    return;
  }
  if (oldSize === 0) {
    if (proof.length) throw new ProofError('a consistency proof from the empty tree is empty');
    return;
  }
  const path = isPowerOfTwo(oldSize) ? [oldRoot, ...proof] : [...proof];
  if (!path.length) throw new ProofError('the consistency proof is empty');
  let [fn, sn] = [oldSize - 1, newSize - 1];
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0] as Uint8Array;
  let sr = path[0] as Uint8Array;
  for (const c of path.slice(1)) {
    if (sn === 0) throw new ProofError('the consistency proof is too long');
    if (odd(fn) || fn === sn) {
      fr = nodeHashOf(c, fr);
      sr = nodeHashOf(c, sr);
      if (!odd(fn)) {
        while (!odd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      sr = nodeHashOf(sr, c);
    }
    fn = half(fn);
    sn = half(sn);
  }
  if (sn !== 0) throw new ProofError('the consistency proof is too short');
  if (!same(fr, oldRoot)) throw new ProofError('the consistency proof does not lead to the old root: the log was rewritten');
  if (!same(sr, newRoot)) throw new ProofError('the consistency proof does not lead to the new root');
}

/** A reader over hashes held in memory: level 0 the leaf hashes, the levels above computed from them (tests, mirrors). */
export function memoryLevels(leafHashes: readonly Uint8Array[]): Uint8Array[][] {
  const levels: Uint8Array[][] = [[...leafHashes]];
  for (;;) {
    const below = levels[levels.length - 1] as Uint8Array[];
    const full = Math.floor(below.length / TILE_WIDTH);
    if (!full) break;
    const level: Uint8Array[] = [];
    for (let t = 0; t < full; t++) level.push(fold(below.slice(t * TILE_WIDTH, (t + 1) * TILE_WIDTH)));
    levels.push(level);
  }
  return levels;
}

/** The root of TILE_WIDTH hashes of one level: the hash stored for them one level up. */
export const tileRoot = (hashes: Uint8Array[]): Uint8Array => fold(hashes);

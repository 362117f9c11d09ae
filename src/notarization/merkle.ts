// Merkle trees over record digests, shaped and hashed as RFC 6962 (Certificate Transparency,
// section 2.1) does, so that a proof is checked with a dozen lines in any language:
//   leaf  = SHA-256(0x00 || digest)          (digest: the record's 32-byte SHA-256)
//   node  = SHA-256(0x01 || left || right)
//   a tree of n > 1 leaves splits at k, the largest power of two below n: left = the first k.
// The prefixes keep a leaf from passing for a node (second preimages); the split never
// duplicates a leaf, so no two different lists of digests share a root (unlike Bitcoin's
// odd-leaf duplication).
// Runs in the browser too (the verification page), hence Uint8Array and src/shared/sha256.ts.
import { bytesToHex, hexToBytes, sha256 } from '../shared/sha256.js';

/** One step from a leaf to the root: the sibling's hash and which side it stands on. */
export interface PathStep {
  side: 'left' | 'right';
  hash: string;
}

const LEAF = Uint8Array.of(0);
const NODE = Uint8Array.of(1);

const hex32 = (value: string, what: string): Uint8Array => {
  if (!/^[0-9a-f]{64}$/.test(value)) throw new Error(`${what} must be 64 lowercase hex digits`);
  return hexToBytes(value);
};

export const leafHash = (digest: string): Uint8Array => sha256(LEAF, hex32(digest, 'a digest'));
export const nodeHash = (left: Uint8Array, right: Uint8Array): Uint8Array => sha256(NODE, left, right);

/** The largest power of two strictly below n (n > 1). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The root of the tree over `digests` (in order) and each leaf's path to it, leaf first.
 * Iterative over the same split as RFC 6962's recursive definition.
 */
export function buildTree(digests: readonly string[]): { root: string; paths: PathStep[][] } {
  if (!digests.length) throw new Error('a Merkle tree needs at least one digest');
  const paths: PathStep[][] = digests.map(() => []);
  const leaves = digests.map((d) => leafHash(d));
  const hashOf = (from: number, to: number): Uint8Array => {
    if (to - from === 1) return leaves[from] as Uint8Array;
    const mid = from + split(to - from);
    const left = hashOf(from, mid);
    const right = hashOf(mid, to);
    const l = bytesToHex(left);
    const r = bytesToHex(right);
    for (let i = from; i < mid; i++) paths[i]?.push({ side: 'right', hash: r });
    for (let i = mid; i < to; i++) paths[i]?.push({ side: 'left', hash: l });
    return nodeHash(left, right);
  };
  return { root: bytesToHex(hashOf(0, digests.length)), paths };
}

/** The root that `digest` and its path lead to. */
export function rootFromPath(digest: string, path: readonly PathStep[]): string {
  let h = leafHash(digest);
  for (const step of path) {
    const sibling = hex32(step.hash, 'a path hash');
    h = step.side === 'left' ? nodeHash(sibling, h) : nodeHash(h, sibling);
  }
  return bytesToHex(h);
}

/**
 * The sides of the path of leaf `index` in a tree of `size` leaves, leaf first: the shape every
 * honest path has (RFC 9162 2.1.3), so that a path cannot claim another position or tree size.
 */
export function pathSides(index: number, size: number): Array<PathStep['side']> {
  if (!Number.isInteger(index) || !Number.isInteger(size) || index < 0 || index >= size) throw new Error(`no leaf ${index} in a tree of ${size}`);
  const sides: Array<PathStep['side']> = [];
  let [i, n] = [index, size];
  while (n > 1) {
    const k = split(n);
    if (i < k) {
      sides.push('right');
      n = k;
    } else {
      sides.push('left');
      i -= k;
      n -= k;
    }
  }
  return sides.reverse();
}

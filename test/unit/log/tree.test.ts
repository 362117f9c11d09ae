// The log's tree (src/log/tree.ts) against RFC 6962's recursive definition, computed here the
// slow way: roots, inclusion and consistency proofs for every index and size up to a few
// hundred leaves (across a full tile and the level above), each checked by RFC 9162's
// algorithms, and refused when any hash, index or size is changed.
import { expect } from 'chai';
import { EMPTY_ROOT, leafHashOf, memoryLevels, nodeHashOf, ProofError, treeHashes, verifyConsistency, verifyInclusion } from '../../../src/log/tree.js';

const leaves = Array.from({ length: 600 }, (_, i) => leafHashOf(new TextEncoder().encode(`entry ${i}`)));

/** MTH(D[from:to]) by RFC 6962's definition. */
function mth(from: number, to: number): Uint8Array {
  if (to - from === 1) return leaves[from] as Uint8Array;
  let k = 1;
  while (k * 2 < to - from) k *= 2;
  return nodeHashOf(mth(from, from + k), mth(from + k, to));
}

const reader = (size: number) => {
  const levels = memoryLevels(leaves.slice(0, size));
  return treeHashes((level, from, to) => Promise.resolve((levels[level] ?? []).slice(from, to)));
};

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const flip = (b: Uint8Array) => {
  const c = Uint8Array.from(b);
  c[0] = (c[0] as number) ^ 1;
  return c;
};

describe('the log tree (RFC 6962 / 9162)', () => {
  it('computes the root of every size as the recursive definition does, from the stored levels (the empty tree is SHA-256 of nothing)', async () => {
    expect(hex(await reader(0).root(0))).to.equal(hex(EMPTY_ROOT));
    expect(hex(EMPTY_ROOT)).to.equal('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    for (const size of [1, 2, 3, 7, 8, 255, 256, 257, 300, 511, 512, 513, 600])
      expect(hex(await reader(size).root(size)), `size ${size}`).to.equal(hex(mth(0, size)));
  });

  it('proves and checks the inclusion of every leaf, and refuses another leaf, index, size or root', async () => {
    for (const size of [1, 2, 5, 256, 257, 600]) {
      const tree = reader(size);
      const root = await tree.root(size);
      for (let i = 0; i < size; i += size > 20 ? 37 : 1) {
        const proof = await tree.inclusion(i, size);
        verifyInclusion(i, size, leaves[i] as Uint8Array, proof, root);
        expect(() => verifyInclusion(i, size, flip(leaves[i] as Uint8Array), proof, root)).to.throw(ProofError);
        expect(() => verifyInclusion(i, size, leaves[i] as Uint8Array, proof, flip(root))).to.throw(ProofError);
        if (size > 1) {
          expect(() => verifyInclusion((i + 1) % size, size, leaves[i] as Uint8Array, proof, root)).to.throw(ProofError);
          expect(() => verifyInclusion(i, size, leaves[i] as Uint8Array, proof.slice(1), root)).to.throw(ProofError);
          expect(() => verifyInclusion(i, size, leaves[i] as Uint8Array, [...proof, root], root)).to.throw(ProofError);
        }
      }
    }
    expect(() => verifyInclusion(5, 5, leaves[0] as Uint8Array, [], mth(0, 5))).to.throw(ProofError);
  });

  it('proves and checks consistency between sizes, and refuses a rewritten old tree (a fork)', async () => {
    const pairs = [
      [1, 2],
      [3, 7],
      [4, 8],
      [7, 8],
      [6, 600],
      [256, 257],
      [255, 512],
      [300, 600],
      [512, 513],
      [600, 600],
      [0, 10],
    ] as const;
    for (const [m, n] of pairs) {
      const tree = reader(n);
      const proof = await tree.consistency(m, n);
      const oldRoot = m ? mth(0, m) : EMPTY_ROOT;
      verifyConsistency(m, n, proof, oldRoot, mth(0, n));
      if (m > 0 && m < n) {
        expect(() => verifyConsistency(m, n, proof, flip(oldRoot), mth(0, n)), `${m}->${n}, old root changed`).to.throw(ProofError);
        expect(() => verifyConsistency(m, n, proof, oldRoot, flip(mth(0, n))), `${m}->${n}, new root changed`).to.throw(ProofError);
        expect(() =>
          verifyConsistency(
            m,
            n,
            proof.map((h, i) => (i === 0 ? flip(h) : h)),
            oldRoot,
            mth(0, n),
          ),
        ).to.throw(ProofError);
      }
    }
    expect(() => verifyConsistency(600, 600, [], mth(0, 600), mth(0, 599))).to.throw(ProofError, /same size/);
    expect(() => verifyConsistency(10, 5, [], mth(0, 10), mth(0, 5))).to.throw(ProofError);
  });
});

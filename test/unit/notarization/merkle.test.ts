import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { buildTree, leafHash, nodeHash, pathSides, rootFromPath } from '../../../src/notarization/merkle.js';

const digest = (i: number) => createHash('sha256').update(`record ${i}`).digest('hex');
const digests = (n: number) => Array.from({ length: n }, (_, i) => digest(i));
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('Merkle trees (RFC 6962 shape)', () => {
  it('gives every leaf of trees of 1 to 33 leaves a path that leads to the root', () => {
    for (let n = 1; n <= 33; n++) {
      const ds = digests(n);
      const { root, paths } = buildTree(ds);
      ds.forEach((d, i) => expect(rootFromPath(d, paths[i] ?? []), `leaf ${i} of ${n}`).to.equal(root));
      for (const p of paths) expect(p.length).to.be.at.most(Math.ceil(Math.log2(n)));
    }
  });

  it('hashes leaves and nodes with distinct prefixes and splits at the largest power of two below n', () => {
    const [a, b, c] = digests(3) as [string, string, string];
    expect(buildTree([a]).root).to.equal(hex(leafHash(a)));
    expect(hex(leafHash(a))).to.equal(
      hex(
        createHash('sha256')
          .update(Buffer.concat([Buffer.from([0]), Buffer.from(a, 'hex')]))
          .digest(),
      ),
    );
    // n = 3: k = 2, so root = node(node(a, b), c).
    expect(buildTree([a, b, c]).root).to.equal(hex(nodeHash(nodeHash(leafHash(a), leafHash(b)), leafHash(c))));
  });

  it('never gives two different lists of digests the same root (no odd-leaf duplication)', () => {
    const ds = digests(3);
    const roots = new Set([ds, [...ds, ds[2] as string], [...ds].reverse(), ds.slice(0, 2)].map((list) => buildTree(list).root));
    expect(roots.size).to.equal(4);
  });

  it('leads elsewhere when the digest, a sibling or a side is changed', () => {
    const ds = digests(10);
    const { root, paths } = buildTree(ds);
    const path = paths[6] ?? [];
    expect(rootFromPath(digest(99), path)).to.not.equal(root);
    const flipped = path.map((s, i) => (i === 1 ? { ...s, side: s.side === 'left' ? ('right' as const) : ('left' as const) } : s));
    expect(rootFromPath(ds[6] as string, flipped)).to.not.equal(root);
    const changed = path.map((s, i) => (i === 0 ? { ...s, hash: digest(98) } : s));
    expect(rootFromPath(ds[6] as string, changed)).to.not.equal(root);
  });

  it('refuses malformed digests and path hashes', () => {
    expect(() => buildTree([])).to.throw('at least one');
    expect(() => buildTree(['ABC'])).to.throw('64 lowercase hex');
    expect(() => rootFromPath(digest(1), [{ side: 'left', hash: 'zz' }])).to.throw('64 lowercase hex');
  });
});

describe('Merkle path shapes', () => {
  it('pathSides gives exactly the sides of every honest path, for every leaf of trees of 1 to 33', () => {
    for (let n = 1; n <= 33; n++) {
      const { paths } = buildTree(digests(n));
      paths.forEach((p, i) => expect(pathSides(i, n), `leaf ${i} of ${n}`).to.deep.equal(p.map((s) => s.side)));
    }
  });

  it('has no path for a leaf outside the tree', () => {
    expect(() => pathSides(3, 3)).to.throw('no leaf 3');
    expect(() => pathSides(-1, 3)).to.throw('no leaf -1');
    expect(() => pathSides(0, 0)).to.throw('no leaf 0');
  });
});

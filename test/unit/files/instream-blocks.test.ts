import { expect } from 'chai';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { blocks } from '../../../src/files/antivirus.js';

/** The writes the next stream gets when piped, as clamscan's passthrough gets them. */
async function regrouped(chunks: Buffer[], size: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      out.push(chunk);
      cb();
    },
  });
  await pipeline(Readable.from(chunks), blocks(size), sink);
  return out;
}

describe('INSTREAM blocks (antivirus)', () => {
  it('regroups small chunks into blocks of the size, the last one shorter, every byte in order', async () => {
    const chunks = Array.from({ length: 37 }, (_, i) => Buffer.alloc(1000 + i, i));
    const out = await regrouped(chunks, 4096);
    expect(out.slice(0, -1).every((b) => b.length === 4096)).to.equal(true);
    expect(out.at(-1)?.length ?? 0).to.be.within(1, 4096);
    expect(Buffer.concat(out).equals(Buffer.concat(chunks))).to.equal(true);
  });

  it('splits a chunk larger than a block, and passes an empty stream as nothing', async () => {
    const big = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));
    const out = await regrouped([big], 4096);
    expect(out.map((b) => b.length)).to.deep.equal([4096, 4096, 1808]);
    expect(Buffer.concat(out).equals(big)).to.equal(true);
    expect(await regrouped([], 4096)).to.deep.equal([]);
  });
});

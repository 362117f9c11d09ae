// tlog-tiles paths and bundles (src/log/tiles.ts), and the log's entries (src/log/entries.ts).
import { expect } from 'chai';
import { EntryError, formatEntry, parseEntry } from '../../../src/log/entries.js';
import { decodeBundle, encodeBundle, parseTilePath, tilePath, tilesAt } from '../../../src/log/tiles.js';

describe('tlog-tiles paths, bundles and the log entries', () => {
  it("writes the specification's paths and reads back only those", () => {
    expect(tilePath({ level: 0, index: 1234067, width: 256 })).to.equal('tile/0/x001/x234/067');
    expect(tilePath({ level: 0, index: 5, width: 256 })).to.equal('tile/0/005');
    expect(tilePath({ level: 1, index: 1000, width: 17 })).to.equal('tile/1/x001/000.p/17');
    expect(tilePath({ level: 'entries', index: 273, width: 112 })).to.equal('tile/entries/273.p/112');
    expect(parseTilePath('tile/0/x001/x234/067')).to.deep.equal({ level: 0, index: 1234067, width: 256 });
    expect(parseTilePath('tile/entries/273.p/112')).to.deep.equal({ level: 'entries', index: 273, width: 112 });
    for (const bad of [
      'tile/0/5',
      'tile/0/x000/005',
      'tile/00/005',
      'tile/64/000',
      'tile/0/000.p/0',
      'tile/0/000.p/256',
      'tile/0/000.p/07',
      'tile/data/000',
      'tile/0/001/002',
    ])
      expect(parseTilePath(bad), bad).to.equal(undefined);
    // The specification's example: a tree of 70,000 leaves.
    expect(tilesAt(0, 70_000)).to.deep.equal({ full: 273, partialWidth: 112 });
    expect(tilesAt(1, 70_000)).to.deep.equal({ full: 1, partialWidth: 17 });
    expect(tilesAt(2, 70_000)).to.deep.equal({ full: 0, partialWidth: 1 });
  });

  it('bundles entries with their uint16 lengths, and refuses a bundle cut inside one', () => {
    const entries = ['a', '', 'x'.repeat(300)].map((s) => new TextEncoder().encode(s));
    const bundle = encodeBundle(entries);
    expect([...bundle.subarray(0, 3)]).to.deep.equal([0, 1, 97]);
    expect(decodeBundle(bundle).map((e) => new TextDecoder().decode(e))).to.deep.equal(['a', '', 'x'.repeat(300)]);
    expect(() => decodeBundle(bundle.subarray(0, bundle.length - 1))).to.throw(/inside an entry/);
    expect(() => encodeBundle([new Uint8Array(65_536)])).to.throw();
  });

  it('writes and reads the log entries, refusing anything else', () => {
    const digest = 'ab'.repeat(32);
    for (const line of [
      `record ${digest}`,
      `amendment ${digest}`,
      `audit 2f8b6f0e-1c53-4e0e-9a4f-0a4ff1c0e5a1 42 ${digest}`,
      'audit system 1 ' + digest,
      `key-added ${'k'.repeat(43)} ${'x'.repeat(43)}`,
      'key-retired kid1 2026-11-27T10:00:00.000Z',
      'key-retired kid1 2026-11-27T10:00:00.000Z compromised-since 2026-11-01T00:00:00.000Z',
    ])
      expect(formatEntry(parseEntry(line))).to.equal(line);
    for (const bad of [`record ${digest.toUpperCase()}`, `record ${digest} x`, 'audit a 0 ' + digest, 'key-retired kid1 yesterday', '', 'hello'])
      expect(() => parseEntry(bad), bad).to.throw(EntryError);
  });
});

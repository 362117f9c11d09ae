import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { SHA256_IMPLEMENTATION, bytesToHex, sha256, sha256Hex, sha256Portable } from '../../../src/shared/sha256.js';

describe('SHA-256 shared by Node and the verification page', () => {
  it('uses node:crypto in Node', () => {
    expect(SHA256_IMPLEMENTATION).to.equal('node:crypto');
  });

  it("gives the bytes of the page's JavaScript implementation, for strings (UTF-8, lone surrogates too) and bytes in parts", () => {
    const strings = ['', 'abc', 'perché €', '𝄞 guarantee', 'lone \ud800 surrogate', 'x'.repeat(10_000)];
    for (const s of strings) {
      expect(sha256Hex(s), JSON.stringify(s)).to.equal(bytesToHex(sha256Portable(s)));
    }
    for (let i = 0; i < 50; i++) {
      const parts = [randomBytes(i), `part ${i} ü`, randomBytes(64 * i)];
      expect(bytesToHex(sha256(...parts))).to.equal(bytesToHex(sha256Portable(...parts)));
    }
    // And the standard's value.
    expect(sha256Hex('abc')).to.equal(createHash('sha256').update('abc').digest('hex'));
  });

  it('returns a plain Uint8Array of 32 bytes', () => {
    const h = sha256('abc');
    expect(h).to.be.instanceOf(Uint8Array);
    expect(Buffer.isBuffer(h)).to.equal(false);
    expect(h.length).to.equal(32);
  });
});

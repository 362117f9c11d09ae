import { expect } from 'chai';
import { octets, parseDer, type Node } from '../../../src/files/p7m/p7m.asn1.js';
import { readEnvelope } from '../../../src/files/p7m/p7m.envelope.js';
import { verifyP7m } from '../../../src/files/p7m/p7m.verifier.js';
import { p7mFixtures, type P7mFixtures } from '../../support/p7m-fixtures.js';

/** The eContent as forge's full parse of the envelope gives it (the reference). */
function forgeContent(der: Buffer): Buffer {
  const child = (n: Node, i: number): Node => (n.value as Node[])[i]!;
  const encap = child(child(child(parseDer(der), 1), 0), 2);
  return octets(child(child(encap, 1), 0), 'eContent');
}

describe('p7m envelope content ranges', function () {
  this.timeout(60_000);
  let fx: P7mFixtures;

  before(() => {
    fx = p7mFixtures();
  });

  it('hashes a DER envelope content in place: one part, a view of the input', () => {
    const content = readEnvelope(fx.der.rsa, { remaining: 10_000 }).content!;
    expect(content.parts).to.have.length(1);
    expect(content.parts[0]!.buffer).to.equal(fx.der.rsa.buffer);
    expect(content.whole().equals(forgeContent(fx.der.rsa))).to.equal(true);
  });

  it('reads the chunks of a BER constructed OCTET STRING (openssl -stream) in order', () => {
    const content = readEnvelope(fx.der.stream, { remaining: 10_000 }).content!;
    expect(content.parts.length).to.be.greaterThan(1);
    expect(content.whole().equals(forgeContent(fx.der.stream))).to.equal(true);
  });

  it('verifies from a plain Uint8Array, not only a Buffer', () => {
    for (const der of [fx.der.rsa, fx.der.stream, fx.der.nested]) {
      expect(verifyP7m(new Uint8Array(der)).outcome).to.equal('signed');
    }
  });

  it('refuses a chunk that is not an OCTET STRING with the same message as before', () => {
    const stream = Buffer.from(fx.der.stream);
    const at = stream.indexOf(Buffer.from([0x24, 0x80, 0x04]));
    expect(at).to.be.greaterThan(0);
    stream[at + 2] = 0x0c; // the first chunk becomes a UTF8String
    expect(verifyP7m(stream)).to.include({ outcome: 'not-signed', reason: 'malformed envelope: eContent is not an OCTET STRING' });
  });

  it('gives the same verdict when the signer certificates come from the cache', () => {
    for (const der of [fx.der.rsa, fx.der.ec, fx.der.expired]) {
      const now = new Date();
      expect(verifyP7m(der, { now })).to.deep.equal(verifyP7m(der, { now }));
    }
  });
});

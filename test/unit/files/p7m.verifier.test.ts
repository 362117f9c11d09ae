import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { constants, createPrivateKey, sign as nodeSign, type X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import verifyTask from '../../../src/files/p7m/p7m.task.js';
import { loadTrustAnchors, verifyP7m, type SignatureVerdict, type SignerVerdict } from '../../../src/files/p7m/p7m.verifier.js';
import { readTimestamped } from '../../../src/files/p7m/p7m.timestamped.js';
import { pdfDate, pdfString } from '../../../src/files/p7m/pades.js';
import { appendUpdate, nextNumber, signPdf } from '../../support/pdf-signing.js';
import {
  OIDS,
  algorithm,
  attribute,
  certificateNode,
  children,
  counterSignature,
  encode,
  integer,
  parse,
  rsaWithoutNull,
  octetString,
  oidNode,
  sequence,
  signatureOf,
  signedData,
  signerInfo,
  tagged,
} from '../../support/cms-rewrite.js';
import { flipByte, p7mFixtures, type P7mFixtures, type Quirks } from '../../support/p7m-fixtures.js';

describe('p7m verifier', function () {
  this.timeout(60_000);
  let fx: P7mFixtures;
  let root: X509Certificate[];

  before(() => {
    fx = p7mFixtures();
    root = loadTrustAnchors(fx.rootPem);
  });

  const signer = (verdict: SignatureVerdict, i = 0): SignerVerdict => {
    const s = verdict.signers[i];
    expect(s, `signer ${i + 1}`).to.not.equal(undefined);
    return s!;
  };

  describe('encodings', () => {
    it('accepts DER and reports a passing signer with its identity', () => {
      const v = verifyP7m(fx.der.rsa);
      expect(v).to.include({ outcome: 'signed', encoding: 'der', levels: 1, chain: 'not-checked' });
      expect(v.reason).to.equal(undefined);
      expect(signer(v)).to.include({
        level: 1,
        subject: 'O=Test, CN=RSA Signer',
        issuer: 'O=Test, CN=Test Intermediate',
        serialNumber: '1001',
        digestAlgorithm: 'sha256',
        signatureAlgorithm: 'rsa',
        digestMatches: true,
        signatureValid: true,
        certificateValid: true,
        chain: 'not-checked',
      });
      expect(signer(v).problems).to.deep.equal([]);
      expect(Date.parse(signer(v).signingTime!)).to.be.closeTo(Date.now(), 10 * 60_000);
      expect(JSON.parse(JSON.stringify(v))).to.deep.equal(v);
    });

    it('accepts PEM whatever the label: CMS, PKCS7, SIGNED MESSAGE', () => {
      for (const label of ['CMS', 'PKCS7', 'SIGNED MESSAGE']) {
        const pem = fx.pem.replace(/-----(BEGIN|END) CMS-----/g, `-----$1 ${label}-----`);
        const v = verifyP7m(Buffer.from(pem));
        expect(v, label).to.include({ outcome: 'signed', encoding: 'pem' });
      }
    });

    it('accepts bare Base64 without armour, with CRLF line ends', () => {
      const body = fx.pem
        .split('\n')
        .filter((l) => l && !l.startsWith('-----'))
        .join('\r\n');
      const v = verifyP7m(Buffer.from(`${body}\r\n`));
      expect(v).to.include({ outcome: 'signed', encoding: 'base64' });
    });

    it('refuses Base64 with junk that a lenient decoder would skip', () => {
      const body = fx.der.rsa.toString('base64');
      const v = verifyP7m(Buffer.from(`${body.slice(0, 100)}*${body.slice(100)}`));
      expect(v).to.include({ outcome: 'not-signed', reason: 'not a CMS SignedData envelope', levels: 0 });
      expect(v.encoding).to.equal(undefined);
    });

    it('tolerates a trailing CRLF after DER but not other trailing bytes', () => {
      expect(verifyP7m(Buffer.concat([fx.der.rsa, Buffer.from('\r\n')])).outcome).to.equal('signed');
      const v = verifyP7m(Buffer.concat([fx.der.rsa, Buffer.from('x')]));
      expect(v).to.include({ outcome: 'not-signed', reason: 'malformed envelope: trailing bytes after the envelope' });
    });

    it('reads BER with indefinite lengths and a chunked OCTET STRING (openssl -stream)', () => {
      expect(fx.der.stream[1]).to.equal(0x80);
      const v = verifyP7m(fx.der.stream);
      expect(v.outcome).to.equal('signed');
      expect(signer(v)).to.include({ digestMatches: true, signatureValid: true });
    });

    it('says a document that is not an envelope is not signed, at level 0', () => {
      const v = verifyP7m(Buffer.from('a plain text document\n'));
      expect(v).to.deep.equal({ outcome: 'not-signed', reason: 'not a CMS SignedData envelope', levels: 0, chain: 'not-checked', signers: [] });
      // A PDF is searched for signatures.
      expect(verifyP7m(fx.doc)).to.deep.include({ outcome: 'not-signed', reason: 'the PDF has no signature', container: 'pdf', levels: 0, signers: [] });
      expect(verifyP7m(new Uint8Array(0)).reason).to.equal('not a CMS SignedData envelope');
    });

    it('refuses an input above maxBytes before reading it', () => {
      const v = verifyP7m(fx.der.rsa, { maxBytes: 1000 });
      expect(v).to.include({ outcome: 'not-signed', reason: 'envelope too large', levels: 0 });
    });
  });

  describe('algorithms', () => {
    it('verifies ECDSA P-256 signers, whose certificates forge cannot load', () => {
      const v = verifyP7m(fx.der.ec);
      expect(v.outcome).to.equal('signed');
      expect(signer(v)).to.include({ signatureAlgorithm: 'ecdsa', subject: 'O=Test, CN=EC Signer', signatureValid: true });
    });

    it('verifies RSASSA-PSS from an rsa-pss key, with the envelope salt length', () => {
      const v = verifyP7m(fx.der.pss);
      expect(v.outcome).to.equal('signed');
      expect(signer(v)).to.include({ signatureAlgorithm: 'rsa-pss', signatureValid: true });
    });

    it('verifies RSASSA-PSS whose MGF1 hash (sha512) differs from the message hash', () => {
      const v = verifyP7m(fx.der.pssMgf1Sha512);
      expect(v.outcome).to.equal('signed');
      expect(signer(v)).to.include({ signatureAlgorithm: 'rsa-pss', digestAlgorithm: 'sha256', signatureValid: true });
    });

    it('verifies EdDSA signers (RFC 8419): Ed25519 with SHA-512, Ed448 with SHAKE256 as either identifier, and Ed25519 over the content itself', () => {
      const ed = fx.eddsa();
      const expected = { ed25519: 'sha512', ed448: 'shake256', ed25519NoAttributes: 'sha512', ed448ShakeLen: 'shake256' } as const;
      for (const name of Object.keys(expected) as Array<keyof typeof expected>) {
        const v = verifyP7m(ed[name], { trustAnchors: root });
        expect(v.outcome, `${name}: ${v.reason}`).to.equal('signed');
        expect(signer(v), name).to.include({
          digestAlgorithm: expected[name],
          signatureAlgorithm: name.startsWith('ed25519') ? 'ed25519' : 'ed448',
          chain: 'trusted',
        });
        // A changed content byte fails either way (the digest, or the signature over the content).
        expect(verifyP7m(flipByte(ed[name], ed[name].indexOf(fx.marker) + 2)).outcome, name).to.equal('not-signed');
      }
      // An Ed25519 signature claimed as Ed448 (or the other way) is the wrong key type.
      const swapped = Buffer.from(ed.ed25519);
      const at = swapped.lastIndexOf(Buffer.from('06032b6570', 'hex'));
      swapped[at + 4] = 0x71;
      // And Ed448 takes SHAKE256 as its digest, not the SHA-512 this envelope names (RFC 8419 §3).
      expect(verifyP7m(swapped).signers[0]?.problems).to.deep.equal([
        'Ed448 requires SHAKE256 as the digest algorithm',
        "signature algorithm does not match the certificate's key type",
      ]);
    });

    it('rejects rsaEncryption over an rsa-pss key (Node would verify it as PSS; openssl cms rejects it)', () => {
      const v = verifyP7m(fx.der.pssKeyRsaEncryption);
      expect(v).to.include({ outcome: 'not-signed', reason: "signer 1: signature algorithm does not match the certificate's key type" });
      expect(signer(v)).to.include({ signatureAlgorithm: 'rsa', signatureValid: false, digestMatches: true });
    });

    it('refuses SHA-1 as a weak digest even though the signature verifies', () => {
      const v = verifyP7m(fx.der.sha1);
      expect(v).to.include({ outcome: 'not-signed', reason: 'signer 1: weak digest algorithm sha1' });
      expect(signer(v)).to.include({ digestAlgorithm: 'sha1', digestMatches: true, signatureValid: true });
    });
  });

  describe('signers and structure', () => {
    it('requires every signer to pass when there are two', () => {
      const v = verifyP7m(fx.der.twoSigners);
      expect(v.outcome).to.equal('signed');
      expect(v.signers.map((s) => s.subject)).to.have.members(['O=Test, CN=RSA Signer', 'O=Test, CN=EC Signer']);
      expect(v.signers.every((s) => s.signatureValid && s.problems.length === 0)).to.equal(true);
    });

    it('finds the signer certificate by subjectKeyIdentifier (-keyid)', () => {
      const v = verifyP7m(fx.der.keyid);
      expect(v.outcome).to.equal('signed');
      expect(signer(v)).to.include({ subject: 'O=Test, CN=EC Signer', serialNumber: '1003', signatureValid: true });
    });

    it('verifies a signature over the content itself without signed attributes (-noattr), checking the certificate at `now`', () => {
      const v = verifyP7m(fx.der.noattr);
      expect(v.outcome).to.equal('signed');
      expect(signer(v)).to.include({ signingTime: null, digestMatches: true, signatureValid: true, certificateValid: true });
      const old = verifyP7m(fx.der.noattr, { now: new Date('2001-01-01T00:00:00Z') });
      expect(old).to.include({
        outcome: 'not-signed',
        reason: 'signer 1: the certificate is not valid at the time of the check, and no timestamp proves an earlier time',
      });
      expect(signer(old)).to.include({ signatureValid: true, certificateValid: false });
    });

    it('checks the CAdES signing-certificate-v2 attribute (-cades)', () => {
      expect(verifyP7m(fx.der.cades).outcome).to.equal('signed');
    });

    it('verifies every level of a nested envelope, outermost signer first', () => {
      const v = verifyP7m(fx.der.nested);
      expect(v).to.include({ outcome: 'signed', levels: 2 });
      expect(v.signers.map((s) => [s.level, s.subject])).to.deep.equal([
        [1, 'O=Test, CN=EC Signer'],
        [2, 'O=Test, CN=RSA Signer'],
      ]);
    });

    it('fails a nested envelope whose inner level was tampered with before the outer signature', () => {
      const v = verifyP7m(fx.der.nestedTamperedInner);
      expect(v).to.include({ outcome: 'not-signed', levels: 2, reason: 'level 2 signer 1: the content digest does not match the messageDigest attribute' });
      expect(signer(v, 0).problems).to.deep.equal([]);
      expect(signer(v, 1)).to.include({ level: 2, digestMatches: false, signatureValid: true });
    });

    it('refuses nesting beyond maxNesting', () => {
      const v = verifyP7m(fx.der.nested, { maxNesting: 1 });
      expect(v).to.include({ outcome: 'not-signed', levels: 1, reason: 'envelope nesting exceeds 1 levels' });
    });

    it('refuses a detached signature, which carries no content to check', () => {
      const v = verifyP7m(fx.der.detached);
      expect(v).to.include({ outcome: 'not-signed', levels: 1, reason: 'detached signature: the envelope carries no content' });
      expect(signer(v).problems).to.include('detached signature: no content to check');
    });
  });

  describe('tampering and time', () => {
    it('notices a changed content byte: the digest no longer matches', () => {
      const v = verifyP7m(flipByte(fx.der.rsa, fx.der.rsa.indexOf(fx.marker) + 3));
      expect(v).to.include({ outcome: 'not-signed', reason: 'signer 1: the content digest does not match the messageDigest attribute' });
      expect(signer(v)).to.include({ digestMatches: false, signatureValid: true });
    });

    it('notices a changed content byte without signed attributes: the signature fails', () => {
      const v = verifyP7m(flipByte(fx.der.noattr, fx.der.noattr.indexOf(fx.marker) + 3));
      expect(v).to.include({ outcome: 'not-signed', reason: 'signer 1: the signature does not verify' });
      expect(signer(v)).to.include({ digestMatches: false, signatureValid: false });
    });

    for (const name of ['rsa', 'ec', 'pss'] as const) {
      it(`notices a changed signature byte (${name})`, () => {
        const der = fx.der[name];
        // The signature OCTET STRING ends the envelope (no unsigned attributes).
        const v = verifyP7m(flipByte(der, der.length - 10));
        expect(v).to.include({ outcome: 'not-signed', reason: 'signer 1: the signature does not verify' });
        expect(signer(v)).to.include({ digestMatches: true, signatureValid: false });
      });
    }

    it('fails a certificate that had expired at the signing time', () => {
      const v = verifyP7m(fx.der.expired);
      expect(v.outcome).to.equal('not-signed');
      expect(v.reason).to.match(
        /^signer 1: the certificate is not valid at the time of the check, and no timestamp proves an earlier time \(the signing time it claims, /,
      );
      expect(signer(v)).to.include({ subject: 'CN=Expired Signer', signatureValid: true, digestMatches: true, certificateValid: false });
    });

    it('never judges at a time the signer claims: a certificate valid on 2020-01-01 only, signingTime inside it, is Signed only with a timestamp that proves that time', () => {
      const now = new Date('2026-11-27T10:00:00Z');
      const backdated = verifyP7m(fx.timestamped().backdated, { now });
      expect(backdated.outcome).to.equal('not-signed');
      expect(signer(backdated)).to.include({ signingTime: '2020-01-01T12:00:00.000Z', signatureValid: true, certificateValid: false });
      expect(signer(backdated).judgedAt).to.deep.equal({
        time: '2026-11-27T10:00:00.000Z',
        by: 'check',
        why: 'judged at 2026-11-27T10:00:00.000Z: no timestamp proves an earlier time',
      });
      expect(backdated.reason).to.equal(
        "signer 1: the certificate is not valid at the time of the check, and no timestamp proves an earlier time (the signing time it claims, 2020-01-01T12:00:00.000Z, is the signer's word only)",
      );
      const stamped = verifyP7m(fx.timestamped().backdatedStamped, { now });
      expect(stamped.outcome, stamped.reason).to.equal('signed');
      expect(signer(stamped).timestamp).to.include({ valid: true, time: '2020-01-01T12:00:00.000Z', tsa: 'CN=Test TSA 2020' });
      expect(signer(stamped).judgedAt).to.deep.equal({
        time: '2020-01-01T12:00:00.000Z',
        by: 'signature-timestamp',
        why: 'judged at 2020-01-01T12:00:00.000Z: the time of the signature timestamp, which proves the signature existed by then',
      });
    });
  });

  describe('chain', () => {
    it('trusts a chain through the intermediate in the envelope up to the root anchor', () => {
      for (const name of ['rsa', 'ec', 'pss', 'stream', 'keyid', 'twoSigners', 'nested'] as const) {
        const v = verifyP7m(fx.der[name], { trustAnchors: root });
        expect(v, name).to.include({ outcome: 'signed', chain: 'checked' });
        expect(
          v.signers.every((s) => s.chain === 'trusted'),
          name,
        ).to.equal(true);
      }
    });

    it('does not trust a chain that leads to no given anchor', () => {
      const v = verifyP7m(fx.der.rsa, { trustAnchors: loadTrustAnchors(fx.unrelatedPem) });
      expect(v).to.include({ outcome: 'not-signed', chain: 'checked', reason: 'signer 1: chain not trusted: no path to a trust anchor' });
      expect(signer(v)).to.include({ chain: 'untrusted', signatureValid: true, certificateValid: true });
    });

    it('does not trust a chain whose intermediate is missing from the envelope', () => {
      const v = verifyP7m(fx.der.ecWithoutIntermediate, { trustAnchors: root });
      expect(signer(v)).to.include({ chain: 'untrusted', signatureValid: true });
      expect(v.outcome).to.equal('not-signed');
      expect(verifyP7m(fx.der.ecWithoutIntermediate).outcome).to.equal('signed');
    });

    it('does not accept an end-entity certificate as an intermediate', () => {
      const v = verifyP7m(fx.der.issuedByNonCa, { trustAnchors: root });
      expect(v).to.include({ outcome: 'not-signed', reason: 'signer 1: chain not trusted: no path to a trust anchor' });
      expect(signer(v)).to.include({ subject: 'O=Test, CN=Issued By Not A CA', chain: 'untrusted', signatureValid: true, certificateValid: true });
    });

    it('trusts a self-signed signer certificate that is itself an anchor', () => {
      const v = verifyP7m(fx.der.selfSigned, { trustAnchors: [...root, ...loadTrustAnchors(fx.selfSignedPem)] });
      expect(v.outcome).to.equal('signed');
      expect(signer(v).chain).to.equal('trusted');
      expect(verifyP7m(fx.der.selfSigned, { trustAnchors: root }).outcome).to.equal('not-signed');
    });

    it('agrees with openssl cms -verify -CAfile root', () => {
      const cases: [string, Buffer][] = [
        ['rsa', fx.der.rsa],
        ['ec', fx.der.ec],
        ['pss', fx.der.pss],
        ['pss-key-rsaEncryption', fx.der.pssKeyRsaEncryption],
        ['tampered', flipByte(fx.der.rsa, fx.der.rsa.indexOf(fx.marker))],
        ['no-intermediate', fx.der.ecWithoutIntermediate],
        ['expired', fx.der.expired],
        ['issued-by-non-ca', fx.der.issuedByNonCa],
        ['keyid', fx.der.keyid],
        ['stream', fx.der.stream],
        ['nested', fx.der.nested],
      ];
      const rootFile = fx.file('anchor.pem', Buffer.from(fx.rootPem));
      for (const [name, der] of cases) {
        const file = fx.file(`cross-${name}.p7m`, der);
        const openssl = spawnSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', file, '-CAfile', rootFile, '-binary', '-out', '/dev/null'], {
          stdio: 'ignore',
        });
        const ours = verifyP7m(der, { trustAnchors: root }).outcome;
        expect(ours === 'signed', `${name}: openssl exit ${openssl.status}, ours ${ours}`).to.equal(openssl.status === 0);
      }
    });
  });

  describe('quirks of real envelopes (fixtures: test/support/p7m-fixtures.ts, cms-rewrite.ts)', () => {
    let q: Quirks;
    before(() => {
      q = fx.quirks();
    });

    const passes = (der: Buffer, name: string, options: { maxNodes?: number } = {}): SignerVerdict => {
      const v = verifyP7m(der, { trustAnchors: root, ...options });
      expect(v.outcome, `${name}: ${v.reason}`).to.equal('signed');
      expect(signer(v).problems, name).to.deep.equal([]);
      expect(signer(v).chain, name).to.equal('trusted');
      return signer(v);
    };

    it('reads the signer identifier actually present, whatever the SignerInfo version announces', () => {
      expect(passes(q.keyIdUnderVersion1, 'subjectKeyIdentifier under version 1').subject).to.equal('O=Test, CN=EC Signer');
      expect(passes(q.issuerSerialUnderVersion3, 'issuerAndSerialNumber under version 3').serialNumber).to.equal('1001');
    });

    it('compares the issuer names as RFC 5280 §7.1 says: string type, case and spacing aside', () => {
      passes(q.issuerPrintableString, 'PrintableString against UTF8String');
      passes(q.issuerCaseAndSpaces, 'other case and spacing');
      // Another name is still another name.
      const ci = parse(fx.der.rsa);
      const name = children(children(signerInfo(ci).sid)[0]!);
      const cn = children(children(name[name.length - 1]!)[0]!)[1]!;
      cn.value = 'Test Intermediatf';
      expect(verifyP7m(encode(ci)).signers[0]?.problems).to.include('signer certificate not found in the envelope');
    });

    it('accepts a SignedData version that does not match its contents (no signature covers it)', () => {
      passes(q.signedDataVersion, 'version 4 for 1');
    });

    it("does not believe a timestamp whose TSA's certificate has ended, unless a later timestamp covered it while it held (PAdES-LTA)", () => {
      const now = new Date('2026-11-27T10:00:00Z');
      // The backdated signature, stamped 2020-01-01 by a TSA whose certificate ended in June 2020.
      const ci = parse(fx.timestamped().backdated);
      const si = signerInfo(ci);
      si.unsignedAttributes = [attribute(OIDS.signatureTimestamp, parse(fx.timestampTokenAt(signatureOf(si), '20200101120000Z', 'tsa-expired')))];
      const v = verifyP7m(encode(ci), { now });
      expect(v.outcome).to.equal('not-signed');
      expect(signer(v).notes).to.deep.equal([
        "signature timestamp 1 ignored: the TSA's certificate is no longer valid and no later timestamp covers the token while it was",
      ]);
      expect(signer(v).judgedAt).to.include({ by: 'check' });
      // A PDF: signed by the 2020 signer, a document timestamp by the expired TSA, then one
      // by a TSA still valid, made in March 2020 while the first TSA's certificate held.
      const signed = fx.pdfSignedBy(fx.pdfs().unsigned, 'expired');
      const first = signPdf(signed, (data) => fx.timestampTokenAt(data, '20200101120000Z', 'tsa-expired'), { subFilter: 'ETSI.RFC3161' });
      const later = new Date(Date.now() + 60_000); // openssl wrote the PDF signer's signingTime: today
      const alone = verifyP7m(first, { now: later });
      expect(alone.outcome).to.equal('not-signed');
      expect(alone.timestamps?.[0]).to.include({ valid: false });
      const renewed = signPdf(first, (data) => fx.timestampTokenAt(data, '20200301000000Z'), { subFilter: 'ETSI.RFC3161' });
      const lta = verifyP7m(renewed, { now: later });
      expect(lta.timestamps?.map((t) => t.valid)).to.deep.equal([true, true]);
      expect(signer(lta).judgedAt).to.include({ by: 'document-timestamp', time: '2020-01-01T12:00:00.000Z' });
      expect(signer(lta).problems).to.deep.equal([]);
    });

    it('verifies signed attributes over their DER encoding (RFC 5652 §5.4), whatever order they are sent in; a signature over the order sent only is broken', () => {
      passes(q.unsortedSignedSorted, 'signed sorted');
      const asSent = verifyP7m(q.unsortedSignedAsSent, { trustAnchors: root });
      expect(asSent.outcome).to.equal('not-signed');
      expect(asSent.reason).to.equal('signer 1: the signature does not verify');
      // Either way, a changed content byte still fails.
      const tampered = flipByte(q.unsortedSignedSorted, q.unsortedSignedSorted.indexOf(fx.marker) + 2);
      expect(verifyP7m(tampered).outcome).to.equal('not-signed');
    });

    it('lets a signed attribute repeat (two content timestamps), but not contentType, messageDigest or signingTime', () => {
      passes(q.twoContentTimestamps, 'two content timestamps');
      const v = verifyP7m(q.duplicateMessageDigest, { trustAnchors: root });
      expect(v.outcome).to.equal('not-signed');
      expect(v.reason).to.match(/must be single appears twice/);
    });

    it('verifies a CAdES-LT/LTA envelope of several MB without spending the node budget on what it does not examine', () => {
      expect(q.longTerm.length).to.be.above(5_000_000);
      passes(q.longTerm, 'long-term envelope');
      // The certificates and the signer info are what forge parses: a few hundred nodes.
      passes(q.longTerm, 'long-term envelope, 2000 nodes', { maxNodes: 2000 });
      // The same bytes as signed content are still hashed and checked: the budget is not a way around the signature.
      expect(verifyP7m(flipByte(q.longTerm, q.longTerm.indexOf(fx.marker) + 1)).outcome).to.equal('not-signed');
    });

    it('does not even read the headers inside what it does not examine (CRLs, revocation values), and does inside what it does (a timestamp)', () => {
      // 1000 bytes of 0x1f (the high-tag-number form, refused wherever it is read) inside each
      // copy of the CRL: the lengths around them are unchanged.
      const spoil = (der: Buffer, at: number): Buffer => Buffer.concat([der.subarray(0, at), Buffer.alloc(1000, 0x1f), der.subarray(at + 1000)]);
      const crlHead = readFileSync(`${fx.dir}/big-crl.der`).subarray(0, 64);
      const inCrls = q.longTerm.indexOf(crlHead);
      const inAttribute = q.longTerm.indexOf(crlHead, inCrls + 1);
      expect(inCrls).to.be.above(0);
      expect(inAttribute).to.be.above(inCrls);
      passes(spoil(spoil(q.longTerm, inCrls + 5000), inAttribute + 5000), 'spoiled CRLs');
      const stamped = fx.timestamped().valid;
      const tsa = stamped.indexOf(Buffer.from('Test TSA'));
      expect(verifyP7m(spoil(stamped, tsa - 200)).outcome).to.equal('not-signed');
    });

    it('verifies SHA-224 (openssl -md sha224), with RSA and ECDSA', () => {
      for (const key of ['rsa', 'ec']) {
        const out = `${fx.dir}/sha224-${key}.p7m`;
        const made = spawnSync('openssl', [
          'cms',
          '-sign',
          '-binary',
          '-md',
          'sha224',
          '-nodetach',
          '-in',
          `${fx.dir}/doc.pdf`,
          '-outform',
          'DER',
          '-out',
          out,
          '-signer',
          `${fx.dir}/${key}.pem`,
          '-inkey',
          `${fx.dir}/${key}.key`,
          '-certfile',
          `${fx.dir}/int.pem`,
        ]);
        expect(made.status, String(made.stderr)).to.equal(0);
        expect(passes(readFileSync(out), `SHA-224 ${key}`)).to.include({ digestAlgorithm: 'sha224' });
      }
    });

    it('verifies SHA3-256 digests with RSA and with ECDSA (id-ecdsa-with-sha3-256)', () => {
      expect(passes(q.sha3Rsa, 'RSA, SHA3-256')).to.include({ digestAlgorithm: 'sha3-256', signatureAlgorithm: 'rsa' });
      expect(passes(q.sha3Ecdsa, 'ECDSA, SHA3-256')).to.include({ digestAlgorithm: 'sha3-256', signatureAlgorithm: 'ecdsa' });
    });

    it('verifies RSASSA-PSS whose hash (SHA-512) differs from the content digest (SHA-256) over signed attributes, not over the content itself', () => {
      expect(passes(q.pssOtherHash, 'PSS SHA-512 over SHA-256')).to.include({ digestAlgorithm: 'sha256', signatureAlgorithm: 'rsa-pss' });
      // Without signed attributes the signature covers the content: RFC 4056 wants the one hash.
      const ci = parse(fx.der.noattr);
      const si = signerInfo(ci);
      const sha512 = algorithm(OIDS.sha512);
      si.signatureAlgorithm = algorithm(OIDS.rsaPss, sequence(tagged(0, sha512), tagged(1, algorithm(OIDS.mgf1, sha512)), tagged(2, integer(64))));
      si.signature = nodeSign('sha512', fx.doc, {
        key: createPrivateKey(readFileSync(`${fx.dir}/rsa.key`)),
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: 64,
      });
      expect(verifyP7m(encode(ci)).signers[0]?.problems).to.include("the signature algorithm's hash does not match the digest algorithm");
    });

    it('refuses an RSASSA-PSS signature whose CMSAlgorithmProtection attribute (RFC 6211) names other parameters, trailerField included', () => {
      passes(q.pssProtected.same, 'the same algorithms');
      passes(q.pssProtected.explicitTrailer, 'trailerField 1 written out');
      for (const name of ['otherTrailer', 'otherSalt'] as const) {
        const v = verifyP7m(q.pssProtected[name], { trustAnchors: root });
        expect(v.outcome, name).to.equal('not-signed');
        expect(signer(v), name).to.include({ signatureValid: true });
        expect(v.reason, name).to.equal('signer 1: the CMSAlgorithmProtection attribute names another signature algorithm or other parameters');
      }
    });

    it('accepts an RSA PKCS#1 v1.5 DigestInfo without NULL parameters (as DSS does), and only with the right digest', () => {
      passes(q.digestInfoWithoutNull, 'DigestInfo without NULL');
      const ci = parse(fx.der.rsa);
      const si = signerInfo(ci);
      si.signature = rsaWithoutNull(OIDS.sha256, 'sha256', createPrivateKey(readFileSync(`${fx.dir}/rsa.key`)))(Buffer.from('other signed attributes'));
      expect(verifyP7m(encode(ci)).signers[0]?.problems).to.include('the signature does not verify');
    });

    it('agrees with openssl cms -verify on the quirks openssl accepts', () => {
      const rootFile = fx.file('anchor.pem', Buffer.from(fx.rootPem));
      const acceptedByOpenssl: Array<Exclude<keyof Quirks, 'pssProtected'>> = [
        'keyIdUnderVersion1',
        'issuerSerialUnderVersion3',
        'issuerPrintableString',
        'issuerCaseAndSpaces',
        'signedDataVersion',
        'twoContentTimestamps',
        'longTerm',
        'sha3Rsa',
        'sha3Ecdsa',
      ];
      for (const name of acceptedByOpenssl) {
        const file = fx.file(`quirk-${name}.p7m`, q[name]);
        const openssl = spawnSync('openssl', ['cms', '-verify', '-inform', 'DER', '-in', file, '-CAfile', rootFile, '-binary', '-out', '/dev/null'], {
          stdio: 'ignore',
        });
        expect(openssl.status, `openssl on ${name}`).to.equal(0);
        passes(q[name], name);
      }
    });
  });

  describe("who signed: the verdict's detail", () => {
    it('reports the Italian fiscal code and the QC statements of a qualified certificate', () => {
      const v = verifyP7m(fx.der.qualified, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(signer(v)).to.include({
        subject: 'C=IT, O=Test, CN=Mario Rossi, serialNumber=TINIT-RSSMRA80A01H501U',
        issuer: 'O=Test, CN=Test Intermediate',
        fiscalCode: 'RSSMRA80A01H501U',
        qualified: true,
        qualifiedDevice: true,
        digestAlgorithm: 'sha256',
        signatureAlgorithm: 'ecdsa',
      });
      // An ordinary certificate: neither.
      expect(signer(verifyP7m(fx.der.rsa))).to.include({ fiscalCode: null, qualified: false, qualifiedDevice: false });
    });
  });

  describe('counter-signatures (RFC 5652 §11.4)', () => {
    it('counts counter-signatures among at most 32 signer infos', () => {
      const ci = parse(fx.der.rsa);
      const sd = signedData(ci);
      children(sd[3]!).push(certificateNode(readFileSync(`${fx.dir}/ec.pem`)));
      const si = signerInfo(ci);
      const counter = counterSignature(signatureOf(si), {
        cert: readFileSync(`${fx.dir}/ec.pem`),
        key: createPrivateKey(readFileSync(`${fx.dir}/ec.key`)),
        signatureAlgorithm: OIDS.ecdsaWithSha256,
      });
      si.unsignedAttributes = [attribute(OIDS.counterSignature, ...Array.from({ length: 40 }, () => counter))];
      const v = verifyP7m(encode(ci), { trustAnchors: root });
      // Unsigned attributes decide nothing: past the bound they are noted, not read.
      expect(v.outcome, v.reason).to.equal('signed');
      expect(signer(v).notes).to.deep.equal(['more than 32 signers and counter-signatures: these 40 not read']);
      expect(v.signers).to.have.length(1);
    });

    it("verifies a counter-signature of a signer's signature and reports it after that signer", () => {
      const v = verifyP7m(fx.counterSigned().valid, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(v.signers.map((s) => [s.subject, s.counterSignatureOf, s.chain, s.problems])).to.deep.equal([
        ['O=Test, CN=RSA Signer', undefined, 'trusted', []],
        ['O=Test, CN=EC Signer', 0, 'trusted', []],
      ]);
      expect(signer(v, 1)).to.include({ digestMatches: true, signatureValid: true, certificateValid: true, signatureAlgorithm: 'ecdsa' });
      expect(signer(v, 1).signingTime).to.be.a('string');
    });

    it('reports a failing counter-signature and ignores it (an unsigned attribute anyone may add), and an unreadable unsigned attribute too', () => {
      const wrong = verifyP7m(fx.counterSigned().wrongDigest, { trustAnchors: root });
      expect(wrong.outcome, wrong.reason).to.equal('signed');
      expect(wrong.notes).to.deep.equal([
        'signer 1 counter-signature 1 ignored: the messageDigest attribute is not the digest of the counter-signed signature',
      ]);
      expect(signer(wrong, 0).problems).to.deep.equal([]);
      expect(signer(wrong, 1).problems).to.deep.equal(['the messageDigest attribute is not the digest of the counter-signed signature']);
      const typed = verifyP7m(fx.counterSigned().withContentType, { trustAnchors: root });
      expect(typed.notes).to.deep.equal(['signer 1 counter-signature 1 ignored: a counter-signature carries a contentType attribute']);
      // A signature-timestamp attribute whose values are not a SET: noted, ignored.
      const ci = parse(fx.der.rsa);
      const si = signerInfo(ci);
      si.unsignedAttributes = [sequence(oidNode(OIDS.signatureTimestamp), octetString(Buffer.from('not a set')))];
      const odd = verifyP7m(encode(ci), { trustAnchors: root });
      expect(odd.outcome, odd.reason).to.equal('signed');
      expect(signer(odd).notes?.[0]).to.match(/^an unsigned attribute that cannot be read was ignored/);
    });

    it('verifies a counter-signature of a counter-signature', () => {
      const v = verifyP7m(fx.counterSigned().nested, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(v.signers.map((s) => [s.subject, s.counterSignatureOf])).to.deep.equal([
        ['O=Test, CN=RSA Signer', undefined],
        ['O=Test, CN=EC Signer', 0],
        ['O=Test, CN=RSA Signer', 1],
      ]);
    });

    it('notices a changed byte of the counter-signed signature', () => {
      const der = fx.counterSigned().valid;
      // The RSA signature is the 256-byte OCTET STRING the counter-signature's digest covers.
      const sig = signatureOf(signerInfo(parse(der)));
      const v = verifyP7m(flipByte(der, der.indexOf(sig) + 10), { trustAnchors: root });
      expect(v.outcome).to.equal('not-signed');
      expect(v.reason).to.equal('signer 1: the signature does not verify');
      expect(signer(v, 0).problems).to.include('the signature does not verify');
      expect(signer(v, 1).problems).to.include('the messageDigest attribute is not the digest of the counter-signed signature');
    });
  });

  describe('signature timestamps (RFC 3161, CAdES-T)', () => {
    it('verifies the timestamp over the signature and reports its time and TSA', () => {
      const v = verifyP7m(fx.timestamped().valid, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      const stamp = signer(v).timestamp;
      expect(stamp).to.deep.include({ tsa: 'O=Test, CN=Test TSA', chain: 'trusted', valid: true, problems: [] });
      expect(Date.parse(stamp!.time!)).to.be.closeTo(Date.now(), 10 * 60_000);
      // Without anchors the TSA's chain is not checked either.
      expect(signer(verifyP7m(fx.timestamped().valid)).timestamp).to.include({ chain: 'not-checked', valid: true });
    });

    /** The verdict of an envelope whose one signature timestamp is broken: Signed, judged at the check, the timestamp reported and ignored. */
    const ignoredStamp = (der: Buffer, problem: string, options: Parameters<typeof verifyP7m>[1] = { trustAnchors: root }): void => {
      const v = verifyP7m(der, options);
      expect(v.outcome, v.reason).to.equal('signed');
      expect(signer(v).timestamp).to.include({ valid: false });
      expect(signer(v).timestamp?.problems[0]).to.equal(problem);
      expect(signer(v).notes).to.deep.equal([`signature timestamp 1 ignored: ${problem}`]);
      expect(signer(v).judgedAt).to.include({ by: 'check' });
    };

    it('ignores a timestamp of other bytes than the signature (an unsigned attribute anyone may add): the signature is judged as if it had none', () => {
      ignoredStamp(fx.timestamped().otherImprint, 'the timestamp is of other bytes than the signature (messageImprint)');
    });

    it('ignores a token whose signer is not a time-stamping authority as RFC 3161 §2.3 defines one (timeStamping alone, critical)', () => {
      for (const name of ['notTsa', 'laxTsa', 'wideTsa'] as const) {
        ignoredStamp(fx.timestamped()[name], "the certificate is not a time-stamping authority's (extended key usage)");
      }
    });

    it('a broken timestamp never makes a bad signature good: the backdated signature with a broken timestamp of its claimed time is not Signed', () => {
      const ci = parse(fx.timestamped().backdatedStamped);
      const si = signerInfo(ci);
      // The token's imprint no longer matches once the signature it stamps is another one.
      si.signature = Buffer.concat([si.signature.subarray(0, -1), Buffer.from([si.signature.at(-1)! ^ 1])]);
      const v = verifyP7m(encode(ci), { now: new Date('2026-11-27T10:00:00Z') });
      expect(v.outcome).to.equal('not-signed');
      expect(signer(v).timestamp).to.include({ valid: false });
      expect(signer(v).problems).to.include('the signature does not verify');
    });

    it("judges the certificate at the timestamp's time, not at the signingTime the signer claims", () => {
      // signingTime claims 2019, before the certificate: a claim, which decides nothing.
      const unstamped = verifyP7m(fx.timestamped().claimedBeforeValidityUnstamped, { trustAnchors: root });
      expect(unstamped.outcome, unstamped.reason).to.equal('signed');
      expect(signer(unstamped).judgedAt).to.include({ by: 'check' });
      const stamped = verifyP7m(fx.timestamped().claimedBeforeValidity, { trustAnchors: root });
      expect(stamped.outcome, stamped.reason).to.equal('signed');
      expect(signer(stamped).signingTime).to.equal('2019-06-01T00:00:00.000Z');
    });

    it('ignores a token that does not name its TSA certificate (ESS signing certificate, RFC 5816)', () => {
      ignoredStamp(fx.timestamped().noEss, 'the token does not name its TSA certificate (ESS signing certificate)');
    });

    it('verifies every one of several timestamps and reports the earliest', () => {
      const v = verifyP7m(fx.timestamped().twoStamps, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(signer(v).timestamp).to.include({ valid: true, tsa: 'O=Test, CN=Test TSA' });
    });

    it('refuses a timestamp whose imprint is SHA-1, as SHA-1 is refused everywhere', () => {
      const ci = parse(fx.der.rsa);
      const si = signerInfo(ci);
      si.unsignedAttributes = [attribute(OIDS.signatureTimestamp, parse(fx.timestampToken(signatureOf(si), 'sha1')))];
      ignoredStamp(encode(ci), 'weak messageImprint hash sha1');
    });

    it('notices a changed byte in the token, and ignores the token', () => {
      const der = fx.timestamped().valid;
      // The token is the envelope's last element; its TSA's ECDSA signature, its last bytes.
      const v = verifyP7m(flipByte(der, der.length - 20), { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(signer(v).timestamp).to.include({ valid: false });
      expect(signer(v).notes?.[0]).to.match(/^signature timestamp 1 ignored: /);
      expect(signer(verifyP7m(der, { trustAnchors: root })).judgedAt).to.include({ by: 'signature-timestamp' });
    });
  });

  describe('timestamped containers: .tsd (RFC 5544) and .m7m', () => {
    it('verifies a .tsd: the timestamp over the envelope, then the envelope inside', () => {
      const v = verifyP7m(fx.containers().tsd, { trustAnchors: root });
      expect(v).to.include({ outcome: 'signed', container: 'tsd', encoding: 'der', levels: 1 });
      expect(v.timestamps).to.have.length(1);
      expect(v.timestamps![0]).to.deep.include({ tsa: 'O=Test, CN=Test TSA', chain: 'trusted', valid: true });
      expect(signer(v).subject).to.equal('O=Test, CN=RSA Signer');
    });

    it('verifies a .tsd renewal: the second timestamp over the first', () => {
      const v = verifyP7m(fx.containers().tsdRenewed, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(v.timestamps?.map((t) => t.valid)).to.deep.equal([true, true]);
    });

    it('ignores a .tsd timestamp of other data (the envelope judged as if alone), and calls a timestamped PDF without a signature not signed', () => {
      const other = verifyP7m(fx.containers().tsdOtherData, { trustAnchors: root });
      expect(other.outcome, other.reason).to.equal('signed');
      expect(other.notes).to.deep.equal(['timestamp 1 of the tsd ignored: the timestamp is of other bytes than the document (messageImprint)']);
      expect(signer(other).judgedAt).to.include({ by: 'check' });
      // A timestamp that verifies proves when the envelope existed: its signers are judged then.
      const good = verifyP7m(fx.containers().tsd, { trustAnchors: root });
      expect(signer(good).judgedAt).to.include({ by: 'container-timestamp', time: good.timestamps![0]!.time });
      const unsigned = verifyP7m(fx.containers().tsdUnsigned, { trustAnchors: root });
      expect(unsigned).to.include({ outcome: 'not-signed', reason: 'not a CMS SignedData envelope', container: 'tsd' });
      expect(unsigned.timestamps?.[0]?.valid).to.equal(true);
    });

    it('verifies a .m7m: the MIME bundle of the .p7m and the timestamp response over it', () => {
      const v = verifyP7m(fx.containers().m7m, { trustAnchors: root });
      expect(v).to.include({ outcome: 'signed', container: 'm7m' });
      expect(v.timestamps?.[0]).to.deep.include({ valid: true, tsa: 'O=Test, CN=Test TSA' });
      const other = verifyP7m(fx.containers().m7mOtherData, { trustAnchors: root });
      expect(other.outcome, other.reason).to.equal('signed');
      expect(other.notes).to.deep.equal(['timestamp 1 of the m7m ignored: the timestamp is of other bytes than the document (messageImprint)']);
    });

    it('notices a changed byte of the document inside either container', () => {
      for (const name of ['tsd', 'm7m'] as const) {
        const der = fx.containers()[name];
        // In the .m7m the envelope is Base64: change a character of it instead.
        const at = name === 'tsd' ? der.indexOf(fx.marker) + 2 : der.indexOf('Content-Transfer-Encoding: base64', 0, 'latin1') + 200;
        const changed = Buffer.from(der);
        changed[at] = name === 'tsd' ? changed[at]! ^ 0xff : changed[at] === 0x41 ? 0x42 : 0x41;
        expect(verifyP7m(changed, { trustAnchors: root }).outcome, name).to.equal('not-signed');
      }
    });

    it('reads an envelope as an envelope, whatever it carries: a .p7m of a MIME message is not a .m7m', () => {
      // An attacker's self-signed .p7m whose content is the victim's .m7m must not pass for the victim's.
      const poly = fx.file('poly.txt', Buffer.concat([Buffer.from('X-Note: a mail\r\n'), fx.containers().m7m]));
      spawnSync('openssl', [
        'cms',
        '-sign',
        '-binary',
        '-md',
        'sha256',
        '-nodetach',
        '-in',
        poly,
        '-outform',
        'DER',
        '-out',
        `${fx.dir}/poly.p7m`,
        '-signer',
        `${fx.dir}/self.pem`,
        '-inkey',
        `${fx.dir}/self.key`,
      ]);
      const v = verifyP7m(readFileSync(`${fx.dir}/poly.p7m`), { trustAnchors: root });
      expect(v.container).to.equal(undefined);
      expect(v.signers.map((x) => x.subject)).to.deep.equal(['CN=Self Signed Signer']);
      expect(v.outcome).to.equal('not-signed');
    });

    it("takes a .m7m's parts exactly: a binary part keeps its last line break, and nothing else may travel with them", () => {
      const m7m = fx.containers().m7m.toString('latin1');
      const binary = m7m.replace(
        /Content-Transfer-Encoding: base64\r\nContent-Disposition: [^\r]*\r\n\r\n[^-]+/,
        'Content-Transfer-Encoding: binary\r\n\r\nX\n\r\n',
      );
      const content = readTimestamped(Buffer.from(binary, 'latin1'), { remaining: 100_000 })?.content;
      expect(content && Buffer.from(content).toString('latin1')).to.equal('X\n');
      const withPdf = m7m.replace('------=_Part_7_m7m--', '------=_Part_7_m7m\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\r\n------=_Part_7_m7m--');
      expect(verifyP7m(Buffer.from(withPdf, 'latin1')).reason).to.equal('malformed envelope: a .m7m has two parts: the signed document and its timestamp');
      const preamble = m7m.replace('This is a multi-part message in MIME format.', 'Offerta: 999.999 EUR');
      expect(verifyP7m(Buffer.from(preamble, 'latin1')).reason).to.equal('malformed envelope: text outside the parts of the .m7m');
    });

    it('answers malformed containers with a verdict', () => {
      const m7m = fx.containers().m7m.toString('latin1');
      for (const broken of [
        m7m.replace(/------=_Part_7_m7m--/, ''),
        m7m.replace(/application\/timestamp-reply/, 'text/plain'),
        m7m.replace(/boundary="[^"]+"/, ''),
      ]) {
        const v = verifyP7m(Buffer.from(broken, 'latin1'));
        expect(v.outcome).to.equal('not-signed');
        expect(v.reason).to.match(/^malformed envelope: /);
      }
      const tsd = fx.containers().tsd;
      expect(verifyP7m(tsd.subarray(0, tsd.length - 10)).reason).to.match(/^malformed envelope: /);
    });
  });

  describe('PAdES: the signatures of a PDF', () => {
    /** `pdf` signed by the RSA signer with openssl -noattr (no signed attributes, so no signingTime in the CMS). */
    const signedWithoutAttributes = (pdf: Buffer, opts: { objectNumber: number; claimedTime?: string | null; header?: string }): Buffer =>
      signPdf(
        pdf,
        (data) => {
          const input = fx.file('pades-noattr.data', data);
          spawnSync('openssl', [
            'cms',
            '-sign',
            '-binary',
            '-noattr',
            '-md',
            'sha256',
            '-in',
            input,
            '-outform',
            'DER',
            '-out',
            `${fx.dir}/pades-noattr.cms`,
            '-signer',
            `${fx.dir}/rsa.pem`,
            '-inkey',
            `${fx.dir}/rsa.key`,
            '-certfile',
            `${fx.dir}/int.pem`,
          ]);
          return readFileSync(`${fx.dir}/pades-noattr.cms`);
        },
        { subFilter: 'ETSI.CAdES.detached', ...opts },
      );

    it('verifies an ETSI.CAdES.detached signature over its ByteRange, covering the whole file', () => {
      const v = verifyP7m(fx.pdfs().signed, { trustAnchors: root });
      expect(v).to.deep.include({
        outcome: 'signed',
        container: 'pdf',
        levels: 1,
      });
      expect(v.pdf).to.deep.equal({
        signatures: [
          {
            subFilter: 'ETSI.CAdES.detached',
            coversWholeFile: true,
            revision: 2,
            coveredBytes: fx.pdfs().signed.length - 16_386,
            changesAfter: [],
            intact: true,
          },
        ],
        modifiedAfterLastSignature: false,
      });
      expect(signer(v)).to.include({ level: 1, subject: 'O=Test, CN=RSA Signer', chain: 'trusted', digestMatches: true, signatureValid: true });
      const adbe = verifyP7m(fx.pdfs().adbe, { trustAnchors: root });
      expect(adbe.outcome, adbe.reason).to.equal('signed');
      expect(adbe.pdf?.signatures.map((x) => [x.subFilter, x.coversWholeFile])).to.deep.equal([['adbe.pkcs7.detached', true]]);
    });

    it('is Signed when signed twice (the second signature and its field are what PAdES allows after the first); every signature is reported with its revision', () => {
      const v = verifyP7m(fx.pdfs().twoSignatures, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(v.pdf?.signatures.map((s) => [s.revision, s.coversWholeFile, s.changesAfter, s.intact])).to.deep.equal([
        [2, false, ['a signature'], true],
        [3, true, [], true],
      ]);
      // Each signature is still verified and reported, with its number as its level.
      expect(v.signers.map((s) => [s.level, s.subject, s.problems])).to.deep.equal([
        [1, 'O=Test, CN=RSA Signer', []],
        [2, 'O=Test, CN=EC Signer', []],
      ]);
      expect(v.levels).to.equal(2);
      // A failing signature is the reason before the update.
      const first = fx.pdfs().twoSignatures;
      const tampered = flipByte(first, first.indexOf(fx.marker) + 1);
      expect(verifyP7m(tampered, { trustAnchors: root }).reason).to.equal(
        'PDF signature 1: signer 1: the content digest does not match the messageDigest attribute',
      );
    });

    it('is not Signed when an update after a signature adds what PAdES does not allow, even when a later signer signed it (the incremental-saving attack)', () => {
      const v = verifyP7m(fx.pdfs().appended, { trustAnchors: root });
      expect(v).to.include({
        outcome: 'not-signed',
        reason:
          "the PDF was changed after its signature 1 in a way PAdES does not allow: an annotation that can cover the page's content (FreeText) was added to page 1",
      });
      expect(v.pdf?.modifiedAfterLastSignature).to.equal(true);
      expect(v.pdf?.signatures[0]).to.include({ intact: false });
      const signedAfter = verifyP7m(fx.pdfs().afterAnnotation, { trustAnchors: root });
      expect(signedAfter.outcome).to.equal('not-signed');
      expect(signedAfter.pdf?.signatures.map((s) => s.intact)).to.deep.equal([false, true]);
      expect(signedAfter.signers.map((s) => s.problems)).to.deep.equal([[], []]);
    });

    it('refuses a PDF signature with two signers (ISO 32000 and PAdES give it one)', () => {
      const pdf = signPdf(
        fx.pdfs().unsigned,
        (data) => {
          const input = fx.file('two-signers.data', data);
          spawnSync('openssl', [
            'cms',
            '-sign',
            '-binary',
            '-md',
            'sha256',
            '-in',
            input,
            '-outform',
            'DER',
            '-out',
            `${fx.dir}/two-signers.cms`,
            '-signer',
            `${fx.dir}/rsa.pem`,
            '-inkey',
            `${fx.dir}/rsa.key`,
            '-signer',
            `${fx.dir}/ec.pem`,
            '-inkey',
            `${fx.dir}/ec.key`,
            '-certfile',
            `${fx.dir}/int.pem`,
          ]);
          return readFileSync(`${fx.dir}/two-signers.cms`);
        },
        { subFilter: 'ETSI.CAdES.detached', objectNumber: 99 },
      );
      expect(verifyP7m(pdf, { trustAnchors: root }).reason).to.equal('PDF signature 1: a PDF signature has one signer');
    });

    it('notices a changed signed byte, a changed byte of the CMS padding, and a PDF without signatures', () => {
      const pdf = fx.pdfs().signed;
      expect(verifyP7m(flipByte(pdf, pdf.indexOf(fx.marker) + 1)).signers[0]?.problems).to.include(
        'the content digest does not match the messageDigest attribute',
      );
      const padding = pdf.lastIndexOf('000>') + 1;
      expect(verifyP7m(Buffer.concat([pdf.subarray(0, padding), Buffer.from('1'), pdf.subarray(padding + 1)])).reason).to.equal(
        'PDF signature 1: bytes after the CMS in /Contents',
      );
      expect(verifyP7m(fx.pdfs().unsigned).reason).to.equal('the PDF has no signature');
    });

    it("shows a signer's /M as its claimed time (PAdES places it there), and never judges at it", () => {
      const noattr = (claimedTime: string) => signedWithoutAttributes(fx.pdfs().unsigned, { objectNumber: 97, claimedTime });
      const pdfDate = (d: Date) => `D:${d.toISOString().replace(/[-:T]/g, '').slice(0, 14)}+01'00'`;
      const inAnHour = new Date(Date.now() + 3_600_000);
      const now = verifyP7m(noattr(pdfDate(inAnHour)), { trustAnchors: root });
      expect(now.outcome, now.reason).to.equal('signed');
      // +01'00': an hour earlier in UTC.
      expect(signer(now).signingTime).to.equal(new Date(Math.floor(inAnHour.getTime() / 1000) * 1000 - 3_600_000).toISOString());
      // A claim before the certificate's validity: shown as claimed, and judged at the time of the check.
      const before = verifyP7m(noattr('D:20200101120000Z'), { trustAnchors: root });
      expect(before.outcome, before.reason).to.equal('signed');
      expect(signer(before).signingTime).to.equal('2020-01-01T12:00:00.000Z');
      expect(signer(before).judgedAt).to.include({ by: 'check' });
      // Written with string escapes, as some tools write it: (D\07220210818213230\05302\04700\047) is D:20210818213230+02'00'.
      const escaped = verifyP7m(noattr('D\\07220210818213230\\05302\\04700\\047'), { trustAnchors: root });
      expect(signer(escaped).signingTime).to.equal('2021-08-18T19:32:30.000Z');
      expect(pdfString('(D\\07220210818213230\\05302\\04700\\047)')).to.equal("D:20210818213230+02'00'");
      expect(pdfString('(a\\(b\\)\\\\c\\\nd)')).to.equal('a(b)\\cd');
      expect(pdfString('<443A32303231>')).to.equal('D:2021');
      // Not a PDF date: no claimed time, judged at the time of the check.
      const unreadable = verifyP7m(noattr('yesterday'), { trustAnchors: root });
      expect(unreadable.outcome).to.equal('signed');
      expect(signer(unreadable).signingTime).to.equal(null);
    });

    it('reads PDF dates strictly (no rolling over, sane offsets), and a /M only from the signature dictionary itself', () => {
      expect(pdfDate("D:20240229120000+01'00'")?.toISOString()).to.equal('2024-02-29T11:00:00.000Z');
      expect(pdfDate('D:2024')?.toISOString()).to.equal('2024-01-01T00:00:00.000Z');
      expect(pdfDate("D:20241124093000-05'30")?.toISOString()).to.equal('2024-11-24T15:00:00.000Z');
      for (const bad of ['D:20240230', 'D:20241301', 'D:20240101250000Z', "D:20240101+99'99'", 'D:0099', 'D:2024-01-01', ''])
        expect(pdfDate(bad), bad).to.equal(null);
      // No /M in the signature's dictionary, whose header is split over two lines: the /M of the
      // annotation before it is not the signature's, which is judged without a claimed time.
      const unsigned = fx.pdfs().unsigned;
      const annotated = appendUpdate(unsigned, new Map([[nextNumber(unsigned), '<< /Type /Annot /M (D:20200101000000Z) >>']]));
      const pdf = signedWithoutAttributes(annotated, { objectNumber: 96, claimedTime: null, header: '96 0\nobj' });
      const v = verifyP7m(pdf, { trustAnchors: root });
      expect(v.outcome, v.reason).to.equal('signed');
      expect(signer(v).signingTime).to.equal(null);
    });

    it('refuses a claimed signing time in the future; bounds the work of many signatures by the bytes they hash and by time, not by their count', () => {
      const future = signedWithoutAttributes(fx.pdfs().unsigned, {
        objectNumber: 95,
        claimedTime: `D:${new Date(Date.now() + 3_600_000).toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`,
      });
      expect(verifyP7m(future, { trustAnchors: root }).signers[0]?.problems).to.include('the claimed signing time is in the future');
      // Nine document timestamps and a signature, as a real file carries: all verified.
      let many = fx.pdfs().unsigned;
      for (let i = 0; i < 9; i++) many = signPdf(many, (data) => fx.timestampToken(data), { subFilter: 'ETSI.RFC3161', objectNumber: 80 + i });
      many = fx.pdfSignedBy(many, 'rsa');
      const ten = verifyP7m(many, { trustAnchors: root });
      expect(ten.timestamps?.filter((t) => t.valid)).to.have.length(9);
      expect(ten.signers.map((s) => [s.level, s.problems])).to.deep.equal([[10, []]]);
      // The bytes the ten hash together, and the time they take, are what is bounded.
      const hashed = ten.pdf!.signatures.length * many.length; // more than they hash
      expect(verifyP7m(many, { maxPdfHashedBytes: 2 * many.length }).reason).to.match(/^the PDF's 10 signatures cover \d+ bytes together, more than \d+$/);
      expect(verifyP7m(many, { maxPdfHashedBytes: hashed, trustAnchors: root }).reason).to.equal(ten.reason);
      expect(verifyP7m(many, { pdfTimeBudgetMs: -1 }).reason).to.equal("the PDF's signatures took more than -0.001 s to check");
    });

    it('verifies document timestamps (ETSI.RFC3161, PAdES-LTA) over their ByteRange, and a PDF with only those is not Signed', () => {
      const stamp = (pdf: Buffer, objectNumber = 98) => signPdf(pdf, (data) => fx.timestampToken(data), { subFilter: 'ETSI.RFC3161', objectNumber });
      const onlyStamped = verifyP7m(stamp(fx.pdfs().unsigned), { trustAnchors: root });
      expect(onlyStamped.reason).to.equal('the PDF has document timestamps but no signature');
      expect(onlyStamped.timestamps).to.have.length(1);
      expect(onlyStamped.timestamps?.[0]).to.include({ valid: true, tsa: 'O=Test, CN=Test TSA', chain: 'trusted' });
      expect(onlyStamped.signers).to.deep.equal([]);
      // A signed PDF, then timestamped: both verified; the timestamp is an update after the signature.
      const lta = verifyP7m(stamp(fx.pdfs().signed), { trustAnchors: root });
      expect(lta.timestamps?.[0]?.valid).to.equal(true);
      expect(lta.signers.map((s) => [s.level, s.problems.length])).to.deep.equal([[1, 0]]);
      expect(lta.pdf?.signatures.map((s) => s.subFilter)).to.deep.equal(['ETSI.CAdES.detached', 'ETSI.RFC3161']);
      // A dictionary with nested dictionaries after its /SubFilter (as signing tools write /Prop_Build)
      // is still read as the signature's own: a document timestamp, not a CMS signature.
      const nested = signPdf(fx.pdfs().unsigned, (data) => fx.timestampToken(data), {
        subFilter: 'ETSI.RFC3161',
        objectNumber: 98,
        entries: ' /Prop_Build << /App << /Name /Test /REx (1.0) >> /Filter << /Name /Adobe.PPKLite >> >>',
      });
      const read = verifyP7m(nested, { trustAnchors: root });
      expect(read.pdf?.signatures.map((s) => s.subFilter)).to.deep.equal(['ETSI.RFC3161']);
      expect(read.reason).to.equal('the PDF has document timestamps but no signature');
      // A token over other bytes (the stamped bytes changed after it was made): reported, and ignored.
      const stamped = stamp(fx.pdfs().unsigned);
      const tampered = verifyP7m(flipByte(stamped, stamped.indexOf(fx.marker) + 1), { trustAnchors: root });
      expect(tampered.reason).to.equal('the PDF has document timestamps but no signature');
      expect(tampered.notes).to.deep.equal([
        'document timestamp 1 (PDF signature 1) ignored: the timestamp is of other bytes than the document (messageImprint)',
      ]);
    });

    it('judges a signer at the time a later document timestamp proves, never at its /M: a certificate valid on 2020-01-01 only', () => {
      const now = new Date(Date.now() + 60_000);
      // openssl writes a signingTime (the real time) beside the /M: the claims of a tool that backdates /M only.
      const signed = fx.pdfSignedBy(fx.pdfs().unsigned, 'expired', { claimedTime: 'D:20200101110000Z' });
      const alone = verifyP7m(signed, { now });
      expect(alone.reason).to.match(
        /^PDF signature 1: signer 1: the certificate is not valid at the time of the check, and no timestamp proves an earlier time \(the signing time it claims, .*, is the signer's word only\)$/,
      );
      const lta = signPdf(signed, (data) => fx.timestampTokenAt(data, '20200101120000Z'), { subFilter: 'ETSI.RFC3161', objectNumber: 70 });
      const v = verifyP7m(lta, { now });
      expect(signer(v)).to.include({ certificateValid: true, signatureValid: true });
      expect(signer(v).problems).to.deep.equal([]);
      expect(signer(v).judgedAt).to.deep.equal({
        time: '2020-01-01T12:00:00.000Z',
        by: 'document-timestamp',
        why: 'judged at 2020-01-01T12:00:00.000Z: the time of document timestamp 1 (PDF signature 2), which proves the signature existed by then',
      });
      // A document timestamp before a signature proves nothing of it.
      const stampedFirst = fx.pdfSignedBy(
        signPdf(fx.pdfs().unsigned, (data) => fx.timestampTokenAt(data, '20200101120000Z'), { subFilter: 'ETSI.RFC3161', objectNumber: 71 }),
        'expired',
      );
      expect(signer(verifyP7m(stampedFirst, { now })).judgedAt).to.include({ by: 'check' });
    });

    it('refuses ByteRanges that lie: outside the file, not from its start, over other bytes than /Contents', () => {
      const pdf = fx.pdfs().signed.toString('latin1');
      const [b, c, d] = /\/ByteRange \[0 (\d+) (\d+) (\d+)/.exec(pdf)!.slice(1).map(Number) as [number, number, number];
      // The numbers have room for 43 characters (the fixture's placeholder): a lie keeps the file's length.
      const lie = (range: string): string =>
        verifyP7m(Buffer.from(pdf.replace(/\/ByteRange \[[^\]]{43}\]/, `/ByteRange [${range.padEnd(43, ' ')}]`), 'latin1')).reason ?? '';
      expect(lie(`0 ${b} ${c} ${d}`)).to.equal('');
      expect(lie(`0 ${b} ${c} ${d + 1000}`)).to.equal('malformed PDF signature: a /ByteRange lies outside the file or overlaps itself');
      expect(lie(`1 ${b} ${c} ${d}`)).to.equal('malformed PDF signature: a /ByteRange does not start at the beginning of the file');
      expect(lie(`0 ${b - 40} ${c} ${d}`)).to.equal('malformed PDF signature: the gap of a /ByteRange is not a hex string');
      expect(lie(`0 ${c} ${b} ${d}`)).to.equal('malformed PDF signature: a /ByteRange lies outside the file or overlaps itself');
    });
  });

  describe('trust anchors and the worker task', () => {
    it('splits a PEM bundle, ignoring text between certificates', () => {
      const bundle = `# roots\n${fx.rootPem}\nsome comment\n${fx.unrelatedPem}`;
      expect(loadTrustAnchors(bundle).map((c) => c.subject)).to.deep.equal(['O=Test\nCN=Test Root', 'CN=Unrelated Root']);
    });

    it('throws a clear error on a bad bundle', () => {
      expect(() => loadTrustAnchors('nothing here')).to.throw('no PEM certificate');
      expect(() => loadTrustAnchors(`${fx.rootPem}-----BEGIN CERTIFICATE-----\nAAAA\n`)).to.throw('not a complete certificate');
      expect(() => loadTrustAnchors('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')).to.throw('Trust store certificate 1 cannot be read');
    });

    it('runs in the task entry with the trust store PEM and a fixed instant', () => {
      const trusted = verifyTask({ bytes: new Uint8Array(fx.der.rsa), trustPem: fx.rootPem });
      expect(trusted).to.include({ outcome: 'signed', chain: 'checked' });
      expect(verifyTask({ bytes: fx.der.rsa, trustPem: fx.unrelatedPem }).outcome).to.equal('not-signed');
      expect(verifyTask({ bytes: fx.der.noattr, now: Date.parse('2001-01-01T00:00:00Z') }).outcome).to.equal('not-signed');
      expect(verifyTask({ bytes: fx.der.noattr }).outcome).to.equal('signed');
    });
  });
});

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { verifyP7m, type SignatureVerdict } from '../../../src/files/p7m/p7m.verifier.js';

/**
 * Envelopes made by other tools, from DSS's test resources (test/fixtures/dss/README.md). Their
 * certificates have expired and none has a timestamp that proves an earlier time, so today each
 * is judged at the time of the check and is not Signed: what these tests look at (algorithms,
 * encodings, attributes) is judged as a check made on the day after the signature would, with
 * `now` then.
 */
const verdict = (name: string, now?: string): SignatureVerdict => verifyP7m(readFileSync(`test/fixtures/dss/${name}`), now ? { now: new Date(now) } : {});
const SIGNED_2018 = '2018-05-16T00:00:00Z';

describe("real envelopes from DSS's test resources, judged as DSS judges them", () => {
  it('refuses a PKCS#1 v1.5 signature algorithm naming another hash than the digest algorithm, as DSS does (OpenSSL accepts it), and accepts RSASSA-PSS with its own hash', () => {
    for (const name of ['CAdES-BpB-att-SHA256-SHA512withRSA.p7m', 'CAdES-BpB-att-SHA3_256-SHA256withRSA.p7m']) {
      const v = verdict(name);
      expect(v.outcome, name).to.equal('not-signed');
      expect(v.signers[0]?.problems, name).to.include("the signature algorithm's hash does not match the digest algorithm");
    }
    // SHA-256 content digest, PSS with SHA3-256 and MGF1-SHA3-256 over the signed attributes (OpenSSL refuses it).
    const pss = verdict('CAdES-BpB-att-SHA256-SHA3_256withRSAandMGF1.p7m', SIGNED_2018);
    expect(pss.outcome, pss.reason).to.equal('signed');
    expect(pss.signers[0]).to.include({ digestAlgorithm: 'sha256', signatureAlgorithm: 'rsa-pss' });
  });

  it('verifies SHA3-224', () => {
    const v = verdict('CAdES-BpB-att-SHA3_224-SHA3_224withRSA.p7m', SIGNED_2018);
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]?.digestAlgorithm).to.equal('sha3-224');
  });

  it("verifies signed attributes sent out of DER order over their DER encoding, as RFC 5652 §5.4 says (OpenSSL verifies the order sent, and refuses it), and reads the Italian signer's IT: fiscal code", () => {
    const v = verdict('DER_reordered_prova.txt.p7m', '2015-03-17T00:00:00Z');
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]).to.include({ fiscalCode: 'AAAAAA11A11A111A', signingTime: '2015-03-16T12:58:04.000Z' });
  });

  it('judges an expired certificate at the time of the check when no timestamp proves an earlier time, whatever signingTime claims', () => {
    const v = verdict('CAdES-BpB-att-SHA3_224-SHA3_224withRSA.p7m');
    expect(v.outcome).to.equal('not-signed');
    expect(v.signers[0]).to.include({ signatureValid: true, digestMatches: true, certificateValid: false, signingTime: '2018-05-15T20:22:43.000Z' });
    expect(v.signers[0]?.judgedAt).to.include({ by: 'check' });
    expect(v.reason).to.match(
      /^signer 1: the certificate is not valid at the time of the check, and no timestamp proves an earlier time \(the signing time it claims, 2018-05-15T20:22:43.000Z, is the signer's word only\)$/,
    );
  });

  it('does not read as a timestamp an attribute value that is not a token (the DER inside an OCTET STRING): the signer is judged without one', () => {
    const v = verdict('Signature-C-DE_CRY-3.p7m', '2014-11-14T00:00:00Z');
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]?.timestamp).to.equal(undefined);
  });

  it("ignores a timestamp its TSA signed after the TSA's certificate ended, though genTime is within it: the signature is judged as if it had none", () => {
    const v = verdict('cades-broken-sig-tst.p7m', '2024-12-18T00:00:00Z');
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]).to.include({ signatureValid: true, digestMatches: true });
    expect(v.signers[0]?.timestamp).to.include({ valid: false, time: '2024-12-17T11:47:09.000Z' });
    expect(v.signers[0]?.notes).to.deep.equal(["signature timestamp 1 ignored: the TSA's certificate was not valid at the token's own signing time"]);
    expect(v.signers[0]?.judgedAt).to.deep.equal({
      time: '2024-12-18T00:00:00.000Z',
      by: 'check',
      why: 'judged at 2024-12-18T00:00:00.000Z: no timestamp proves an earlier time',
    });
    // Today the certificate has expired, and the broken timestamp proves nothing: not Signed.
    expect(verdict('cades-broken-sig-tst.p7m').reason).to.match(/^signer 1: the certificate is not valid at the time of the check/);
  });
});

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { verifyP7m, type SignatureVerdict } from '../../../src/files/p7m/p7m.verifier.js';

/** Envelopes made by other tools, from DSS's test resources (test/fixtures/dss/README.md). */
const verdict = (name: string): SignatureVerdict => verifyP7m(readFileSync(`test/fixtures/dss/${name}`));

describe("real envelopes from DSS's test resources, judged as DSS judges them", () => {
  it('refuses a PKCS#1 v1.5 signature algorithm naming another hash than the digest algorithm, as DSS does (OpenSSL accepts it), and accepts RSASSA-PSS with its own hash', () => {
    for (const name of ['CAdES-BpB-att-SHA256-SHA512withRSA.p7m', 'CAdES-BpB-att-SHA3_256-SHA256withRSA.p7m']) {
      const v = verdict(name);
      expect(v.outcome, name).to.equal('not-signed');
      expect(v.signers[0]?.problems, name).to.include("the signature algorithm's hash does not match the digest algorithm");
    }
    // SHA-256 content digest, PSS with SHA3-256 and MGF1-SHA3-256 over the signed attributes (OpenSSL refuses it).
    const pss = verdict('CAdES-BpB-att-SHA256-SHA3_256withRSAandMGF1.p7m');
    expect(pss.outcome, pss.reason).to.equal('signed');
    expect(pss.signers[0]).to.include({ digestAlgorithm: 'sha256', signatureAlgorithm: 'rsa-pss' });
  });

  it('verifies SHA3-224', () => {
    const v = verdict('CAdES-BpB-att-SHA3_224-SHA3_224withRSA.p7m');
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]?.digestAlgorithm).to.equal('sha3-224');
  });

  it('accepts signed attributes signed in the order sent (an Italian test signer, its IT: fiscal code read)', () => {
    const v = verdict('DER_reordered_prova.txt.p7m');
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]).to.include({ fiscalCode: 'AAAAAA11A11A111A', signingTime: '2015-03-16T12:58:04.000Z' });
  });

  it('does not read as a timestamp an attribute value that is not a token (the DER inside an OCTET STRING): the signer is judged without one', () => {
    const v = verdict('Signature-C-DE_CRY-3.p7m');
    expect(v.outcome, v.reason).to.equal('signed');
    expect(v.signers[0]?.timestamp).to.equal(undefined);
  });

  it("refuses a timestamp its TSA signed after the TSA's certificate ended, though genTime is within it", () => {
    const v = verdict('cades-broken-sig-tst.p7m');
    expect(v.outcome).to.equal('not-signed');
    expect(v.signers[0]).to.include({ signatureValid: true, digestMatches: true });
    expect(v.signers[0]?.timestamp).to.include({ valid: false, time: '2024-12-17T11:47:09.000Z' });
    expect(v.reason).to.equal("signer 1: signature timestamp: the TSA's certificate was not valid at the token's own signing time");
  });
});

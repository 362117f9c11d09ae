// What the public verification shows of a signer (src/verification/verification.service.ts): a
// common name and its certificate's issuer, never a fiscal code, however a certificate carries it.
import { expect } from 'chai';
import { commonNameOf, issuerNameOf } from '../../../src/verification/verification.service.js';

describe("a signer's name, as the public sees it", () => {
  it('is the common name alone', () => {
    expect(commonNameOf('C=IT, O=Assicurazioni Esempio S.p.A., CN=Mario Rossi, serialNumber=TINIT-RSSMRA80A01H501U')).to.equal('Mario Rossi');
    expect(commonNameOf('CN=Mario Rossi,O=Assicurazioni Esempio S.p.A.,C=IT')).to.equal('Mario Rossi');
  });

  it('never carries a fiscal code: a multi-valued name, a CNS card (fiscal code/serial), a company number', () => {
    expect(commonNameOf('C=IT, O=Esempio, CN=Mario Rossi + serialNumber=TINIT-RSSMRA80A01H501U')).to.equal('Mario Rossi');
    expect(commonNameOf('C=IT, CN=RSSMRA80A01H501U/7420000300000050.P2K4d0hYbUb4Qn0=')).to.equal(null);
    expect(commonNameOf('CN=ACME S.p.A. 01234567890, C=IT')).to.equal('ACME S.p.A.');
    expect(commonNameOf('CN=IT:RSSMRA80A01H501U Mario Rossi')).to.equal('Mario Rossi');
    expect(commonNameOf(null)).to.equal(null);
  });

  it("names the certificate's issuer by its common name and organization only (a self-signed certificate's issuer is its subject)", () => {
    expect(issuerNameOf('CN=InfoCert Firma Qualificata 2, OU=Certificatore Accreditato, O=INFOCERT SPA, C=IT')).to.equal(
      'InfoCert Firma Qualificata 2, INFOCERT SPA',
    );
    expect(issuerNameOf('C=IT, CN=Mario Rossi, serialNumber=TINIT-RSSMRA80A01H501U, O=Studio Rossi RSSMRA80A01H501U')).to.equal('Mario Rossi, Studio Rossi');
    expect(issuerNameOf('CN=Test CA')).to.equal('Test CA');
  });
});

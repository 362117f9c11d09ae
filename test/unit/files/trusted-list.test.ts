import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { KEPT_SERVICE_TYPES } from '../../../src/files/trust/trust.repository.js';
import { readTrustedList, type TrustedList } from '../../../src/files/trust/trusted-list.js';
import { p7mFixtures } from '../../support/p7m-fixtures.js';
import { CA_QC, STATUS, signTrustedList, trustedListXml } from '../../support/trusted-list.js';

describe('EU trusted lists (ETSI TS 119 612), read offline', () => {
  const fx = p7mFixtures();
  const pem = (name: string) => readFileSync(`${fx.dir}/${name}`, 'utf8');
  // The list's operator (C=IT) signs; the listed CA/QC service is the intermediate.
  const operator = new X509Certificate(pem('tl-operator.pem'));
  const xml = trustedListXml({
    services: [
      {
        certPem: pem('int.pem'),
        status: `${STATUS}granted`,
        statusFrom: '2016-07-01T00:00:00Z',
        history: [{ status: `${STATUS}accredited`, from: '2010-01-01T00:00:00Z' }],
      },
    ],
  });
  const signed = signTrustedList(xml, pem('tl-operator.key'), pem('tl-operator.pem'));
  const refused = (list: string, signers = [operator]): string => {
    try {
      readTrustedList(list, signers);
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };

  it('reads a signed list: its territory and dates, each service with its type, status, history and certificates', () => {
    const list: TrustedList = readTrustedList(signed, [new X509Certificate(pem('rsa.pem')), operator]);
    expect(list).to.deep.include({ territory: 'IT', type: 'http://uri.etsi.org/TrstSvc/TrustedList/TSLType/EUgeneric', sequenceNumber: 42 });
    expect(list.issuedAt.getTime()).to.be.closeTo(Date.now(), 10 * 60_000);
    expect(list.services).to.have.length(1);
    const [service] = list.services;
    expect(service).to.deep.include({ provider: 'Certificatore di prova S.p.A.', name: 'Test QC CA', type: CA_QC, status: `${STATUS}granted` });
    expect(service!.history.map((h) => [h.status, h.from.toISOString()])).to.deep.equal([[`${STATUS}accredited`, '2010-01-01T00:00:00.000Z']]);
    expect(service!.certificates[0]?.subject).to.equal('O=Test\nCN=Test Intermediate');
    expect(service!.additionalInformation).to.deep.equal(['http://uri.etsi.org/TrstSvc/TrustedList/SvcInfoExt/ForeSignatures']);
  });

  it('refuses a list signed by anyone but a configured operator (the KeyInfo it carries is not trusted)', () => {
    expect(refused(signed, [new X509Certificate(pem('rsa.pem'))])).to.match(/^the list's signature does not verify with a configured signer/);
    expect(refused(signTrustedList(xml, pem('rsa.key'), pem('rsa.pem')))).to.match(/^the list's signature does not verify/);
    expect(refused(signed, [])).to.equal('no list signer certificate is configured');
  });

  it("refuses a list its signer may not speak for: another country's (ETSI TS 119 612 §5.7.1), and the EU's list of lists", () => {
    const services = [{ certPem: pem('int.pem'), status: `${STATUS}granted`, statusFrom: '2016-07-01T00:00:00Z' }];
    const french = signTrustedList(trustedListXml({ services, territory: 'FR' }), pem('tl-operator.key'), pem('tl-operator.pem'));
    expect(refused(french)).to.equal("the list is FR's, and its signer's certificate is IT's");
    const root = new X509Certificate(pem('root.pem'));
    expect(refused(signTrustedList(xml, pem('root.key'), pem('root.pem')), [root])).to.equal("the list is IT's, and its signer's certificate is of no country");
    const lotl = trustedListXml({ services, territory: 'EU', listType: 'http://uri.etsi.org/TrstSvc/TrustedList/TSLType/EUlistofthelists' });
    expect(refused(signTrustedList(lotl, pem('tl-operator.key'), pem('tl-operator.pem')))).to.match(/^the EU's list of lists names lists/);
  });

  it('verifies ECDSA signatures (RFC 4051, r and s side by side), and never an algorithm with another kind of key', () => {
    const ecOperator = new X509Certificate(pem('tl-operator-ec.pem'));
    const ecdsa = signTrustedList(xml, pem('tl-operator-ec.key'), pem('tl-operator-ec.pem'), 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384');
    expect(ecdsa).to.include('Algorithm="http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha384"');
    expect(readTrustedList(ecdsa, [operator, ecOperator]).territory).to.equal('IT');
    // The signature value is 96 bytes (P-384's r and s), not DER.
    expect(Buffer.from(/<ds:SignatureValue>([^<]+)</.exec(ecdsa)![1]!.replace(/\s+/g, ''), 'base64')).to.have.length(96);
    expect(refused(ecdsa.replace(`${STATUS}granted`, `${STATUS}withdrawn`), [ecOperator])).to.match(/^the list's signature does not verify/);
    // An RSA algorithm named with the EC operator's key configured: not tried with it.
    expect(refused(ecdsa.replace('xmldsig-more#ecdsa-sha384', 'xmldsig-more#rsa-sha256'), [ecOperator])).to.match(
      /the signature algorithm is not for the ec key of C=IT/,
    );
  });

  it('refuses an altered list: a status, a certificate, a second signature, a signature moved', () => {
    expect(refused(signed.replace(`${STATUS}granted`, `${STATUS}withdrawn`))).to.match(/^the list's signature does not verify/);
    expect(refused(signed.replace('<tsl:SchemeTerritory>IT', '<tsl:SchemeTerritory>FR'))).to.match(/^the list's signature does not verify/);
    const signature = signed.slice(signed.indexOf('<ds:Signature'), signed.indexOf('</ds:Signature>') + '</ds:Signature>'.length);
    expect(refused(signed.replace('<tsl:SchemeInformation>', `<tsl:SchemeInformation>${signature}`))).to.equal('a trusted list has exactly one signature');
    expect(refused(signed.replace(signature, '').replace('<tsl:SchemeInformation>', `<tsl:SchemeInformation>${signature}`))).to.equal(
      "the signature is not the list's own (a child of its root)",
    );
  });

  it("accepts a reference to the root's Id, and refuses the signed list wrapped in a forged one (signature wrapping)", () => {
    const byId = signTrustedList(xml, pem('tl-operator.key'), pem('tl-operator.pem'), undefined, 'id');
    expect(byId).to.match(/<ds:Reference URI="#tsl-1"/);
    expect(readTrustedList(byId, [operator]).services[0]?.status).to.equal(`${STATUS}granted`);
    // A forged root saying "withdrawn", the signed list (its signature moved out) inside it, the signature the forged root's.
    const signature = byId.slice(byId.indexOf('<ds:Signature'), byId.indexOf('</ds:Signature>') + '</ds:Signature>'.length);
    const original = byId.replace(signature, '').replace(/^<\?xml[^>]*>\s*/, '');
    const forged = (id: string) =>
      xml
        .replace('Id="tsl-1"', `Id="${id}"`)
        .replace(`${STATUS}granted`, `${STATUS}withdrawn`)
        .replace('</tsl:SchemeInformation>', `<tsl:SchemeExtensions>${original}</tsl:SchemeExtensions></tsl:SchemeInformation>`)
        .replace('</tsl:TrustServiceStatusList>\n', '')
        .replace(/<\/tsl:TrustServiceStatusList>$/, `${signature}</tsl:TrustServiceStatusList>`);
    expect(refused(forged('tsl-forged'))).to.equal('the signature does not cover the whole list (one enveloped reference to "" or to the root\'s Id)');
    expect(refused(forged('tsl-1'))).to.match(/^the list's signature does not verify .*multiple elements with the same value for the ID/);
  });

  it("refuses, as a refusal and never a crash, a signature xml-crypto cannot read, and lists that are not a member state's", () => {
    const noSignedInfo = signed.replace(/<ds:SignedInfo>[\s\S]*<\/ds:SignedInfo>/, '');
    expect(refused(noSignedInfo)).to.match(/^the list's signature cannot be read: /);
    const twoSignedInfos = signed.replace(/(<ds:SignedInfo>[\s\S]*<\/ds:SignedInfo>)/, '$1$1');
    expect(refused(twoSignedInfos)).to.match(/^the list's signature cannot be read: /);
    const services = [{ certPem: pem('int.pem'), status: `${STATUS}granted`, statusFrom: '2016-07-01T00:00:00Z' }];
    // Issued before its signer's certificate began: refused.
    const early = signTrustedList(
      xml.replace(/<tsl:ListIssueDateTime>[^<]+/, '<tsl:ListIssueDateTime>2015-01-01T00:00:00Z'),
      pem('tl-operator.key'),
      pem('tl-operator.pem'),
    );
    expect(refused(early)).to.equal("the list's signer's certificate was not valid when the list was issued (2015-01-01T00:00:00.000Z)");
    const otherType = signTrustedList(
      trustedListXml({ services, listType: 'http://uri.etsi.org/TrstSvc/TrustedList/TSLType/CClist' }),
      pem('tl-operator.key'),
      pem('tl-operator.pem'),
    );
    expect(refused(otherType)).to.equal("not a member state's trusted list (TSLType http://uri.etsi.org/TrstSvc/TrustedList/TSLType/CClist)");
    // The digest is of what the signature covers: the same list re-serialized (another KeyInfo) has the same.
    const keyInfoless = signed.replace(/<ds:KeyInfo>[\s\S]*<\/ds:KeyInfo>/, '');
    expect(readTrustedList(keyInfoless, [operator]).digest.equals(readTrustedList(signed, [operator]).digest)).to.equal(true);
  });

  it('refuses what a DOM reader and the digest would read differently, and what XML parsers are attacked with', () => {
    // xml-crypto digests a processing instruction's data as text: a status hidden in one.
    expect(refused(signed.replace(`>${STATUS}granted<`, `><?p ${STATUS}granted?><`))).to.equal('the list has a processing instruction');
    expect(refused(signed.replace('<?xml version="1.0" encoding="UTF-8"?>', '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]>'))).to.equal(
      'the list has a DOCTYPE',
    );
    expect(refused(signed.replace('</tsl:SchemeInformation>', '</tsl:Scheme>'))).to.match(/^XML (error|fatalError)|not well-formed/);
    expect(refused('<a/>')).to.equal('not a trusted list (TrustServiceStatusList)');
  });

  describe('real lists, as member states signed them (test/fixtures/trusted-lists)', function () {
    this.timeout(30_000); // Italy's takes about 1.5 s to canonicalize and verify
    const real = (name: string) => {
      const xml = gunzipSync(readFileSync(`test/fixtures/trusted-lists/${name}.xml.gz`)).toString('utf8');
      // The operator's certificate, taken from the KeyInfo here; in production it is configured.
      const b64 = /<(?:\w+:)?KeyInfo[^>]*>[\s\S]*?<(?:\w+:)?X509Certificate>([^<]+)</.exec(xml)![1]!.replace(/\s+/g, '');
      return { xml, signer: new X509Certificate(Buffer.from(b64, 'base64')) };
    };
    const kept = (list: TrustedList) => list.services.filter((s) => KEPT_SERVICE_TYPES.has(s.type));

    it("reads Italy's list (AgID, XAdES, 2 MB): its 363 services, 192 of them qualified CA or timestamping services", () => {
      const { xml, signer } = real('IT');
      expect(signer.subject).to.match(/^C=IT$/m);
      const list = readTrustedList(xml, [signer]);
      expect(list).to.deep.include({ territory: 'IT', sequenceNumber: 141, nextUpdate: new Date('2020-02-27T00:00:00Z') });
      expect(list.services).to.have.length(363);
      expect(kept(list)).to.have.length(192);
      const history = list.services.find((s) => s.history.length > 0);
      expect(history?.history[0]?.from).to.be.instanceOf(Date);
      // One status changed anywhere in the 2 MB, and the list is refused.
      expect(refused(xml.replace(`${STATUS}granted`, `${STATUS}withdrawn`), [signer])).to.match(/^the list's signature does not verify/);
    });

    it("reads Belgium's list, whose reference names the root's Id, and Finland's, which starts with a byte order mark", () => {
      const be = real('BE');
      expect(be.xml).to.match(/<ds:Reference [^>]*URI="#TSL-BE-2019-T2v2"/);
      expect(readTrustedList(be.xml, [be.signer])).to.deep.include({ territory: 'BE', sequenceNumber: 43 });
      const fi = real('FI');
      expect(fi.xml.charCodeAt(0)).to.equal(0xfeff);
      expect(readTrustedList(fi.xml, [fi.signer])).to.deep.include({ territory: 'FI', sequenceNumber: 32 });
      // Another list's operator cannot sign for Belgium.
      expect(refused(be.xml, [fi.signer])).to.match(/^the list's signature does not verify/);
    });
  });
});

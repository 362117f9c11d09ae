import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { verifyP7m } from '../../../src/files/p7m/p7m.verifier.js';
import { judgeAnchors, type ListedService, type ServiceRecord } from '../../../src/files/p7m/p7m.trust.js';
import verifyTask from '../../../src/files/p7m/p7m.task.js';
import { createTrustSource } from '../../../src/files/trust/trust.source.js';
import { p7mFixtures, type P7mFixtures } from '../../support/p7m-fixtures.js';
import { CA_QC, STATUS, TSA_QTST } from '../../support/trusted-list.js';

describe('chains decided by trusted-list services (status at the signing time)', function () {
  this.timeout(60_000);
  let fx: P7mFixtures;
  let int: X509Certificate;
  let tsa: X509Certificate;
  /** When the fixtures' certificates became valid: no signature of theirs is older. */
  let born: number;
  before(() => {
    fx = p7mFixtures();
    int = new X509Certificate(readFileSync(`${fx.dir}/int.pem`));
    tsa = new X509Certificate(readFileSync(`${fx.dir}/tsa.pem`));
    born = Date.parse(int.validFrom);
  });
  const service = (history: Array<[string, number | string]>, o: Partial<ListedService> = {}): ListedService => ({
    territory: 'IT', provider: 'Certificatore di prova S.p.A.', name: 'Test QC CA', type: CA_QC, certificates: [int],
    history: history.map(([status, from]) => ({ status: STATUS + status, from: new Date(from) })), ...o,
  });
  const granted = () => service([['granted', '2016-07-01T00:00:00Z']]);

  it('trusts a chain that ends at a granted CA/QC service, says which, and calls a QcCompliance certificate qualified', () => {
    const v = verifyP7m(fx.der.qualified, { trustServices: [granted()] });
    expect(v).to.include({ outcome: 'signed', chain: 'checked' });
    expect(v.signers[0]).to.include({ chain: 'trusted', qualified: true, fiscalCode: 'RSSMRA80A01H501U' });
    expect(v.signers[0]?.trustService).to.deep.equal({ territory: 'IT', provider: 'Certificatore di prova S.p.A.', name: 'Test QC CA', status: 'granted', qualified: true });
    // Trusted, not qualified: no QcCompliance in the certificate, or a service that is not CA/QC.
    expect(verifyP7m(fx.der.rsa, { trustServices: [granted()] }).signers[0]?.trustService).to.include({ qualified: false });
    const plainCa = service([['granted', '2016-07-01T00:00:00Z']], { type: 'http://uri.etsi.org/TrstSvc/Svctype/CA/PKC' });
    expect(verifyP7m(fx.der.qualified, { trustServices: [plainCa] }).signers[0]?.trustService).to.include({ qualified: false });
  });

  it('does not trust a service withdrawn before the signing time, and does after it: each signature judged at its own time', () => {
    const withdrawn = service([['withdrawn', born - 60_000], ['granted', '2016-07-01T00:00:00Z']]);
    const v = verifyP7m(fx.der.qualified, { trustServices: [withdrawn] });
    expect(v.outcome).to.equal('not-signed');
    expect(v.signers[0]).to.include({ chain: 'untrusted', signatureValid: true });
    expect(v.signers[0]?.problems[0]).to.match(/^chain not trusted: the IT trusted list's service "Test QC CA" was withdrawn at the signing time \(since /);
    expect(v.signers[0]?.trustService).to.equal(undefined);
    // No signingTime (openssl -noattr): judged at `now`, before and after a withdrawal.
    const later = service([['withdrawn', born + 86_400_000], ['granted', '2016-07-01T00:00:00Z']]);
    expect(verifyP7m(fx.der.noattr, { trustServices: [later], now: new Date(born + 3_600_000) }).outcome).to.equal('signed');
    expect(verifyP7m(fx.der.noattr, { trustServices: [later], now: new Date(born + 2 * 86_400_000) }).signers[0]?.problems[0]).to.match(/was withdrawn at the signing time/);
  });

  it('a chain that reaches no listed service is untrusted; a PEM trust anchor still trusts on its own', () => {
    const other = service([['granted', '2016-07-01T00:00:00Z']], { certificates: [new X509Certificate(fx.unrelatedPem)] });
    expect(verifyP7m(fx.der.qualified, { trustServices: [other] }).signers[0]?.problems).to.deep.equal(['chain not trusted: no path to a trust anchor']);
    const both = verifyP7m(fx.der.qualified, { trustServices: [other], trustAnchors: [new X509Certificate(fx.rootPem)] });
    expect(both.outcome).to.equal('signed');
    expect(both.signers[0]?.trustService).to.equal(undefined);
  });

  it('reads the statuses of the lists before eIDAS (1 July 2016) as they were: accredited then, not after', () => {
    const trust = (history: Array<[string, string]>) => ({ anchors: [], services: [service(history)] });
    expect(judgeAnchors([int], trust([['accredited', '2010-01-01T00:00:00Z']]), new Date('2015-06-01T00:00:00Z'))).to.include({ trusted: true });
    expect(judgeAnchors([int], trust([['accredited', '2010-01-01T00:00:00Z']]), new Date('2017-01-01T00:00:00Z'))).to.deep.include({ trusted: false });
    expect(judgeAnchors([int], trust([['granted', '2016-07-01T00:00:00Z'], ['accredited', '2010-01-01T00:00:00Z']]), new Date('2017-01-01T00:00:00Z'))).to.include({ trusted: true, status: `${STATUS}granted` });
    expect(judgeAnchors([int], trust([['granted', '2016-07-01T00:00:00Z']]), new Date('2015-06-01T00:00:00Z'))).to.deep.equal({
      trusted: false, why: 'the IT trusted list\'s service "Test QC CA" had no status yet at the signing time',
    });
    // Of two services with the certificate, one that allowed it is enough.
    const two = { anchors: [], services: [service([['withdrawn', '2016-07-01T00:00:00Z']]), service([['granted', '2016-07-01T00:00:00Z']], { name: 'Other' })] };
    expect(judgeAnchors([int], two, new Date('2020-01-01T00:00:00Z'))).to.deep.include({ trusted: true });
  });

  it('judges a timestamp\'s TSA by the lists too: qualified when the TSA is a listed TSA/QTST service', () => {
    const stamped = fx.timestamped().valid;
    const underCa = verifyP7m(stamped, { trustServices: [granted()] }).signers[0]?.timestamp;
    expect(underCa).to.include({ valid: true, chain: 'trusted' });
    expect(underCa?.trustService).to.include({ name: 'Test QC CA', qualified: false });
    const qtst = service([['granted', '2016-07-01T00:00:00Z']], { type: TSA_QTST, name: 'Test QTST', certificates: [tsa] });
    const v = verifyP7m(stamped, { trustServices: [qtst, granted()] });
    expect(v.outcome).to.equal('signed');
    expect(v.signers[0]?.timestamp?.trustService).to.include({ name: 'Test QTST', qualified: true });
  });

  it('reaches the worker threads through the trust source: read when the lists change, shared between concurrent checks, decoded once per version', async () => {
    const record = (status: string): ServiceRecord => ({
      territory: 'IT', provider: 'P', name: 'Test QC CA', type: CA_QC, history: [{ status: STATUS + status, from: '2016-07-01T00:00:00.000Z' }], certificates: [int.raw.toString('base64')],
    });
    let version = 'IT:1';
    let records = [record('granted')];
    const reads = { version: 0, services: 0 };
    let clock = 0;
    const source = createTrustSource({
      version: () => { reads.version++; return Promise.resolve(version); },
      services: () => { reads.services++; return Promise.resolve(records); },
    }, { refreshMs: 1000, now: () => clock });
    const [a, b] = await Promise.all([source.current(), source.current()]);
    expect(a).to.equal(b);
    expect(reads).to.deep.equal({ version: 1, services: 1 });
    expect(verifyTask({ bytes: fx.der.qualified, services: a! }).signers[0]?.trustService).to.include({ status: 'granted', qualified: true });
    // Within refreshMs nothing is read; after it, only the version, until it changes.
    clock = 500;
    await source.current();
    clock = 1500;
    expect(await source.current()).to.equal(a);
    expect(reads).to.deep.equal({ version: 2, services: 1 });
    version = 'IT:2';
    records = [record('withdrawn')];
    clock = 3000;
    const c = await source.current();
    expect(c?.key).to.not.equal(a?.key);
    expect(verifyTask({ bytes: fx.der.qualified, services: c! }).outcome).to.equal('not-signed');
    // No list left: no services, so chains are not checked.
    version = '';
    clock = 5000;
    expect(await source.current()).to.equal(undefined);
  });
});

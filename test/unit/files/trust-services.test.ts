import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { verifyP7m } from '../../../src/files/p7m/p7m.verifier.js';
import {
  judgeAnchors,
  qualifiedPerList,
  servicesOf,
  statusAt,
  type JudgeOptions,
  type ListedService,
  type ServiceRecord,
} from '../../../src/files/p7m/p7m.trust.js';
import verifyTask from '../../../src/files/p7m/p7m.task.js';
import { createTrustSource } from '../../../src/files/trust/trust.source.js';
import { p7mFixtures, type P7mFixtures } from '../../support/p7m-fixtures.js';
import { CA_QC, STATUS, TSA_QTST } from '../../support/trusted-list.js';

const SVC_INFO = 'http://uri.etsi.org/TrstSvc/TrustedList/SvcInfoExt/';
const DAY = 86_400_000;

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
    territory: 'IT',
    provider: 'Certificatore di prova S.p.A.',
    name: 'Test QC CA',
    type: CA_QC,
    certificates: [int],
    uses: [`${SVC_INFO}ForeSignatures`],
    listNextUpdate: null,
    history: history.map(([status, from]) => ({ status: STATUS + status, from: new Date(from) })),
    ...o,
  });
  const granted = () => service([['granted', '2016-07-01T00:00:00Z']]);

  it('trusts a chain that ends at a granted CA/QC service, says which, and calls a QcCompliance certificate qualified', () => {
    const v = verifyP7m(fx.der.qualified, { trustServices: [granted()] });
    expect(v).to.include({ outcome: 'signed', chain: 'checked' });
    expect(v.signers[0]).to.include({ chain: 'trusted', qualified: true, fiscalCode: 'RSSMRA80A01H501U' });
    expect(v.signers[0]?.trustService).to.deep.equal({
      territory: 'IT',
      provider: 'Certificatore di prova S.p.A.',
      name: 'Test QC CA',
      status: 'granted',
      qualified: true,
    });
    // Trusted, not qualified: no QcCompliance in the certificate, or a service that is not CA/QC.
    expect(verifyP7m(fx.der.rsa, { trustServices: [granted()] }).signers[0]?.trustService).to.include({ qualified: false });
    const plainCa = service([['granted', '2016-07-01T00:00:00Z']], { type: 'http://uri.etsi.org/TrstSvc/Svctype/CA/PKC' });
    expect(verifyP7m(fx.der.qualified, { trustServices: [plainCa] }).signers[0]?.trustService).to.include({ qualified: false });
    // QcCompliance, but a QcType that says website: trusted, and not a qualified signature's certificate.
    const web = verifyP7m(fx.der.qualifiedWeb, { trustServices: [granted()] });
    expect(web.signers[0]).to.include({ chain: 'trusted', qualified: true });
    expect(web.signers[0]?.trustService).to.include({ qualified: false });
  });

  it('with lists in use and none imported, or none reached, no chain is trusted (never "not checked")', () => {
    const none = verifyP7m(fx.der.qualified, { trustServices: [] });
    expect(none).to.include({ outcome: 'not-signed', chain: 'checked' });
    expect(none.signers[0]?.problems).to.deep.equal(['chain not trusted: no path to a trust anchor']);
    const other = service([['granted', '2016-07-01T00:00:00Z']], { certificates: [new X509Certificate(fx.unrelatedPem)] });
    expect(verifyP7m(fx.der.qualified, { trustServices: [other] }).signers[0]?.problems).to.deep.equal(['chain not trusted: no path to a trust anchor']);
    // Without lists or a store, chains are not checked.
    expect(verifyP7m(fx.der.qualified)).to.include({ outcome: 'signed', chain: 'not-checked' });
  });

  it("does not trust a service withdrawn before the signing time, nor, without a timestamp, one withdrawn since: the signer's claimed time proves nothing", () => {
    const before = service([
      ['withdrawn', born - 60_000],
      ['granted', '2016-07-01T00:00:00Z'],
    ]);
    const v = verifyP7m(fx.der.qualified, { trustServices: [before] });
    expect(v.outcome).to.equal('not-signed');
    expect(v.signers[0]).to.include({ chain: 'untrusted', signatureValid: true });
    expect(v.signers[0]?.problems[0]).to.match(
      /^chain not trusted: the IT trusted list's service "Test QC CA" was withdrawn at the time of the check \(no timestamp proves an earlier time\) \(since /,
    );
    expect(v.signers[0]?.trustService).to.equal(undefined);
    // Withdrawn a day after the signature, checked two days after: a backdated signature would look the same.
    const since = service([
      ['withdrawn', born + DAY],
      ['granted', '2016-07-01T00:00:00Z'],
    ]);
    const later = verifyP7m(fx.der.qualified, { trustServices: [since], now: new Date(born + 2 * DAY) });
    expect(later.signers[0]?.problems[0]).to.match(
      /^chain not trusted: the IT trusted list's service "Test QC CA" was withdrawn at the time of the check \(no timestamp proves an earlier time\) \(since .*\)$/,
    );
    // A timestamp proves it: the RSA signer's signature timestamped when the fixtures were made.
    const stamped = verifyP7m(fx.timestamped().valid, { trustServices: [since], now: new Date(born + 2 * DAY) });
    expect(stamped.outcome, stamped.reason).to.equal('signed');
    expect(stamped.signers[0]?.judgedAt).to.include({ by: 'signature-timestamp' });
    expect(stamped.signers[0]?.trustService).to.include({ status: 'granted' });
    // So does a container's timestamp over the envelope (.tsd, .m7m): its signatures existed by then.
    const tsd = verifyP7m(fx.containers().tsd, { trustServices: [since], now: new Date(born + 2 * DAY) });
    expect(tsd.outcome, tsd.reason).to.equal('signed');
    expect(verifyP7m(fx.der.rsa, { trustServices: [since], now: new Date(born + 2 * DAY) }).outcome).to.equal('not-signed');
  });

  it("a list past its next update decides nothing; a signer's chain may not end at a timestamping service", () => {
    const stale = service([['granted', '2016-07-01T00:00:00Z']], { listNextUpdate: new Date(Date.now() - DAY) });
    expect(verifyP7m(fx.der.qualified, { trustServices: [stale] }).signers[0]?.problems[0]).to.match(
      /^chain not trusted: the IT trusted list is out of date \(its next update was due /,
    );
    const fresh = service([['granted', '2016-07-01T00:00:00Z']], { listNextUpdate: new Date(Date.now() + DAY) });
    expect(verifyP7m(fx.der.qualified, { trustServices: [fresh] }).outcome).to.equal('signed');
    const tsaService = service([['granted', '2016-07-01T00:00:00Z']], { type: TSA_QTST, name: 'A QTST' });
    expect(verifyP7m(fx.der.qualified, { trustServices: [tsaService] }).signers[0]?.problems[0]).to.equal(
      'chain not trusted: the IT trusted list\'s service "A QTST" is not a certification authority\'s',
    );
  });

  it('a chain that goes on to a trust store certificate is trusted whatever the lists say of a CA on the way', () => {
    const withdrawn = service([
      ['withdrawn', '2020-01-01T00:00:00Z'],
      ['granted', '2016-07-01T00:00:00Z'],
    ]);
    const both = verifyP7m(fx.der.qualified, { trustServices: [withdrawn], trustAnchors: [new X509Certificate(fx.rootPem)] });
    expect(both.outcome, both.reason).to.equal('signed');
    expect(both.signers[0]).to.include({ chain: 'trusted' });
    expect(both.signers[0]?.trustService).to.equal(undefined);
  });

  it('reads the statuses of the lists before eIDAS (1 July 2016) as they were, whatever order the history came in', () => {
    const o = (at: string): JudgeOptions => ({ role: 'signer', now: new Date(at) });
    const trust = (history: Array<[string, string]>) => ({ anchors: [], services: [service(history)], lists: true });
    expect(judgeAnchors([int], trust([['accredited', '2010-01-01T00:00:00Z']]), new Date('2015-06-01T00:00:00Z'), o('2015-06-01T00:00:00Z'))).to.include({
      trusted: true,
    });
    expect(judgeAnchors([int], trust([['accredited', '2010-01-01T00:00:00Z']]), new Date('2017-01-01T00:00:00Z'), o('2017-01-01T00:00:00Z'))).to.deep.include({
      trusted: false,
    });
    expect(
      judgeAnchors(
        [int],
        trust([
          ['granted', '2016-07-01T00:00:00Z'],
          ['accredited', '2010-01-01T00:00:00Z'],
        ]),
        new Date('2017-01-01T00:00:00Z'),
        o('2017-01-01T00:00:00Z'),
      ),
    ).to.include({ trusted: true, status: `${STATUS}granted` });
    expect(judgeAnchors([int], trust([['granted', '2016-07-01T00:00:00Z']]), new Date('2015-06-01T00:00:00Z'), o('2015-06-01T00:00:00Z'))).to.deep.equal({
      trusted: false,
      why: 'the IT trusted list\'s service "Test QC CA" had no status yet at the signing time',
    });
    // Of two services with the certificate, one that allowed it is enough.
    const two = {
      anchors: [],
      services: [service([['withdrawn', '2016-07-01T00:00:00Z']]), service([['granted', '2016-07-01T00:00:00Z']], { name: 'Other' })],
      lists: true,
    };
    expect(judgeAnchors([int], two, new Date('2020-01-01T00:00:00Z'), o('2020-01-01T00:00:00Z'))).to.deep.include({ trusted: true });
    // A stored history oldest first is put newest first.
    const [loaded] = servicesOf([
      {
        territory: 'IT',
        provider: 'P',
        name: 'S',
        type: CA_QC,
        certificates: [],
        uses: [],
        listNextUpdate: null,
        history: [
          { status: `${STATUS}granted`, from: '2016-07-01T00:00:00Z' },
          { status: `${STATUS}withdrawn`, from: '2020-01-01T00:00:00Z' },
        ],
      },
    ]);
    expect(statusAt(loaded!, new Date('2021-01-01T00:00:00Z'))?.status).to.equal(`${STATUS}withdrawn`);
  });

  it('calls qualified only what the list makes qualified: granted at issuance and signing, for signatures or seals, a certificate of that type', () => {
    const claims = { certificate: int, compliance: true, types: [] as string[] };
    const at = new Date(born + 60_000);
    expect(qualifiedPerList(granted(), claims, at)).to.equal(true);
    // Recognised at national level: trusted, not qualified.
    expect(qualifiedPerList(service([['recognisedatnationallevel', '2016-07-01T00:00:00Z']]), claims, at)).to.equal(false);
    // Granted only after the certificate was issued.
    expect(qualifiedPerList(service([['granted', born + 30_000]]), claims, at)).to.equal(false);
    // A service for website certificates; a certificate for websites only.
    expect(qualifiedPerList(service([['granted', '2016-07-01T00:00:00Z']], { uses: [`${SVC_INFO}ForWebSiteAuthentication`] }), claims, at)).to.equal(false);
    expect(qualifiedPerList(service([['granted', '2016-07-01T00:00:00Z']], { uses: [`${SVC_INFO}ForeSeals`] }), claims, at)).to.equal(true);
    expect(qualifiedPerList(granted(), { ...claims, types: ['0.4.0.1862.1.6.3'] }, at)).to.equal(false);
    expect(qualifiedPerList(granted(), { ...claims, types: ['0.4.0.1862.1.6.1'] }, at)).to.equal(true);
    expect(qualifiedPerList(granted(), { ...claims, compliance: false }, at)).to.equal(false);
  });

  it("judges a timestamp's TSA by the lists too: qualified when the TSA is a listed TSA/QTST service", () => {
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
      territory: 'IT',
      provider: 'P',
      name: 'Test QC CA',
      type: CA_QC,
      history: [{ status: STATUS + status, from: '2016-07-01T00:00:00.000Z' }],
      certificates: [int.raw.toString('base64')],
      uses: [],
      listNextUpdate: null,
    });
    let version = 'IT:1';
    let records = [record('granted')];
    const reads = { version: 0, snapshot: 0 };
    let clock = 0;
    const source = createTrustSource(
      {
        version: () => {
          reads.version++;
          return Promise.resolve(version);
        },
        snapshot: () => {
          reads.snapshot++;
          return Promise.resolve({ version, services: records });
        },
      },
      { refreshMs: 1000, now: () => clock },
    );
    const [a, b] = await Promise.all([source.current(), source.current()]);
    expect(a).to.equal(b);
    expect(reads).to.deep.equal({ version: 1, snapshot: 1 });
    expect(verifyTask({ bytes: fx.der.qualified, services: a }).signers[0]?.trustService).to.include({ status: 'granted', qualified: true });
    // Within refreshMs nothing is read; after it, only the version, until it changes.
    clock = 500;
    await source.current();
    clock = 1500;
    expect(await source.current()).to.equal(a);
    expect(reads).to.deep.equal({ version: 2, snapshot: 1 });
    version = 'IT:2';
    records = [record('withdrawn')];
    clock = 3000;
    const c = await source.current();
    expect(c.key).to.not.equal(a.key);
    expect(verifyTask({ bytes: fx.der.qualified, services: c }).outcome).to.equal('not-signed');
    // No list left: an empty list, so chains are still checked, and none is trusted.
    version = '';
    records = [];
    clock = 5000;
    const none = await source.current();
    expect(verifyTask({ bytes: fx.der.qualified, services: none })).to.include({ outcome: 'not-signed', chain: 'checked' });
  });
});

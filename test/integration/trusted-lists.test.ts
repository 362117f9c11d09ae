import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { configWith, FAST_PIPELINE, harness, newOrg, presign, uploadForm, waitForStatus, type TestOrg } from '../support/harness.js';
import { p7mFixtures, type P7mFixtures } from '../support/p7m-fixtures.js';
import { STATUS, TSA_QTST, signTrustedList, trustedListXml, type ListOptions } from '../support/trusted-list.js';
import { select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';
import { entry } from '../support/entry.js';

/** The CLI as an operator runs it, with the run's configuration. */
function cli(env: Record<string, string>, ...args: string[]) {
  const res = spawnSync(process.execPath, [...entry('src/cli.ts'), ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('EU trusted lists: cli trust import, and signature checks that use them', function () {
  this.timeout(90_000);
  let fx: P7mFixtures;
  let signers: Record<string, string>;
  const pem = (name: string) => readFileSync(`${fx.dir}/${name}`, 'utf8');
  /** A list signed by the Italian test operator, written to a file; returns its path. */
  let n = 0;
  const listFile = (o: Partial<ListOptions> & { services?: ListOptions['services'] } = {}, tamper = (x: string) => x): string => {
    const services = o.services ?? [
      { certPem: pem('int.pem'), status: `${STATUS}granted`, statusFrom: '2016-07-01T00:00:00Z' },
      { certPem: pem('tsa.pem'), type: TSA_QTST, name: 'Test QTST', status: `${STATUS}granted`, statusFrom: '2016-07-01T00:00:00Z' },
    ];
    return fx.file(`list-${++n}.xml`, Buffer.from(tamper(signTrustedList(trustedListXml({ ...o, services }), pem('tl-operator.key'), pem('tl-operator.pem')))));
  };
  const kept = async () =>
    (
      await select<{ territory: string; sequence_number: number }>(
        (await harness()).db,
        'SELECT territory, sequence_number FROM trusted_lists WHERE removed_at IS NULL ORDER BY territory',
        [],
      )
    ).map((r) => `${r.territory} ${r.sequence_number}`);

  before(async () => {
    fx = p7mFixtures();
    signers = { TRUSTED_LIST_SIGNERS: fx.file('list-signers.pem', Buffer.from(pem('tl-operator.pem'))) };
    await harness();
    await (await harness()).db.query('DELETE FROM trusted_lists');
  });
  // Other tests' signature checks run without lists.
  after(async () => {
    await (await harness()).db.query('DELETE FROM trusted_lists');
  });

  it('trust list with no list kept says so on stderr, and how to import one; nothing on stdout, exit 0', () => {
    const run = cli({}, 'trust', 'list');
    expect(run).to.deep.include({ code: 0, stdout: '' });
    expect(run.stderr).to.include('no trusted list kept: import one with `npm run -s cli -- trust import <TSL-IT.xml>`');
  });

  it('imports a list signed by a configured operator, keeping its qualified CA and timestamping services; lists what it keeps', async () => {
    expect(cli({}, 'trust', 'import', listFile())).to.deep.include({ code: 1, stdout: '' });
    expect(cli({}, 'trust', 'import', listFile()).stderr).to.include('TRUSTED_LIST_SIGNERS is not set');

    // A list whose next update is past: kept, with a warning to fetch a newer one (until then it decides no chain).
    const stale = cli(signers, 'trust', 'import', listFile({ sequence: 41, nextUpdate: '2026-07-01T00:00:00Z' }));
    expect(stale.code, stale.stderr).to.equal(0);
    expect(stale.stderr).to.include('its next update was due 2026-07-01T00:00:00.000Z: until a newer list is imported, it decides no chain');
    const list42 = listFile();
    const first = cli(signers, 'trust', 'import', list42);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stdout).to.equal('IT 42\n');
    expect(first.stderr).to.include('kept the IT list 42 with 2 qualified CA and timestamping service(s), replacing list 41');
    expect(first.stderr).to.not.include('next update was due');
    expect(cli(signers, 'trust', 'list').stdout).to.match(/^IT 42 \d{4}-\d{2}-\d{2}T[\d:.]+Z 2100-01-01T00:00:00.000Z 2\n$/);
    const [service] = await select<{ service_type: string; provider: string; history: string }>(
      (await harness()).db,
      'SELECT service_type, provider, history FROM trust_services ORDER BY id',
      [],
    );
    expect(service).to.include({ service_type: 'http://uri.etsi.org/TrstSvc/Svctype/CA/QC', provider: 'Certificatore di prova S.p.A.' });
    expect(JSON.parse(service!.history)).to.deep.equal([{ status: `${STATUS}granted`, from: '2016-07-01T00:00:00.000Z' }]);

    // The same list again changes nothing.
    const again = cli(signers, 'trust', 'import', list42);
    expect(again.code).to.equal(0);
    expect(again.stderr).to.include('the IT list 42 is already kept');
  });

  it('refuses, changing nothing: an older list, another list under the same number, an altered one, one its signer may not sign, a missing file', async () => {
    expect(cli(signers, 'trust', 'import', listFile({ sequence: 43 })).code).to.equal(0);
    const refusals: Array<[string, string]> = [
      [listFile({ sequence: 42 }), 'list 42 is older than the IT list 43 imported before'],
      [
        listFile({ sequence: 43, services: [{ certPem: pem('int.pem'), status: `${STATUS}withdrawn`, statusFrom: '2020-01-01T00:00:00Z' }] }),
        'another IT list with the same sequence number 43',
      ],
      [listFile({ sequence: 44 }, (x) => x.replace(`${STATUS}granted`, `${STATUS}withdrawn`)), "the list's signature does not verify"],
      [listFile({ sequence: 44, territory: 'FR' }), "the list is FR's, and its signer's certificate is IT's"],
      ['/nonexistent/list.xml', 'no such file'],
    ];
    for (const [file, why] of refusals) {
      const run = cli(signers, 'trust', 'import', file);
      expect(run.code, why).to.equal(1);
      expect(run.stderr, why).to.include(`refused: ${why}`);
    }
    expect(await kept()).to.deep.equal(['IT 43']);
    // Several files: each on its own; one refused makes the exit code 1.
    const list45 = listFile({ sequence: 45 });
    const mixed = cli(signers, 'trust', 'import', '/nonexistent/list.xml', list45);
    expect(mixed).to.deep.include({ code: 1, stdout: 'IT 45\n' });
    expect(await kept()).to.deep.equal(['IT 45']);
    expect(cli(signers, 'trust', 'remove', 'it').code).to.equal(0);
    expect(await kept()).to.deep.equal([]);
    expect(cli(signers, 'trust', 'list').stdout).to.equal('');
    expect(cli(signers, 'trust', 'remove', 'IT').code).to.equal(1);
    // A removal does not open the door to an older list; the same list comes back.
    const replayed = cli(signers, 'trust', 'import', listFile({ sequence: 44 }));
    expect(replayed.code).to.equal(1);
    expect(replayed.stderr).to.include('refused: list 44 is older than the IT list 45 imported before (removed since)');
    expect(cli(signers, 'trust', 'import', list45).code).to.equal(0);
    expect(await kept()).to.deep.equal(['IT 45']);
    // A signature xml-crypto cannot read is that file's refusal, not a crash of the batch.
    const broken = cli(
      signers,
      'trust',
      'import',
      listFile({ sequence: 46 }, (x) => x.replace(/<ds:SignedInfo>[\s\S]*<\/ds:SignedInfo>/, '')),
      listFile({ sequence: 46 }),
    );
    expect(broken).to.deep.include({ code: 1, stdout: 'IT 46\n' });
    expect(broken.stderr).to.include("refused: the list's signature cannot be read");
    expect(cli(signers, 'trust', 'frobnicate').code).to.equal(2);
  });

  it("imports Italy's real list (AgID's, 2019: test/fixtures/trusted-lists) with AgID's certificate configured", async () => {
    const xml = gunzipSync(readFileSync('test/fixtures/trusted-lists/IT.xml.gz')).toString('utf8');
    const agid = /<ds:KeyInfo[^>]*>[\s\S]*?<ds:X509Certificate>([^<]+)</.exec(xml)![1]!.replace(/\s+/g, '');
    const env = { TRUSTED_LIST_SIGNERS: fx.file('agid.pem', Buffer.from(`-----BEGIN CERTIFICATE-----\n${agid}\n-----END CERTIFICATE-----\n`)) };
    const run = cli(env, 'trust', 'import', fx.file('TSL-IT.xml', Buffer.from(xml)));
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.equal('IT 141\n');
    expect(cli(env, 'trust', 'list').stdout).to.equal('IT 141 2019-09-04T08:00:00.000Z 2020-02-27T00:00:00.000Z 192\n');
    const [names] = await select<{ providers: number; certificates: number }>(
      (await harness()).db,
      'SELECT COUNT(DISTINCT provider) AS providers, SUM(JSON_LENGTH(certificates)) AS certificates FROM trust_services',
      [],
    );
    expect(Number(names?.certificates)).to.equal(192);
    expect(Number(names?.providers)).to.be.greaterThan(10);
    expect(cli(env, 'trust', 'remove', 'IT').code).to.equal(0);
  });

  describe('the signature worker', () => {
    let workers: RunningWorkers;
    let org: TestOrg;
    before(async () => {
      // Sequence numbers from the tests above (Italy's real list, 141, among them) stay out of the way.
      await (await harness()).db.query('DELETE FROM trusted_lists');
      workers = await startWorkers(['scan', 'signature'], {
        config: configWith({ ...FAST_PIPELINE, ...signers, TRUSTED_LISTS_REFRESH_SECONDS: '0' }),
        logger: createLogger('silent'),
      });
      org = await newOrg();
    });
    after(async () => {
      await workers.close();
    });

    async function judged(content: Buffer) {
      const up = await presign(org, { fileType: 'pdf.p7m', isDocumentPublic: true }, 2);
      expect((await uploadForm(up.url, up.fields, content, 'document.pdf.p7m')).status).to.equal(204);
      await waitForStatus(up.uuid, ['Clean', 'Signed', 'Infected', 'Error'], 20_000);
      return (await (await harness()).http.get(`/api/v2/files/${up.uuid}`).set('X-API-Key', org.key)).body as {
        status: string;
        signature: {
          chain: string;
          signers: Array<{ chain: string; problems: string[]; trustService?: Record<string, unknown>; timestamp?: { trustService?: Record<string, unknown> } }>;
        };
      };
    }

    it('decides chains with the lists imported, as they change: Signed and qualified under a granted service, Clean once it was withdrawn before the signature', async () => {
      expect(cli(signers, 'trust', 'import', listFile({ sequence: 50 })).code).to.equal(0);
      const qualified = await judged(fx.der.qualified);
      expect(qualified.status).to.equal('Signed');
      expect(qualified.signature.chain).to.equal('checked');
      expect(qualified.signature.signers[0]).to.deep.include({
        chain: 'trusted',
        trustService: { territory: 'IT', provider: 'Certificatore di prova S.p.A.', name: 'Test QC CA', status: 'granted', qualified: true },
      });
      const stamped = await judged(fx.timestamped().valid);
      expect(stamped.status).to.equal('Signed');
      expect(stamped.signature.signers[0]?.timestamp?.trustService).to.include({ name: 'Test QTST', qualified: true });

      // The supervisor withdrew the CA an hour before the signature: a newer list says so.
      // (The fixtures, signatures included, were made in this process: less than an hour ago.)
      const withdrawnAt = new Date(Date.now() - 3_600_000).toISOString();
      const services = [
        {
          certPem: pem('int.pem'),
          status: `${STATUS}withdrawn`,
          statusFrom: withdrawnAt,
          history: [{ status: `${STATUS}granted`, from: '2016-07-01T00:00:00Z' }],
        },
      ];
      expect(cli(signers, 'trust', 'import', listFile({ sequence: 51, services })).code).to.equal(0);
      const withdrawn = await judged(fx.der.qualified);
      expect(withdrawn.status).to.equal('Clean');
      expect(withdrawn.signature.signers[0]?.chain).to.equal('untrusted');
      expect(withdrawn.signature.signers[0]?.problems[0]).to.match(
        /^chain not trusted: the IT trusted list's service "Test QC CA" was withdrawn at the time of the check \(no timestamp proves an earlier time\)/,
      );

      // No list kept: lists are still in use (TRUSTED_LIST_SIGNERS), so chains are checked and none is trusted.
      expect(cli(signers, 'trust', 'remove', 'IT').code).to.equal(0);
      const none = await judged(fx.der.qualified);
      expect(none.status).to.equal('Clean');
      expect(none.signature.chain).to.equal('checked');
      expect(none.signature.signers[0]?.problems).to.deep.equal(['chain not trusted: no path to a trust anchor']);
    });
  });
});

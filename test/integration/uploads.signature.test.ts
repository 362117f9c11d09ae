import { expect } from 'chai';
import { configWith, harness, newOrg, presign, uploadForm, waitForStatus, type TestOrg } from '../support/harness.js';
import { FAST_PIPELINE } from '../support/harness.js';
import { flipByte, p7mFixtures, type P7mFixtures } from '../support/p7m-fixtures.js';
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';

const FINAL = ['Clean', 'Signed', 'Infected', 'Error'];

/** Uploads `content` as a public v2 document (or not) and waits for its final status; returns the extended view. */
async function judged(org: TestOrg, content: Buffer | string, body: Record<string, unknown> = { fileType: 'pdf.p7m', isDocumentPublic: true }) {
  const up = await presign(org, body, 2);
  expect((await uploadForm(up.url, up.fields, content, 'document.pdf.p7m')).status).to.equal(204);
  await waitForStatus(up.uuid, FINAL, 20_000);
  const view = await (await harness()).http.get(`/api/v2/files/${up.uuid}`).set('X-API-Key', org.key);
  expect(view.status).to.equal(200);
  return view.body as {
    status: string;
    signature: null | { outcome: string; reason?: string; chain: string; levels: number; signers: Array<Record<string, unknown>> };
  };
}

describe('uploads: .p7m signature check of public v2 documents (real pipeline, worker threads)', function () {
  this.timeout(60_000);
  let fx: P7mFixtures;
  let org: TestOrg;
  before(() => {
    fx = p7mFixtures();
  });
  beforeEach(async () => {
    org = await newOrg();
  });

  describe('without a trust store', () => {
    let workers: RunningWorkers;
    before(async () => {
      workers = await startWorkers(['scan', 'signature'], { config: configWith(FAST_PIPELINE), logger: createLogger('silent') });
    });
    after(async () => {
      await workers.close();
    });

    it('a validly signed envelope (RSA DER, ECDSA, RSA-PSS, PEM, nested, two signers) becomes Signed, the chain reported as not checked', async () => {
      for (const [name, envelope] of [
        ['rsa', fx.der.rsa],
        ['ec', fx.der.ec],
        ['pss', fx.der.pss],
        ['pem', fx.pem],
        ['nested', fx.der.nested],
        ['two signers', fx.der.twoSigners],
      ] as const) {
        const view = await judged(org, envelope);
        expect(view.status, name).to.equal('Signed');
        expect(view.signature).to.include({ outcome: 'signed', chain: 'not-checked' });
        expect(
          view.signature?.signers.every((s) => s.signatureValid === true && s.digestMatches === true && s.chain === 'not-checked'),
          name,
        ).to.equal(true);
      }
    });

    it('tampered content, a tampered signature or an expired certificate leave it Clean with the reason, never Signed', async () => {
      const tamperedContent = flipByte(fx.der.rsa, fx.der.rsa.indexOf(fx.marker) + 3);
      const view = await judged(org, tamperedContent);
      expect(view.status).to.equal('Clean');
      expect(view.signature?.outcome).to.equal('not-signed');
      expect(view.signature?.signers[0]).to.include({ digestMatches: false });
      const expired = await judged(org, fx.der.expired);
      expect(expired.status).to.equal('Clean');
      expect(expired.signature?.signers[0]).to.include({ certificateValid: false });
      const garbage = await judged(org, Buffer.concat([fx.der.rsa.subarray(0, 200), Buffer.from('truncated')]));
      expect(garbage.status).to.equal('Clean');
      expect(garbage.signature?.reason).to.be.a('string');
    });

    it('a public document that is not an envelope is Clean with the reason; a non-public one and a v1 upload get no signature check', async () => {
      const plain = await judged(org, '%PDF-1.7 not signed');
      expect(plain.status).to.equal('Clean');
      expect(plain.signature).to.include({ outcome: 'not-signed', levels: 0 });
      const notPublic = await judged(org, fx.der.rsa, { fileType: 'pdf.p7m', isDocumentPublic: false });
      expect(notPublic).to.include({ status: 'Clean', signature: null });
      const up = await presign(org, { fileType: 'pdf.p7m' }, 1);
      await uploadForm(up.url, up.fields, fx.der.rsa);
      expect((await waitForStatus(up.uuid, FINAL)).signature).to.equal(null);
      expect((await waitForStatus(up.uuid, FINAL)).status).to.equal('Clean');
    });
  });

  describe('with SIGNATURE_TRUST_STORE', () => {
    let workers: RunningWorkers;
    before(async () => {
      const store = fx.file('trust-store.pem', Buffer.from(fx.rootPem));
      workers = await startWorkers(['scan', 'signature'], {
        config: configWith({ ...FAST_PIPELINE, SIGNATURE_TRUST_STORE: store }),
        logger: createLogger('silent'),
      });
    });
    after(async () => {
      await workers.close();
    });

    it("Signed when the chain reaches the store (through the envelope's intermediate); Clean, chain untrusted, when it does not", async () => {
      const trusted = await judged(org, fx.der.rsa);
      expect(trusted.status).to.equal('Signed');
      expect(trusted.signature).to.include({ outcome: 'signed', chain: 'checked' });
      expect(trusted.signature?.signers[0]).to.include({ chain: 'trusted' });
      const untrusted = await judged(org, fx.der.selfSigned);
      expect(untrusted.status).to.equal('Clean');
      expect(untrusted.signature?.signers[0]).to.include({ chain: 'untrusted', signatureValid: true });
    });
  });
});

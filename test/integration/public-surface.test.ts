// The public verification under attack (issue 27): stalled bodies from one client, guessers
// spread over an IPv6 /64 or over several web processes, a surge of misses, many matches, and
// documents the issuer did not make public. Against the real app, MariaDB and Redis.
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import supertest from 'supertest';
import { FILE_SQL } from '../../src/files/file.sql.js';
import type { GuaranteeV2 } from '../../src/guarantees/guarantee.schemas.js';
import { checkChain, type AmendmentJson } from '../../src/notarization/proof-checks.js';
import type { AmendmentProof } from '../../src/notarization/proof.js';
import { MAX_PUBLIC_AMENDMENTS } from '../../src/verification/verification.service.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { producerConnection } from '../../src/shared/queues.js';
import { create, notarizeAll, registered, unique, SIGNATURE } from '../support/guarantees.js';
import { appOver, configWith, eventually, harness, issueFile, newOrg, presign } from '../support/harness.js';
import { freePort, tcpProxy } from '../support/tcp-proxy.js';

const VERIFY = '/api/public/v1/verifications';

/** An app over the run's database and queues, with these settings (per process, in memory, unless `redis`). */
async function app(overrides: Record<string, string>, opts: { redis?: ReturnType<typeof producerConnection>; logger?: ReturnType<typeof createLogger> } = {}) {
  const base = await harness();
  return appOver({
    config: configWith(overrides),
    db: base.db,
    queues: base.queues,
    events: base.events,
    ...(opts.redis && { redis: opts.redis }),
    ...(opts.logger && { logger: opts.logger }),
  });
}

/** A logger whose lines are kept. */
function captured(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger('warn', sink), lines };
}

describe('the public verification under attack', function () {
  this.timeout(60_000);

  describe('bodies in flight', () => {
    let server: Server;
    let port: number;
    const sockets: Socket[] = [];

    before(async () => {
      const registry = await app({ TRUST_PROXY: 'true', PUBLIC_BODY_TIMEOUT_MS: '1500', VERIFY_RATE_PER_MINUTE: '30' });
      const handle = registry.callback();
      server = createServer((req, res) => {
        void handle(req, res);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
    });

    after(async () => {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    /** A chunked POST from `address` (behind the router) that sends its headers and no body; what the server answers, once it does. */
    function stalled(address: string): { answer: Promise<string> } {
      const socket = connect(port, '127.0.0.1');
      sockets.push(socket);
      socket.setEncoding('latin1');
      let text = '';
      socket.on('data', (d: string) => (text += d));
      socket.write(`POST ${VERIFY} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nX-Forwarded-For: ${address}\r\n\r\n`);
      return { answer: new Promise((resolve) => socket.on('close', () => resolve(text))) };
    }

    it("keeps one client's stalled chunked bodies its own: another address verifies at once, and the stalled ones are cut with 408", async () => {
      const { policyNumber, checkCode } = await registered();
      await notarizeAll();
      const held = Array.from({ length: 8 }, () => stalled('198.51.100.20'));
      // Every stalled request is in: its headers read and its body awaited.
      await new Promise((r) => setTimeout(r, 300));
      const other = await fetch(`http://127.0.0.1:${port}${VERIFY}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': '203.0.113.30' },
        body: JSON.stringify({ policyNumber, checkCode }),
      });
      expect(other.status).to.equal(200);
      // The same client, too, still gets in: its share counts 4 KiB a chunked body, not 1 MiB.
      const same = await fetch(`http://127.0.0.1:${port}${VERIFY}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Forwarded-For': '198.51.100.20' },
        body: JSON.stringify({ policyNumber, checkCode }),
      });
      expect(same.status).to.equal(200);
      const answers = await Promise.all(held.map((h) => h.answer));
      for (const a of answers) expect(a).to.match(/^HTTP\/1\.1 408 /);
    });
  });

  describe('guessing', () => {
    it('limits an IPv6 client by its /64 as well as by its address: new addresses of the same /64 get 429, another /64 does not', async () => {
      const { policyNumber, checkCode } = await registered();
      const http = supertest((await app({ TRUST_PROXY: 'true', VERIFY_RATE_PER_MINUTE: '3', VERIFY_RATE_PER_MINUTE_PER_NETWORK: '5' })).callback());
      const from = (address: string) =>
        http
          .post(VERIFY)
          .set('X-Forwarded-For', address)
          .send({ policyNumber, checkCode: `${checkCode}-guess` });
      const statuses = [];
      for (let i = 1; i <= 7; i++) statuses.push((await from(`2001:db8:1:2::${i.toString(16)}`)).status);
      expect(statuses).to.deep.equal([404, 404, 404, 404, 404, 429, 429]);
      // One address of another /64: its own limits.
      expect((await from('2001:db8:1:3::1')).status).to.equal(404);
      // One address, three times: its own limit (3) before its network's.
      const one = [];
      for (let i = 0; i < 4; i++) one.push((await from('2001:db8:9:9::1')).status);
      expect(one).to.deep.equal([404, 404, 404, 429]);
      // An IPv4-mapped address is its IPv4 address.
      const v4 = [];
      for (let i = 0; i < 4; i++) v4.push((await from(i % 2 ? '::ffff:192.0.2.7' : '192.0.2.7')).status);
      expect(v4).to.deep.equal([404, 404, 404, 429]);
    });

    it('counts a client once across web processes (Redis): the limit holds however its requests are spread', async () => {
      const { redis } = await harness();
      const settings = { TRUST_PROXY: 'true', VERIFY_RATE_PER_MINUTE: '3', QUEUE_PREFIX: `limits-${unique()}` };
      const a = supertest((await app(settings, { redis })).callback());
      const b = supertest((await app(settings, { redis })).callback());
      const body = { policyNumber: `P-${unique()}`, checkCode: `C-${unique()}-${unique()}` };
      const from = (http: typeof a) => http.post(VERIFY).set('X-Forwarded-For', '198.51.100.40').send(body);
      // Two each: per process both would pass; together the fourth is over the limit.
      expect((await from(a)).status).to.equal(404);
      expect((await from(b)).status).to.equal(404);
      expect((await from(a)).status).to.equal(404);
      const fourth = await from(b);
      expect(fourth.status).to.equal(429);
      expect(Number(fourth.headers['retry-after'])).to.be.within(1, 60);
      const keys = await redis.keys(`${settings.QUEUE_PREFIX}:limit:verify-address:*`);
      expect(keys).to.have.length(1);
    });

    it('keeps limiting, in memory, while Redis is unreachable, and never answers 500', async () => {
      const dead = producerConnection(`redis://127.0.0.1:${await freePort()}`);
      dead.on('error', () => undefined);
      try {
        const http = supertest((await app({ TRUST_PROXY: 'true', VERIFY_RATE_PER_MINUTE: '2' }, { redis: dead })).callback());
        const from = () =>
          http
            .post(VERIFY)
            .set('X-Forwarded-For', '198.51.100.41')
            .send({ policyNumber: `P-${unique()}`, checkCode: `C-${unique()}-${unique()}` });
        expect([(await from()).status, (await from()).status, (await from()).status]).to.deep.equal([404, 404, 429]);
      } finally {
        dead.disconnect();
      }
    });

    it('keeps answering, and limiting in memory, while Redis hangs (accepts, never answers): each request waits at most the time limit, then none asks Redis for a while', async () => {
      const { config } = await harness();
      const target = new URL(config.REDIS_URL);
      const proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
      const hanging = producerConnection(`redis://127.0.0.1:${proxy.port}`);
      hanging.on('error', () => undefined);
      try {
        await eventually('the connection through the proxy to be ready', () => hanging.status === 'ready');
        const http = supertest(
          (await app({ TRUST_PROXY: 'true', VERIFY_RATE_PER_MINUTE: '2', QUEUE_PREFIX: `hang-${unique()}` }, { redis: hanging })).callback(),
        );
        proxy.stall();
        const from = async () => {
          const started = Date.now();
          const res = await http
            .post(VERIFY)
            .set('X-Forwarded-For', '2001:db8:77::1')
            .send({ policyNumber: `P-${unique()}`, checkCode: `C-${unique()}-${unique()}` });
          return { status: res.status, ms: Date.now() - started };
        };
        const first = await from();
        const second = await from();
        const third = await from();
        expect([first.status, second.status, third.status]).to.deep.equal([404, 404, 429]);
        // The first waited for Redis (both limits at once, one time limit); the others did not ask it.
        expect(first.ms).to.be.below(2_000);
        expect(Math.max(second.ms, third.ms)).to.be.below(first.ms + 200);
      } finally {
        hanging.disconnect();
        await proxy.stop();
      }
    });

    it('counts misses for the whole service: a metric, and one warning in the minute they reach VERIFY_MISS_SURGE_PER_MINUTE, across processes', async () => {
      const { redis } = await harness();
      const log = captured();
      const settings = {
        VERIFY_RATE_PER_MINUTE: '0',
        VERIFY_MISS_SURGE_PER_MINUTE: '4',
        QUEUE_PREFIX: `misses-${unique()}`,
        METRICS_TOKEN: 'metrics-token-0123456789',
      };
      const a = await app(settings, { redis, logger: log.logger });
      const b = await app(settings, { redis, logger: log.logger });
      const miss = (x: typeof a) =>
        supertest(x.callback())
          .post(VERIFY)
          .send({ policyNumber: `P-${unique()}`, checkCode: `C-${unique()}-${unique()}` });
      for (const x of [a, b, a, b, a, b]) expect((await miss(x)).status).to.equal(404);
      const surging = () => log.lines.filter((l) => String(l.msg).includes('misses are surging'));
      await eventually('the surge to be logged', () => surging().length > 0);
      await new Promise((r) => setTimeout(r, 200));
      // Once for the service: the process whose miss reached 4 logs it, no other, and not again at 5 or 6.
      expect(surging()).to.have.length(1);
      expect(surging()[0]).to.include({ misses: 4, level: 40 });
      const metrics = await supertest(a.callback()).get('/metrics').set('Authorization', `Bearer ${settings.METRICS_TOKEN}`);
      expect(metrics.text).to.match(/^verification_misses_total 3$/m);
      expect(metrics.text).to.match(/^verification_misses_this_minute [3-6]$/m);
    });

    it('answers at most 10 matches, the oldest', async () => {
      const org = await newOrg();
      const policyNumber = `MANY-${unique()}`;
      const checkCode = `K${unique()}${unique().toLowerCase()}`;
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push((await create(org, { details: { policyNumber, checkCode } })).id as string);
      const res = await supertest((await app({ VERIFY_RATE_PER_MINUTE: '0' })).callback())
        .post(VERIFY)
        .send({ policyNumber, checkCode });
      expect(res.status).to.equal(200);
      expect((res.body.matches as Array<{ guarantee: { id: string } }>).map((m) => m.guarantee.id)).to.deep.equal(ids.slice(0, 10));
    });
  });

  describe('bounded work', () => {
    it('lists at most the latest 100 amendments, counting the earlier ones; the state is the kept fold; the listed chain checks from the first listed proof', async function () {
      this.timeout(120_000);
      const { org, id, policyNumber, checkCode } = await registered();
      const { http } = await harness();
      for (let i = 1; i <= MAX_PUBLIC_AMENDMENTS + 5; i++) {
        const body =
          i % 2
            ? { type: 'AMOUNT_CHANGE', effectiveAt: '2026-01-01T00:00:00Z', garantedAmount: 1000 + i }
            : { type: 'EXTENSION', effectiveAt: '2026-01-01T00:00:00Z', expiresAt: new Date(Date.UTC(2028, 0, i)).toISOString() };
        const res = await http.post(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key).send(body);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
      }
      await notarizeAll();
      await notarizeAll();
      const res = await supertest((await app({ VERIFY_RATE_PER_MINUTE: '0' })).callback())
        .post(VERIFY)
        .send({ policyNumber, checkCode });
      expect(res.status).to.equal(200);
      const m = res.body.matches[0] as {
        guarantee: GuaranteeV2;
        amendments: Array<AmendmentJson & { proof: AmendmentProof | null }>;
        earlierAmendments: number;
        state: { lastSeq: number; garantedAmount: number };
      };
      expect(m.amendments).to.have.length(MAX_PUBLIC_AMENDMENTS);
      expect(m.amendments.map((a) => a.seq)).to.deep.equal(Array.from({ length: MAX_PUBLIC_AMENDMENTS }, (_, i) => i + 6));
      expect(m.earlierAmendments).to.equal(5);
      expect(m.state).to.include({ lastSeq: MAX_PUBLIC_AMENDMENTS + 5, garantedAmount: 1000 + MAX_PUBLIC_AMENDMENTS + 5 });
      const proofs = m.amendments.map((a) => a.proof ?? undefined);
      expect(proofs.every(Boolean)).to.equal(true);
      const chain = checkChain(m.guarantee, m.amendments, proofs, { before: m.earlierAmendments });
      expect(
        chain.filter((c) => !c.ok),
        JSON.stringify(chain.filter((c) => !c.ok)),
      ).to.deep.equal([]);
      // Without the count of those before, the window is no chain from the guarantee.
      expect(checkChain(m.guarantee, m.amendments, proofs).some((c) => !c.ok)).to.equal(true);
    });
  });

  describe('private documents', () => {
    it('lists only the documents uploaded as public or through v1, counts the others, and names a signer by common name only, on the record and its amendments', async () => {
      const { org, id, policyNumber, checkCode, pdf, p7m } = await registered();
      const { db, http } = await harness();
      const secret = await issueFile(org.orgId, { status: 'Signed', checksum: 'a'.repeat(64), fileName: 'riservato-mario-rossi.pdf.p7m', ext: 'pdf.p7m' });
      await execute(db, 'UPDATE files SET signature = $2 WHERE object_key = $1', [secret, SIGNATURE]);
      const withSecret = await create(org, {
        details: { policyNumber, checkCode: `${checkCode}2` },
        docs: [
          { type: 'BAIL_ACT', key: pdf },
          { type: 'BAIL_ACT', key: secret },
        ],
      });
      const shown = await issueFile(org.orgId, { status: 'Clean', checksum: 'b'.repeat(64), fileName: 'appendice.pdf', public: true });
      const hidden = await issueFile(org.orgId, { status: 'Clean', checksum: 'c'.repeat(64), fileName: 'appendice-riservata.pdf' });
      const amended = await http
        .post(`/api/v2/guarantees/${withSecret.id as string}/amendments`)
        .set('X-API-Key', org.key)
        .send({ type: 'EXTENSION', effectiveAt: '2027-06-01T00:00:00Z', expiresAt: '2029-12-31T00:00:00Z', docs: [{ key: shown }, { key: hidden }] });
      expect(amended.status, JSON.stringify(amended.body)).to.equal(200);
      await notarizeAll();

      const publicHttp = supertest((await app({ VERIFY_RATE_PER_MINUTE: '0' })).callback());
      const res = await publicHttp.post(VERIFY).send({ policyNumber, checkCode: `${checkCode}2` });
      expect(res.status).to.equal(200);
      const [m] = res.body.matches as Array<{
        guarantee: { docs: Array<{ key: string }> };
        documents: Array<{ key: string; signature: { signers: Array<Record<string, unknown>> } | null }>;
        privateDocuments: number;
        amendments: Array<{ docs: Array<{ key: string }>; privateDocuments: number }>;
      }>;
      expect(m?.documents.map((d) => d.key)).to.deep.equal([pdf]);
      expect(m?.guarantee.docs.map((d) => d.key)).to.deep.equal([pdf]);
      expect(m?.privateDocuments).to.equal(1);
      expect(m?.amendments[0]?.docs.map((d) => d.key)).to.deep.equal([shown]);
      expect(m?.amendments[0]?.privateDocuments).to.equal(1);
      const text = JSON.stringify(res.body);
      for (const secretThing of [secret, hidden, 'riservato-mario-rossi', 'appendice-riservata', 'a'.repeat(64), 'c'.repeat(64), 'RSSMRA80A01H501U'])
        expect(text, secretThing).not.to.include(secretThing);

      // The public .p7m of the first guarantee: its signer by common name only.
      const first = await publicHttp.post(VERIFY).send({ policyNumber, checkCode });
      const signed = (first.body.matches[0].documents as Array<{ key: string; signature: { signers: Array<Record<string, unknown>> } | null }>).find(
        (d) => d.key === p7m,
      );
      expect(signed?.signature?.signers[0]).to.include({ commonName: 'Mario Rossi' }).and.not.have.any.keys('subject', 'fiscalCode');
      expect(first.body.matches[0].guarantee.id).to.equal(id);
    });

    it('records which API version asked for an upload URL: a v1 upload is public, a v2 one as its isDocumentPublic says', async () => {
      const org = await newOrg();
      const { db } = await harness();
      const v1 = await presign(org, { fileType: 'pdf' }, 1);
      const v2 = await presign(org, { fileType: 'pdf' }, 2);
      const v2public = await presign(org, { fileType: 'pdf', isDocumentPublic: true }, 2);
      const rows = await select<{ uuid: string; is_document_public: number; upload_api: number }>(
        db,
        'SELECT uuid, is_document_public, upload_api FROM files WHERE uuid IN ($1)',
        [[v1.uuid, v2.uuid, v2public.uuid]],
        undefined,
        { prepared: false },
      );
      const byUuid = new Map(rows.map((r) => [r.uuid, [Number(r.is_document_public), Number(r.upload_api)]]));
      expect([byUuid.get(v1.uuid), byUuid.get(v2.uuid), byUuid.get(v2public.uuid)]).to.deep.equal([
        [0, 1],
        [0, 2],
        [1, 2],
      ]);
      const shown = await select<{ uuid: string }>(
        db,
        `SELECT uuid FROM files f WHERE uuid IN ($1) AND ${FILE_SQL.shownPublicly('f')} ORDER BY uuid`,
        [[v1.uuid, v2.uuid, v2public.uuid]],
        undefined,
        {
          prepared: false,
        },
      );
      expect(shown.map((r) => r.uuid).sort()).to.deep.equal([v1.uuid, v2public.uuid].sort());
    });
  });
});

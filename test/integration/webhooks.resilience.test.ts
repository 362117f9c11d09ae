// Webhooks when things fail: Redis away while events are committed (the outbox keeps them,
// and every one is delivered once Redis is back), and a delivery worker killed mid-batch
// (nothing lost; duplicates on the wire are deduplicable by webhook-id).
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import supertest from 'supertest';
import { openQueues } from '../../src/queues.js';
import { select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { producerConnection } from '../../src/shared/queues.js';
import { startWorkers } from '../../workers/index.js';
import { configWith, eventually, harness, newOrg, type TestOrg, appOver, eventsOver } from '../support/harness.js';
import { receiver, type Received } from '../support/receiver.js';
import { tcpProxy } from '../support/tcp-proxy.js';
import { entry } from '../support/entry.js';

const silent = createLogger('silent');
const FAST = { WORKER_STALLED_INTERVAL_MS: '1000', WORKER_LOCK_DURATION_MS: '2000', WEBHOOK_TIMEOUT_MS: '3000' };

const uniqueIds = (received: Received[]) => new Set(received.map((r) => String(r.headers['webhook-id'])));

async function register(http: ReturnType<typeof supertest>, org: TestOrg, url: string): Promise<void> {
  const res = await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: url });
  expect(res.status).to.equal(200);
}

describe('webhooks: resilience', function () {
  this.timeout(90_000);

  it('keeps events committed while Redis is away and delivers each exactly once per endpoint when it is back', async () => {
    const { config, db } = await harness();
    const redisUrl = new URL(config.REDIS_URL);
    const proxy = await tcpProxy({ host: redisUrl.hostname, port: Number(redisUrl.port) });
    const viaProxy = `redis://127.0.0.1:${proxy.port}${redisUrl.pathname}`;
    // The API and the worker both reach Redis through the relay that is about to be cut.
    const redis = producerConnection(viaProxy);
    redis.on('error', () => undefined);
    const queues = openQueues(redis, config.QUEUE_PREFIX, silent);
    const events = eventsOver(db, queues, config, silent);
    const http = supertest(appOver({ config, logger: silent, db, queues, events }).callback());
    const workers = await startWorkers(['webhooks'], { config: configWith({ ...FAST, REDIS_URL: viaProxy }), logger: silent });
    const a = await receiver('/a');
    const b = await receiver('/b');
    const org = await newOrg();
    try {
      await register(http, org, a.url);
      await register(http, org, b.url);
      await proxy.stop();
      const n = 10;
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const res = await http
          .post('/api/v2/guarantees')
          .set('X-API-Key', org.key)
          .send({ details: { policyNumber: `offline-${i}` } });
        expect(res.status, 'creation needs no Redis').to.equal(200);
        ids.push(res.body.id as string);
      }
      await new Promise((r) => setTimeout(r, 1500));
      expect(a.received.length + b.received.length).to.equal(0);
      const [pending] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM webhook_events WHERE org_id = $1 AND dispatched_at IS NULL', [org.orgId]);
      expect(Number(pending?.n)).to.equal(n);

      await proxy.start();
      await eventually('every event at both receivers', () => uniqueIds(a.received).size === n && uniqueIds(b.received).size === n, 40_000);
      await new Promise((r) => setTimeout(r, 1000));
      // Exactly once each (nothing was in flight when Redis went away).
      expect(a.received).to.have.length(n);
      expect(b.received).to.have.length(n);
      const delivered = a.received.map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id).sort();
      expect(delivered).to.deep.equal([...ids].sort());
    } finally {
      await workers.close();
      await events.relay.stop();
      await queues.close();
      redis.disconnect();
      await proxy.stop();
      await a.close();
      await b.close();
    }
  });

  it('loses nothing when a delivery worker is killed mid-batch: its jobs are taken over', async () => {
    const { http, db } = await harness();
    const rx = await receiver();
    const org = await newOrg();
    await register(http, org, rx.url);
    // Slow answers, so that the worker is killed with deliveries in flight.
    rx.answer(async (_req, res) => {
      await new Promise((r) => setTimeout(r, 700));
      res.writeHead(204).end();
    });
    const env = { ...process.env, ...FAST, LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, [...entry('workers/index.ts'), 'webhooks'], { env, stdio: 'ignore' });
    try {
      const n = 12;
      for (let i = 0; i < n; i++) {
        const res = await http
          .post('/api/v2/guarantees')
          .set('X-API-Key', org.key)
          .send({ details: { policyNumber: `batch-${i}` } });
        expect(res.status).to.equal(200);
      }
      await eventually('deliveries in flight at the receiver', () => rx.inFlight() >= 2, 30_000);
      child.kill('SIGKILL');
      const survivor = await startWorkers(['webhooks'], { config: configWith(FAST), logger: silent });
      try {
        await eventually('every event delivered', () => uniqueIds(rx.received).size === n, 40_000);
        await eventually(
          'every delivery recorded as succeeded',
          async () => {
            const [row] = await select<{ n: number }>(db, "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE org_id = $1 AND status = 'succeeded'", [
              org.orgId,
            ]);
            return Number(row?.n) === n;
          },
          20_000,
        );
        // At least once on the wire: any repeat carries the same webhook-id.
        expect(rx.received.length).to.be.at.least(n);
      } finally {
        await survivor.close();
      }
    } finally {
      child.kill('SIGKILL');
      await rx.close();
    }
  });
});

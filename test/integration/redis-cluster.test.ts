// The queues on a Redis Cluster (three masters): BullMQ's scripts touch many keys of a queue
// at once, which a cluster allows only within one hash slot, so the prefix is a hash tag. The
// uploads pipeline, the outbox relay, webhook deliveries and notarization run on it.
import { expect } from 'chai';
import supertest from 'supertest';
import { openQueues } from '../../src/queues.js';
import { select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { producerConnection } from '../../src/shared/queues.js';
import { startWorkers } from '../../workers/index.js';
import { FAST_PIPELINE, configWith, eventually, harness, newOrg, presign, uploadForm, waitForStatus, appOver, eventsOver } from '../support/harness.js';
import { receiver } from '../support/receiver.js';
import { redisCluster } from '../support/redis-cluster.js';

const silent = createLogger('silent');

describe('on a Redis Cluster', function () {
  this.timeout(90_000);

  it('scans uploads, relays and delivers events, and notarizes, with the queue prefix hash-tagged', async () => {
    const { db } = await harness();
    const cluster = await redisCluster();
    const config = configWith({ ...FAST_PIPELINE, REDIS_URL: cluster.url, REDIS_CLUSTER: 'true', NOTARIZATION_INTERVAL_MS: '300' });
    expect(config.QUEUE_PREFIX).to.match(/^\{.+\}$/);
    const producer = producerConnection(config.REDIS_URL, true);
    producer.on('error', () => undefined);
    const queues = openQueues(producer, config.QUEUE_PREFIX, silent);
    const events = eventsOver(db, queues, config, silent);
    const http = supertest(appOver({ config, logger: silent, db, queues, events }).callback());
    const workers = await startWorkers(['scan', 'webhooks', 'notarization', 'maintenance'], { config, logger: silent });
    const hooks = await receiver('/cluster');
    try {
      const org = await newOrg();
      expect((await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: hooks.url })).status).to.equal(200);
      const up = await presign(org, { fileType: 'pdf' }, 2, http);
      expect((await uploadForm(up.url, up.fields, 'scanned through a cluster')).status).to.equal(204);
      expect((await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected'], 30_000)).status).to.equal('Clean');
      const created = await http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .send({ details: { policyNumber: 'CLUSTER-1' }, docs: [{ key: up.key }] });
      expect(created.status).to.equal(200);
      const types = () => hooks.received.map((r) => (JSON.parse(r.body) as { type: string }).type);
      await eventually(
        'guarantee.created, file.status.changed and guarantee.notarized delivered',
        () => ['guarantee.created', 'file.status.changed', 'guarantee.notarized'].every((t) => types().includes(t)),
        30_000,
        () => types().join(', '),
      );
      const [row] = await select<{ notarization_status: string }>(db, 'SELECT notarization_status FROM guarantees WHERE id = $1', [created.body.id]);
      expect(row?.notarization_status).to.equal('COMPLETE');
    } finally {
      try {
        await workers.close();
        await events.relay.stop();
        await hooks.close();
        await queues.close();
        producer.disconnect();
      } finally {
        await cluster.stop();
      }
    }
  });
});

import { expect } from 'chai';
import { Registry } from 'prom-client';
import { harness } from '../support/harness.js';
import { freePort } from '../support/tcp-proxy.js';
import { createLogger } from '../../src/shared/logger.js';
import { producerConnection, watchRedisHealth } from '../../src/shared/queues.js';

async function redisUp(registry: Registry): Promise<number | undefined> {
  const metric = await registry.getSingleMetric('redis_up')?.get();
  return metric?.values[0]?.value;
}

async function eventually(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Redis health as a metric', () => {
  it('redis_up is 1 when the connection is ready and 0 when Redis cannot be reached', async () => {
    const { config } = await harness();
    const healthy = producerConnection(config.REDIS_URL);
    const broken = producerConnection(`redis://127.0.0.1:${await freePort()}/0`);
    const ok = new Registry();
    const ko = new Registry();
    try {
      watchRedisHealth(healthy, ok, createLogger('silent'));
      watchRedisHealth(broken, ko, createLogger('silent'));
      await eventually(async () => (await redisUp(ok)) === 1);
      await eventually(() => Promise.resolve(broken.status !== 'connecting' && broken.status !== 'wait'));
      expect(await redisUp(ko)).to.equal(0);
    } finally {
      healthy.disconnect();
      broken.disconnect();
    }
  });
});

import { Writable } from 'node:stream';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { eventually, harness } from '../support/harness.js';
import { freePort } from '../support/tcp-proxy.js';
import { createLogger } from '../../src/shared/logger.js';
import { producerConnection, watchRedisHealth } from '../../src/shared/queues.js';

async function redisUp(registry: Registry): Promise<number | undefined> {
  const metric = await registry.getSingleMetric('redis_up')?.get();
  return metric?.values[0]?.value;
}

/** A logger's destination, and the lines written to it, parsed as they come. */
function logSink(): { lines: Array<{ msg: string }>; sink: Writable } {
  const lines: Array<{ msg: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as { msg: string });
      done();
    },
  });
  return { lines, sink };
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
      await eventually('redis_up to be 1', async () => (await redisUp(ok)) === 1, 5000);
      await eventually('the broken connection to give up connecting', () => broken.status !== 'connecting' && broken.status !== 'wait', 5000);
      expect(await redisUp(ko)).to.equal(0);
    } finally {
      healthy.disconnect();
      broken.disconnect();
    }
  });

  it('logs no outage while the first connection is still being made, and one line once it is ready', async () => {
    const { config } = await harness();
    const { lines, sink } = logSink();
    const connection = producerConnection(config.REDIS_URL);
    try {
      expect(connection.status).to.not.equal('ready');
      watchRedisHealth(connection, new Registry(), createLogger('info', sink));
      await eventually('the connection to be ready', () => connection.status === 'ready', 5000);
      await eventually('a line saying Redis is reachable', () => lines.some((l) => l.msg === 'redis reachable'), 2000);
      expect(lines.map((l) => l.msg)).to.deep.equal(['redis reachable']);
    } finally {
      connection.disconnect();
    }
  });

  it('says nothing once stopped: a connection closed on purpose (a shutdown) is no outage, where an unexpected close is one', async () => {
    const { config } = await harness();
    const watched = async (stopFirst: boolean) => {
      const { lines, sink } = logSink();
      const connection = producerConnection(config.REDIS_URL);
      const stop = watchRedisHealth(connection, new Registry(), createLogger('info', sink));
      await eventually('a line saying Redis is reachable', () => lines.some((l) => l.msg === 'redis reachable'), 5000);
      if (stopFirst) stop();
      connection.disconnect();
      await eventually('the connection to end', () => connection.status === 'end', 5000);
      // The close events come after disconnect() returned.
      await new Promise((r) => setTimeout(r, 100));
      return lines.map((l) => l.msg);
    };
    expect(await watched(false)).to.deep.equal(['redis reachable', 'redis unreachable']);
    expect(await watched(true)).to.deep.equal(['redis reachable']);
  });
});

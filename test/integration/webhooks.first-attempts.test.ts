// New deliveries wait on the first attempts' list (a Redis list, not a job each), are taken
// many at once by a webhooks worker and leased to it; a failed first attempt goes on as a job
// carrying the attempt made. Against the real Redis and the real worker.
import { expect } from 'chai';
import { createLogger } from '../../src/shared/logger.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { producerConnection, workerConnection } from '../../src/shared/queues.js';
import { startFirstAttempts } from '../../src/webhooks/first-attempts.js';
import { DeliveryFailedError, firstAttemptsKey, firstAttemptsList, firstAttemptsTaker, type FirstAttemptsTaker } from '../../src/webhooks/webhook.jobs.js';
import { startWorkers } from '../../workers/index.js';
import { configWith, eventually, harness } from '../support/harness.js';
import { deliveryWorld, FAST_WEBHOOKS } from '../support/webhooks.js';

const silent = createLogger('silent');

const ref = (n: number) => ({ eventId: `e-${n}`, endpointId: `ep-${n}`, replays: 0 });

describe('webhooks: the first attempts list', function () {
  this.timeout(30_000);
  const opened: Array<{ disconnect(): void }> = [];
  let prefix: string;
  let takers: FirstAttemptsTaker[];
  const taker = async (leaseMs: number) => {
    const { config } = await harness();
    const blocking = workerConnection(config.REDIS_URL);
    const regular = producerConnection(config.REDIS_URL);
    opened.push(regular);
    // It fails fast until it is connected (no offline queue): a loaded machine connects it late.
    await eventually("the taker's Redis connection to be ready", () => regular.status === 'ready');
    const t = firstAttemptsTaker({ blocking, regular }, prefix, leaseMs);
    takers.push(t);
    return t;
  };

  beforeEach(async () => {
    const { config, redis } = await harness();
    prefix = `${config.QUEUE_PREFIX}-first-${Date.now()}`;
    takers = [];
    // The shared producer connection fails fast until it is connected.
    await eventually('the shared Redis connection to be ready', () => redis.status === 'ready');
  });
  afterEach(() => {
    for (const t of takers) t.close();
    for (const c of opened.splice(0)) c.disconnect();
  });

  it('hands out what was pushed, oldest first, many in one take, and drops what is not a delivery', async () => {
    const { redis } = await harness();
    const list = firstAttemptsList(redis, prefix);
    await list.push([ref(1), ref(2), ref(3)]);
    await redis.rpush(firstAttemptsKey(prefix), 'not json', '["only-an-event"]');
    await list.push([ref(4)]);
    expect(await list.length()).to.equal(6);
    const t = await taker(60_000);
    expect((await t.take(2, 1)).map((x) => x.delivery)).to.deep.equal([ref(1), ref(2)]);
    expect((await t.take(10, 1)).map((x) => x.delivery)).to.deep.equal([ref(3), ref(4)]);
    expect(await list.length()).to.equal(0);
    // Nothing there: the take waits (here 0.2 s), then answers none.
    const started = Date.now();
    expect(await t.take(10, 0.2)).to.deep.equal([]);
    expect(Date.now() - started).to.be.at.least(150);
  });

  it('puts back what a worker took and never finished once its lease runs out, and not what it finished', async () => {
    const { redis } = await harness();
    const list = firstAttemptsList(redis, prefix);
    await list.push([ref(1), ref(2), ref(3)]);
    const dead = await taker(300);
    const alive = await taker(300);
    const [first, second] = await dead.take(2, 1); // taken, then the worker "dies"
    const [third] = await alive.take(5, 1);
    expect([first?.delivery, second?.delivery, third?.delivery]).to.deep.equal([ref(1), ref(2), ref(3)]);
    await alive.done([third?.lease ?? 'missing']);
    // Before the lease runs out nothing comes back.
    expect(await alive.take(5, 0.1)).to.deep.equal([]);
    await new Promise((r) => setTimeout(r, 400));
    // The expired leases go back at the head, and this take has them.
    const back = await alive.take(5, 1);
    expect(back.map((x) => x.delivery.eventId)).to.have.members(['e-1', 'e-2']);
    await alive.done(back.map((x) => x.lease));
    await new Promise((r) => setTimeout(r, 400));
    expect(await alive.take(5, 0.1)).to.deep.equal([]);
    expect(await list.length()).to.equal(0);
  });

  it('keeps a lease its holder extends, and a late holder ending its own lease does not end the next one', async () => {
    const { redis } = await harness();
    await firstAttemptsList(redis, prefix).push([ref(1)]);
    const slow = await taker(1000);
    const other = await taker(60_000);
    const [taken] = await slow.take(1, 1);
    // Extended twice, past its first second: another take finds nothing.
    await new Promise((r) => setTimeout(r, 600));
    await slow.renew([taken?.lease ?? 'missing']);
    await new Promise((r) => setTimeout(r, 600));
    await slow.renew([taken?.lease ?? 'missing']);
    await new Promise((r) => setTimeout(r, 300));
    expect(await other.take(5, 0.1)).to.deep.equal([]);
    // No longer extended: it runs out and another worker has it, leased to that one.
    await new Promise((r) => setTimeout(r, 900));
    const again = await other.take(5, 1);
    expect(again.map((x) => x.delivery)).to.deep.equal([ref(1)]);
    await slow.done([taken?.lease ?? 'missing']); // the late holder finishes
    await slow.renew([taken?.lease ?? 'missing']); // nor does its renewal bring its lease back
    // Leases live in `<list>:leased`: the second holder's is still there, alone.
    const leased = await redis.zrange(`${firstAttemptsKey(prefix)}:leased`, '0', '-1');
    expect(leased).to.deep.equal([again[0]?.lease]);
  });

  it('hands out copies of one delivery taken together once', async () => {
    const { redis } = await harness();
    await firstAttemptsList(redis, prefix).push([ref(1), ref(1), ref(2)]);
    const t = await taker(60_000);
    expect((await t.take(10, 1)).map((x) => x.delivery)).to.deep.equal([ref(1), ref(2)]);
  });

  it('drops what is not a delivery for good: its lease ends with the take', async () => {
    const { redis } = await harness();
    await redis.rpush(firstAttemptsKey(prefix), 'not json', '["e", "ep"]');
    const t = await taker(300);
    expect(await t.take(5, 0.1)).to.deep.equal([]);
    expect(await redis.zcard(`${firstAttemptsKey(prefix)}:leased`)).to.equal(0);
    await new Promise((r) => setTimeout(r, 400));
    expect(await t.take(5, 0.1)).to.deep.equal([]);
    expect(await redis.llen(firstAttemptsKey(prefix))).to.equal(0);
  });

  it('closes without waiting for a take that blocks, and attempts nothing after', async () => {
    const { config } = await harness();
    const attempted: string[] = [];
    const running = startFirstAttempts({
      taker: await taker(60_000),
      deliver: (eventId) => {
        attempted.push(eventId);
        return Promise.resolve('delivered' as const);
      },
      jobs: { queue: () => Promise.resolve(), retry: () => Promise.resolve() },
      settings: { concurrency: 5, retrySchedule: config.WEBHOOK_RETRY_SCHEDULE },
      logger: silent,
    });
    await new Promise((r) => setTimeout(r, 100)); // blocked in its take
    const started = Date.now();
    await running.close();
    expect(Date.now() - started).to.be.below(1000);
    await firstAttemptsList((await harness()).redis, prefix).push([ref(1)]);
    await new Promise((r) => setTimeout(r, 200));
    expect(attempted).to.deep.equal([]);
  });

  it('hands each outcome on: a failed attempt to a delayed retry with the attempt made, a busy endpoint to a job now', async () => {
    const { redis } = await harness();
    const retries: Array<[string, number, number]> = [];
    const queued: string[] = [];
    const running = startFirstAttempts({
      taker: await taker(60_000),
      deliver: (eventId) => {
        if (eventId === 'e-1') return Promise.resolve('delivered' as const);
        if (eventId === 'e-2') return Promise.resolve('busy' as const);
        return Promise.reject(new DeliveryFailedError('HTTP 500'));
      },
      jobs: {
        queue: (ds) => {
          queued.push(...ds.map((d) => d.eventId));
          return Promise.resolve();
        },
        retry: (d, made, delayMs) => {
          retries.push([d.eventId, made, delayMs]);
          return Promise.resolve();
        },
      },
      settings: { concurrency: 5, retrySchedule: [1, 60] },
      logger: silent,
    });
    try {
      await firstAttemptsList(redis, prefix).push([ref(1), ref(2), ref(3)]);
      await eventually('every outcome handed on', () => queued.length === 1 && retries.length === 1);
      expect(queued).to.deep.equal(['e-2']);
      const [retry] = retries;
      expect(retry?.slice(0, 2)).to.deep.equal(['e-3', 1]);
      // The schedule's first entry (1 s), with its jitter.
      expect(retry?.[2]).to.be.within(800, 1200);
    } finally {
      await running.close();
    }
  });
});

describe('webhooks: first attempts end to end', function () {
  this.timeout(60_000);
  const world = deliveryWorld();

  const register = async () => {
    const res = await (await harness()).http.post('/api/v1/webhooks').set('X-API-Key', world.org.key).send({ endpoint: world.rx.url });
    expect(res.status).to.equal(200);
  };
  const create = async (policyNumber: string) => {
    const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', world.org.key).send({ details: { policyNumber } });
    expect(res.status).to.equal(200);
  };
  const jobsOf = async (eventId: string) =>
    (await (await harness()).queues.webhooks.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter((j) => j.data.eventId === eventId);

  /**
   * A copy of the event's delivery put on the list (as after a lease ran out), taken and done
   * with: its lease ended, which a worker does once the copy is attempted (the receiver has the
   * request by then) or skipped. The take leases what it takes in the same script, so an empty
   * list and no lease left mean the copy went through a worker.
   */
  const copyOnList = async (eventId: string) => {
    const { redis, config, db } = await harness();
    const [delivery] = await select<{ endpoint_id: string }>(db, 'SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1', [eventId]);
    const list = firstAttemptsList(redis, config.QUEUE_PREFIX);
    await list.push([{ eventId, endpointId: String(delivery?.endpoint_id), replays: 0 }]);
    await eventually(
      'the copy taken and done with',
      async () => (await list.length()) === 0 && (await redis.zcard(`${firstAttemptsKey(config.QUEUE_PREFIX)}:leased`)) === 0,
    );
  };

  it('delivers a new event without a job', async () => {
    await register();
    await create('first-1');
    const [r] = await world.rx.waitFor(1);
    const eventId = String(r?.headers['webhook-id']);
    expect(await jobsOf(eventId)).to.deep.equal([]);
    const { db } = await harness();
    await eventually('the delivery recorded as succeeded', async () => {
      const [row] = await select<{ status: string; attempts: number }>(db, 'SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1', [eventId]);
      return row?.status === 'succeeded' && row.attempts === 1;
    });
  });

  it('runs the whole schedule when every attempt fails: four attempts in all, the last one failing the delivery', async () => {
    world.rx.answer((_req, res) => {
      res.writeHead(500).end();
    });
    await register();
    await create('first-3');
    const received = await world.rx.waitFor(4, 10_000);
    const eventId = String(received[0]?.headers['webhook-id']);
    const { db, queues, redis } = await harness();
    await eventually('the delivery failed after its last attempt', async () => {
      const [row] = await select<{ status: string; attempts: number }>(db, 'SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1', [eventId]);
      return row?.status === 'failed' && row.attempts === 4;
    });
    await new Promise((r) => setTimeout(r, 800));
    expect(world.rx.received).to.have.length(4);
    const failed = (await queues.webhooks.getFailed()).find((j) => j.data.eventId === eventId);
    expect(failed?.data.made).to.equal(1);
    expect(failed?.attemptsMade).to.equal(3);
    // The schedule, 0.2, 0.3 and 0.4 s ±20%. Never sooner, as received (a loaded machine only
    // makes a retry later than chosen)...
    const gaps = world.rx.received.slice(1).map((r, i) => r.at - (world.rx.received[i]?.at ?? 0));
    [200, 300, 400].forEach((ms, i) => expect(gaps[i]).to.be.at.least(ms * 0.8 - 20));
    // ...and never more, as chosen: each retry's 'delayed' event in BullMQ's stream holds its due
    // time (the worker's clock plus the delay), its id Redis's time when it was delayed, a little
    // later on the same machine's clock, so that the difference is at most the delay chosen.
    const delays = (await redis.xrange(queues.webhooks.keys.events ?? 'missing', '-', '+')).flatMap(([id, fields]) => {
      const f = new Map(fields.flatMap((v, i) => (i % 2 ? [] : [[v, fields[i + 1]] as const])));
      return f.get('event') === 'delayed' && f.get('jobId') === failed?.id ? [Number(f.get('delay')) - Number(id.split('-')[0])] : [];
    });
    expect(delays).to.have.length(3);
    [200, 300, 400].forEach((ms, i) => expect(delays[i]).to.be.at.most(ms * 1.2 + 1));
  });

  it('does not attempt from the list a delivery already attempted: its retry keeps its time', async () => {
    // The only webhooks worker while this runs, so that the first attempt is its own and its retry
    // 3 s later: beside the block's worker, whichever took first had the new delivery, and when it
    // was the block's, the retry came on the block's schedule, 0.2 s after the first attempt.
    const slow = await startWorkers(['webhooks'], { config: configWith({ ...FAST_WEBHOOKS, WEBHOOK_RETRY_SCHEDULE: '3,3' }), logger: silent });
    try {
      await world.workers.close();
      world.rx.answer((_req, res, n) => {
        res.writeHead(n === 1 ? 500 : 204).end();
      });
      await register();
      await create('first-4');
      const [first] = await world.rx.waitFor(1);
      const eventId = String(first?.headers['webhook-id']);
      // Attempted: the failure recorded (the receiver has the request before the worker has its answer;
      // a copy taken in between finds the delivery still due, and is attempted again, at least once being the promise).
      const { db } = await harness();
      await eventually('the first attempt recorded', async () => {
        const [row] = await select<{ attempts: number }>(db, 'SELECT attempts FROM webhook_deliveries WHERE event_id = $1', [eventId]);
        return row?.attempts === 1;
      });
      // The delivery comes back on the list while its retry waits 3 s.
      await copyOnList(eventId);
      expect(world.rx.received).to.have.length(1);
      await world.rx.waitFor(2, 6000);
      expect((world.rx.received[1]?.at ?? 0) - (first?.at ?? 0)).to.be.at.least(2000);
    } finally {
      await slow.close();
      world.workers = await startWorkers(['webhooks'], { config: configWith(FAST_WEBHOOKS), logger: silent });
    }
  });

  it("counts as due a delivery due within an attempt's time limit (a writer's clock ahead), and not one due later", async () => {
    await register();
    await create('first-5');
    const [first] = await world.rx.waitFor(1);
    const eventId = String(first?.headers['webhook-id']);
    const { db } = await harness();
    // Its success on record first: recorded after the change below, it would undo it.
    await eventually('the first attempt recorded', async () => {
      const [row] = await select<{ status: string; attempts: number }>(db, 'SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1', [eventId]);
      return row?.status === 'succeeded' && row.attempts === 1;
    });
    const again = async (aheadMs: number) => {
      // Pending again, due `aheadMs` from now by the database's clock, and on the list.
      await execute(db, "UPDATE webhook_deliveries SET status = 'pending', due_at = NOW(3) + INTERVAL $2 MICROSECOND WHERE event_id = $1", [
        eventId,
        aheadMs * 1000,
      ]);
      await copyOnList(eventId);
    };
    // FAST_WEBHOOKS' attempts are limited to 800 ms: due in 400 ms is due.
    await again(400);
    expect(world.rx.received).to.have.length(2);
    // Due in 5 s: its job (or the reconciler) has it, not the list.
    await again(5000);
    expect(world.rx.received).to.have.length(2);
  });

  it('never sends again from the list a delivery that failed for good (only a replay or a Bull Board retry does)', async () => {
    world.rx.answer((_req, res) => {
      res.writeHead(410).end();
    });
    await register();
    await create('first-6');
    const [first] = await world.rx.waitFor(1);
    const eventId = String(first?.headers['webhook-id']);
    const { db } = await harness();
    await eventually('the delivery failed', async () => {
      const [row] = await select<{ status: string }>(db, 'SELECT status FROM webhook_deliveries WHERE event_id = $1', [eventId]);
      return row?.status === 'failed';
    });
    // The endpoint enabled again by hand; a stale copy of the delivery on the list.
    world.rx.answer((_req, res) => {
      res.writeHead(204).end();
    });
    await execute(db, "UPDATE webhook_endpoints SET status = 'active', disabled_reason = NULL WHERE org_id = $1", [world.org.orgId]);
    await copyOnList(eventId);
    expect(world.rx.received).to.have.length(1);
    const [row] = await select<{ status: string }>(db, 'SELECT status FROM webhook_deliveries WHERE event_id = $1', [eventId]);
    expect(row?.status).to.equal('failed');
  });

  it('goes on from a failed first attempt with a job that counts it: the retry is the second attempt, on the schedule', async () => {
    world.rx.answer((_req, res, n) => {
      res.writeHead(n === 1 ? 500 : 204).end();
    });
    await register();
    await create('first-2');
    const received = await world.rx.waitFor(2, 10_000);
    const eventId = String(received[0]?.headers['webhook-id']);
    // The schedule's first retry (0.2 s, with its jitter) after the first attempt.
    const gap = (received[1]?.at ?? 0) - (received[0]?.at ?? 0);
    expect(gap).to.be.within(150, 2000);
    const [job] = await jobsOf(eventId);
    expect(job?.data).to.deep.include({ eventId, made: 1 });
    // Three retries in FAST_WEBHOOKS' schedule: the job holds them, the first attempt made before it.
    expect(job?.opts.attempts).to.equal(3);
    const { db } = await harness();
    await eventually('two attempts on record, the delivery succeeded', async () => {
      const [row] = await select<{ status: string; attempts: number }>(db, 'SELECT status, attempts FROM webhook_deliveries WHERE event_id = $1', [eventId]);
      return row?.status === 'succeeded' && row.attempts === 2;
    });
  });
});

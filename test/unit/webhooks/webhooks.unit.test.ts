import { expect } from 'chai';
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { createSecretBox, SecretContext, SecretDecryptionError } from '../../../src/shared/secrets.js';
import { createEndpointSlots } from '../../../src/webhooks/endpoint-slots.js';
import { parseRetryAfter } from '../../../src/webhooks/sender.js';
import { checkHost, createAddressPolicy, RefusedAddressError } from '../../../src/webhooks/ssrf.js';
import { checkEndpointUrl } from '../../../src/webhooks/webhook-url.js';
import { DeliveryFailedError, MAX_RETRY_AFTER_MS, retryDelay } from '../../../src/webhooks/webhook.jobs.js';

describe('webhooks: the address policy', () => {
  const policy = createAddressPolicy([]);
  it('allows public unicast addresses only', () => {
    for (const ok of ['8.8.8.8', '93.184.216.34', '2606:4700::1']) expect(policy.refusal(ok), ok).to.equal(undefined);
    for (const bad of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '192.0.0.192',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      '64:ff9b::a00:1',
      '2002:a00:1::',
      'ff02::1',
      'not-an-ip',
    ]) {
      expect(policy.refusal(bad), bad).to.be.a('string');
    }
  });
  it('allows what WEBHOOK_ALLOWED_NETWORKS lists, IPv4-mapped IPv6 included, and nothing next to it', () => {
    const allow = createAddressPolicy(['127.0.0.2/32', '10.1.0.0/16', 'fd00::/8']);
    expect(allow.refusal('127.0.0.2')).to.equal(undefined);
    expect(allow.refusal('::ffff:127.0.0.2')).to.equal(undefined);
    expect(allow.refusal('10.1.200.3')).to.equal(undefined);
    expect(allow.refusal('fd12::1')).to.equal(undefined);
    expect(allow.refusal('127.0.0.1')).to.be.a('string');
    expect(allow.refusal('10.2.0.1')).to.be.a('string');
  });
  it('refuses a name when any of its addresses is refused, or when it does not resolve', async () => {
    const resolver = (h: string) =>
      Promise.resolve(
        h === 'mixed.test'
          ? [
              { address: '8.8.8.8', family: 4 },
              { address: '10.0.0.1', family: 4 },
            ]
          : h === 'ok.test'
            ? [{ address: '8.8.8.8', family: 4 }]
            : [],
      );
    expect(await checkHost('ok.test', resolver, policy)).to.have.length(1);
    for (const host of ['mixed.test', 'none.test']) {
      try {
        await checkHost(host, resolver, policy);
        expect.fail(host);
      } catch (err) {
        expect(err).to.be.instanceOf(RefusedAddressError);
      }
    }
  });
});

describe('webhooks: endpoint URLs', () => {
  it('normalizes as WHATWG does, dropping the fragment', () => {
    const c = checkEndpointUrl(' HTTPS://Example.COM:443/a/./b/../c?q=1#x ', { allowHttp: false });
    expect(c.ok && c.normalized).to.equal('https://example.com/a/c?q=1');
  });
  it('refuses what is not an absolute http(s) URL without credentials, or too long', () => {
    for (const [input, allowHttp] of [
      [undefined, true],
      ['', true],
      ['x', true],
      ['http://a.example/', false],
      ['file:///etc/passwd', true],
      ['https://u:p@a.example/', true],
      [`https://a.example/${'x'.repeat(2048)}`, true],
    ] as const) {
      expect(checkEndpointUrl(input, { allowHttp }).ok, String(input)).to.equal(false);
    }
  });
});

describe('webhooks: retry delays', () => {
  const schedule = [5, 300, 1800];
  it('follows the schedule with ±20% jitter, the last entry repeating', () => {
    expect(retryDelay(schedule, 1, new Error('x'), () => 0.5)).to.equal(5000);
    expect(retryDelay(schedule, 2, new Error('x'), () => 0)).to.equal(240_000);
    expect(retryDelay(schedule, 3, new Error('x'), () => 1)).to.equal(2_160_000);
    expect(retryDelay(schedule, 9, new Error('x'), () => 0.5)).to.equal(1_800_000);
  });
  it("takes the receiver's Retry-After, at most a day", () => {
    expect(retryDelay(schedule, 1, new DeliveryFailedError('429', 42_000))).to.equal(42_000);
    expect(retryDelay(schedule, 1, new DeliveryFailedError('429', 10 * MAX_RETRY_AFTER_MS))).to.equal(MAX_RETRY_AFTER_MS);
  });
  it('reads Retry-After in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('120', now)).to.equal(120_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).to.equal(60_000);
    expect(parseRetryAfter('soon', now)).to.equal(undefined);
    expect(parseRetryAfter(undefined, now)).to.equal(undefined);
  });
});

describe('secrets at rest', () => {
  const k1 = randomBytes(32);
  const k2 = randomBytes(32);
  const ctx = SecretContext.webhook('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b');
  it('seals and opens; each sealing differs', () => {
    const box = createSecretBox([k1]);
    const a = box.seal('whsec_abc', ctx);
    expect(box.open(a, ctx)).to.equal('whsec_abc');
    expect(box.seal('whsec_abc', ctx).equals(a)).to.equal(false);
  });
  it('opens under any listed key, seals under the first (rotation)', () => {
    const old = createSecretBox([k1]).seal('s', ctx);
    const rotated = createSecretBox([k2, k1]);
    expect(rotated.open(old, ctx)).to.equal('s');
    expect(rotated.isCurrent(old)).to.equal(false);
    expect(rotated.isCurrent(rotated.seal('s', ctx))).to.equal(true);
    expect(() => createSecretBox([k2]).open(old, ctx)).to.throw(SecretDecryptionError);
  });
  it('binds a secret to its row and purpose: copied into another row or another purpose, it does not open', () => {
    const box = createSecretBox([k1]);
    const sealed = box.seal('whsec_abc', ctx);
    expect(() => box.open(sealed, SecretContext.webhook('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c'))).to.throw(SecretDecryptionError);
    expect(() => box.open(sealed, SecretContext.anchorKey('evm'))).to.throw(SecretDecryptionError);
  });
  it('opens a secret sealed before binding (version 1) until it is sealed again, which binds it', () => {
    // Version 1 as the previous release wrote it: no associated data.
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', k1, iv);
    const body = Buffer.concat([cipher.update('legacy', 'utf8'), cipher.final()]);
    const v1 = Buffer.concat([Buffer.from([1]), createHash('sha256').update(k1).digest().subarray(0, 4), iv, cipher.getAuthTag(), body]);
    const box = createSecretBox([k1]);
    expect(box.open(v1, ctx)).to.equal('legacy');
    expect(box.isCurrent(v1)).to.equal(false);
  });
  it('refuses tampered or truncated ciphertext', () => {
    const box = createSecretBox([k1]);
    const sealed = box.seal('secret', ctx);
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 1;
    expect(() => box.open(tampered, ctx)).to.throw(SecretDecryptionError);
    expect(() => box.open(sealed.subarray(0, 10), ctx)).to.throw(SecretDecryptionError);
  });
});

describe('webhooks: the per-endpoint bound', () => {
  it('gives each endpoint at most its bound of slots; others are not affected', async () => {
    const slots = createEndpointSlots(2, 0);
    expect(await slots.acquire('a')).to.equal(true);
    expect(await slots.acquire('a')).to.equal(true);
    expect(await slots.acquire('a')).to.equal(false); // no wait allowed: busy at once
    expect(await slots.acquire('b')).to.equal(true);
    expect(slots.usage('a')).to.deep.include({ inFlight: 2, waiting: 0 });
    slots.release('a');
    expect(await slots.acquire('a')).to.equal(true);
  });

  it('lets a delivery wait for a slot of its endpoint, in order, handed over on release', async () => {
    const slots = createEndpointSlots(1, 1000);
    await slots.acquire('a');
    const order: string[] = [];
    const second = slots.acquire('a').then((ok) => {
      order.push(`second ${ok}`);
    });
    const third = slots.acquire('a').then((ok) => {
      order.push(`third ${ok}`);
    });
    expect(slots.usage('a')).to.deep.include({ inFlight: 1, waiting: 2 });
    slots.release('a');
    await second;
    expect(order).to.deep.equal(['second true']);
    expect(slots.usage('a')).to.deep.include({ inFlight: 1, waiting: 1 });
    slots.release('a');
    await third;
    slots.release('a');
    expect(order).to.deep.equal(['second true', 'third true']);
    expect(slots.usage('a')).to.deep.include({ inFlight: 0, waiting: 0 });
  });

  it('gives up after the wait, leaving no trace', async () => {
    const slots = createEndpointSlots(1, 30);
    await slots.acquire('a');
    const started = Date.now();
    expect(await slots.acquire('a')).to.equal(false);
    expect(Date.now() - started).to.be.at.least(25);
    expect(slots.usage('a')).to.deep.include({ inFlight: 1, waiting: 0 });
    slots.release('a');
    expect(slots.usage('a')).to.deep.include({ inFlight: 0, waiting: 0 });
  });
});

describe("webhooks: the per-endpoint bound follows the endpoint's speed", () => {
  const speed = { fastBound: 4, fastMs: 100 };
  const fill = async (slots: ReturnType<typeof createEndpointSlots>, id: string) => {
    let n = 0;
    while (await slots.acquire(id)) n++;
    return n;
  };

  it('gives an endpoint not heard from, or slow, the bound; one that answers fast the fast bound', async () => {
    const slots = createEndpointSlots(2, 0, speed);
    expect(await fill(slots, 'new')).to.equal(2);
    slots.release('fast', 20); // a request answered in 20 ms
    slots.release('slow', 900);
    expect(await fill(slots, 'fast')).to.equal(4);
    expect(await fill(slots, 'slow')).to.equal(2);
    expect(slots.usage('fast')).to.include({ inFlight: 4, bound: 4 });
  });

  it('falls back to the bound as a fast endpoint turns slow (timeouts count), the slots it holds being given back first', async () => {
    const slots = createEndpointSlots(2, 0, speed);
    slots.release('a', 10);
    expect(await fill(slots, 'a')).to.equal(4);
    // Its answers now take 15 s (timeouts): the moving average passes 100 ms at the first.
    slots.release('a', 15_000);
    expect(slots.usage('a')).to.include({ inFlight: 3, bound: 2 });
    expect(await slots.acquire('a')).to.equal(false);
    // Two more answers: one in flight, so one more may go, and no more.
    slots.release('a', 15_000);
    slots.release('a', 15_000);
    expect(await slots.acquire('a')).to.equal(true);
    expect(await slots.acquire('a')).to.equal(false);
    expect(slots.usage('a')).to.include({ inFlight: 2, bound: 2 });
  });

  it('is not fast any more after a second without an answer (a receiver that hangs)', async () => {
    let clock = 0;
    const slots = createEndpointSlots(2, 0, speed, () => clock);
    slots.release('a', 10);
    expect(await fill(slots, 'a')).to.equal(4);
    // Four requests in flight, none answering: a second on, new ones get the bound.
    clock = 1001;
    expect(slots.usage('a')).to.include({ bound: 2 });
    slots.release('a', 12); // an answer at last, fast: fast again
    expect(slots.usage('a')).to.include({ inFlight: 3, bound: 4 });
  });

  it('hands the slots an endpoint gains to the deliveries waiting for it, in order', async () => {
    const slots = createEndpointSlots(1, 1000, speed);
    await slots.acquire('a');
    const got: number[] = [];
    const waiters = [1, 2, 3].map((i) => slots.acquire('a').then((ok) => ok && got.push(i)));
    // Its one request answers fast: the bound becomes 4, and three wait: all three go.
    slots.release('a', 5);
    await Promise.all(waiters);
    expect(got).to.deep.equal([1, 2, 3]);
    expect(slots.usage('a')).to.include({ inFlight: 3, waiting: 0 });
  });
});

describe('webhooks: the outbox relay while Redis is away', () => {
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Polls, so that a slow machine only makes the test slower, never wrong. */
  const until = async (what: string, done: () => boolean, ms = 5000) => {
    const end = Date.now() + ms;
    while (!done()) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(5);
    }
  };

  it('starts no round of its own on each commit while a failed round waits for its retry', async () => {
    const { createRelay } = await import('../../../src/shared/events/relay.js');
    const { createLogger } = await import('../../../src/shared/logger.js');
    let reads = 0;
    let queued = 0;
    const event = { id: 'e1', orgId: 'o1', createdAt: new Date() };
    const repo = {
      undispatched: () => {
        reads++;
        return Promise.resolve([event]);
      },
      markDispatched: () => Promise.resolve(),
    };
    let redisUp = false;
    const consume = () => {
      if (!redisUp) return Promise.reject(new Error('Redis is away'));
      queued++;
      return Promise.resolve();
    };
    const relay = createRelay({ source: repo, consume, logger: createLogger('silent'), settings: { retryMs: 1000 } });
    relay.wake();
    await until('the first round', () => reads === 1);
    // A hundred commits while the retry waits (a second away): no round each.
    for (let i = 0; i < 100; i++) relay.wake();
    await sleep(50);
    expect(reads).to.equal(1);
    // Redis is back: the retry relays the backlog, and commits wake the relay again.
    redisUp = true;
    repo.undispatched = () => {
      reads++;
      return Promise.resolve(queued ? [] : [event]);
    };
    await until('the retry to relay the backlog', () => queued === 1);
    const before = reads;
    relay.wake();
    await until('a commit to wake the relay again', () => reads === before + 1);
    await relay.stop();
  });

  it("relays on a wake-up whatever the events' time (a busy organization's createdAt runs ahead of the clock); the interval only events minAgeMs old", async () => {
    const { createRelay } = await import('../../../src/shared/events/relay.js');
    const { createLogger } = await import('../../../src/shared/logger.js');
    const asked: Array<Date | undefined> = [];
    const source = {
      undispatched: (_limit: number, before?: Date) => {
        asked.push(before);
        return Promise.resolve([]);
      },
      markDispatched: () => Promise.resolve(),
    };
    const at = new Date('2026-11-24T12:00:00.000Z');
    const relay = createRelay({ source, consume: () => Promise.resolve(), logger: createLogger('silent'), now: () => at });
    relay.wake();
    await until('the wake-up round', () => asked.length === 1);
    expect(asked[0]).to.equal(undefined);
    relay.start(10, 2_000);
    await until('an interval round', () => asked.length >= 2);
    expect(asked[1]?.toISOString()).to.equal('2026-11-24T11:59:58.001Z');
    await relay.stop();
  });

  it('relays the commits of one moment in one round, a few milliseconds after the first', async () => {
    const { createRelay } = await import('../../../src/shared/events/relay.js');
    const { createLogger } = await import('../../../src/shared/logger.js');
    let reads = 0;
    const repo = {
      undispatched: () => {
        reads++;
        return Promise.resolve([]);
      },
      markDispatched: () => Promise.resolve(),
    };
    const relay = createRelay({ source: repo, consume: () => Promise.resolve(), logger: createLogger('silent') });
    for (let i = 0; i < 50; i++) relay.wake();
    expect(reads).to.equal(0);
    await until('the round', () => reads >= 1);
    await sleep(50);
    expect(reads).to.equal(1);
    await relay.stop();
  });
});

// Webhooks end to end: registration (endpoints 9 and 10 and the management endpoints), events
// from the outbox delivered by the real worker to real local receivers, each delivery verified
// with the official `standardwebhooks` library; retries, 410, Retry-After, the SSRF guard,
// secret rotation, replay, and the per-endpoint bound.
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { createFileRepository } from '../../src/files/file.repository.js';
import { createLogger } from '../../src/shared/logger.js';
import { createSequelize, select } from '../../src/shared/db/sequelize.js';
import type { Resolver } from '../../src/webhooks/ssrf.js';
import { createWebhookRepository } from '../../src/webhooks/webhook.repository.js';
import { startWorkers } from '../../workers/index.js';
import { appWith, configWith, eventually, harness, issueFile, newOrg, PRODUCTION_EXTRAS, type TestOrg } from '../support/harness.js';
import { receiver, type Receiver, type Received } from '../support/receiver.js';
import { deliveryWorld, FAST_WEBHOOKS } from '../support/webhooks.js';

const silent = createLogger('silent');

async function register(org: TestOrg, endpoint: unknown) {
  return (await harness()).http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint });
}

async function registered(org: TestOrg, url: string): Promise<{ id: string; secret: string }> {
  const res = await register(org, url);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return { id: res.body.webhookId as string, secret: res.body.secret as string };
}

async function createGuarantee(org: TestOrg, policyNumber: string): Promise<string> {
  const res = await (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key).send({ details: { policyNumber } });
  expect(res.status).to.equal(200);
  return res.body.id as string;
}

/** Verifies a delivery as a receiver would, with the official library; returns the payload. */
function verified(secret: string, r: Received): { type: string; timestamp: string; data: Record<string, unknown> } {
  const headers = {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(r.body, headers) as { type: string; timestamp: string; data: Record<string, unknown> };
}

async function attempts(org: TestOrg, id: string) {
  const res = await (await harness()).http.get(`/api/v1/webhooks/${id}/attempts?limit=100`).set('X-API-Key', org.key);
  expect(res.status).to.equal(200);
  return res.body as {
    totalItems: number;
    attempts: Array<{ eventId: string; statusCode: number | null; error: string | null; succeeded: boolean; attemptedAt: string }>;
  };
}

describe('webhooks: registration (endpoints 9 and 10)', () => {
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  it('registers an endpoint: 200 with success, webhookId and a whsec_ secret; listed with its normalized URL', async () => {
    const res = await register(org, 'HTTP://127.0.0.1:80/hooks/../in?x=1#frag');
    expect(res.status).to.equal(200);
    expect(res.body).to.have.keys('success', 'webhookId', 'secret');
    expect(res.body.success).to.equal(true);
    expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const list = await (await harness()).http.get('/api/v1/webhooks').set('X-API-Key', org.key);
    expect(list.status).to.equal(200);
    expect(list.body).to.deep.equal([{ webhookId: res.body.webhookId, endpoint: 'http://127.0.0.1/in?x=1' }]);
  });

  it('answers the same webhookId and secret for the same endpoint after normalization', async () => {
    const first = await registered(org, 'http://127.0.0.1:8080/a');
    const again = await register(org, 'http://127.0.0.1:8080/b/../a');
    expect(again.body).to.deep.equal({ success: true, webhookId: first.id, secret: first.secret });
    const list = await (await harness()).http.get('/api/v1/webhooks').set('X-API-Key', org.key);
    expect(list.body).to.have.length(1);
  });

  it('stores the secret encrypted, never in clear', async () => {
    const { id, secret } = await registered(org, 'http://127.0.0.1:8080/secret');
    const [row] = await select<{ secret_enc: Buffer }>((await harness()).db, 'SELECT secret_enc FROM webhook_endpoints WHERE id = $1', [id]);
    expect(row?.secret_enc.toString('latin1')).to.not.include(secret.slice(6));
    expect(row?.secret_enc.includes(Buffer.from(secret.slice(6), 'base64'))).to.equal(false);
  });

  it('refuses a bad endpoint with 400 {success: false, error} and registers nothing', async () => {
    for (const bad of [
      undefined,
      '',
      42,
      'not a url',
      'ftp://127.0.0.1/x',
      '/relative',
      'http://user:pw@127.0.0.1/x',
      `http://127.0.0.1/${'a'.repeat(2100)}`,
    ]) {
      const res = await register(org, bad);
      expect(res.status, String(bad)).to.equal(400);
      expect(res.body.success).to.equal(false);
      expect(res.body.error).to.be.a('string').and.not.equal('');
    }
    const unknownField = await (await harness()).http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1/x', extra: 1 });
    expect(unknownField.status).to.equal(400);
    expect(unknownField.body.success).to.equal(false);
    const broken = await (await harness()).http.post('/api/v1/webhooks').set('X-API-Key', org.key).set('content-type', 'application/json').send('{"endpoint":');
    expect(broken.status).to.equal(400);
    expect(broken.body.success).to.equal(false);
    const list = await (await harness()).http.get('/api/v1/webhooks').set('X-API-Key', org.key);
    expect(list.body).to.deep.equal([]);
  });

  it('requires https in production, unless WEBHOOK_ALLOW_HTTP', async () => {
    const prod = await appWith({ NODE_ENV: 'production', ...PRODUCTION_EXTRAS });
    const res = await prod.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1/x' });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.match(/https/);
    const allowed = await appWith({ NODE_ENV: 'production', WEBHOOK_ALLOW_HTTP: 'true', ...PRODUCTION_EXTRAS });
    expect((await allowed.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1/x' })).status).to.equal(200);
  });

  it('allows at most 20 per organization: the 21st is a 400, and a duplicate still answers', async () => {
    const created = await Promise.all(Array.from({ length: 20 }, (_, i) => registered(org, `http://127.0.0.1:9/hook-${i}`)));
    expect(new Set(created.map((c) => c.id)).size).to.equal(20);
    const over = await register(org, 'http://127.0.0.1:9/hook-20');
    expect(over.status).to.equal(400);
    expect(over.body).to.deep.include({ success: false });
    expect(over.body.error).to.match(/at most 20/);
    expect((await register(org, 'http://127.0.0.1:9/hook-3')).body.webhookId).to.equal(created[3]?.id);
  });

  it('keeps organizations apart: another organization neither sees nor manages an endpoint (404)', async () => {
    const { id } = await registered(org, 'http://127.0.0.1:9/mine');
    const other = await newOrg();
    const { http } = await harness();
    expect((await http.get('/api/v1/webhooks').set('X-API-Key', other.key)).body).to.deep.equal([]);
    for (const [method, path] of [
      ['get', ''],
      ['delete', ''],
      ['post', '/rotate-secret'],
      ['post', '/enable'],
      ['get', '/attempts'],
    ] as const) {
      expect((await http[method](`/api/v1/webhooks/${id}${path}`).set('X-API-Key', other.key)).status, `${method} ${path}`).to.equal(404);
    }
    expect((await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', other.key).send({ since: '2020-01-01T00:00:00Z' })).status).to.equal(404);
    // The same URL in the other organization is its own endpoint.
    expect((await registered(other, 'http://127.0.0.1:9/mine')).id).to.not.equal(id);
  });

  it('deletes an endpoint (204, then 404), after which the URL registers anew', async () => {
    const { id } = await registered(org, 'http://127.0.0.1:9/gone');
    const { http } = await harness();
    expect((await http.delete(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).status).to.equal(204);
    expect((await http.delete(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).status).to.equal(404);
    expect((await http.get(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).status).to.equal(404);
    expect((await registered(org, 'http://127.0.0.1:9/gone')).id).to.not.equal(id);
  });

  it('needs an API key', async () => {
    const { http } = await harness();
    expect((await http.get('/api/v1/webhooks')).status).to.equal(401);
    expect((await http.post('/api/v1/webhooks').send({ endpoint: 'http://127.0.0.1/x' })).status).to.equal(401);
  });
});

describe('webhooks: the SSRF guard at registration', () => {
  // Only 127.0.0.2 is allowed here: loopback in general is refused, as in production.
  const resolver: Resolver = (host) => {
    const table: Record<string, string[]> = {
      'inside.test': ['127.0.0.1'],
      'allowed.test': ['127.0.0.2'],
      'mixed.test': ['127.0.0.2', '10.0.0.5'],
      'metadata.test': ['169.254.169.254'],
      'v6.test': ['::1'],
    };
    const found = table[host];
    if (!found) return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
    return Promise.resolve(found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };

  it('refuses loopback, private, link-local, metadata and IPv6 equivalents, by address or by name; allows a listed network', async () => {
    const org = await newOrg();
    const app = await appWith({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.2/32' }, undefined, { resolver });
    const post = (endpoint: string) => app.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint });
    for (const refused of [
      'http://127.0.0.1/x',
      'http://10.1.2.3/x',
      'http://192.168.1.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://100.100.100.200/x',
      'http://[::1]/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://[fd00:ec2::254]/x',
      'http://[fe80::1]/x',
      'http://0.0.0.0/x',
      'http://inside.test/x',
      'http://mixed.test/x',
      'http://metadata.test/x',
      'http://v6.test/x',
      'http://nowhere.test/x',
    ]) {
      const res = await post(refused);
      expect(res.status, refused).to.equal(400);
      expect(res.body.success).to.equal(false);
    }
    expect((await post('http://allowed.test/x')).status).to.equal(200);
    expect((await post('http://127.0.0.2:8080/x')).status).to.equal(200);
  });

  it("refuses cloud platforms' service addresses even inside an allowed network (Azure's 168.63.129.16 is public unicast)", async () => {
    const org = await newOrg();
    const app = await appWith({ WEBHOOK_ALLOWED_NETWORKS: '168.63.0.0/16,100.64.0.0/10,169.254.0.0/16,fd00::/8' }, undefined, { resolver });
    for (const refused of [
      'http://168.63.129.16/x',
      'http://100.100.100.200/x',
      'http://169.254.169.254/x',
      'http://[fd00:ec2::254]/x',
      'http://192.0.0.192/x',
    ]) {
      const res = await app.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: refused });
      expect(res.status, refused).to.equal(400);
    }
    expect((await app.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://168.63.129.17/x' })).status).to.equal(200);
  });

  it("never tells the client what a name resolved to, nor the resolver's error", async () => {
    const org = await newOrg();
    const app = await appWith({ WEBHOOK_ALLOWED_NETWORKS: '127.0.0.2/32' }, undefined, { resolver });
    for (const [endpoint, hidden] of [
      ['http://inside.test/x', '127.0.0.1'],
      ['http://mixed.test/x', '10.0.0.5'],
      ['http://metadata.test/x', '169.254'],
      ['http://nowhere.test/x', 'ENOTFOUND'],
    ] as const) {
      const res = await app.post('/api/v1/webhooks').set('X-API-Key', org.key).set('Accept', 'application/problem+json').send({ endpoint });
      expect(res.status).to.equal(400);
      expect(JSON.stringify(res.body), endpoint).to.not.include(hidden);
      expect(String(res.body.error ?? res.body.detail), endpoint).to.match(/does not resolve|not public/);
    }
  });
});

describe('webhooks: delivery', function () {
  this.timeout(60_000);
  const world = deliveryWorld();
  let org: TestOrg;
  let rx: Receiver;
  beforeEach(() => {
    ({ org, rx } = world);
  });

  it('delivers guarantee.created, signed per Standard Webhooks, with the v2 guarantee as data, and records the attempt', async () => {
    const { id, secret } = await registered(org, rx.url);
    const guaranteeId = await createGuarantee(org, 'P-1');
    const [r] = await rx.waitFor(1);
    const payload = verified(secret, r as Received);
    expect(payload.type).to.equal('guarantee.created');
    expect(payload.data).to.include({ id: guaranteeId, orgId: org.orgId, notarizationStatus: 'PENDING' });
    expect((payload.data.details as Record<string, unknown>).policyNumber).to.equal('P-1');
    expect(Date.parse(payload.timestamp)).to.be.closeTo(Date.now(), 10_000);
    expect(r?.headers['content-type']).to.equal('application/json');
    expect(r?.body).to.equal(JSON.stringify(payload)); // the body as signed, byte for byte
    const log = await eventually('the attempt record', async () => {
      const a = await attempts(org, id);
      return a.totalItems === 1 && a;
    });
    expect(log.attempts[0]).to.include({ eventId: r?.headers['webhook-id'], statusCode: 204, succeeded: true, error: null });
    // Nothing more arrives: one delivery per event and endpoint.
    await new Promise((res) => setTimeout(res, 500));
    expect(rx.received).to.have.length(1);
  });

  it('delivers each event to every endpoint of the organization, and none to another organization', async () => {
    const rx2 = await receiver('/second');
    try {
      const a = await registered(org, rx.url);
      const b = await registered(org, rx2.url);
      const other = await newOrg();
      await registered(other, rx.url.replace('/hook', '/other'));
      await createGuarantee(org, 'fan-out');
      const [ra] = await rx.waitFor(1);
      const [rb] = await rx2.waitFor(1);
      expect(verified(a.secret, ra as Received).type).to.equal('guarantee.created');
      expect(verified(b.secret, rb as Received).type).to.equal('guarantee.created');
      expect(ra?.headers['webhook-id']).to.equal(rb?.headers['webhook-id']);
      await new Promise((res) => setTimeout(res, 300));
      expect(rx.received.filter((r) => r.headers['webhook-id'] === ra?.headers['webhook-id'])).to.have.length(1);
    } finally {
      await rx2.close();
    }
  });

  it('sends file.status.changed with the key, uuid, status and reason when a file changes status', async () => {
    const { secret } = await registered(org, rx.url);
    const key = await issueFile(org.orgId);
    const uuid = key.slice(0, key.indexOf('.'));
    const { db, events } = await harness();
    await createFileRepository(db, events.outbox).markError(uuid, 'No file was uploaded before the upload URL expired.', new Date());
    const [r] = await rx.waitFor(1);
    const payload = verified(secret, r as Received);
    expect(payload.type).to.equal('file.status.changed');
    expect(payload.data).to.deep.equal({
      key,
      uuid,
      status: 'Error',
      previousStatus: 'In Progress',
      statusReason: 'No file was uploaded before the upload URL expired.',
    });
  });

  it('retries after 500s and timeouts on the schedule, then succeeds; every attempt is recorded', async () => {
    const { id, secret } = await registered(org, rx.url);
    rx.answer((_req, res, n) => {
      if (n === 1) res.writeHead(500).end('boom');
      else if (n === 2) {
        /* no answer: the 800 ms timeout */
      } else res.writeHead(200).end('ok');
    });
    await createGuarantee(org, 'retry');
    const got = await rx.waitFor(3);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).to.equal(1);
    for (const r of got) expect(verified(secret, r).type).to.equal('guarantee.created');
    const log = await eventually('three attempts', async () => {
      const a = await attempts(org, id);
      return a.totalItems === 3 && a;
    });
    const [third, second, first] = log.attempts;
    expect(first).to.include({ statusCode: 500, succeeded: false, error: 'HTTP 500' });
    expect(second).to.include({ statusCode: null, succeeded: false });
    expect(second?.error).to.match(/no answer within 800 ms/);
    expect(third).to.include({ statusCode: 200, succeeded: true });
    // Each retry waits about the schedule's delay (0.2 s, then 0.3 s; ±20%) after the attempt before it.
    expect((got[1] as Received).at - (got[0] as Received).at).to.be.at.least(150);
  });

  it('honours Retry-After on a 429', async () => {
    await registered(org, rx.url);
    rx.answer((_req, res, n) => {
      if (n === 1) res.writeHead(429, { 'retry-after': '2' }).end();
      else res.writeHead(204).end();
    });
    await createGuarantee(org, 'retry-after');
    const got = await rx.waitFor(2, 15_000);
    expect((got[1] as Received).at - (got[0] as Received).at).to.be.at.least(1900);
  });

  it('disables the endpoint on 410 Gone; later events are not sent; enabling and replaying delivers them', async () => {
    const { id, secret } = await registered(org, rx.url);
    rx.answer((_req, res) => {
      res.writeHead(410).end();
    });
    await createGuarantee(org, 'gone-1');
    await rx.waitFor(1);
    const { http } = await harness();
    const view = await eventually('the endpoint disabled', async () => {
      const v = (await http.get(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).body as { status: string; disabledReason: string };
      return v.status === 'disabled' && v;
    });
    expect(view.disabledReason).to.match(/410/);
    await createGuarantee(org, 'gone-2');
    await new Promise((r) => setTimeout(r, 1000));
    expect(rx.received).to.have.length(1);
    // A disabled endpoint cannot be replayed to until enabled.
    expect((await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', org.key).send({ since: '2020-01-01T00:00:00Z' })).status).to.equal(400);
    rx.answer((_req, res) => {
      res.writeHead(204).end();
    });
    const enabled = await http.post(`/api/v1/webhooks/${id}/enable`).set('X-API-Key', org.key);
    expect(enabled.body).to.include({ status: 'active', disabledReason: null });
    const replay = await http
      .post(`/api/v1/webhooks/${id}/replay`)
      .set('X-API-Key', org.key)
      .send({ since: new Date(Date.now() - 60_000).toISOString() });
    expect(replay.status).to.equal(202);
    expect(replay.body).to.deep.equal({ replayed: 2 });
    const got = await rx.waitFor(3);
    const policies = got
      .slice(1)
      .map((r) => (verified(secret, r).data.details as { policyNumber: string }).policyNumber)
      .sort();
    expect(policies).to.deep.equal(['gone-1', 'gone-2']);
  });

  it('keeps a delivery that ran out of retries as failed, and replays it (all failed since a time, or one event)', async () => {
    const { id, secret } = await registered(org, rx.url);
    rx.answer((_req, res) => {
      res.writeHead(503).end();
    });
    await createGuarantee(org, 'exhausted');
    await rx.waitFor(4); // the first attempt and three retries
    const { db, http } = await harness();
    const [delivery] = await eventually('the delivery failed', async () => {
      const rows = await select<{ status: string; attempts: number; event_id: string }>(
        db,
        'SELECT status, attempts, event_id FROM webhook_deliveries WHERE endpoint_id = $1',
        [id],
      );
      return rows[0]?.status === 'failed' && rows;
    });
    expect(delivery?.attempts).to.equal(4);
    await new Promise((r) => setTimeout(r, 600));
    expect(rx.received).to.have.length(4);

    rx.answer((_req, res) => {
      res.writeHead(200).end();
    });
    const replay = await http
      .post(`/api/v1/webhooks/${id}/replay`)
      .set('X-API-Key', org.key)
      .send({ since: new Date(Date.now() - 60_000).toISOString() });
    expect(replay.body).to.deep.equal({ replayed: 1 });
    const got = await rx.waitFor(5);
    expect(got[4]?.headers['webhook-id']).to.equal(delivery?.event_id); // the same id: receivers can deduplicate
    expect(verified(secret, got[4] as Received).type).to.equal('guarantee.created');

    // One event, again, on request (even a delivered one).
    const one = await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', org.key).send({ eventId: delivery?.event_id });
    expect(one.status).to.equal(202);
    expect(one.body).to.deep.equal({ replayed: 1 });
    await rx.waitFor(6);
    // Unknown or foreign events, and bad bodies.
    expect(
      (await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', org.key).send({ eventId: '01900000-0000-7000-8000-000000000000' })).status,
    ).to.equal(404);
    expect((await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', org.key).send({})).status).to.equal(400);
    expect((await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', org.key).send({ since: 'yesterday' })).status).to.equal(400);
  });

  it("sends again an event replayed while its delivery was in flight: the older attempt's success does not settle the replay", async () => {
    const { id } = await registered(org, rx.url);
    const { http } = await harness();
    rx.answer(async (r, res, n) => {
      // The first request is answered only once the replay of its event was accepted.
      if (n === 1) {
        const replay = await http.post(`/api/v1/webhooks/${id}/replay`).set('X-API-Key', org.key).send({ eventId: r.headers['webhook-id'] });
        expect(replay.body).to.deep.equal({ replayed: 1 });
      }
      res.writeHead(204).end();
    });
    await createGuarantee(org, 'replayed-in-flight');
    const got = await rx.waitFor(2);
    expect(got[1]?.headers['webhook-id']).to.equal(got[0]?.headers['webhook-id']);
    const { db } = await harness();
    const row = await eventually('the replay delivered', async () => {
      const [d] = await select<{ status: string; attempts: number; replays: number }>(
        db,
        'SELECT status, attempts, replays FROM webhook_deliveries WHERE endpoint_id = $1',
        [id],
      );
      return d?.status === 'succeeded' && d.attempts === 2 && d;
    });
    expect(row).to.include({ replays: 1 });
  });

  it('disables an endpoint that has failed for WEBHOOK_DISABLE_AFTER_SECONDS without a success', async () => {
    const { id } = await registered(org, rx.url);
    rx.answer((_req, res) => {
      res.writeHead(500).end();
    });
    const strict = await startWorkers(['webhooks'], { config: configWith({ ...FAST_WEBHOOKS, WEBHOOK_DISABLE_AFTER_SECONDS: '1' }), logger: silent });
    await world.workers.close();
    try {
      const { http } = await harness();
      const viewOf = async () =>
        (await http.get(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).body as { status: string; disabledReason: string; failingSince: string | null };
      await createGuarantee(org, 'failing-first');
      // The first failure sets failing_since; a failure at least a second later disables. Its
      // retries may all fall within that second, so a later event's attempt is the one that must.
      const failing = await eventually('failing_since set', async () => {
        const v = await viewOf();
        return v.failingSince !== null && v;
      });
      expect(failing.status).to.equal('active');
      await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(failing.failingSince as string) + 1100 - Date.now())));
      await createGuarantee(org, 'failing-later');
      const view = await eventually(
        'the endpoint disabled',
        async () => {
          const v = await viewOf();
          return v.status === 'disabled' && v;
        },
        15_000,
      );
      expect(view.disabledReason).to.match(/^failing since /);
      expect(view.failingSince).to.equal(failing.failingSince);
      expect(Date.parse(view.failingSince as string)).to.be.lessThan(Date.now() - 1000);
    } finally {
      await strict.close();
      world.workers = await startWorkers(['webhooks'], { config: configWith(FAST_WEBHOOKS), logger: silent });
    }
  });

  it('does not disable an endpoint for failing too long when a success came after its failing_since (a success racing a failure)', async () => {
    const { id } = await registered(org, rx.url);
    const strict = await startWorkers(['webhooks'], { config: configWith({ ...FAST_WEBHOOKS, WEBHOOK_DISABLE_AFTER_SECONDS: '3' }), logger: silent });
    await world.workers.close();
    try {
      await createGuarantee(org, 'raced-ok');
      await rx.waitFor(1);
      await eventually('the success recorded', async () => (await attempts(org, id)).totalItems === 1);
      // As if a failure had set failing_since an hour ago and the success, having read it unset, left it.
      const { db } = await harness();
      await db.query('UPDATE webhook_endpoints SET failing_since = NOW(3) - INTERVAL 1 HOUR WHERE id = ?', { replacements: [id] });
      rx.answer((_req, res) => {
        res.writeHead(500).end();
      });
      await createGuarantee(org, 'raced-failing');
      await rx.waitFor(5); // the failure and its three retries
      await eventually('every attempt recorded', async () => (await attempts(org, id)).totalItems === 5);
      const view = (await (await harness()).http.get(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).body as { status: string; failingSince: string };
      expect(view.status).to.equal('active');
      expect(Date.parse(view.failingSince)).to.be.greaterThan(Date.now() - 60_000); // failing from the first failure after the success
    } finally {
      await strict.close();
      world.workers = await startWorkers(['webhooks'], { config: configWith(FAST_WEBHOOKS), logger: silent });
    }
  });

  it("signs with both the new and the old secret during a rotation's grace period", async () => {
    const { id, secret: old } = await registered(org, rx.url);
    const { http } = await harness();
    const rotated = await http.post(`/api/v1/webhooks/${id}/rotate-secret`).set('X-API-Key', org.key);
    expect(rotated.status).to.equal(200);
    expect(rotated.body.secret)
      .to.match(/^whsec_/)
      .and.not.equal(old);
    expect(Date.parse(rotated.body.previousSecretValidUntil)).to.be.greaterThan(Date.now());
    await createGuarantee(org, 'rotation');
    const [r] = await rx.waitFor(1);
    expect(String(r?.headers['webhook-signature']).split(' ')).to.have.length(2);
    expect(verified(rotated.body.secret as string, r as Received).type).to.equal('guarantee.created');
    expect(verified(old, r as Received).type).to.equal('guarantee.created');
    // Registering the URL again gives the current secret.
    expect((await register(org, rx.url)).body.secret).to.equal(rotated.body.secret);
  });

  it('does not follow redirects: a 302 is a failed attempt, and its target is never contacted', async () => {
    const target = await receiver('/target');
    try {
      const { id } = await registered(org, rx.url);
      rx.answer((_req, res, n) => {
        if (n === 1) res.writeHead(302, { location: target.url }).end();
        else res.writeHead(204).end();
      });
      await createGuarantee(org, 'redirect');
      await rx.waitFor(2);
      const log = await eventually('two attempts', async () => {
        const a = await attempts(org, id);
        return a.totalItems === 2 && a;
      });
      expect(log.attempts[1]?.error).to.match(/redirect to .* not followed/);
      expect(target.received).to.have.length(0);
    } finally {
      await target.close();
    }
  });

  it('bounds deliveries in flight per endpoint: a slow receiver does not hold up a fast one', async () => {
    const slow = await receiver('/slow');
    try {
      await registered(org, slow.url);
      await registered(org, rx.url);
      slow.answer(async (_req, res) => {
        await new Promise((r) => setTimeout(r, 600));
        res.writeHead(204).end();
      });
      const bounded = await startWorkers(['webhooks'], {
        config: configWith({ ...FAST_WEBHOOKS, WEBHOOK_TIMEOUT_MS: '5000', WEBHOOK_ENDPOINT_CONCURRENCY: '2' }),
        logger: silent,
      });
      // The shared worker above stops taking jobs meanwhile; this one's bound applies.
      await world.workers.close();
      try {
        const n = 12;
        for (let i = 0; i < n; i++) await createGuarantee(org, `burst-${i}`);
        await rx.waitFor(n, 10_000);
        const fastDone = Date.now();
        await slow.waitFor(n, 30_000);
        expect(slow.maxInFlight()).to.be.at.most(2);
        // The fast receiver had everything long before the slow one (12 × 600 ms / 2 at a time).
        expect((slow.received[n - 1] as Received).at - fastDone).to.be.greaterThan(1000);
      } finally {
        await bounded.close();
        world.workers = await startWorkers(['webhooks'], { config: configWith(FAST_WEBHOOKS), logger: silent });
      }
    } finally {
      await slow.close();
    }
  });
});

describe('webhooks: the SSRF guard at delivery', function () {
  this.timeout(30_000);

  it('refuses to deliver to an address that is no longer allowed (checked on every delivery, after resolution)', async () => {
    const org = await newOrg();
    const rx = await receiver('/hook', '127.0.0.1');
    const resolver: Resolver = (host) => Promise.resolve(host === 'receiver.test' ? [{ address: '127.0.0.1', family: 4 }] : []);
    // Registered while loopback was allowed; the worker allows only 127.0.0.2 now.
    const app = await appWith({}, undefined, { resolver });
    const res = await app
      .post('/api/v1/webhooks')
      .set('X-API-Key', org.key)
      .send({ endpoint: rx.url.replace('127.0.0.1', 'receiver.test') });
    expect(res.status).to.equal(200);
    const id = res.body.webhookId as string;
    const workers = await startWorkers(['webhooks'], {
      config: configWith({ ...FAST_WEBHOOKS, WEBHOOK_ALLOWED_NETWORKS: '127.0.0.2/32' }),
      logger: silent,
      resolver,
    });
    try {
      await createGuarantee(org, 'ssrf');
      const log = await eventually('a refused attempt', async () => {
        const a = await attempts(org, id);
        return a.totalItems >= 1 && a;
      });
      expect(log.attempts[0]).to.include({ statusCode: null, succeeded: false });
      // Refused, and the attempt the organization reads does not say what the name resolved to.
      expect(log.attempts[0]?.error).to.equal('refused: receiver.test resolves to an address that is not public');
      expect(rx.received).to.have.length(0);
    } finally {
      await workers.close();
      await rx.close();
    }
  });
});

describe('webhooks: deliveries read and recorded in batches', () => {
  it('reads many deliveries in one statement, in the order asked, and none that is not there', async () => {
    const org = await newOrg();
    const rx = await receiver();
    try {
      const a = await registered(org, `${rx.url}/a`);
      const b = await registered(org, `${rx.url}/b`);
      await createGuarantee(org, 'batched');
      const { db, webhooks } = await harness();
      const rows = await eventually('two deliveries', async () => {
        const r = await select<{ event_id: string; endpoint_id: string }>(
          db,
          'SELECT event_id, endpoint_id FROM webhook_deliveries WHERE org_id = $1 ORDER BY endpoint_id',
          [org.orgId],
        );
        return r.length === 2 && r;
      });
      const keys = rows.map((r) => ({ eventId: r.event_id, endpointId: r.endpoint_id }));
      const missing = { eventId: keys[0]?.eventId ?? '', endpointId: '01900000-0000-7000-8000-000000000000' };
      const [body] = await select<{ body: string }>(db, 'SELECT body FROM webhook_events WHERE id = $1', [keys[0]?.eventId]);

      const many = await webhooks.deliveryContexts([keys[1], missing, keys[0]].filter((k) => k !== undefined));
      expect(many.map((c) => c?.endpoint.id)).to.deep.equal([keys[1]?.endpointId, undefined, keys[0]?.endpointId]);
      expect(many[0]).to.include({ status: 'pending', body: body?.body });
      expect([a.id, b.id]).to.include(many[2]?.endpoint.id);
      const one = await webhooks.deliveryContexts([keys[0]].filter((k) => k !== undefined));
      expect(one[0]?.endpoint.url).to.equal(many[2]?.endpoint.url);
      expect(await webhooks.deliveryContexts([missing])).to.deep.equal([undefined]);
    } finally {
      await rx.close();
    }
  });

  it('records many attempts at once: every attempt on record, successes marked in one statement, failures each with their error', async () => {
    const org = await newOrg();
    const rx = await receiver();
    try {
      const { id } = await registered(org, rx.url);
      for (let i = 0; i < 3; i++) await createGuarantee(org, `recorded-${i}`);
      const { db, webhooks } = await harness();
      const keys = (
        await eventually('three deliveries', async () => {
          const r = await select<{ event_id: string }>(db, 'SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY event_id', [id]);
          return r.length === 3 && r;
        })
      ).map((r) => ({ eventId: r.event_id, endpointId: id, replays: 0 }));
      const at = new Date();
      const ok = { at, durationMs: 3, statusCode: 204, error: null, succeeded: true, deliveryStatus: 'succeeded' } as const;
      const bad = { at, durationMs: 5, statusCode: 500, error: 'HTTP 500', succeeded: false, deliveryStatus: 'pending' } as const;
      await webhooks.recordAttempts(keys.map((k, i) => ({ ...k, outcome: i === 1 ? bad : ok, wasFailing: false })));
      const deliveries = await select<{ event_id: string; status: string; attempts: number; last_error: string | null }>(
        db,
        'SELECT event_id, status, attempts, last_error FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY event_id',
        [id],
      );
      expect(deliveries.map((d) => [d.status, d.attempts, d.last_error])).to.deep.equal([
        ['succeeded', 1, null],
        ['pending', 1, 'HTTP 500'],
        ['succeeded', 1, null],
      ]);
      const log = await attempts(org, id);
      expect(log.totalItems).to.equal(3);
      expect(log.attempts.filter((x) => x.succeeded)).to.have.length(2);
      const [endpoint] = await select<{ failing_since: Date | null }>(db, 'SELECT failing_since FROM webhook_endpoints WHERE id = $1', [id]);
      expect(endpoint?.failing_since?.getTime()).to.equal(at.getTime());
    } finally {
      await rx.close();
    }
  });
  /** Three pending deliveries to one new endpoint, oldest event first. */
  async function threeDeliveries(tag: string) {
    const org = await newOrg();
    const rx = await receiver();
    await rx.close(); // nothing is sent in these tests: the repository is driven directly
    const { id } = await registered(org, rx.url);
    for (let i = 0; i < 3; i++) await createGuarantee(org, `${tag}-${i}`);
    const { db } = await harness();
    const keys = (
      await eventually('three deliveries', async () => {
        const r = await select<{ event_id: string }>(db, 'SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY event_id', [id]);
        return r.length === 3 && r;
      })
    ).map((r) => ({ eventId: r.event_id, endpointId: id, replays: 0 }));
    const status = async () =>
      (
        await select<{ status: string; attempts: number }>(db, 'SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY event_id', [id])
      ).map((d) => `${d.status} ${d.attempts}`);
    return { org, id, keys, status };
  }

  it('fails only the delivery whose own statement failed (a row lock held elsewhere), recording the others', async () => {
    const { keys, status } = await threeDeliveries('locked');
    const { db, config } = await harness();
    // A repository on a pool with a one-second statement limit, so that the lock wait ends soon.
    const quick = createSequelize({ url: config.DATABASE_URL, poolMax: 2, statementTimeoutMs: 1000 });
    const t = await db.transaction();
    try {
      await select(db, 'SELECT status FROM webhook_deliveries WHERE event_id = $1 AND endpoint_id = $2 FOR UPDATE', [keys[0]?.eventId, keys[0]?.endpointId], t);
      const at = new Date();
      const failed = { at, durationMs: 5, statusCode: 500, error: 'HTTP 500', succeeded: false, deliveryStatus: 'failed' } as const;
      const errors = await createWebhookRepository(quick).recordAttempts(keys.map((k) => ({ ...k, outcome: failed, wasFailing: true })));
      expect(errors.map((e) => e !== undefined)).to.deep.equal([true, false, false]);
    } finally {
      await t.rollback();
      await quick.close();
    }
    expect(await status()).to.deep.equal(['pending 0', 'failed 1', 'failed 1']);
  });

  it("never marks failed a delivery that succeeded meanwhile (an older job overlapping a replay's)", async () => {
    const { keys, status } = await threeDeliveries('overlap');
    const { webhooks } = await harness();
    const at = new Date();
    const key = keys[0] as { eventId: string; endpointId: string; replays: number };
    await webhooks.recordAttempts([
      { ...key, outcome: { at, durationMs: 3, statusCode: 204, error: null, succeeded: true, deliveryStatus: 'succeeded' }, wasFailing: false },
    ]);
    await webhooks.recordAttempts([
      { ...key, outcome: { at, durationMs: 3, statusCode: 500, error: 'HTTP 500', succeeded: false, deliveryStatus: 'failed' }, wasFailing: false },
    ]);
    expect((await status())[0]).to.equal('succeeded 1');
  });

  it("leaves pending and due a delivery replayed after its attempt read it: neither that attempt's success nor its last failure settles it", async () => {
    const { org, id, keys, status } = await threeDeliveries('replayed');
    const { db, webhooks } = await harness();
    const [first, second, third] = keys as Array<{ eventId: string; endpointId: string; replays: number }>;
    if (!first || !second || !third) throw new Error('three deliveries expected');
    const replayedAt = new Date(Date.now() - 1000);
    for (const k of [first, second]) expect(await webhooks.replay(org.orgId, id, { eventId: k.eventId }, replayedAt)).to.equal(1);
    const at = new Date();
    const later = new Date(at.getTime() + 3_600_000);
    const ok = { at, durationMs: 3, statusCode: 204, error: null, succeeded: true, deliveryStatus: 'succeeded' } as const;
    const lastFailure = { at, durationMs: 3, statusCode: 500, error: 'HTTP 500', succeeded: false, deliveryStatus: 'failed', dueAt: later } as const;
    // Attempts that read the deliveries before the replays (generation 0); the third was not replayed.
    await webhooks.recordAttempts([
      { ...first, outcome: ok, wasFailing: false },
      { ...third, outcome: ok, wasFailing: false },
    ]);
    await webhooks.recordAttempts([{ ...second, outcome: lastFailure, wasFailing: false }]);
    expect(await status()).to.deep.equal(['pending 1', 'pending 1', 'succeeded 1']);
    const due = await select<{ due_at: Date }>(db, 'SELECT due_at FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY event_id LIMIT 2', [id]);
    expect(due.map((d) => d.due_at.getTime())).to.deep.equal([replayedAt.getTime(), replayedAt.getTime()]); // due now, for the replay's attempt
    // The replay's own attempts (generation 1) settle them.
    await webhooks.recordAttempts([{ ...first, replays: 1, outcome: ok, wasFailing: false }]);
    await webhooks.recordAttempts([{ ...second, replays: 1, outcome: lastFailure, wasFailing: false }]);
    expect(await status()).to.deep.equal(['succeeded 2', 'failed 2', 'succeeded 1']);
  });

  it('counts a success as after failing_since when it finished after it, even if it started before', async () => {
    const { keys, id } = await threeDeliveries('finished');
    const { webhooks } = await harness();
    const since = new Date();
    const started = (msBefore: number) => new Date(since.getTime() - msBefore);
    const ok = (at: Date, durationMs: number) => ({ at, durationMs, statusCode: 204, error: null, succeeded: true, deliveryStatus: 'succeeded' }) as const;
    // Finished 100 ms before `since`: not after it.
    await webhooks.recordAttempts([
      { ...(keys[0] as { eventId: string; endpointId: string; replays: number }), outcome: ok(started(600), 500), wasFailing: false },
    ]);
    expect(await webhooks.succeededSince(id, since, 15_000)).to.equal(false);
    // Started 2 s before `since`, finished 1 s after it.
    await webhooks.recordAttempts([
      { ...(keys[1] as { eventId: string; endpointId: string; replays: number }), outcome: ok(started(2000), 3000), wasFailing: false },
    ]);
    expect(await webhooks.succeededSince(id, since, 15_000)).to.equal(true);
    // An attempt cannot have run longer than the attempt timeout: one that started earlier is not looked for.
    expect(await webhooks.succeededSince(id, since, 1000)).to.equal(false);
  });
});

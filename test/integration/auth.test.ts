import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { appWith, harness, newOrg } from '../support/harness.js';

describe('API keys', () => {
  it('refuses a request without a key with 401 and an empty body, on every /api path', async () => {
    const { http } = await harness();
    for (const [method, path] of [
      ['get', '/api/v1/guarantees'],
      ['post', '/api/v2/guarantees'],
      ['get', '/api/v1/guarantees/x'],
      ['get', '/api/v9/nothing'],
    ] as const) {
      const res = await http[method](path);
      expect(res.status, path).to.equal(401);
      expect(res.text).to.equal('');
    }
  });

  it('accepts the key in X-API-Key or as a Bearer token', async () => {
    const org = await newOrg();
    const { http } = await harness();
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key)).status).to.equal(200);
    expect((await http.get('/api/v1/guarantees').set('Authorization', `Bearer ${org.key}`)).status).to.equal(200);
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key).set('Authorization', `Bearer ${org.key}`)).status).to.equal(200);
  });

  it('refuses unknown, malformed, altered, two X-API-Key headers, or an X-API-Key and a different Bearer', async () => {
    const org = await newOrg();
    const other = await newOrg();
    const { http } = await harness();
    const altered = org.key.slice(0, -1) + (org.key.endsWith('A') ? 'B' : 'A');
    for (const key of ['nope', altered, org.key.toUpperCase(), `${org.prefix}_${'A'.repeat(43)}`]) {
      expect((await http.get('/api/v1/guarantees').set('X-API-Key', key)).status, key).to.equal(401);
    }
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', [org.key, org.key] as unknown as string)) /* sent as two headers */.status).to.equal(401);
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key).set('Authorization', `Bearer ${other.key}`)).status).to.equal(401);
    expect((await http.get('/api/v1/guarantees').set('Authorization', `Basic ${Buffer.from('a:b').toString('base64')}`)).status).to.equal(401);
  });

  it('stops accepting a revoked key within a second, even where it is cached', async () => {
    const org = await newOrg();
    const { http, orgs } = await harness();
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key)).status).to.equal(200);
    // Revoked through another process's service: this app's cache still holds the key.
    const { createOrgService } = await import('../../src/orgs/org.service.js');
    const { createOrgRepository } = await import('../../src/orgs/org.repository.js');
    await createOrgService(createOrgRepository((await harness()).db)).revokeApiKey(org.prefix);
    await sleep(1100);
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key)).status).to.equal(401);
    expect(orgs).to.exist;
  });

  it('limits requests per key with 429 and Retry-After', async () => {
    const http = await appWith({ RATE_LIMIT_PER_MINUTE: '3' });
    const org = await newOrg();
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 5; i++) {
      const res = await http.get('/api/v1/guarantees').set('X-API-Key', org.key);
      statuses.push(res.status);
      retryAfter ??= res.headers['retry-after'];
    }
    expect(statuses).to.deep.equal([200, 200, 200, 429, 429]);
    expect(Number(retryAfter)).to.be.within(1, 60);
    // Another key of another organization has its own budget.
    const other = await newOrg();
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', other.key)).status).to.equal(200);
  });

  it('turns the per-key limit off with RATE_LIMIT_PER_MINUTE=0', async () => {
    const http = await appWith({ RATE_LIMIT_PER_MINUTE: '0' });
    const org = await newOrg();
    const statuses = await Promise.all(Array.from({ length: 30 }, async () => (await http.get('/api/v1/guarantees').set('X-API-Key', org.key)).status));
    expect(new Set(statuses)).to.deep.equal(new Set([200]));
  });

  it('behind a router, counts failures by the hop the router appended, not by what the client forged', async () => {
    const http = await appWith({ AUTH_FAILURES_PER_MINUTE: '3', TRUST_PROXY: 'true' });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await http.get('/api/v1/guarantees').set('X-API-Key', 'bad').set('X-Forwarded-For', `10.9.${i}.1, 203.0.113.7`)).status);
    }
    expect(statuses).to.deep.equal([401, 401, 401, 429, 429]);
    // Another client, behind the same router, keeps its own budget.
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', 'bad').set('X-Forwarded-For', '203.0.113.8')).status).to.equal(401);
  });

  it('limits failed authentications per client address, while a known key keeps working', async () => {
    const http = await appWith({ AUTH_FAILURES_PER_MINUTE: '3' });
    const org = await newOrg();
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key)).status).to.equal(200);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await http.get('/api/v1/guarantees').set('X-API-Key', `bad-${i}`)).status);
    expect(statuses).to.deep.equal([401, 401, 401, 429, 429]);
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', org.key)).status).to.equal(200);
  });

  it('never refuses a valid key, even one this process has not seen, from an address over the failure limit (all clients behind one router share it)', async () => {
    const http = await appWith({ AUTH_FAILURES_PER_MINUTE: '3' });
    for (let i = 0; i < 5; i++) await http.get('/api/v1/guarantees').set('X-API-Key', `wrong-${i}`);
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', 'wrong-again')).status).to.equal(429);
    // A key created after the failures: never cached here, so it is looked up.
    const late = await newOrg();
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', late.key)).status).to.equal(200);
    expect((await http.get('/api/v1/guarantees')).status).to.equal(429);
  });
});

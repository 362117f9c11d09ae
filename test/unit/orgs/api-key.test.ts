import { expect } from 'chai';
import { apiKeyMatches, apiKeyPrefix, generateApiKey, hashApiKey } from '../../../src/orgs/api-key.js';
import { credentialHeaders, presentedKey } from '../../../src/orgs/auth.middleware.js';
import { createOrgService, UNKNOWN_TTL_MS } from '../../../src/orgs/org.service.js';
import type { OrgRepository, StoredApiKey } from '../../../src/orgs/org.repository.js';

describe('API key format', () => {
  it('has a readable prefix and 32 random bytes, and only its hash is kept', () => {
    const { key, prefix, hash } = generateApiKey();
    expect(key).to.match(/^grk_[a-zA-Z2-9]{12}_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(17), 'base64url')).to.have.length(32);
    expect(apiKeyPrefix(key)).to.equal(prefix);
    expect(hash.equals(hashApiKey(key))).to.equal(true);
    expect(apiKeyMatches(key, hash)).to.equal(true);
    expect(apiKeyMatches(`${key.slice(0, -1)}x`, hash)).to.equal(false);
  });

  it('never repeats', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().prefix));
    expect(keys.size).to.equal(1000);
  });
});

describe('presentedKey', () => {
  it('reads X-API-Key or a Bearer token, and refuses ambiguity', () => {
    expect(presentedKey({ 'x-api-key': ['k'] })).to.equal('k');
    expect(presentedKey({ authorization: ['Bearer k'] })).to.equal('k');
    expect(presentedKey({ authorization: ['bearer k'] })).to.equal('k');
    expect(presentedKey({ 'x-api-key': ['k'], authorization: ['Bearer k'] })).to.equal('k');
    expect(presentedKey({ 'x-api-key': ['k'], authorization: ['Bearer j'] })).to.equal(undefined);
    expect(presentedKey({ 'x-api-key': ['k', 'k'] })).to.equal(undefined);
    expect(presentedKey({ authorization: ['Basic abc'] })).to.equal(undefined);
    expect(presentedKey({})).to.equal(undefined);
  });

  it('keeps repeated header lines apart, whatever their case', () => {
    expect(credentialHeaders(['Host', 'x', 'X-API-Key', 'a', 'x-api-key', 'b', 'AUTHORIZATION', 'Bearer c'])).to.deep.equal({
      'x-api-key': ['a', 'b'],
      authorization: ['Bearer c'],
    });
    expect(presentedKey(credentialHeaders(['X-Api-Key', 'a', 'x-api-key', 'a']))).to.equal(undefined);
  });
});

describe('key authentication cache', () => {
  it('asks the database again after the TTL, so that a revocation takes effect', async () => {
    const { key, prefix, hash } = generateApiKey();
    let stored: StoredApiKey = { prefix, orgId: 'o', kind: 'issuer', hash, revokedAt: null };
    let lookups = 0;
    const repo = {
      findApiKey: () => {
        lookups++;
        return Promise.resolve(stored);
      },
    } as unknown as OrgRepository;
    let clock = 0;
    const svc = createOrgService(repo, { cacheTtlMs: 1000, now: () => clock });
    expect(await svc.authenticate(key)).to.deep.equal({ orgId: 'o', kind: 'issuer', keyPrefix: prefix });
    stored = { ...stored, revokedAt: new Date() };
    clock = 999;
    expect(await svc.authenticate(key)).to.deep.equal({ orgId: 'o', kind: 'issuer', keyPrefix: prefix });
    expect(lookups).to.equal(1);
    clock = 1000;
    expect(await svc.authenticate(key)).to.equal(undefined);
    expect(lookups).to.equal(2);
  });

  it('reads a key once for all the requests that present it before it is cached, each compared with the record', async () => {
    const { key, prefix, hash } = generateApiKey();
    let lookups = 0;
    let answer: (k: StoredApiKey) => void = () => undefined;
    const repo = {
      findApiKey: () => {
        lookups++;
        return new Promise<StoredApiKey>((resolve) => {
          answer = resolve;
        });
      },
    } as unknown as OrgRepository;
    const svc = createOrgService(repo);
    const wrong = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const asked = Promise.all([...Array.from({ length: 200 }, () => svc.authenticate(key)), svc.authenticate(wrong)]);
    answer({ prefix, orgId: 'o', kind: 'issuer', hash, revokedAt: null });
    const principals = await asked;
    expect(lookups).to.equal(1);
    expect(principals.slice(0, 200).every((p) => p?.keyPrefix === prefix)).to.equal(true);
    expect(principals[200]).to.equal(undefined);
    // Cached now: no read.
    expect(svc.authenticateCached(key)?.orgId).to.equal('o');
  });

  it('does not remember a read that a revocation overtook, nor a failed read', async () => {
    const { key, prefix, hash } = generateApiKey();
    const answers: Array<{ resolve: (k: StoredApiKey) => void; reject: (e: Error) => void }> = [];
    const repo = {
      findApiKey: () => new Promise<StoredApiKey>((resolve, reject) => answers.push({ resolve, reject })),
      revokeApiKey: () => Promise.resolve(true),
    } as unknown as OrgRepository;
    const svc = createOrgService(repo);
    const first = svc.authenticate(key);
    await svc.revokeApiKey(prefix);
    // The revocation forgot the read in flight: the next request reads again.
    const second = svc.authenticate(key);
    expect(answers).to.have.length(2);
    // The fresh read (revoked) ends first; the stale one, begun before the revocation, after it:
    // it answers its own request, but is not remembered over the revocation.
    answers[1]?.resolve({ prefix, orgId: 'o', kind: 'issuer', hash, revokedAt: new Date() });
    expect(await second).to.equal(undefined);
    answers[0]?.resolve({ prefix, orgId: 'o', kind: 'issuer', hash, revokedAt: null });
    expect((await first)?.orgId).to.equal('o');
    expect(svc.authenticateCached(key)).to.equal(undefined);
    // A failed read is given to those who waited for it, and the next request reads again.
    const { key: other } = generateApiKey();
    const failing = svc.authenticate(other);
    answers[2]?.reject(new Error('database down'));
    let err: unknown;
    await failing.catch((e: unknown) => {
      err = e;
    });
    expect((err as Error).message).to.equal('database down');
    void svc.authenticate(other);
    expect(answers).to.have.length(4);
  });

  it('remembers a prefix that matched no key for a minute: a client hammering with a wrong key costs one lookup', async () => {
    const { key } = generateApiKey();
    let lookups = 0;
    const repo = {
      findApiKey: () => {
        lookups++;
        return Promise.resolve(undefined);
      },
    } as unknown as OrgRepository;
    let clock = 0;
    const svc = createOrgService(repo, { now: () => clock });
    for (let i = 0; i < 100; i++) expect(await svc.authenticate(key)).to.equal(undefined);
    expect(lookups).to.equal(1);
    clock = UNKNOWN_TTL_MS;
    await svc.authenticate(key);
    expect(lookups).to.equal(2);
  });
});

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

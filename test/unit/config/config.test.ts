import { generateKeyPairSync } from 'node:crypto';
import { expect } from 'chai';
import { ConfigError, parseConfig } from '../../../config/index.js';

const ed25519 = generateKeyPairSync('ed25519').privateKey;
const PEM = ed25519.export({ format: 'pem', type: 'pkcs8' }) as string;

const valid = {
  DATABASE_URL: 'mysql://u:p@127.0.0.1:3306/db',
  REDIS_URL: 'redis://127.0.0.1:6379/0',
  S3_BUCKET: 'b',
  CLAMD_HOST: '127.0.0.1',
  CLAMD_PORT: '3310',
  ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
  VERIFICATION_SIGNING_KEY: PEM,
  LOG_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
  PUBLIC_BASE_URL: 'https://registry.example.com',
};

describe('configuration', () => {
  it('applies the documented defaults', () => {
    const c = parseConfig(valid);
    expect(c).to.include({
      PORT: 3000,
      NODE_ENV: 'production',
      RATE_LIMIT_PER_MINUTE: 3000,
      NOTARIZATION_INTERVAL_MS: 10_000,
      MAX_UPLOAD_BYTES: 50 * 1024 * 1024,
    });
    expect(c.WEBHOOK_RETRY_SCHEDULE).to.deep.equal([5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(c.WEBHOOK_ALLOWED_NETWORKS).to.deep.equal([]);
    expect(c.ENCRYPTION_KEY[0]).to.have.length(32);
    expect(Object.isFrozen(c)).to.equal(true);
  });

  it('names every bad variable at once', () => {
    try {
      parseConfig({
        ...valid,
        PORT: 'eighty',
        DATABASE_URL: 'postgres://x',
        ENCRYPTION_KEY: 'short',
        WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/33',
        CLAMD_HOST: '',
        ADMIN_USER: 'a',
      });
      expect.fail('should have thrown');
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      const problems = (err as ConfigError).problems.join('\n');
      for (const name of ['PORT', 'DATABASE_URL', 'ENCRYPTION_KEY', 'WEBHOOK_ALLOWED_NETWORKS']) expect(problems).to.include(name);
    }
  });

  it("needs, in production, the receipts' Ed25519 key (PEM, one line with \\n, or a JWK) and the public base URL", () => {
    expect(() => parseConfig({ ...valid, VERIFICATION_SIGNING_KEY: undefined })).to.throw(ConfigError, /VERIFICATION_SIGNING_KEY: is required in production/);
    expect(() => parseConfig({ ...valid, PUBLIC_BASE_URL: undefined })).to.throw(ConfigError, /PUBLIC_BASE_URL: is required in production/);
    // The transparency log's key too; elsewhere one is made and sealed.
    expect(() => parseConfig({ ...valid, LOG_SIGNING_KEY: undefined })).to.throw(ConfigError, /LOG_SIGNING_KEY: is required in production/);
    expect(parseConfig({ ...valid, NODE_ENV: 'development', LOG_SIGNING_KEY: undefined }).LOG_SIGNING_KEY).to.equal(undefined);
    expect(() => parseConfig({ ...valid, LOG_WITNESSES: 'not-a-url' })).to.throw(ConfigError, /LOG_WITNESSES/);
    expect(parseConfig({ ...valid, LOG_WITNESSES: 'https://w.example/ a+00000000+AQ==; http://127.0.0.1:7600 b+00000000+AQ==' }).LOG_WITNESSES).to.deep.equal([
      { url: 'https://w.example', vkey: 'a+00000000+AQ==' },
      { url: 'http://127.0.0.1:7600', vkey: 'b+00000000+AQ==' },
    ]);
    expect(
      parseConfig({ ...valid, NODE_ENV: 'development', VERIFICATION_SIGNING_KEY: undefined, PUBLIC_BASE_URL: undefined }).VERIFICATION_SIGNING_KEY,
    ).to.equal(undefined);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    expect(() => parseConfig({ ...valid, VERIFICATION_SIGNING_KEY: rsa })).to.throw(ConfigError, /must be an Ed25519 private key/);
    expect(() => parseConfig({ ...valid, VERIFICATION_SIGNING_KEY: 'not a key' })).to.throw(ConfigError, /must be an Ed25519 private key/);
    for (const form of [PEM, PEM.replace(/\n/g, '\\n'), JSON.stringify(ed25519.export({ format: 'jwk' }))]) {
      expect(parseConfig({ ...valid, VERIFICATION_SIGNING_KEY: form }).VERIFICATION_SIGNING_KEY?.asymmetricKeyType).to.equal('ed25519');
    }
    expect(parseConfig({ ...valid, PUBLIC_BASE_URL: 'https://example.org/registry/' }).PUBLIC_BASE_URL).to.equal('https://example.org/registry');
    expect(() => parseConfig({ ...valid, PUBLIC_BASE_URL: 'https://example.org/?a=1' })).to.throw(ConfigError, /PUBLIC_BASE_URL/);
  });

  it("takes the authorities' OpenID Provider with its client, https in production but on this machine, and a 30 minutes' idle session by default", () => {
    expect(parseConfig(valid).OIDC_ISSUER).to.equal(undefined);
    expect(parseConfig(valid)).to.include({ SESSION_IDLE_MINUTES: 30, OIDC_FISCAL_NUMBER_CLAIM: 'https://attributes.eid.gov.it/fiscal_number' });
    const oidc = { OIDC_ISSUER: 'https://id.example.it', OIDC_CLIENT_ID: 'registry', OIDC_CLIENT_SECRET: 's' };
    expect(parseConfig({ ...valid, ...oidc }).OIDC_ISSUER).to.equal('https://id.example.it');
    expect(() => parseConfig({ ...valid, ...oidc, OIDC_CLIENT_SECRET: undefined })).to.throw(ConfigError, /OIDC_CLIENT_ID: OIDC_ISSUER needs/);
    expect(parseConfig({ ...valid, ...oidc, OIDC_CLIENT_SECRET: undefined, OIDC_CLIENT_PRIVATE_KEY: PEM }).OIDC_CLIENT_PRIVATE_KEY).to.equal(PEM.trim());
    expect(() => parseConfig({ ...valid, ...oidc, OIDC_ISSUER: 'http://id.example.it' })).to.throw(ConfigError, /OIDC_ISSUER: must be https in production/);
    expect(parseConfig({ ...valid, ...oidc, OIDC_ISSUER: 'http://127.0.0.1:7590' }).OIDC_ISSUER).to.equal('http://127.0.0.1:7590');
    expect(parseConfig({ ...valid, ...oidc, NODE_ENV: 'development', OIDC_ISSUER: 'http://id.example.it' }).OIDC_ISSUER).to.equal('http://id.example.it');
  });

  it('needs clamd by host and port or by socket, and admin user and password together', () => {
    expect(() => parseConfig({ ...valid, CLAMD_HOST: undefined, CLAMD_PORT: undefined })).to.throw(ConfigError, /CLAMD_HOST/);
    expect(parseConfig({ ...valid, CLAMD_HOST: undefined, CLAMD_PORT: undefined, CLAMD_SOCKET: '/run/clamd.sock' }).CLAMD_SOCKET).to.equal('/run/clamd.sock');
    expect(() => parseConfig({ ...valid, ADMIN_USER: 'admin' })).to.throw(ConfigError, /ADMIN_PASSWORD/);
  });

  it('anchors on the embedded ledger by default; the EVM anchor needs its RPC URL and chain id', () => {
    expect(parseConfig(valid)).to.include({ NOTARIZATION_ANCHOR: 'ledger', NOTARIZATION_BATCH_SIZE: 1000, EVM_CONFIRMATIONS: 3 });
    expect(() => parseConfig({ ...valid, NOTARIZATION_ANCHOR: 'evm' })).to.throw(ConfigError, /EVM_RPC_URL/);
    expect(() => parseConfig({ ...valid, NOTARIZATION_ANCHOR: 'evm', EVM_RPC_URL: 'http://127.0.0.1:8545' })).to.throw(ConfigError, /EVM_CHAIN_ID/);
    expect(parseConfig({ ...valid, NOTARIZATION_ANCHOR: 'evm', EVM_RPC_URL: 'http://127.0.0.1:8545', EVM_CHAIN_ID: '31337' })).to.include({
      EVM_CHAIN_ID: 31337,
    });
    expect(() => parseConfig({ ...valid, NOTARIZATION_ANCHOR: 'bitcoin' })).to.throw(ConfigError, /NOTARIZATION_ANCHOR/);
    // A batch's proofs and events must fit MariaDB's packets and statement time: 5000 at most.
    expect(() => parseConfig({ ...valid, NOTARIZATION_BATCH_SIZE: '100000' })).to.throw(ConfigError, /NOTARIZATION_BATCH_SIZE/);
  });
});

import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { harness } from '../support/harness.js';

/** Runs the CLI as a user would, with the run's configuration; stdout and stderr kept apart. */
function cli(...args: string[]) {
  return cliWith({}, ...args);
}

function cliWith(env: Record<string, string>, ...args: string[]) {
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('administration CLI', function () {
  this.timeout(60_000);

  it('creates an organization and a key, printing only the value on stdout; the key works; revocation stops it', async () => {
    const org = cli('org', 'create', 'ACME Assicurazioni');
    expect(org.code).to.equal(0);
    expect(org.stdout).to.match(/^[0-9a-f-]{36}\n$/);
    const orgId = org.stdout.trim();
    const key = cli('key', 'create', orgId);
    expect(key.code).to.equal(0);
    expect(key.stdout).to.match(/^grk_\w{12}_[\w-]{43}\n$/);
    expect(key.stderr).to.include('not shown again');
    const apiKey = key.stdout.trim();
    const { http } = await harness();
    const res = await http.get('/api/v1/guarantees').set('X-API-Key', apiKey);
    expect(res.status).to.equal(200);
    const prefix = apiKey.slice(0, 16);
    const revoke = cli('key', 'revoke', prefix);
    expect(revoke.code).to.equal(0);
    expect(revoke.stdout).to.equal('');
    // A fresh app has no cached key: the revocation is seen at once.
    const { appWith } = await import('../support/harness.js');
    expect((await (await appWith({})).get('/api/v1/guarantees').set('X-API-Key', apiKey)).status).to.equal(401);
    expect(cli('key', 'revoke', prefix).code).to.equal(1);
  });

  it('re-seals webhook secrets under a new ENCRYPTION_KEY, after which the old key can go', async () => {
    const { appWith, newOrg } = await import('../support/harness.js');
    const { randomBytes } = await import('node:crypto');
    const org = await newOrg();
    const oldKey = process.env.ENCRYPTION_KEY ?? '';
    const newKey = randomBytes(32).toString('base64');
    const { http } = await harness();
    const first = await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/reseal' });
    expect(first.status).to.equal(200);
    // Before: an app with only the new key cannot open the secret.
    expect((await (await appWith({ ENCRYPTION_KEY: newKey })).post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/reseal' })).status).to.equal(500);
    const run = cliWith({ ENCRYPTION_KEY: `${newKey},${oldKey}` }, 'secrets', 'reencrypt');
    expect(run.code, run.stderr).to.equal(0);
    expect(Number(run.stdout.trim())).to.be.at.least(1);
    const after = await (await appWith({ ENCRYPTION_KEY: newKey })).post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/reseal' });
    expect(after.body).to.deep.equal(first.body);
    // Idempotent; and back under the run's key for the tests that follow.
    expect(cliWith({ ENCRYPTION_KEY: `${newKey},${oldKey}` }, 'secrets', 'reencrypt').stdout.trim()).to.equal('0');
    expect(cliWith({ ENCRYPTION_KEY: `${oldKey},${newKey}` }, 'secrets', 'reencrypt').code).to.equal(0);
  });

  it('fails clearly on an unknown organization, a bad command or a bad configuration', () => {
    const missing = cli('key', 'create', '00000000-0000-7000-8000-000000000000');
    expect(missing.code).to.equal(1);
    expect(missing.stdout).to.equal('');
    expect(missing.stderr).to.include('No organization');
    const usage = cli('org', 'delete', 'x');
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.include('usage');
    const res = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'org', 'create', 'x'], {
      encoding: 'utf8', env: { ...process.env, DATABASE_URL: 'postgres://nope', MAX_UPLOAD_BYTES: 'lots' },
    });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.include('DATABASE_URL').and.to.include('MAX_UPLOAD_BYTES');
  });
});

describe('migrations', () => {
  it('run under a lock: concurrent runs both succeed and apply nothing twice', async () => {
    const { config } = await harness();
    const { migrate } = await import('../../src/shared/db/migrator.js');
    const { createLogger } = await import('../../src/shared/logger.js');
    const results = await Promise.all([migrate(config.DATABASE_URL, createLogger('silent')), migrate(config.DATABASE_URL, createLogger('silent'))]);
    expect(results).to.deep.equal([[], []]);
  });
});

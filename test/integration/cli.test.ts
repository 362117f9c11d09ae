import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { fiscalCode, harness, newOrg } from '../support/harness.js';
import { entry } from '../support/entry.js';

/** Runs the CLI as a user would, with the run's configuration; stdout and stderr kept apart. */
function cli(...args: string[]) {
  return cliWith({}, ...args);
}

function cliWith(env: Record<string, string>, ...args: string[]) {
  const res = spawnSync(process.execPath, [...entry('src/cli.ts'), ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: res.status, stdout: res.stdout, stderr: res.stderr };
}

describe('administration CLI', function () {
  this.timeout(60_000);
  // The schema the CLI works on, whatever ran before (the harness migrates).
  before(async () => {
    await harness();
  });

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

  it("creates a contracting authority with its fiscal code (check digit verified, one organization per code), AUSA and IPA codes; its key reaches the authorities' API", async function () {
    // Fourteen CLI processes, each 2.5 s on an idle 2-core machine (tsx compiling the CLI): twice that under load.
    this.timeout(180_000);
    const { fiscalCode } = await import('../support/harness.js');
    const code = fiscalCode();
    const wrongDigit = `${code.slice(0, 10)}${(Number(code[10]) + 1) % 10}`;
    const bad = cli('org', 'create', 'Comune di Prova', '--kind', 'authority', '--fiscal-code', wrongDigit);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.include('is not a valid fiscal code of a public body');
    expect(cli('org', 'create', 'Comune di Prova', '--kind', 'authority').stderr).to.include('An authority needs its fiscal code');
    expect(cli('org', 'create', 'Assicurazioni', '--fiscal-code', code).stderr).to.include("are an authority's");
    expect(cli('org', 'create', 'Comune di Prova', '--kind', 'mayor', '--fiscal-code', code).code).to.equal(2);
    expect(cli('org', 'create', 'Comune di Prova', '--kind', 'authority', '--fiscal-code', code, '--ausa', '12345').stderr).to.include('is not a codice AUSA');

    const made = cli('org', 'create', 'Comune di Prova', '--kind', 'authority', '--fiscal-code', code, '--ausa', '0000123456', '--ipa', 'c_h501');
    expect(made.code, made.stderr).to.equal(0);
    expect(made.stdout).to.match(/^[0-9a-f-]{36}\n$/);
    expect(made.stderr).to.include(`authority "Comune di Prova", fiscal code ${code}, AUSA 0000123456, IPA c_h501`);
    const orgId = made.stdout.trim();
    const shown = cli('org', 'show', orgId);
    expect(shown.stdout).to.equal('authority\n');
    const twice = cli('org', 'create', 'Comune di Prova bis', '--kind', 'authority', '--fiscal-code', code);
    expect(twice.code).to.equal(1);
    expect(twice.stderr).to.include(`Another organization has the fiscal code ${code}`);
    expect(cli('org', 'set', orgId, '--ipa', 'c_h502').code).to.equal(0);
    expect(cli('org', 'show', orgId).stderr).to.include('IPA c_h502');

    const apiKey = cli('key', 'create', orgId).stdout.trim();
    const { http } = await harness();
    expect((await http.get('/api/authority/v1/guarantees').set('X-API-Key', apiKey)).status).to.equal(200);
    expect((await http.get('/api/v1/guarantees').set('X-API-Key', apiKey)).status).to.equal(403);
    // An issuer is neither given nor changed into an authority's identifiers.
    const issuer = cli('org', 'create', 'Assicurazioni Prova').stdout.trim();
    expect(cli('org', 'show', issuer).stdout).to.equal('issuer\n');
    expect(cli('org', 'set', issuer, '--ausa', '0000123456').code).to.equal(1);
  });

  it("binds people to an authority by their fiscal code (SPID's and CIE's TINIT- spelling too), one authority a person, each change in the authority's audit chain", async function () {
    // Seventeen CLI processes, each a TypeScript start (some 2 s, more on a loaded machine).
    this.timeout(180_000);
    const { fiscalCode, harness: h } = await import('../support/harness.js');
    const first = cli('org', 'create', 'Comune A', '--kind', 'authority', '--fiscal-code', fiscalCode()).stdout.trim();
    const second = cli('org', 'create', 'Comune B', '--kind', 'authority', '--fiscal-code', fiscalCode()).stdout.trim();
    const issuer = cli('org', 'create', 'Assicurazioni C').stdout.trim();
    const added = cli('authority', 'add-user', first, 'TINIT-rssmra80a01h501u');
    expect(added.code, added.stderr).to.equal(0);
    expect(added.stderr).to.include(`bound RSSMRA80A01H501U to authority ${first}`);
    expect(cli('authority', 'add-user', first, 'RSSMRA80A01H501U').stderr).to.include('was bound to authority');
    const elsewhere = cli('authority', 'add-user', second, 'RSSMRA80A01H501U');
    expect(elsewhere.code).to.equal(1);
    expect(elsewhere.stderr).to.include(`bound to another authority (${first})`);
    expect(cli('authority', 'add-user', first, 'RSSMRA80A01H501A').stderr).to.include("is not a person's fiscal code");
    expect(cli('authority', 'add-user', issuer, 'RSSMRA80A01H501U').stderr).to.include('is an issuer');
    expect(cli('authority', 'users', first).stdout).to.equal('RSSMRA80A01H501U\n');
    expect(cli('authority', 'users', second).stdout).to.equal('');
    expect(cli('authority', 'remove-user', second, 'RSSMRA80A01H501U').code).to.equal(1);
    expect(cli('authority', 'remove-user', first, 'RSSMRA80A01H501U').code).to.equal(0);
    expect(cli('authority', 'users', first).stdout).to.equal('');
    expect(cli('authority', 'add-user', second, 'RSSMRA80A01H501U').code).to.equal(0);
    const { db } = await h();
    const { select } = await import('../../src/shared/db/sequelize.js');
    const rows = await select<{ chain: string; action: string; actor: string }>(
      db,
      "SELECT chain, action, actor FROM audit_log WHERE target = 'user:RSSMRA80A01H501U' AND chain IN ($1) ORDER BY chain = $2 DESC, seq",
      [[first, second], first],
      undefined,
      { prepared: false },
    );
    expect(rows.map((r) => [r.chain, r.action, r.actor])).to.deep.equal([
      [first, 'authority.user_add', 'cli'],
      [first, 'authority.user_remove', 'cli'],
      [second, 'authority.user_add', 'cli'],
    ]);
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
    expect(
      (await (await appWith({ ENCRYPTION_KEY: newKey })).post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/reseal' }))
        .status,
    ).to.equal(500);
    const run = cliWith({ ENCRYPTION_KEY: `${newKey},${oldKey}` }, 'secrets', 'reencrypt');
    expect(run.code, run.stderr).to.equal(0);
    expect(Number(run.stdout.trim())).to.be.at.least(1);
    const after = await (
      await appWith({ ENCRYPTION_KEY: newKey })
    )
      .post('/api/v1/webhooks')
      .set('X-API-Key', org.key)
      .send({ endpoint: 'http://127.0.0.1:9/reseal' });
    expect(after.body).to.deep.equal(first.body);
    // Idempotent; and back under the run's key for the tests that follow.
    expect(cliWith({ ENCRYPTION_KEY: `${newKey},${oldKey}` }, 'secrets', 'reencrypt').stdout.trim()).to.equal('0');
    expect(cliWith({ ENCRYPTION_KEY: `${oldKey},${newKey}` }, 'secrets', 'reencrypt').code).to.equal(0);
  });

  it('binds secrets to their row: one copied into another endpoint does not open; secrets reencrypt seals again those sealed before binding', async () => {
    const { appWith, newOrg } = await import('../support/harness.js');
    const { createCipheriv, createHash, randomBytes } = await import('node:crypto');
    const { execute, select } = await import('../../src/shared/db/sequelize.js');
    const { createSecretBox, SecretContext } = await import('../../src/shared/secrets.js');
    const { http, db, config } = await harness();
    const org = await newOrg();
    const a = await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/bound-a' });
    const b = await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/bound-b' });
    const box = createSecretBox(config.ENCRYPTION_KEY);
    const sealedOf = async (id: string) =>
      (await select<{ secret_enc: Buffer }>(db, 'SELECT secret_enc FROM webhook_endpoints WHERE id = $1', [id]))[0]?.secret_enc as Buffer;
    // A's sealed secret written into B's row (someone with write access to the table) does not open as B's.
    const aSealed = await sealedOf(a.body.webhookId as string);
    await execute(db, 'UPDATE webhook_endpoints SET secret_enc = $2 WHERE id = $1', [b.body.webhookId, aSealed]);
    expect(() => box.open(aSealed, SecretContext.webhook(b.body.webhookId as string))).to.throw(/authentication/);
    expect(
      (await (await appWith({})).post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/bound-b' })).body.secret,
    ).to.equal(undefined);
    // A secret as the previous release sealed it (version 1, bound to nothing) ...
    const key = config.ENCRYPTION_KEY[0] as Buffer;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const body = Buffer.concat([cipher.update(b.body.secret as string, 'utf8'), cipher.final()]);
    const v1 = Buffer.concat([Buffer.from([1]), createHash('sha256').update(key).digest().subarray(0, 4), iv, cipher.getAuthTag(), body]);
    await execute(db, 'UPDATE webhook_endpoints SET secret_enc = $2 WHERE id = $1', [b.body.webhookId, v1]);
    // ... still opens (the previous release may still be running), and is sealed again, bound,
    // by `secrets reencrypt`, run once the release has rolled out.
    expect(box.open(v1, SecretContext.webhook(b.body.webhookId as string))).to.equal(b.body.secret);
    const reseal = cli('secrets', 'reencrypt');
    expect(reseal.code, reseal.stderr).to.equal(0);
    const resealed = await sealedOf(b.body.webhookId as string);
    expect(resealed[0]).to.equal(2);
    expect(box.open(resealed, SecretContext.webhook(b.body.webhookId as string))).to.equal(b.body.secret);
  });

  it("records an organization's public identifiers (VAT number, register entry) at creation and changes them later; refuses a mistyped partita IVA", async () => {
    const { select } = await import('../../src/shared/db/sequelize.js');
    const { db } = await harness();
    // A VAT number of its own (one another organization of the run has is refused).
    const digits = fiscalCode();
    const vat = `IT${digits}`;
    const created = cli('org', 'create', 'Fideiussioni Lombarde S.p.A.', '--vat', `IT ${digits}`, '--register', 'Albo IVASS n. 1.00123');
    expect(created.code, created.stderr).to.equal(0);
    expect(created.stdout).to.match(/^[0-9a-f-]{36}\n$/);
    const orgId = created.stdout.trim();
    const row = async () =>
      (
        await select<{ name: string; vat_number: string | null; register_entry: string | null }>(
          db,
          'SELECT name, vat_number, register_entry FROM organizations WHERE id = $1',
          [orgId],
        )
      )[0];
    expect(await row()).to.deep.equal({ name: 'Fideiussioni Lombarde S.p.A.', vat_number: vat, register_entry: 'Albo IVASS n. 1.00123' });
    const set = cli('org', 'set', orgId, '--register', 'Albo IVASS n. 1.00999');
    expect(set.code, set.stderr).to.equal(0);
    expect(set.stdout).to.equal('');
    expect(await row()).to.include({ vat_number: vat, register_entry: 'Albo IVASS n. 1.00999' });
    const mistyped = cli('org', 'set', orgId, '--vat', `IT${digits.slice(0, 10)}${(Number(digits[10]) + 1) % 10}`);
    expect(mistyped.code).to.equal(1);
    expect(mistyped.stderr).to.include('partita IVA');
    expect((await row())?.vat_number).to.equal(vat);
    expect(cli('org', 'set', orgId).code).to.equal(1);
    expect(cli('org', 'set', '00000000-0000-7000-8000-000000000000', '--vat', 'IT00743110157').code).to.equal(1);
    expect(cli('org', 'create', 'X', '--color', 'red').code).to.equal(2);
  });

  it('org create refuses a VAT number another organization has, naming it, changing nothing; --allow-shared-vat lets it through, saying with whom', async function () {
    this.timeout(180_000);
    const { select } = await import('../../src/shared/db/sequelize.js');
    const { db } = await harness();
    const digits = fiscalCode();
    const vat = `IT${digits}`;
    const holders = async () =>
      (
        await select<{ id: string; vat_shared: number }>(db, 'SELECT id, vat_shared FROM organizations WHERE vat_number = $1 ORDER BY created_at, id', [vat])
      ).map((r) => [r.id, Number(r.vat_shared)]);
    const first = cli('org', 'create', 'Gruppo Fideiussioni S.p.A.', '--vat', vat);
    expect(first.code, first.stderr).to.equal(0);
    const firstId = first.stdout.trim();
    // The same number written otherwise (lower case, spaces) is the same VAT number.
    const refused = cli('org', 'create', 'Gruppo Fideiussioni Sud S.r.l.', '--vat', `it ${digits.slice(0, 5)} ${digits.slice(5)}`);
    expect(refused).to.deep.include({ code: 1, stdout: '' });
    expect(refused.stderr).to.include(`Organization ${firstId} ("Gruppo Fideiussioni S.p.A.") already has the VAT number ${vat}: nothing was changed.`);
    expect(refused.stderr).to.include('--allow-shared-vat');
    expect(await holders()).to.deep.equal([[firstId, 0]]);
    expect(await select(db, 'SELECT id FROM organizations WHERE name = $1', ['Gruppo Fideiussioni Sud S.r.l.'])).to.deep.equal([]);
    // A group of companies shares one: said, and with whom.
    const shared = cli('org', 'create', 'Gruppo Fideiussioni Sud S.r.l.', '--vat', vat, '--allow-shared-vat');
    expect(shared.code, shared.stderr).to.equal(0);
    const sharedId = shared.stdout.trim();
    expect(shared.stdout).to.match(/^[0-9a-f-]{36}\n$/);
    expect(shared.stderr).to.include(`created organization "Gruppo Fideiussioni Sud S.r.l.", VAT ${vat} (shared)`);
    expect(shared.stderr).to.include(`its VAT number ${vat} is shared with organization ${firstId} ("Gruppo Fideiussioni S.p.A.")`);
    expect(await holders()).to.deep.equal([
      [firstId, 0],
      [sharedId, 1],
    ]);
    // A third without the flag: refused, naming both.
    const third = cli('org', 'create', 'Gruppo Fideiussioni Nord S.r.l.', '--vat', vat);
    expect(third.code).to.equal(1);
    expect(third.stderr).to.include(
      `Organizations ${firstId} ("Gruppo Fideiussioni S.p.A."), ${sharedId} ("Gruppo Fideiussioni Sud S.r.l.") already have the VAT number ${vat}`,
    );
    expect(cli('org', 'create', 'Senza partita IVA', '--allow-shared-vat').stderr).to.include('--allow-shared-vat goes with --vat');
    expect(cli('org', 'create', 'X', '--vat', vat, '--allow-shared-vat', '--allow-shared-vat').code).to.equal(2);
  });

  it("org set refuses a VAT number another organization has, naming it, changing nothing; --allow-shared-vat lets it through; an organization's own VAT number again is no conflict", async function () {
    this.timeout(180_000);
    const { select } = await import('../../src/shared/db/sequelize.js');
    const { db } = await harness();
    const digits = fiscalCode();
    const vat = `IT${digits}`;
    const own = `IT${fiscalCode()}`;
    const a = cli('org', 'create', 'Cauzioni Alfa S.p.A.', '--vat', vat).stdout.trim();
    const b = cli('org', 'create', 'Cauzioni Beta S.p.A.', '--vat', own).stdout.trim();
    const row = async (id: string) =>
      (await select<{ vat_number: string; vat_shared: number }>(db, 'SELECT vat_number, vat_shared FROM organizations WHERE id = $1', [id])).map((r) => [
        r.vat_number,
        Number(r.vat_shared),
      ])[0];
    const changes = async (id: string) =>
      (await select(db, "SELECT seq FROM audit_log WHERE chain = $1 AND action = 'organization.set_identity'", [id])).length;

    const refused = cli('org', 'set', b, '--vat', `IT ${digits}`, '--name', 'Cauzioni Beta Due S.p.A.');
    expect(refused).to.deep.include({ code: 1, stdout: '' });
    expect(refused.stderr).to.include(`Organization ${a} ("Cauzioni Alfa S.p.A.") already has the VAT number ${vat}: nothing was changed.`);
    expect(await row(b)).to.deep.equal([own, 0]);
    expect(await select(db, 'SELECT name FROM organizations WHERE id = $1', [b])).to.deep.equal([{ name: 'Cauzioni Beta S.p.A.' }]);
    expect(await changes(b)).to.equal(0);

    // Its own VAT number again (written otherwise): no conflict, nothing said of sharing.
    const again = cli('org', 'set', a, '--vat', `it${digits}`);
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stderr).to.include(`organization ${a} is now organization "Cauzioni Alfa S.p.A.", VAT ${vat}`);
    expect(again.stderr).to.not.include('shared');
    expect(await row(a)).to.deep.equal([vat, 0]);

    const shared = cli('org', 'set', b, '--vat', vat, '--allow-shared-vat');
    expect(shared.code, shared.stderr).to.equal(0);
    expect(shared.stderr).to.include(`organization ${b} is now organization "Cauzioni Beta S.p.A.", VAT ${vat} (shared)`);
    expect(shared.stderr).to.include(`its VAT number ${vat} is shared with organization ${a} ("Cauzioni Alfa S.p.A.")`);
    expect(await row(b)).to.deep.equal([vat, 1]);
    expect(await changes(b)).to.equal(1);
    // Each its own again: still no conflict, and the sharing said.
    const aAgain = cli('org', 'set', a, '--vat', vat);
    expect(aAgain.code, aAgain.stderr).to.equal(0);
    expect(aAgain.stderr).to.include(`its VAT number ${vat} is shared with organization ${b} ("Cauzioni Beta S.p.A.")`);
    expect(await row(a)).to.deep.equal([vat, 0]);
    expect(cli('org', 'set', b, '--vat', vat).code).to.equal(0);
    expect(await row(b)).to.deep.equal([vat, 1]);
    // Moved to a number nobody else has: its own, no longer shared.
    expect(cli('org', 'set', b, '--vat', own).code).to.equal(0);
    expect(await row(b)).to.deep.equal([own, 0]);
    expect(cli('org', 'set', a, '--allow-shared-vat').stderr).to.include('--allow-shared-vat goes with --vat');
  });

  it('two organizations racing for one VAT number as their own: the second, which read no holder, is refused by the unique key, naming the first', async () => {
    const { createOrgRepository } = await import('../../src/orgs/org.repository.js');
    const { ConflictError } = await import('../../src/shared/errors.js');
    const { select } = await import('../../src/shared/db/sequelize.js');
    const { db, orgs } = await harness();
    const vat = `IT${fiscalCode()}`;
    // The first inserted, not yet committed: the second's check does not see it.
    let inserted!: () => void;
    let release!: () => void;
    const insertedNow = new Promise<void>((r) => (inserted = r));
    const released = new Promise<void>((r) => (release = r));
    const first = createOrgRepository(db).createOrganization('Primo Garante S.p.A.', { vatNumber: vat }, async () => {
      inserted();
      await released;
    });
    await insertedNow;
    const second = orgs.createOrganization('Secondo Garante S.p.A.', { vat }).then(
      () => undefined,
      (err: unknown) => err,
    );
    await new Promise((r) => setTimeout(r, 500));
    release();
    const firstOrg = await first;
    const err = await second;
    expect(err).to.be.instanceOf(ConflictError);
    expect((err as Error).message).to.include(`Organization ${firstOrg.id} ("Primo Garante S.p.A.") already has the VAT number ${vat}`);
    expect(await select(db, 'SELECT name FROM organizations WHERE vat_number = $1', [vat])).to.deep.equal([{ name: 'Primo Garante S.p.A.' }]);
  });

  it('fails clearly on an unknown organization, a bad command or a bad configuration', () => {
    const missing = cli('key', 'create', '00000000-0000-7000-8000-000000000000');
    expect(missing.code).to.equal(1);
    expect(missing.stdout).to.equal('');
    expect(missing.stderr).to.include('No organization');
    const usage = cli('org', 'delete', 'x');
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.include('usage');
    const res = spawnSync(process.execPath, [...entry('src/cli.ts'), 'org', 'create', 'x'], {
      encoding: 'utf8',
      env: { ...process.env, DATABASE_URL: 'postgres://nope', MAX_UPLOAD_BYTES: 'lots' },
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

  it('0031 marks the VAT numbers several organizations already had as shared (each keeps its own), and goes down and up again', async () => {
    const { db } = await harness();
    const { migration } = await import('../../src/shared/db/migrations/0031-vat-held-once.js');
    const { select } = await import('../../src/shared/db/sequelize.js');
    const q = (sql: string) => db.query(sql, { raw: true });
    const vat = `IT${fiscalCode()}`;
    const single = `IT${fiscalCode()}`;
    const a = await newOrg();
    const b = await newOrg();
    const c = await newOrg();
    await migration.down({ context: q });
    try {
      // As the previous release let them: one VAT number on two organizations, without a word.
      await db.query('UPDATE organizations SET vat_number = ? WHERE id IN (?, ?)', { replacements: [vat, a.orgId, b.orgId] });
      await db.query('UPDATE organizations SET vat_number = ? WHERE id = ?', { replacements: [single, c.orgId] });
    } finally {
      await migration.up({ context: q });
    }
    const rows = await select<{ id: string; vat_number: string; vat_shared: number }>(
      db,
      'SELECT id, vat_number, vat_shared FROM organizations WHERE id IN ($1) ORDER BY vat_number = $2 DESC, id',
      [[a.orgId, b.orgId, c.orgId], vat],
      undefined,
      { prepared: false },
    );
    expect(rows.map((r) => [r.id, r.vat_number, Number(r.vat_shared)])).to.deep.equal([
      ...[a.orgId, b.orgId].sort().map((id) => [id, vat, 1]),
      [c.orgId, single, 0],
    ]);
  });
});

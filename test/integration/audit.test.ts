// The audit trail (issue 17 part 3, docs/api.md "Audit"): each change through the API
// (registrations, amendments, webhooks' changes, upload URLs issued) is one row of its
// organization's hash chain, written in the same transaction (or script) as the change; GET /api/v2/audit pages an organization's own rows; `cli audit verify` checks every
// chain and names the first broken row. Against the real MariaDB.
import { spawnSync } from 'node:child_process';
import { expect } from 'chai';
import { auditHash, auditHashSql, GENESIS_HASH } from '../../src/audit/audit-chain.js';
import { sha256Hex } from '../../src/shared/sha256.js';
import { migration } from '../../src/shared/db/migrations/0021-audit-seq-on-organizations.js';
import { migrations } from '../../src/shared/db/migrations/index.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { eventually, fiscalCode, harness, newOrg, presign, type TestOrg } from '../support/harness.js';
import { dropAuditGuards, restoreAuditGuards } from '../support/log.js';
import { entry } from '../support/entry.js';

type Item = Record<string, unknown> & { seq: number; hash: string; prevHash: string };

async function trail(org: TestOrg, query = ''): Promise<{ status: number; body: { items: Item[]; next: number | null } }> {
  const res = await (await harness()).http.get(`/api/v2/audit${query}`).set('X-API-Key', org.key);
  return { status: res.status, body: res.body as { items: Item[]; next: number | null } };
}

async function create(org: TestOrg, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const req = (await harness()).http.post('/api/v2/guarantees').set('X-API-Key', org.key);
  for (const [k, v] of Object.entries(headers)) void req.set(k, v);
  const res = await req.send(body);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body as { id: string };
}

/** The row as audit-chain.ts hashes it. */
const rehash = (org: TestOrg, i: Item) =>
  auditHash({
    chain: org.orgId,
    seq: i.seq,
    at: new Date(i.at as string),
    orgId: i.orgId as string,
    actor: i.actor as string,
    action: i.action as string,
    target: i.target as string,
    requestId: i.requestId as string | null,
    outcome: i.outcome as string,
    prevHash: i.prevHash,
  });

const cliAuditVerify = () => spawnSync(process.execPath, [...entry('src/cli.ts'), 'audit', 'verify'], { encoding: 'utf8', env: process.env });

describe('the audit trail', function () {
  this.timeout(60_000);
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  it('records a registration (one round trip, or with an Idempotency-Key) and an amendment, each a row chained to the one before; a replay or a refusal adds none', async () => {
    const first = await create(org, { details: { policyNumber: 'A-1' } }, { 'X-Request-Id': 'req-audit-1' });
    const second = await create(org, { details: { policyNumber: 'A-2' } }, { 'Idempotency-Key': 'audit-idem-1' });
    await create(org, { details: { policyNumber: 'A-2' } }, { 'Idempotency-Key': 'audit-idem-1' }); // a replay: nothing changed
    const { http } = await harness();
    const amended = await http
      .post(`/api/v2/guarantees/${first.id}/amendments`)
      .set('X-API-Key', org.key)
      .send({ type: 'RELEASE', effectiveAt: '2027-01-01T00:00:00Z' });
    expect(amended.status).to.equal(200);
    const refused = await http
      .post(`/api/v2/guarantees/${first.id}/amendments`)
      .set('X-API-Key', org.key)
      .send({ type: 'RELEASE', effectiveAt: '2027-01-02T00:00:00Z' });
    expect(refused.status).to.equal(409);

    const { status, body } = await trail(org);
    expect(status).to.equal(200);
    const prefix = org.key.slice(0, 16);
    expect(prefix).to.match(/^grk_[A-Za-z0-9_-]{12}$/);
    expect(body.items.map((i) => [i.seq, i.action, i.target, i.actor, i.outcome])).to.deep.equal([
      [1, 'guarantee.create', `guarantee:${first.id}`, prefix, 'ok'],
      [2, 'guarantee.create', `guarantee:${second.id}`, prefix, 'ok'],
      [3, 'amendment.record', `amendment:${(amended.body as { id: string }).id}`, prefix, 'ok'],
    ]);
    expect(body.items[0]).to.include({ requestId: 'req-audit-1', orgId: org.orgId, prevHash: GENESIS_HASH });
    expect(body.next).to.equal(null);
    for (const [n, item] of body.items.entries()) {
      expect(item.hash, `row ${item.seq} hashes as recorded`).to.equal(rehash(org, item));
      if (n > 0) expect(item.prevHash).to.equal(body.items[n - 1]?.hash);
    }
    // No secret in any row: the key's prefix only.
    expect(JSON.stringify(body)).to.not.include(org.key);
  });

  it("records webhooks' changes (register, rotate, enable, replay, delete) and upload URLs issued; a webhook registered again, or a change refused, adds none", async () => {
    const { http } = await harness();
    const key = (req: ReturnType<typeof http.post>) => req.set('X-API-Key', org.key);
    const reg = await key(http.post('/api/v1/webhooks')).send({ endpoint: 'http://127.0.0.1:9/audit' });
    expect(reg.status).to.equal(200);
    const id = (reg.body as { webhookId: string }).webhookId;
    expect((await key(http.post('/api/v1/webhooks')).send({ endpoint: 'http://127.0.0.1:9/audit' })).status).to.equal(200); // the same: nothing changed
    expect((await key(http.post('/api/v1/webhooks')).send({ endpoint: 'not a url' })).status).to.equal(400);
    expect((await key(http.post(`/api/v1/webhooks/${id}/rotate-secret`)).send()).status).to.equal(200);
    expect((await key(http.post(`/api/v1/webhooks/${id}/enable`)).send()).status).to.equal(200);
    const created = await create(org, { details: { policyNumber: 'HOOKED' } });
    const { db } = await harness();
    await eventually(
      'the event dispatched',
      async () => (await select(db, 'SELECT id FROM webhook_events WHERE org_id = $1 AND dispatched_at IS NOT NULL', [org.orgId])).length === 1,
    );
    const [event] = await select<{ id: string }>(db, 'SELECT id FROM webhook_events WHERE org_id = $1', [org.orgId]);
    expect((await key(http.post(`/api/v1/webhooks/${id}/replay`)).send({ eventId: event?.id })).status).to.equal(202);
    const upload = await key(http.post('/api/v2/presigned-url')).send({ fileType: 'pdf' });
    expect(upload.status).to.equal(200);
    const fileUuid = (upload.body as { key: string }).key.split('.')[0];
    expect((await http.delete(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).status).to.equal(204);
    expect((await http.delete(`/api/v1/webhooks/${id}`).set('X-API-Key', org.key)).status).to.equal(404);

    const { body } = await trail(org);
    expect(body.items.map((i) => [i.action, i.target])).to.deep.equal([
      ['webhook.register', `webhook:${id}`],
      ['webhook.rotate_secret', `webhook:${id}`],
      ['webhook.enable', `webhook:${id}`],
      ['guarantee.create', `guarantee:${created.id}`],
      ['webhook.replay', `webhook:${id}`],
      ['file.issue_upload', `file:${String(fileUuid)}`],
      ['webhook.delete', `webhook:${id}`],
    ]);
    // The secrets returned on registration and rotation are in no row.
    expect(JSON.stringify(body)).to.not.include('whsec_');
    for (const [n, item] of body.items.entries()) {
      expect(item.hash).to.equal(rehash(org, item));
      if (n > 0) expect(item.prevHash).to.equal(body.items[n - 1]?.hash);
    }
  });

  it("records the operator's changes through the CLI (organization, its identity, keys created and revoked) with actor cli, never a key", async () => {
    const cli = (...args: string[]) => {
      const run = spawnSync(process.execPath, [...entry('src/cli.ts'), ...args], { encoding: 'utf8', env: process.env });
      expect(run.status, run.stderr).to.equal(0);
      return run.stdout.trim();
    };
    const orgId = cli('org', 'create', 'Assicurazioni Audit S.p.A.');
    const revoked = cli('key', 'create', orgId);
    const reader = cli('key', 'create', orgId);
    // A VAT number of its own (one another organization of the run has is refused).
    cli('org', 'set', orgId, '--vat', `IT${fiscalCode()}`);
    cli('key', 'revoke', revoked.slice(0, 16));
    const res = await (await harness()).http.get('/api/v2/audit').set('X-API-Key', reader);
    const items = (res.body as { items: Item[] }).items;
    expect(items.map((i) => [i.seq, i.actor, i.action, i.target])).to.deep.equal([
      [1, 'cli', 'organization.create', `organization:${orgId}`],
      [2, 'cli', 'api_key.create', `api_key:${revoked.slice(0, 16)}`],
      [3, 'cli', 'api_key.create', `api_key:${reader.slice(0, 16)}`],
      [4, 'cli', 'organization.set_identity', `organization:${orgId}`],
      [5, 'cli', 'api_key.revoke', `api_key:${revoked.slice(0, 16)}`],
    ]);
    expect(JSON.stringify(items)).to.not.include(revoked).and.not.include(reader);
  });

  it("frames the CLI's system-wide commands in the system chain: requested before, how it ended after", async () => {
    const { db } = await harness();
    const [before] = await select<{ seq: number }>(db, "SELECT COALESCE(MAX(seq), 0) AS seq FROM audit_log WHERE chain = 'system'", []);
    const cli = (...args: string[]) => spawnSync(process.execPath, [...entry('src/cli.ts'), ...args], { encoding: 'utf8', env: process.env });
    const reencrypted = cli('secrets', 'reencrypt');
    expect(reencrypted.status, reencrypted.stderr).to.equal(0);
    const removed = cli('trust', 'remove', 'ZZ');
    const rows = await select<{ actor: string; action: string; target: string; outcome: string }>(
      db,
      "SELECT actor, action, target, outcome FROM audit_log WHERE chain = 'system' AND seq > $1 ORDER BY seq",
      [Number(before?.seq ?? 0)],
    );
    expect(rows.map((r) => [r.actor, r.action, r.target, r.outcome])).to.deep.equal([
      ['cli', 'secrets.reencrypt', 'secrets:*', 'requested'],
      ['cli', 'secrets.reencrypt', 'secrets:*', 'ok'],
      ['cli', 'trust_list.remove', 'trust_list:ZZ', 'requested'],
      ['cli', 'trust_list.remove', 'trust_list:ZZ', removed.status === 0 ? 'ok' : `failed ${String(removed.status)}`],
    ]);
    expect(cliAuditVerify().status).to.equal(0);
  });

  it('records `cli migrate`: the migrations it applied once done, and the bucket configured, framed; `trust import` names its files', async () => {
    const { db } = await harness();
    const [before] = await select<{ seq: number }>(db, "SELECT COALESCE(MAX(seq), 0) AS seq FROM audit_log WHERE chain = 'system'", []);
    const cli = (...args: string[]) => spawnSync(process.execPath, [...entry('src/cli.ts'), ...args], { encoding: 'utf8', env: process.env });
    // The last migration undone, so that `cli migrate` has one to apply (an earlier one may not
    // go down under those made after it).
    const last = migrations.at(-1) as (typeof migrations)[number];
    await last.down({ context: (sql: string) => db.query(sql, { raw: true }) });
    await execute(db, 'DELETE FROM schema_migrations WHERE name = $1', [last.name]);
    const migrated = cli('migrate');
    expect(migrated.status, migrated.stderr).to.equal(0);
    expect(migrated.stderr).to.include(`applied ${last.name}`);
    const imported = cli('trust', 'import', '/nonexistent/lists/IT.xml');
    expect(imported.status).to.not.equal(0);
    const rows = await select<{ actor: string; action: string; target: string; outcome: string }>(
      db,
      "SELECT actor, action, target, outcome FROM audit_log WHERE chain = 'system' AND seq > $1 ORDER BY seq",
      [Number(before?.seq ?? 0)],
    );
    const bucket = `bucket:${(await harness()).config.S3_BUCKET}`;
    expect(rows.map((r) => [r.actor, r.action, r.target, r.outcome])).to.deep.equal([
      ['cli', 'schema.migrate', `schema:${last.name}`, 'ok'],
      ['cli', 'storage.configure', bucket, 'requested'],
      ['cli', 'storage.configure', bucket, 'ok'],
      ['cli', 'trust_list.import', 'trust_list:IT.xml', 'requested'],
      ['cli', 'trust_list.import', 'trust_list:IT.xml', rows[4]?.outcome],
    ]);
    expect(rows[4]?.outcome, 'the import of a missing file failed').to.match(/^failed/);
  });

  it('keeps each chain dense under concurrency: racing registrations, amendments and upload URLs get seq 1..n, each once, none refused', async () => {
    const { id } = await create(org, { details: { policyNumber: 'RACE-0' } });
    const { http } = await harness();
    await Promise.all([
      // Upload URLs: the file's row names the organization (a foreign key), the audit row locks it.
      ...Array.from({ length: 8 }, () => presign(org)),
      ...Array.from({ length: 12 }, (_, i) => create(org, { details: { policyNumber: `RACE-${i + 1}` } })),
      ...Array.from({ length: 4 }, (_, i) => create(org, { details: { policyNumber: `RACE-IDEM-${i}` } }, { 'Idempotency-Key': `race-${i}-${org.orgId}` })),
      ...Array.from({ length: 6 }, (_, i) =>
        http
          .post(`/api/v2/guarantees/${id}/amendments`)
          .set('X-API-Key', org.key)
          .send({ type: 'AMOUNT_CHANGE', effectiveAt: '2027-01-01T00:00:00Z', garantedAmount: 100 + i })
          .then((r) => expect(r.status).to.equal(200)),
      ),
    ]);
    const items: Item[] = [];
    for (let since = 0; ;) {
      const page = (await trail(org, `?since=${since}&limit=7`)).body;
      items.push(...page.items);
      if (page.next === null) break;
      since = page.next;
    }
    expect(items.map((i) => i.seq)).to.deep.equal(Array.from({ length: 31 }, (_, i) => i + 1));
    expect(items.filter((i) => i.action === 'file.issue_upload')).to.have.length(8);
    for (const [n, item] of items.entries()) {
      expect(item.hash).to.equal(rehash(org, item));
      if (n > 0) expect(item.prevHash).to.equal(items[n - 1]?.hash);
    }
  });

  it("keeps an organization's chain going across migration 0021 (its head copied from audit_heads to its row) and back", async () => {
    const org = await newOrg('audit-migration');
    await create(org);
    await create(org);
    const { db } = await harness();
    const q = (sql: string) => db.query(sql, { raw: true });
    const before = (await trail(org)).body.items;
    const [last] = before.slice(-1);
    try {
      // Back to the previous release's schema: the head in audit_heads, with the last row's hash.
      await migration.down({ context: q });
      expect(await select(db, 'SELECT CAST(seq AS CHAR) AS seq, hash FROM audit_heads WHERE chain = $1', [org.orgId])).to.deep.equal([
        { seq: '2', hash: last?.hash },
      ]);
    } finally {
      await migration.up({ context: q });
    }
    expect(await select(db, 'SELECT CAST(audit_seq AS CHAR) AS n FROM organizations WHERE id = $1', [org.orgId])).to.deep.equal([{ n: '2' }]);
    // Left for the previous release, which reads its heads there during a rolling release.
    expect(await select(db, 'SELECT CAST(seq AS CHAR) AS seq FROM audit_heads WHERE chain = $1', [org.orgId])).to.deep.equal([{ seq: '2' }]);
    // The next registration, and a change recorded in a transaction, follow row 2.
    await create(org);
    const hook = await (await harness()).http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/audit' });
    expect(hook.status).to.equal(200);
    const after = (await trail(org)).body.items;
    expect(after.map((i) => i.seq)).to.deep.equal([1, 2, 3, 4]);
    expect(after[2]?.prevHash).to.equal(last?.hash);
    expect(after[3]?.prevHash).to.equal(after[2]?.hash);
    for (const i of after) expect(rehash(org, i)).to.equal(i.hash);
  });

  it('goes on after rows the previous release appended during a rolling release (its heads in audit_heads): the head heals, the chain verifies', async () => {
    const { db, http } = await harness();
    // The previous release's append (59bc666's audit.repository.ts): its head row locked, the row after it, the head moved.
    const previousRelease = (org: TestOrg, target: string) =>
      db.transaction(async (t) => {
        await execute(db, 'INSERT INTO audit_heads (chain, seq, hash) VALUES ($1, 0, $2) ON DUPLICATE KEY UPDATE seq = seq', [org.orgId, GENESIS_HASH], t);
        const [head] = await select<{ seq: string; hash: string }>(db, 'SELECT seq, hash FROM audit_heads WHERE chain = $1 FOR UPDATE', [org.orgId], t);
        const row = {
          chain: org.orgId,
          seq: Number(head?.seq) + 1,
          at: new Date(),
          orgId: org.orgId,
          actor: 'cli',
          action: 'api_key.create',
          target,
          requestId: null,
          outcome: 'ok',
          prevHash: head?.hash as string,
        };
        const hash = auditHash(row);
        await execute(
          db,
          'INSERT INTO audit_log (chain, seq, at, org_id, actor, action, target, request_id, outcome, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $9, $10)',
          [row.chain, row.seq, row.at, row.orgId, row.actor, row.action, row.target, row.outcome, row.prevHash, hash],
          t,
        );
        await execute(db, 'UPDATE audit_heads SET seq = $2, hash = $3 WHERE chain = $1', [org.orgId, row.seq, hash], t);
      });
    const expectChain = async (org: TestOrg, actions: string[]) => {
      const items = (await trail(org)).body.items;
      expect(items.map((i) => i.action)).to.deep.equal(actions);
      expect(items.map((i) => i.seq)).to.deep.equal(actions.map((_, n) => n + 1));
      for (const [n, i] of items.entries()) {
        expect(rehash(org, i)).to.equal(i.hash);
        expect(i.prevHash).to.equal(n === 0 ? GENESIS_HASH : items[n - 1]?.hash);
      }
    };

    // A registration (its one-round-trip script) after the previous release's row: run again, healed.
    const first = await newOrg('audit-rolling-script');
    await previousRelease(first, 'api_key:old-1');
    await create(first);
    // The previous release after this release's row: its head is behind, its change fails whole.
    let failed: unknown;
    await previousRelease(first, 'api_key:old-2').catch((err: unknown) => {
      failed = err;
    });
    expect(failed, 'the previous release collides with the primary key').to.be.an.instanceOf(Error);
    await expectChain(first, ['api_key.create', 'guarantee.create']);

    // A change recorded in a transaction (a webhook) after the previous release's row: healed in it.
    const second = await newOrg('audit-rolling-append');
    await previousRelease(second, 'api_key:old-1');
    expect((await http.post('/api/v1/webhooks').set('X-API-Key', second.key).send({ endpoint: 'http://127.0.0.1:9/rolling' })).status).to.equal(200);
    await create(second);
    await expectChain(second, ['api_key.create', 'webhook.register', 'guarantee.create']);

    const verified = cliAuditVerify();
    expect(verified.status, verified.stderr).to.equal(0);
  });

  it("takes turns, without a deadlock, between a webhook's changes and registrations of its organization", async () => {
    const { http, db } = await harness();
    const racing = await newOrg('audit-webhook-race');
    const reg = await http.post('/api/v1/webhooks').set('X-API-Key', racing.key).send({ endpoint: 'http://127.0.0.1:9/race' });
    expect(reg.status).to.equal(200);
    const id = (reg.body as { webhookId: string }).webhookId;
    const deadlocks = async () => Number((await select<{ Value: string }>(db, "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'", []))[0]?.Value ?? NaN);
    const before = await deadlocks();
    const statuses = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => create(racing, { details: { policyNumber: `HOOK-RACE-${i}` } }).then(() => 200)),
      ...Array.from({ length: 3 }, () =>
        http
          .post(`/api/v1/webhooks/${id}/rotate-secret`)
          .set('X-API-Key', racing.key)
          .send()
          .then((r) => r.status),
      ),
      ...Array.from({ length: 3 }, () =>
        http
          .post(`/api/v1/webhooks/${id}/enable`)
          .set('X-API-Key', racing.key)
          .send()
          .then((r) => r.status),
      ),
    ]);
    expect(statuses.every((s) => s === 200)).to.equal(true);
    expect(await deadlocks(), 'no deadlock broken').to.equal(before);
    // Dense; an enable that found the endpoint enabled in the same millisecond changed nothing and wrote no row.
    const items = (await trail(racing)).body.items;
    expect(items.map((i) => i.seq)).to.deep.equal(Array.from({ length: items.length }, (_, i) => i + 1));
    const count = (action: string) => items.filter((i) => i.action === action).length;
    expect([count('webhook.register'), count('guarantee.create'), count('webhook.rotate_secret')]).to.deep.equal([1, 8, 3]);
    expect(count('webhook.enable')).to.be.within(1, 3);
  });

  it('hashes in SQL the very bytes the process hashes, the fields known beforehand framed in the process (multi-byte, separators, empty)', async () => {
    const { db } = await harness();
    const at = new Date('2026-11-25T01:02:03.045Z');
    const cases = [
      { actor: 'grk_abcdefghijkl', requestId: '', target: 'guarantee:x', action: 'guarantee.create', outcome: 'ok' },
      { actor: 'admin:renée', requestId: 'req-1;2:3', target: 'job:notarize/42;:', action: 'board.retry', outcome: 'failed 500' },
      { actor: 'cli', requestId: 'ünïcödé-€', target: 'trust_list:ЕС.xml', action: 'trust_list.import', outcome: '' },
    ];
    for (const c of cases) {
      for (const targetInSql of [false, true]) {
        const prevHash = sha256Hex(JSON.stringify(c));
        const row = {
          chain: org.orgId,
          seq: 12345,
          at,
          orgId: org.orgId,
          actor: c.actor,
          action: c.action,
          target: c.target,
          requestId: c.requestId || null,
          outcome: c.outcome,
          prevHash,
        };
        const sql = auditHashSql(
          {
            prevHash: '@t_prev',
            chain: { value: org.orgId },
            seq: '@t_seq',
            iso: '@t_iso',
            orgId: { value: org.orgId },
            actor: { value: c.actor },
            action: { value: c.action },
            target: targetInSql ? '@t_target' : { value: c.target },
            requestId: { value: c.requestId },
            outcome: { value: c.outcome },
          },
          1,
        );
        const inSql = await db.transaction(async (t) => {
          await execute(db, 'SET @t_prev = $1, @t_seq = 12345, @t_iso = $2, @t_target = $3', [prevHash, at.toISOString(), c.target], t);
          return select<{ h: string }>(db, `SELECT ${sql.sql} AS h`, sql.bind, t);
        });
        expect(inSql[0]?.h, JSON.stringify(c)).to.equal(auditHash(row));
      }
    }
  });

  it('pages with since and limit (1 to 100, default 50), shows an organization only its own rows, and refuses malformed paging with 400', async () => {
    for (let i = 0; i < 3; i++) await create(org, { details: { policyNumber: `PAGE-${i}` } });
    const other = await newOrg();
    await create(other, { details: { policyNumber: 'OTHER' } });
    const first = (await trail(org, '?limit=2')).body;
    expect(first.items.map((i) => i.seq)).to.deep.equal([1, 2]);
    expect(first.next).to.equal(2);
    const rest = (await trail(org, `?since=${String(first.next)}&limit=2`)).body;
    expect(rest.items.map((i) => i.seq)).to.deep.equal([3]);
    expect(rest.next).to.equal(null);
    expect((await trail(org, '?since=3')).body).to.deep.equal({ items: [], next: null });
    expect((await trail(other)).body.items.map((i) => i.orgId)).to.deep.equal([other.orgId]);
    for (const q of ['?limit=0', '?limit=101', '?limit=abc', '?since=-1', '?since=1.5', '?limit=1&limit=2'])
      expect((await trail(org, q)).status, q).to.equal(400);
    const anonymous = await (await harness()).http.get('/api/v2/audit');
    expect(anonymous.status).to.equal(401);
  });

  it('cli audit verify: intact, then names the first broken row when a row is changed, removed, or the last one cut', async () => {
    await create(org, { details: { policyNumber: 'V-1' } });
    await create(org, { details: { policyNumber: 'V-2' } });
    await create(org, { details: { policyNumber: 'V-3' } });
    const ok = cliAuditVerify();
    expect(ok.status, ok.stderr).to.equal(0);
    expect(ok.stdout).to.equal('audit trail intact\n');

    const { db } = await harness();
    // The database refuses to change or remove an audit row...
    for (const sql of ["UPDATE audit_log SET target = 'guarantee:forged' WHERE chain = $1 AND seq = 2", 'DELETE FROM audit_log WHERE chain = $1 AND seq = 3']) {
      const refused = await execute(db, sql, [org.orgId]).catch((err: unknown) => err as Error);
      expect(refused, sql).to.be.instanceOf(Error);
      expect((refused as Error).message).to.match(/audit rows are never (changed|deleted)/);
    }
    expect(cliAuditVerify().status).to.equal(0);
    // ...unless its administrator drops the guards: then the chain (and the log, log.test.ts) tells.
    await dropAuditGuards(db);
    const [row2] = await select<{ target: string }>(db, 'SELECT target FROM audit_log WHERE chain = $1 AND seq = 2', [org.orgId]);
    try {
      await execute(db, "UPDATE audit_log SET target = 'guarantee:forged' WHERE chain = $1 AND seq = 2", [org.orgId]);
      const changed = cliAuditVerify();
      expect(changed.status).to.equal(1);
      expect(changed.stdout).to.equal('audit trail NOT intact\n');
      expect(changed.stderr).to.include(`FAIL chain ${org.orgId}: row 2: it does not hash to its recorded hash`);
    } finally {
      await execute(db, 'UPDATE audit_log SET target = $2 WHERE chain = $1 AND seq = 2', [org.orgId, row2?.target]);
    }
    // A row removed from the middle, then the last one cut (its head still says 3).
    const rows = await select<Record<string, unknown>>(db, 'SELECT * FROM audit_log WHERE chain = $1 ORDER BY seq', [org.orgId]);
    const restore = async () => {
      await execute(db, 'DELETE FROM audit_log WHERE chain = $1', [org.orgId]);
      for (const r of rows)
        await execute(
          db,
          'INSERT INTO audit_log (chain, seq, at, org_id, actor, action, target, request_id, outcome, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)',
          [r.chain, r.seq, r.at, r.org_id, r.actor, r.action, r.target, r.request_id, r.outcome, r.prev_hash, r.hash],
        );
    };
    try {
      await execute(db, 'DELETE FROM audit_log WHERE chain = $1 AND seq = 2', [org.orgId]);
      expect(cliAuditVerify().stderr).to.include(`FAIL chain ${org.orgId}: row 2: row 2 is missing (the next is 3)`);
      await restore();
      await execute(db, 'DELETE FROM audit_log WHERE chain = $1 AND seq = 3', [org.orgId]);
      const cut = cliAuditVerify();
      expect(cut.status).to.equal(1);
      expect(cut.stderr).to.include(`FAIL chain ${org.orgId}: row 3: the chain ends at row 2, its head says row 3`);
    } finally {
      await restore();
      await restoreAuditGuards(db);
    }
    expect(cliAuditVerify().status).to.equal(0);
  });
});

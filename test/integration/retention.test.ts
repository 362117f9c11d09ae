// Retention enforced by the maintenance worker (issue 17 part 2, docs/operations.md "Records"): an upload
// never attached is deleted after UNATTACHED_UPLOAD_DAYS (its versions, then its row; one
// attached, or younger, stays; a guarantee racing the deletion gets a 400, never deleted
// bytes), an Infected file's quarantined bytes after INFECTED_RETENTION_DAYS (its verdict row
// stays), the webhooks' delivered events, deliveries and attempts after WEBHOOK_LOG_DAYS (a
// pending one stays). Against the real radosgw, clamd and MariaDB; ages are moved back in the
// database rather than waited for.
import { randomUUID } from 'node:crypto';
import { PutObjectLegalHoldCommand } from '@aws-sdk/client-s3';
import { expect } from 'chai';
import { v7 as uuidv7 } from 'uuid';
import { createFileRetention } from '../../src/files/file.retention.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { ACCEPTED_FILE_STATUSES } from '../../src/files/file.statuses.js';
import { createStorage, type Storage } from '../../src/shared/storage.js';
import { scanning } from '../support/scanning.js';
import { createDeliveryRepository } from '../../src/webhooks/delivery.repository.js';
import { createWebhookLogRetention } from '../../src/webhooks/webhook-log.retention.js';
import { eventually, harness, newOrg, presign, uploadForm, waitForStatus, type TestOrg } from '../support/harness.js';

const silent = createLogger('silent');
const DAY = 86_400_000;
const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
const daysAgo = (days: number) => new Date(Date.now() - days * DAY);

describe('retention: what is kept no longer is deleted', function () {
  this.timeout(60_000);
  const world = scanning();
  let storage: Storage;
  let org: TestOrg;
  before(() => {
    storage = world.storage;
  });
  beforeEach(async () => {
    org = await newOrg();
  });

  const files = async () => createFileRetention({ db: (await harness()).db, storage, logger: silent });
  const issuedDaysAgo = async (uuid: string, days: number) =>
    execute((await harness()).db, 'UPDATE files SET created_at = $2 WHERE uuid = $1', [uuid, daysAgo(days)]);
  const rowOf = async (uuid: string) =>
    (
      await select<{ status: string; purged_at: Date | null; version_id: string | null }>(
        (await harness()).db,
        'SELECT status, purged_at, version_id FROM files WHERE uuid = $1',
        [uuid],
      )
    )[0];

  /** An event made `ageDays` ago, dispatched, with one delivery to `endpointId` in `status` (and its attempt, when `attempted`); its id. */
  async function webhookEvent(endpointId: string, ageDays: number, status: 'succeeded' | 'failed' | 'pending', attempted: boolean): Promise<string> {
    const { db } = await harness();
    const at = daysAgo(ageDays);
    const id = uuidv7({ msecs: at.getTime() });
    await execute(db, 'INSERT INTO webhook_events (id, org_id, type, body, created_at, dispatched_at) VALUES ($1, $2, $3, $4, $5, $5)', [
      id,
      org.orgId,
      'guarantee.created',
      '{}',
      at,
    ]);
    await execute(
      db,
      'INSERT INTO webhook_deliveries (event_id, endpoint_id, org_id, status, attempts, created_at, updated_at, due_at) VALUES ($1, $2, $3, $4, 1, $5, $5, $5)',
      [id, endpointId, org.orgId, status, at],
    );
    if (attempted)
      await execute(
        db,
        'INSERT INTO webhook_attempts (event_id, endpoint_id, attempted_at, duration_ms, status_code, succeeded) VALUES ($1, $2, $3, 10, 200, 1)',
        [id, endpointId, at],
      );
    return id;
  }

  async function upload(content: string): Promise<{ key: string; uuid: string }> {
    const up = await presign(org, { fileType: 'pdf' });
    expect((await uploadForm(up.url, up.fields, content)).status).to.equal(204);
    return up;
  }

  it('deletes an upload never attached after UNATTACHED_UPLOAD_DAYS, its bytes and its row; an attached one, or a younger one, stays', async () => {
    const { http } = await harness();
    const old = await upload('%PDF-1.4 mai allegato\n');
    const attached = await upload('%PDF-1.4 allegato\n');
    const young = await upload('%PDF-1.4 recente\n');
    for (const f of [old, attached, young]) await waitForStatus(f.uuid, ['Clean']);
    const created = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ docs: [{ key: attached.key }] });
    expect(created.status).to.equal(200);
    await issuedDaysAgo(old.uuid, 31);
    await issuedDaysAgo(attached.uuid, 31);
    await issuedDaysAgo(young.uuid, 29);
    expect(await storage.versions(old.key)).to.have.length(1);

    expect(await (await files()).purgeUnattached(daysAgo(30))).to.be.at.least(1);
    expect(await storage.versions(old.key)).to.deep.equal([]);
    expect(await rowOf(old.uuid)).to.equal(undefined);
    expect((await http.get(`/api/v2/file-status/${old.uuid}`).set('X-API-Key', org.key)).status).to.equal(404);
    // Named afterwards: a 400, nothing registered.
    const late = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ docs: [{ key: old.key }] });
    expect(late.status).to.equal(400);
    for (const f of [attached, young]) {
      expect(await storage.versions(f.key)).to.have.length(1);
      expect((await rowOf(f.uuid))?.status).to.equal('Clean');
    }
  });

  it('deletes the row first, with a tombstone of its keys: a store that does not answer leaves the bytes to the next run, which deletes them first', async () => {
    const { http, db, config } = await harness();
    const old = await upload('%PDF-1.4 il deposito non risponde alla cancellazione\n');
    await waitForStatus(old.uuid, ['Clean']);
    await issuedDaysAgo(old.uuid, 31);
    // A store at an address where nothing listens (a real refused connection).
    const away = createStorage({ ...config, S3_ENDPOINT: 'http://127.0.0.1:9' });
    try {
      expect(await createFileRetention({ db, storage: away, logger: silent }).purgeUnattached(daysAgo(30))).to.be.at.least(1);
    } finally {
      away.client.destroy();
    }
    // The key is unknown from the row's deletion on: nothing can attach the bytes still kept.
    expect(await rowOf(old.uuid)).to.equal(undefined);
    expect(await storage.versions(old.key)).to.have.length(1);
    expect(await select(db, 'SELECT file_uuid FROM file_purges WHERE object_key = $1', [old.key])).to.deep.equal([{ file_uuid: old.uuid }]);
    const named = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ docs: [{ key: old.key }] });
    expect(named.status).to.equal(400);
    // The next run, the store back: the bytes, then the tombstone.
    await (await files()).purgeUnattached(daysAgo(30));
    expect(await storage.versions(old.key)).to.deep.equal([]);
    expect(await select(db, 'SELECT file_uuid FROM file_purges WHERE object_key = $1', [old.key])).to.deep.equal([]);
  });

  it("reads each sweep's work off an index of its own, where a file with nothing left to do (Infected and purged, kept already) is NULL", async () => {
    const { db } = await harness();
    const clean = await upload('%PDF-1.4 in coda\n');
    const bad = await upload(EICAR);
    await waitForStatus(clean.uuid, ['Clean']);
    await waitForStatus(bad.uuid, ['Infected']);
    const queues = async (uuid: string) =>
      (
        await select<{ u: Date | null; r: Date | null; i: Date | null }>(
          db,
          'SELECT unattached_since AS u, to_retain_since AS r, infected_since AS i FROM files WHERE uuid = $1',
          [uuid],
        )
      )[0];
    // Never attached: the clean one waits for deletion, the Infected one for its bytes' deletion only.
    expect(await queues(clean.uuid))
      .to.deep.include({ r: null, i: null })
      .and.to.have.property('u')
      .that.is.an.instanceOf(Date);
    expect(await queues(bad.uuid))
      .to.deep.include({ u: null, r: null })
      .and.to.have.property('i')
      .that.is.an.instanceOf(Date);
    // Attached: the clean one waits to be kept until the store says so; then it is in no queue.
    await execute(db, 'UPDATE files SET attached_at = $2 WHERE uuid IN ($1)', [[clean.uuid, bad.uuid], new Date()], undefined, { prepared: false });
    expect(await queues(clean.uuid))
      .to.deep.include({ u: null, i: null })
      .and.to.have.property('r')
      .that.is.an.instanceOf(Date);
    expect((await queues(bad.uuid))?.r, 'an attached Infected file is never kept').to.equal(null);
    await execute(db, 'UPDATE files SET retained_until = $2 WHERE uuid = $1', [clean.uuid, daysAgo(-3650)]);
    expect(await queues(clean.uuid)).to.deep.equal({ u: null, r: null, i: null });
    await execute(db, 'UPDATE files SET purged_at = $2 WHERE uuid = $1', [bad.uuid, new Date()]);
    expect(await queues(bad.uuid)).to.deep.equal({ u: null, r: null, i: null });
    // The statuses the lock's queues take are the files' accepted ones (migrations 0022 and 0024 name them).
    const lockQueues = await select<{ expr: string }>(
      db,
      "SELECT GENERATION_EXPRESSION AS expr FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'files' AND COLUMN_NAME IN ('to_retain_since', 'lock_due_at')",
      [],
    );
    expect(lockQueues).to.have.length(2);
    for (const column of lockQueues) expect(column.expr).to.include(`in (${ACCEPTED_FILE_STATUSES.map((x) => `'${x}'`).join(',')})`);
  });

  it('keeps, and records as attached, an old upload that a guarantee names without the record of it (the previous release attached it); the run goes on', async () => {
    const { http, db } = await harness();
    const named = await upload('%PDF-1.4 allegato dalla versione precedente\n');
    const loose = await upload('%PDF-1.4 mai allegato, dopo\n');
    for (const f of [named, loose]) await waitForStatus(f.uuid, ['Clean']);
    expect(
      (
        await http
          .post('/api/v2/guarantees')
          .set('X-API-Key', org.key)
          .send({ docs: [{ key: named.key }] })
      ).status,
    ).to.equal(200);
    await execute(db, 'UPDATE files SET attached_at = NULL WHERE uuid = $1', [named.uuid]);
    await issuedDaysAgo(named.uuid, 32);
    await issuedDaysAgo(loose.uuid, 31);
    expect(await (await files()).purgeUnattached(daysAgo(30))).to.be.at.least(1);
    const [row] = await select<{ attached_at: Date | null }>(db, 'SELECT attached_at FROM files WHERE uuid = $1', [named.uuid]);
    expect(row?.attached_at, 'recorded as attached').to.be.an.instanceOf(Date);
    expect(await storage.versions(named.key)).to.have.length(1);
    expect(await rowOf(loose.uuid), 'the next one still deleted').to.equal(undefined);
  });

  it('a guarantee naming an upload while it is being deleted gets a 400 (its documents would be gone), and nothing is registered', async () => {
    const { http, db } = await harness();
    const doomed = await upload('%PDF-1.4 cancellato mentre lo si allega\n');
    await waitForStatus(doomed.uuid, ['Clean']);
    const transactionId = `RACE-${randomUUID()}`;
    let answer: { status: number; body: Record<string, unknown> } | undefined;
    // The deletion's transaction, as purgeUnattached runs it: the row deleted (its lock held to the commit), then the bytes.
    await db.transaction(async (t) => {
      expect(await execute(db, 'DELETE FROM files WHERE uuid = $1 AND attached_at IS NULL', [doomed.uuid], t)).to.equal(1);
      const creating = http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .set('Accept', 'application/problem+json')
        .send({ details: { transactionId }, docs: [{ key: doomed.key }] })
        .then((res) => {
          answer = { status: res.status, body: res.body as Record<string, unknown> };
        });
      await new Promise((r) => setTimeout(r, 500));
      expect(answer, 'the registration waits for the deletion').to.equal(undefined);
      for (const v of await storage.versions(doomed.key)) await storage.removeVersion(doomed.key, v);
      void creating;
    });
    await eventually('the registration answered', () => Promise.resolve(answer !== undefined));
    expect(answer?.status).to.equal(400);
    expect(String(answer?.body.detail)).to.include('deleted meanwhile');
    expect(await select(db, 'SELECT id FROM guarantees WHERE org_id = $1 AND transaction_id = $2', [org.orgId, transactionId])).to.deep.equal([]);
  });

  it('goes on deleting uploads past tombstones whose bytes the store keeps refusing; the next run tries the tombstones after those', async () => {
    const { db } = await harness();
    // Three tombstones older than any other, whose bytes the store refuses to delete.
    const stuck = [0, 1, 2].map((i) => `stuck-${randomUUID()}-${i}.pdf`);
    for (const [i, key] of stuck.entries())
      await execute(db, 'INSERT INTO file_purges (object_key, stored_key, file_uuid, created_at) VALUES ($1, NULL, $2, $3)', [
        key,
        uuidv7(),
        daysAgo(5000 - i),
      ]);
    const tried = new Map<string, number>();
    const refusing: Storage = {
      ...storage,
      versions: async (key) => {
        tried.set(key, (tried.get(key) ?? 0) + 1);
        if (stuck.includes(key)) throw new Error('AccessDenied');
        return storage.versions(key);
      },
    };
    const old = await upload('%PDF-1.4 never attached');
    await waitForStatus(old.uuid, ['Clean']);
    await issuedDaysAgo(old.uuid, 4000);
    try {
      const retention = createFileRetention({ db, storage: refusing, logger: silent });
      // At most three a run: three refused tombstones no longer take the uploads' share.
      expect(await retention.purgeUnattached(daysAgo(30), 3)).to.be.at.least(1);
      expect(await rowOf(old.uuid)).to.equal(undefined);
      expect(await storage.versions(old.key)).to.deep.equal([]);
      expect(stuck.map((k) => tried.get(k))).to.deep.equal([1, 1, 1]);
      // The run stopped at its maximum among the tombstones: the next goes on after the third.
      tried.clear();
      await retention.purgeUnattached(daysAgo(30), 3);
      expect(tried.get(stuck[0] as string), 'not the same three again').to.equal(undefined);
    } finally {
      await execute(db, 'DELETE FROM file_purges WHERE object_key IN ($1)', [stuck], undefined, { prepared: false });
    }
  });

  it("keeps an Infected file's bytes in quarantine, then deletes them after INFECTED_RETENTION_DAYS; the verdict row stays", async () => {
    const bad = await upload(EICAR);
    const row = await waitForStatus(bad.uuid, ['Infected']);
    expect(row.status).to.equal('Infected');
    const versionId = (await rowOf(bad.uuid))?.version_id as string;
    expect(await storage.versions(bad.key), 'kept in quarantine').to.deep.equal([versionId]);
    const retention = await files();
    expect(await retention.purgeInfected(daysAgo(30))).to.equal(0);
    expect(await storage.versions(bad.key)).to.deep.equal([versionId]);

    await execute((await harness()).db, 'UPDATE files SET scanned_at = $2 WHERE uuid = $1', [bad.uuid, daysAgo(31)]);
    expect(await retention.purgeInfected(daysAgo(30))).to.be.at.least(1);
    expect(await storage.versions(bad.key)).to.deep.equal([]);
    const after = await rowOf(bad.uuid);
    expect(after?.status).to.equal('Infected');
    expect(after?.purged_at).to.be.an.instanceOf(Date);
    // An old Infected upload is never deleted as "never attached": its verdict stays.
    await issuedDaysAgo(bad.uuid, 31);
    await retention.purgeUnattached(daysAgo(30));
    expect((await rowOf(bad.uuid))?.status).to.equal('Infected');
  });

  it('goes on past Infected files whose bytes the store keeps, trying each once a pass; a pass stopped at its maximum is resumed where it stopped', async () => {
    const { db } = await harness();
    const bad = [];
    for (let i = 0; i < 5; i++) bad.push(await upload(`${EICAR}${' '.repeat(i)}`));
    for (const f of bad) await waitForStatus(f.uuid, ['Infected']);
    // Older than every other test's: the cutoff below takes these five only, in this order.
    for (const [i, f] of bad.entries()) await execute(db, 'UPDATE files SET scanned_at = $2 WHERE uuid = $1', [f.uuid, daysAgo(400 - i)]);
    const [held1, held2, ...rest] = bad as [{ key: string; uuid: string }, { key: string; uuid: string }, ...Array<{ key: string; uuid: string }>];
    // The two oldest are under a legal hold: the store itself refuses to delete them.
    const hold = async (f: { key: string }, on: boolean) => {
      for (const v of await storage.versions(f.key))
        await storage.client.send(
          new PutObjectLegalHoldCommand({ Bucket: storage.bucket, Key: f.key, VersionId: v, LegalHold: { Status: on ? 'ON' : 'OFF' } }),
        );
    };
    await hold(held1, true);
    await hold(held2, true);
    try {
      // The real store, each listing of a file's versions (its deletion's first call) counted.
      const tried = new Map<string, number>();
      const counting: Storage = {
        ...storage,
        versions: (key) => {
          tried.set(key, (tried.get(key) ?? 0) + 1);
          return storage.versions(key);
        },
      };
      const cutoff = daysAgo(395);
      // Pages of two: the first page is the two held files.
      const retention = createFileRetention({ db, storage: counting, logger: silent, page: 2 });
      expect(await retention.purgeInfected(cutoff), 'the files after the refused ones').to.equal(3);
      for (const f of rest) {
        expect(await storage.versions(f.key)).to.deep.equal([]);
        expect((await rowOf(f.uuid))?.purged_at).to.be.an.instanceOf(Date);
      }
      expect([tried.get(held1.key), tried.get(held2.key)], 'each refused file tried once').to.deep.equal([1, 1]);
      expect((await rowOf(held1.uuid))?.purged_at).to.equal(null);
      expect(await storage.versions(held1.key)).to.have.length(1);

      // At most two a pass, failures counted: the next pass goes on after them, and one that reached the end starts over.
      await execute(db, 'UPDATE files SET purged_at = NULL WHERE uuid IN ($1)', [rest.map((f) => f.uuid)], undefined, { prepared: false });
      tried.clear();
      const bounded = createFileRetention({ db, storage: counting, logger: silent, page: 2 });
      const passes = [];
      for (let i = 0; i < 4; i++) passes.push(await bounded.purgeInfected(cutoff, 2));
      expect(passes).to.deep.equal([0, 2, 1, 0]);
      expect([tried.get(held1.key), tried.get(held2.key)], 'tried again by the pass that started over').to.deep.equal([2, 2]);
      await hold(held1, false);
      await hold(held2, false);
      expect(await createFileRetention({ db, storage, logger: silent }).purgeInfected(cutoff)).to.equal(2);
      expect(await storage.versions(held1.key)).to.deep.equal([]);
    } finally {
      await hold(held1, false);
      await hold(held2, false);
    }
  });

  it("deletes the webhooks' delivered events, their deliveries and attempts after WEBHOOK_LOG_DAYS; a pending one, and a younger one, stay", async () => {
    const { db } = await harness();
    const endpointId = randomUUID();
    const event = (ageDays: number, status: 'succeeded' | 'failed' | 'pending') => webhookEvent(endpointId, ageDays, status, true);
    // Older than every other test's rows: these are the oldest in the tables.
    const delivered = await event(400, 'succeeded');
    const failed = await event(399, 'failed');
    const pending = await event(398, 'pending');
    const young = await event(89, 'succeeded');

    const result = await createWebhookLogRetention(db).purge(daysAgo(90));
    expect(result.events).to.be.at.least(2);
    expect(result.attempts).to.be.at.least(3);
    const left = async (sql: string) =>
      (await select<{ id: string }>(db, sql, [[delivered, failed, pending, young]], undefined, { prepared: false })).map((r) => r.id).sort();
    expect(await left('SELECT id FROM webhook_events WHERE id IN ($1)')).to.deep.equal([pending, young].sort());
    expect(await left('SELECT event_id AS id FROM webhook_deliveries WHERE event_id IN ($1)')).to.deep.equal([pending, young].sort());
    expect(await left('SELECT event_id AS id FROM webhook_attempts WHERE event_id IN ($1)')).to.deep.equal([young]);
    // Run again: nothing more to do, quickly (the attempts' purge stops at the first young row).
    expect(await createWebhookLogRetention(db).purge(daysAgo(90))).to.deep.equal({ events: 0, deliveries: 0, attempts: 0 });
  });

  it('goes on where the last pass stopped at its maximum, rather than reading again the events it keeps; a pass that reaches the end starts over', async () => {
    const { db } = await harness();
    const at = (days: number, i = 0) => new Date(daysAgo(days).getTime() + i);
    const insert = async (ids: Array<{ id: string; at: Date; dispatched: boolean }>) => {
      const rows = ids.map((_, i) => `($${i * 3 + 1}, '${org.orgId}', 'guarantee.created', '{}', $${i * 3 + 2}, $${i * 3 + 3})`);
      await execute(
        db,
        `INSERT INTO webhook_events (id, org_id, type, body, created_at, dispatched_at) VALUES ${rows.join(', ')}`,
        ids.flatMap((e) => [e.id, e.at, e.dispatched ? e.at : null]),
        undefined,
        { prepared: false },
      );
    };
    // Not yet dispatched: kept, before every other old event of this test.
    const kept = { id: uuidv7({ msecs: at(390).getTime() }), at: at(390), dispatched: false };
    const over = Array.from({ length: 600 }, (_, i) => ({ id: uuidv7({ msecs: at(385, i).getTime() }), at: at(385, i), dispatched: true }));
    await insert([kept, ...over]);
    const left = async () =>
      new Set(
        (
          await select<{ id: string }>(db, 'SELECT id FROM webhook_events WHERE id IN ($1)', [[kept.id, ...over.map((e) => e.id)]], undefined, {
            prepared: false,
          })
        ).map((r) => r.id),
      );
    const retention = createWebhookLogRetention(db);
    await retention.purge(daysAgo(90), 10);
    const afterFirst = await left();
    expect(afterFirst.has(kept.id)).to.equal(true);
    expect(afterFirst.size, 'stopped at its maximum, a batch in').to.be.within(2, 600);
    // Dispatched meanwhile: over too, but behind where the last pass stopped.
    await execute(db, 'UPDATE webhook_events SET dispatched_at = created_at WHERE id = $1', [kept.id]);
    await retention.purge(daysAgo(90), 10);
    expect([...(await left())], 'the rest, not the one behind').to.deep.equal([kept.id]);
    await retention.purge(daysAgo(90), 10);
    expect((await left()).size, 'the next pass started over').to.equal(0);
  });

  it('a replay and the purge take turns on an old event: a replay asked while the purge deletes it finds nothing, a purge during a replay keeps it', async () => {
    const { db } = await harness();
    const deliveries = createDeliveryRepository(db);
    const endpointId = randomUUID();
    const oldEvent = () => webhookEvent(endpointId, 395, 'failed', false);
    const rowsOf = async (id: string) => ({
      events: (await select(db, 'SELECT id FROM webhook_events WHERE id = $1', [id])).length,
      deliveries: await select<{ status: string }>(db, 'SELECT status FROM webhook_deliveries WHERE event_id = $1', [id]),
    });

    // The purge's transaction holds the event (locked first, as purgeOver does) and deletes it: a
    // replay waits for it, then finds no event, and leaves no delivery behind for it.
    const doomed = await oldEvent();
    let replayed: number | undefined;
    await db.transaction(async (t) => {
      await select(db, 'SELECT id FROM webhook_events WHERE id = $1 FOR UPDATE', [doomed], t);
      await execute(db, 'DELETE FROM webhook_deliveries WHERE event_id = $1', [doomed], t);
      await execute(db, 'DELETE FROM webhook_events WHERE id = $1', [doomed], t);
      void deliveries.replay(org.orgId, endpointId, { eventId: doomed }, new Date()).then((n) => {
        replayed = n;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(replayed, 'the replay waits for the purge').to.equal(undefined);
    });
    await eventually('the replay answered', () => Promise.resolve(replayed !== undefined));
    expect(replayed).to.equal(0);
    expect(await rowsOf(doomed)).to.deep.equal({ events: 0, deliveries: [] });

    // Replays of one event to several endpoints at once take turns on it: each made due, no
    // deadlock broken on the way (a shared lock upgraded by each would deadlock every time,
    // hidden by the retry: InnoDB's count of deadlocks tells).
    const shared = await oldEvent();
    const endpoints = Array.from({ length: 4 }, () => randomUUID());
    const deadlocks = async () => Number((await select<{ Value: string }>(db, "SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'", []))[0]?.Value ?? NaN);
    const before = await deadlocks();
    const results = await Promise.all(endpoints.map((ep) => deliveries.replay(org.orgId, ep, { eventId: shared }, new Date())));
    expect(results).to.deep.equal([1, 1, 1, 1]);
    expect(await deadlocks(), 'no deadlock broken').to.equal(before);
    const sharedRows = await select<{ endpoint_id: string; status: string }>(db, 'SELECT endpoint_id, status FROM webhook_deliveries WHERE event_id = $1', [
      shared,
    ]);
    expect(
      sharedRows
        .filter((r) => r.status === 'pending')
        .map((r) => r.endpoint_id)
        .sort(),
    ).to.deep.equal([...endpoints].sort());

    // A purge that starts while a replay's transaction is open waits for it, then keeps the event.
    const kept = await oldEvent();
    let purged: Promise<unknown> | undefined;
    await deliveries.replay(org.orgId, endpointId, { eventId: kept }, new Date(), async () => {
      purged = createWebhookLogRetention(db).purge(daysAgo(90));
      await new Promise((r) => setTimeout(r, 300));
    });
    await purged;
    expect(await rowsOf(kept)).to.deep.equal({ events: 1, deliveries: [{ status: 'pending' }] });
  });
});

// Documents kept for the legal keeping period (issue 17 part 1, docs/operations.md "Records"): every
// document version attached to a guarantee or an amendment, once judged fit, is kept by the
// store under S3 Object Lock (COMPLIANCE) until DOCUMENT_RETENTION_YEARS after it was attached
// or judged, whichever is later; the store itself then refuses to delete it, to this service's
// own credentials too. Against the real radosgw (its bucket made with Object Lock), clamd and
// MariaDB; a bucket made without Object Lock is said so, at the lock's sweep and in /readyz.
import { CreateBucketCommand, DeleteBucketCommand, S3ServiceException } from '@aws-sdk/client-s3';
import { expect } from 'chai';
import { backfillAttachedAt } from '../../src/shared/db/migrations/0018-document-retention.js';
import { migration as lockRetries } from '../../src/shared/db/migrations/0024-document-lock-retries.js';
import { createDocumentLock, retainUntil, watchObjectLock } from '../../src/files/document-lock.js';
import { createFileRepository } from '../../src/files/file.repository.js';
import { createAttachments } from '../../src/guarantees/attachments.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { createStorage, type Storage } from '../../src/shared/storage.js';
import { scanning } from '../support/scanning.js';
import { appWith, harness, newOrg, presign, uploadForm, waitForStatus, type TestOrg } from '../support/harness.js';

const silent = createLogger('silent');
const YEARS = 10;

interface FileLockRow {
  version_id: string | null;
  attached_at: Date | null;
  scanned_at: Date | null;
  retained_until: Date | null;
}

async function lockRow(uuid: string): Promise<FileLockRow | undefined> {
  const { db } = await harness();
  const [row] = await select<FileLockRow>(db, 'SELECT version_id, attached_at, scanned_at, retained_until FROM files WHERE uuid = $1', [uuid]);
  return row;
}

describe('documents kept under Object Lock for the keeping period', function () {
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

  const lock = async (s: Storage = storage, opts: Pick<Parameters<typeof createDocumentLock>[0], 'max' | 'retry' | 'now'> = {}) => {
    const { db, events } = await harness();
    const attachments = createAttachments(db);
    return createDocumentLock({
      repo: createFileRepository(db, events.outbox),
      storage: s,
      unrecordedBetween: (from, to) => attachments.unrecordedBetween(from, to),
      years: YEARS,
      logger: silent,
      ...opts,
    });
  };

  async function upload(content: string): Promise<{ key: string; uuid: string }> {
    const up = await presign(org, { fileType: 'pdf', fileName: 'polizza.pdf' });
    expect((await uploadForm(up.url, up.fields, content)).status).to.equal(204);
    return up;
  }

  async function register(keys: string[]): Promise<string> {
    const res = await (
      await harness()
    ).http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'P-LOCK' }, docs: keys.map((key) => ({ key })) });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.id as string;
  }

  it('keeps an attached document version in COMPLIANCE mode until its date; the store refuses to delete it, to the service too; an upload never attached is not kept', async () => {
    const doc = await upload('%PDF-1.4 polizza da conservare\n');
    const loose = await upload('%PDF-1.4 mai allegato\n');
    await waitForStatus(doc.uuid, ['Clean']);
    await waitForStatus(loose.uuid, ['Clean']);
    await register([doc.key]);

    const run = await (await lock()).run();
    expect(run.objectLock).to.equal(true);
    expect(run.locked).to.be.at.least(1);
    const row = (await lockRow(doc.uuid)) as FileLockRow;
    // Attached after its verdict: kept ten years from its attachment.
    expect(row.attached_at).to.be.an.instanceOf(Date);
    expect((row.attached_at as Date) >= (row.scanned_at as Date)).to.equal(true);
    const until = retainUntil({ attachedAt: row.attached_at as Date, judgedAt: row.scanned_at }, YEARS);
    expect(row.retained_until?.toISOString()).to.equal(until.toISOString());
    expect(until.getUTCFullYear()).to.equal((row.attached_at as Date).getUTCFullYear() + YEARS);
    const versionId = row.version_id as string;
    expect(await storage.retention(doc.key, versionId)).to.deep.equal({ mode: 'COMPLIANCE', until });

    // With the service's own credentials: the store says no, and the version is still there.
    let refused: unknown;
    await storage.removeVersion(doc.key, versionId).catch((err: unknown) => {
      refused = err;
    });
    expect(refused).to.be.an.instanceOf(S3ServiceException);
    expect((refused as S3ServiceException).name).to.equal('AccessDenied');
    expect(await storage.versions(doc.key)).to.include(versionId);
    // Nor can its date be brought forward.
    let shortened: unknown;
    await storage.retain(doc.key, versionId, new Date(until.getTime() - 86_400_000)).catch((err: unknown) => {
      shortened = err;
    });
    expect((shortened as S3ServiceException | undefined)?.name).to.equal('AccessDenied');

    // Never attached: not kept (it is deleted after UNATTACHED_UPLOAD_DAYS instead).
    const looseRow = (await lockRow(loose.uuid)) as FileLockRow;
    expect(looseRow.attached_at).to.equal(null);
    expect(looseRow.retained_until).to.equal(null);
    expect(await storage.retention(loose.key, looseRow.version_id as string)).to.equal(undefined);
    // A second sweep has nothing left to do for it.
    await (await lock()).run();
    expect((await lockRow(doc.uuid))?.retained_until?.toISOString()).to.equal(until.toISOString());
  });

  it('counts from the verdict when it comes after the attachment, and keeps an amendment’s documents too', async () => {
    // Attached while its scan has not run: the scan worker is stopped until the guarantee exists.
    await world.stop();
    const doc = await upload('%PDF-1.4 allegato prima della verifica\n');
    const id = await register([doc.key]);
    expect((await lockRow(doc.uuid))?.attached_at).to.be.an.instanceOf(Date);
    await (await lock()).run();
    expect((await lockRow(doc.uuid))?.retained_until, 'not kept before its verdict').to.equal(null);
    await world.start();
    await waitForStatus(doc.uuid, ['Clean']);
    await (await lock()).run();
    const row = (await lockRow(doc.uuid)) as FileLockRow;
    expect((row.scanned_at as Date) > (row.attached_at as Date)).to.equal(true);
    expect(row.retained_until?.toISOString()).to.equal(retainUntil({ attachedAt: row.attached_at as Date, judgedAt: row.scanned_at }, YEARS).toISOString());
    expect(row.retained_until?.getTime()).to.equal(new Date(row.scanned_at as Date).setUTCFullYear((row.scanned_at as Date).getUTCFullYear() + YEARS));

    const appendix = await upload('%PDF-1.4 appendice\n');
    await waitForStatus(appendix.uuid, ['Clean']);
    const amended = await (
      await harness()
    ).http
      .post(`/api/v2/guarantees/${id}/amendments`)
      .set('X-API-Key', org.key)
      .send({ type: 'RELEASE', effectiveAt: '2027-01-01T00:00:00Z', docs: [{ key: appendix.key }] });
    expect(amended.status).to.equal(200);
    await (await lock()).run();
    const appendixRow = (await lockRow(appendix.uuid)) as FileLockRow;
    expect(appendixRow.retained_until).to.be.an.instanceOf(Date);
    expect((await storage.retention(appendix.key, appendixRow.version_id as string))?.mode).to.equal('COMPLIANCE');
  });

  it('finds an attachment made without its record (by the previous release, during a rolling release) and keeps its document', async () => {
    const doc = await upload('%PDF-1.4 allegato dalla versione precedente\n');
    await waitForStatus(doc.uuid, ['Clean']);
    const id = await register([doc.key]);
    // As the previous release attaches: no attached_at.
    const { db } = await harness();
    await execute(db, 'UPDATE files SET attached_at = NULL WHERE uuid = $1', [doc.uuid]);
    await (await lock()).run();
    const row = (await lockRow(doc.uuid)) as FileLockRow;
    const [g] = await select<{ created_at: Date }>(db, 'SELECT created_at FROM guarantees WHERE id = $1', [id]);
    expect(row.attached_at?.toISOString()).to.equal(g?.created_at.toISOString());
    expect(row.retained_until).to.be.an.instanceOf(Date);
  });

  it('keeps a document attached again later (an amendment naming it) from that attachment: its date extended', async () => {
    const doc = await upload('%PDF-1.4 allegato due volte\n');
    await waitForStatus(doc.uuid, ['Clean']);
    const id = await register([doc.key]);
    await (await lock()).run();
    const first = (await lockRow(doc.uuid)) as FileLockRow;
    expect(first.retained_until).to.be.an.instanceOf(Date);
    await new Promise((r) => setTimeout(r, 20));
    const amended = await (
      await harness()
    ).http
      .post(`/api/v2/guarantees/${id}/amendments`)
      .set('X-API-Key', org.key)
      .send({ type: 'AMOUNT_CHANGE', effectiveAt: '2027-01-01T00:00:00Z', garantedAmount: 10, docs: [{ key: doc.key }] });
    expect(amended.status).to.equal(200);
    expect((await lockRow(doc.uuid))?.retained_until, 'to be asked again').to.equal(null);
    await (await lock()).run();
    const second = (await lockRow(doc.uuid)) as FileLockRow;
    expect((second.attached_at as Date) > (first.attached_at as Date)).to.equal(true);
    expect((second.retained_until as Date) > (first.retained_until as Date)).to.equal(true);
    expect((await storage.retention(doc.key, second.version_id as string))?.until).to.deep.equal(second.retained_until);

    // Migration 0018's backfill, for a database attached before the record: the latest
    // attachment's time, batch by batch (two files a batch here); a time recorded is never lowered.
    const { db } = await harness();
    const q = (sql: string) => db.query(sql, { raw: true });
    await execute(db, 'UPDATE files SET attached_at = NULL WHERE uuid = $1', [doc.uuid]);
    await backfillAttachedAt(q, 2);
    expect((await lockRow(doc.uuid))?.attached_at).to.deep.equal(second.attached_at);
    const later = new Date((second.attached_at as Date).getTime() + 60_000);
    await execute(db, 'UPDATE files SET attached_at = $2 WHERE uuid = $1', [doc.uuid, later]);
    await backfillAttachedAt(q, 2);
    expect((await lockRow(doc.uuid))?.attached_at).to.deep.equal(later);
  });

  it('leaves a document attached again between its read and its write to the next sweep, which keeps it from the later attachment', async () => {
    const doc = await upload('%PDF-1.4 allegato di nuovo durante la scansione\n');
    await waitForStatus(doc.uuid, ['Clean']);
    const id = await register([doc.key]);
    const read = (await lockRow(doc.uuid)) as FileLockRow;
    const oldUntil = retainUntil({ attachedAt: read.attached_at as Date, judgedAt: read.scanned_at }, YEARS);
    // The store, asked to keep the document, first sees an amendment name it again (the real
    // registration, its attachment recorded): the sweep has read the first attachment already.
    let reattached = false;
    const racing: Storage = {
      ...storage,
      async retain(key, versionId, until) {
        if (key === doc.key && !reattached) {
          reattached = true;
          await new Promise((r) => setTimeout(r, 5));
          const amended = await (
            await harness()
          ).http
            .post(`/api/v2/guarantees/${id}/amendments`)
            .set('X-API-Key', org.key)
            .send({ type: 'AMOUNT_CHANGE', effectiveAt: '2027-01-01T00:00:00Z', garantedAmount: 10, docs: [{ key: doc.key }] });
          expect(amended.status).to.equal(200);
        }
        return storage.retain(key, versionId, until);
      },
    };
    await (await lock(racing)).run();
    expect(reattached).to.equal(true);
    const between = (await lockRow(doc.uuid)) as FileLockRow;
    expect((between.attached_at as Date) > (read.attached_at as Date)).to.equal(true);
    expect(between.retained_until, 'the old date is not recorded over the later attachment').to.equal(null);
    expect((await storage.retention(doc.key, read.version_id as string))?.until).to.deep.equal(oldUntil);

    await (await lock()).run();
    const after = (await lockRow(doc.uuid)) as FileLockRow;
    const laterUntil = retainUntil({ attachedAt: between.attached_at as Date, judgedAt: between.scanned_at }, YEARS);
    expect(laterUntil > oldUntil).to.equal(true);
    expect(after.retained_until?.toISOString()).to.equal(laterUntil.toISOString());
    expect((await storage.retention(doc.key, read.version_id as string))?.until).to.deep.equal(laterUntil);
  });

  it('goes on past documents the store refuses (a version gone), and keeps the ones after them', async () => {
    const { db } = await harness();
    const gone: string[] = [];
    for (let i = 0; i < 4; i++) {
      const doc = await upload(`%PDF-1.4 versione sparita ${i}\n`);
      await waitForStatus(doc.uuid, ['Clean']);
      await register([doc.key]);
      // Its version is not in the store (a bad id): the store refuses it (4xx), for good.
      await execute(db, "UPDATE files SET version_id = 'no-such-version', attached_at = '2001-01-01' WHERE uuid = $1", [doc.uuid]);
      gone.push(doc.uuid);
    }
    const good = await upload('%PDF-1.4 dopo quelli rifiutati\n');
    await waitForStatus(good.uuid, ['Clean']);
    await register([good.key]);
    const run = await (await lock()).run();
    expect(run.failed).to.be.at.least(4);
    expect((await lockRow(good.uuid))?.retained_until).to.be.an.instanceOf(Date);
    for (const uuid of gone) await execute(db, "UPDATE files SET attached_at = NULL, status = 'Error' WHERE uuid = $1", [uuid]);
  });

  it('keeps a newer attachment behind more refused documents than a sweep takes; the refused ones are tried again on their own schedule', async () => {
    const { db } = await harness();
    const refused: Array<{ uuid: string; versionId: string }> = [];
    for (let i = 0; i < 4; i++) {
      const doc = await upload(`%PDF-1.4 rifiutato in testa ${i}\n`);
      await waitForStatus(doc.uuid, ['Clean']);
      await register([doc.key]);
      refused.push({ uuid: doc.uuid, versionId: (await lockRow(doc.uuid))?.version_id as string });
      // The oldest attachments of all (the head of the sweep), whose version the store refuses (4xx).
      await execute(db, "UPDATE files SET version_id = 'no-such-version', attached_at = $2 WHERE uuid = $1", [
        doc.uuid,
        new Date(Date.UTC(1999, 0, 1, 0, 0, i)),
      ]);
    }
    const good = await upload('%PDF-1.4 allegato dopo i rifiutati\n');
    await waitForStatus(good.uuid, ['Clean']);
    await register([good.key]);
    const schedule = async () =>
      select<{ lock_failures: number; lock_retry_at: Date | null }>(
        db,
        'SELECT lock_failures, lock_retry_at FROM files WHERE uuid IN ($1) ORDER BY attached_at',
        [refused.map((r) => r.uuid)],
        undefined,
        { prepared: false },
      );
    const t0 = Date.now();
    let clock = t0;
    const opts = { max: 3, retry: { firstMs: 60_000, maxMs: 100_000 }, now: () => new Date(clock) };
    try {
      // Three a sweep: the first takes three refused ones, each then due a minute later.
      expect(await (await lock(storage, opts)).run()).to.deep.include({ locked: 0, failed: 3 });
      expect((await lockRow(good.uuid))?.retained_until).to.equal(null);
      const firstTry = [1, 1, 1, 0].map((n) => ({ lock_failures: n, lock_retry_at: n ? new Date(t0 + 60_000) : null }));
      expect(await schedule()).to.deep.equal(firstTry);
      // The next goes on past them: the fourth, then the newer document, kept.
      expect(await (await lock(storage, opts)).run()).to.deep.include({ locked: 1, failed: 1 });
      expect((await lockRow(good.uuid))?.retained_until).to.be.an.instanceOf(Date);
      expect(await schedule()).to.deep.equal([1, 1, 1, 1].map(() => ({ lock_failures: 1, lock_retry_at: new Date(t0 + 60_000) })));
      // Not before their time.
      clock = t0 + 59_000;
      expect(await (await lock(storage, opts)).run()).to.deep.include({ locked: 0, failed: 0 });
      // Then tried again, each due twice as late (at most 100 s here); three a sweep still.
      clock = t0 + 60_000;
      expect(await (await lock(storage, opts)).run()).to.deep.include({ locked: 0, failed: 3 });
      expect((await (await lock(storage, opts)).run()).failed).to.equal(1);
      expect(await schedule()).to.deep.equal([1, 1, 1, 1].map(() => ({ lock_failures: 2, lock_retry_at: new Date(t0 + 60_000 + 100_000) })));
      // One whose version is back is kept at its next try, its schedule cleared.
      const [back] = refused as [{ uuid: string; versionId: string }];
      await execute(db, 'UPDATE files SET version_id = $2 WHERE uuid = $1', [back.uuid, back.versionId]);
      clock = t0 + 160_000;
      expect(await (await lock(storage, { ...opts, max: 10 })).run()).to.deep.include({ locked: 1, failed: 3 });
      expect((await schedule())[0]).to.deep.equal({ lock_failures: 0, lock_retry_at: null });
      expect((await lockRow(back.uuid))?.retained_until).to.be.an.instanceOf(Date);
    } finally {
      for (const r of refused.slice(1)) await execute(db, "UPDATE files SET attached_at = NULL, status = 'Error' WHERE uuid = $1", [r.uuid]);
    }
  });

  it('migration 0024 goes there and back, each way leaving a schema the other release sweeps with', async () => {
    const { db } = await harness();
    const q = (sql: string) => db.query(sql, { raw: true });
    const columns = async () =>
      (
        await select<{ name: string }>(
          db,
          "SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'files' AND COLUMN_NAME LIKE 'lock\\_%' ORDER BY name",
          [],
        )
      ).map((c) => c.name);
    expect(await columns()).to.deep.equal(['lock_due_at', 'lock_failures', 'lock_retry_at']);
    const doc = await upload('%PDF-1.4 attraverso la migrazione\n');
    await waitForStatus(doc.uuid, ['Clean']);
    await register([doc.key]);
    await lockRetries.down({ context: q });
    try {
      expect(await columns()).to.deep.equal([]);
      // The previous release's sweep reads its queue as before.
      const [queued] = await select<{ uuid: string }>(
        db,
        'SELECT uuid FROM files FORCE INDEX (ix_files_to_retain_since) WHERE to_retain_since IS NOT NULL AND uuid = $1',
        [doc.uuid],
      );
      expect(queued?.uuid).to.equal(doc.uuid);
    } finally {
      await lockRetries.up({ context: q });
    }
    expect(await columns()).to.deep.equal(['lock_due_at', 'lock_failures', 'lock_retry_at']);
    await (await lock()).run();
    expect((await lockRow(doc.uuid))?.retained_until).to.be.an.instanceOf(Date);
  });

  it('leaves a document for the next sweep when the store does not answer, and keeps it then', async () => {
    const doc = await upload('%PDF-1.4 il deposito non risponde\n');
    await waitForStatus(doc.uuid, ['Clean']);
    await register([doc.key]);
    // A store at an address where nothing listens (a real refused connection): Object Lock is not even known.
    const { config } = await harness();
    const away = createStorage({ ...config, S3_ENDPOINT: 'http://127.0.0.1:9' });
    try {
      let failed: unknown;
      await (await lock(away)).run().catch((err: unknown) => {
        failed = err;
      });
      expect(failed, 'the sweep fails (its job retries)').to.be.an.instanceOf(Error);
    } finally {
      away.client.destroy();
    }
    expect((await lockRow(doc.uuid))?.retained_until).to.equal(null);
    await (await lock()).run();
    expect((await lockRow(doc.uuid))?.retained_until).to.be.an.instanceOf(Date);
  });

  it('says when the bucket has no Object Lock: the sweep keeps nothing, and /readyz tells it', async () => {
    const { config } = await harness();
    const bucket = `no-lock-${Date.now()}`;
    const plain = createStorage({ ...config, S3_BUCKET: bucket });
    await plain.client.send(new CreateBucketCommand({ Bucket: bucket }));
    try {
      expect(await plain.objectLock()).to.equal('absent');
      expect(await (await lock(plain)).run()).to.deep.equal({ objectLock: false, locked: 0, failed: 0 });
      const watch = watchObjectLock(plain, silent);
      await watch.ready;
      watch.stop();
      expect(watch.state()).to.equal('absent');
      const { db } = await harness();
      const http = await appWith({}, db, { objectLock: watch.state });
      const ready = await http.get('/readyz');
      expect(ready.status).to.equal(200);
      expect(ready.body).to.deep.equal({ status: 'ready', database: 'up', documents: { objectLock: 'absent' } });
      // The test bucket, made with Object Lock, says so.
      const locked = watchObjectLock(storage, silent);
      await locked.ready;
      locked.stop();
      expect(locked.state()).to.equal('enabled');
    } finally {
      await plain.client.send(new DeleteBucketCommand({ Bucket: bucket }));
      plain.client.destroy();
    }
  });
});

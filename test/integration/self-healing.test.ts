// The pipelines come back by themselves from outages, against the real servers: the store
// or the database away before an upload (the watch's attempts run out), Redis restarted
// without its data or flushed (jobs and repeatable jobs lost), a hung store, Redis away at
// boot and a presign, a scan job whose version vanished, two uploads to one key before the
// scan, and a Bull Board retry of a failed delivery.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { v7 as uuidv7 } from 'uuid';
import supertest from 'supertest';
import type { Job } from 'bullmq';
import { createFileJobs, FileDedup, type CheckPayload } from '../../src/files/file.jobs.js';
import { openQueues } from '../../src/queues.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { MaintenanceJob } from '../../src/shared/maintenance.jobs.js';
import { producerConnection } from '../../src/shared/queues.js';
import { createStorage, type Storage } from '../../src/shared/storage.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';
import {
  FAST_PIPELINE,
  appWith,
  configWith,
  eventually,
  fileRow,
  harness,
  newOrg,
  pendingJob,
  presign,
  uploadForm,
  waitForStatus,
  type TestOrg,
  appOver,
  eventsOver,
} from '../support/harness.js';
import { p7mFixtures } from '../support/p7m-fixtures.js';
import { privateRedis } from '../support/private-redis.js';
import { expectLogIntact } from '../support/log.js';
import { openCore, transparencyLog } from '../../src/composition.js';
import { receiver } from '../support/receiver.js';
import { freePort, tcpProxy } from '../support/tcp-proxy.js';

const silent = createLogger('silent');
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/**
 * Makes the file due for the sweeper now (as 60 s passing would), runs a maintenance worker, and
 * has it sweep at once (a sweep job added by hand, as from Bull Board, instead of waiting up to
 * 30 s for the schedule's next run).
 */
async function sweepNow(uuid: string | undefined, names: Array<'maintenance' | 'scan'> = ['maintenance']): Promise<RunningWorkers> {
  const { db, queues } = await harness();
  if (uuid) await execute(db, 'UPDATE files SET check_due_at = $2 WHERE uuid = $1', [uuid, new Date(Date.now() - 1000)]);
  const workers = await startWorkers(names, { config: configWith(FAST_PIPELINE), logger: silent });
  await queues.maintenance.add(MaintenanceJob.sweepUploads, {});
  return workers;
}

/** Waits until the queue holds a failed job about this file (its attempts ran out). */
async function failedJobOf(queue: 'checks' | 'scans', uuid: string, timeoutMs = 30_000) {
  const { queues } = await harness();
  return eventually(`a failed ${queue} job of ${uuid}`, async () => (await queues[queue].getFailed()).find((j) => j.data.uuid === uuid), timeoutMs);
}

describe('self-healing: uploads after outages', function () {
  this.timeout(90_000);
  let org: TestOrg;
  let storage: Storage;
  before(async () => {
    storage = createStorage((await harness()).config);
  });
  after(() => {
    storage.client.destroy();
  });
  beforeEach(async () => {
    org = await newOrg();
  });

  /**
   * An upload while the scan worker cannot use `broken` (its configuration routed through a
   * proxy that is down or hangs): the watch's attempts run out (`checkFailure` looks at the
   * failed job), then `heal` and a sweep, and the file is judged Clean.
   */
  async function outageBeforeUpload(
    broken: Record<string, string>,
    heal: () => Promise<void> | void,
    checkFailure?: (failed: Job<CheckPayload>, tookMs: number) => void,
  ) {
    const api = await appWith(FAST_PIPELINE);
    const workers = await startWorkers(['scan'], { config: configWith({ ...FAST_PIPELINE, ...broken }), logger: silent });
    let maintenance: RunningWorkers | undefined;
    try {
      const up = await presign(org, { fileType: 'pdf' }, 2, api);
      expect((await uploadForm(up.url, up.fields, 'uploaded while the workers could not use a server')).status).to.equal(204);
      const started = Date.now();
      const failed = await failedJobOf('checks', up.uuid, 40_000);
      expect(failed.name).to.equal('watch-upload');
      checkFailure?.(failed, Date.now() - started);
      expect((await fileRow(up.uuid))?.status).to.equal('In Progress');
      await heal();
      maintenance = await sweepNow(up.uuid);
      expect((await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected'], 30_000)).status).to.equal('Clean');
    } finally {
      await maintenance?.close();
      await workers.close();
    }
  }

  it('after an outage of the store before an upload, the file reaches its verdict once the store is back (the watch whose attempts ran out is queued again)', async () => {
    const s3 = new URL((await harness()).config.S3_ENDPOINT ?? '');
    const proxy = await tcpProxy({ host: s3.hostname, port: Number(s3.port) }, { listening: false });
    try {
      await outageBeforeUpload({ S3_ENDPOINT: `http://127.0.0.1:${proxy.port}` }, () => proxy.start());
    } finally {
      await proxy.stop();
    }
  });

  it('after an outage of the database before an upload, the file reaches its verdict once the database is back', async () => {
    const dbUrl = new URL((await harness()).config.DATABASE_URL);
    const proxy = await tcpProxy({ host: dbUrl.hostname, port: Number(dbUrl.port) }, { listening: false });
    const viaProxy = new URL(dbUrl);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    try {
      await outageBeforeUpload({ DATABASE_URL: viaProxy.toString() }, () => proxy.start());
    } finally {
      await proxy.stop();
    }
  });

  it('a hung store (connections accepted, never answered) fails each attempt within S3_REQUEST_TIMEOUT_MS instead of holding the job, and the file is judged once it answers again', async () => {
    const s3 = new URL((await harness()).config.S3_ENDPOINT ?? '');
    const proxy = await tcpProxy({ host: s3.hostname, port: Number(s3.port) });
    proxy.stall();
    try {
      await outageBeforeUpload(
        { S3_ENDPOINT: `http://127.0.0.1:${proxy.port}`, S3_REQUEST_TIMEOUT_MS: '400', S3_CONNECT_TIMEOUT_MS: '400' },
        () => proxy.stall(false),
        (failed, tookMs) => {
          // Five attempts, each bounded (the SDK's own retries included), with backoff between them.
          expect(tookMs).to.be.below(30_000);
          expect(failed.failedReason).to.match(/timed out|timeout/i);
        },
      );
    } finally {
      await proxy.stop();
    }
  });

  it('with Redis unreachable since boot, a presign answers at once from the database; the sweeper starts the watch once Redis is there', async () => {
    const { config, db } = await harness();
    const deadRedis = producerConnection(`redis://127.0.0.1:${await freePort()}/0`);
    deadRedis.on('error', () => undefined);
    const queues = openQueues(deadRedis, config.QUEUE_PREFIX, silent);
    const events = eventsOver(db, queues, config, silent);
    const http = supertest(appOver({ config, logger: silent, db, queues, events }).callback());
    let workers: RunningWorkers | undefined;
    try {
      const rows = [];
      for (let i = 0; i < 3; i++) {
        // a retrying client: each try is quick and gets its own working URL
        const started = Date.now();
        const res = await http.post('/api/v2/presigned-url').set('X-API-Key', org.key).send({ fileType: 'pdf' });
        expect(res.status).to.equal(200);
        expect(Date.now() - started).to.be.below(2000);
        rows.push(res.body as { key: string; presignedUrl: string; fields: Record<string, string> });
      }
      const [first] = rows;
      const uuid = first?.key.slice(0, first.key.indexOf('.')) ?? '';
      const [due] = await select<{ check_due_at: Date }>(db, 'SELECT check_due_at FROM files WHERE uuid = $1', [uuid]);
      expect(due?.check_due_at.getTime()).to.be.at.most(Date.now());
      expect((await uploadForm(first?.presignedUrl ?? '', first?.fields ?? {}, 'issued while Redis was away')).status).to.equal(204);
      // The maintenance worker's next sweep finds the file due.
      workers = await sweepNow(undefined, ['maintenance', 'scan']);
      expect((await waitForStatus(uuid, ['Clean', 'Error', 'Infected'], 30_000)).status).to.equal('Clean');
    } finally {
      await workers?.close();
      await queues.close();
      deadRedis.disconnect();
      void events.relay.stop();
    }
  });

  it("two uploads to one key before the scan: one version is judged and kept, the other deleted, and the checksum is the kept one's", async () => {
    const up = await presign(org);
    const [a, b] = [Buffer.from('first version'), Buffer.from('second version, uploaded again with the same form')];
    expect((await uploadForm(up.url, up.fields, a)).status).to.equal(204);
    expect((await uploadForm(up.url, up.fields, b)).status).to.equal(204);
    expect(await storage.versions(up.key)).to.have.length(2);
    // As if the form had expired with its grace (30 s here) while the scan waited: the last look comes right after the verdict.
    await execute((await harness()).db, 'UPDATE files SET expires_at = $2 WHERE uuid = $1', [up.uuid, new Date(Date.now() - 31_000)]);
    const workers = await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: silent });
    try {
      const row = await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected']);
      expect(row.status).to.equal('Clean');
      await eventually('one version left', async () => (await storage.versions(up.key)).length === 1, 5000);
      expect(await storage.versions(up.key)).to.deep.equal([row.version_id]);
      const chunks: Buffer[] = [];
      for await (const c of await storage.read(up.key, row.version_id ?? '')) chunks.push(c as Buffer);
      expect(row.checksum).to.equal(sha256(Buffer.concat(chunks)));
      expect([sha256(a), sha256(b)]).to.include(row.checksum);
    } finally {
      await workers.close();
    }
  });

  it('a scan whose version vanished before it ran ends without a verdict and looks again: the version there now is scanned', async () => {
    const { queues } = await harness();
    const up = await presign(org);
    expect((await uploadForm(up.url, up.fields, 'the version that will vanish')).status).to.equal(204);
    const vanished = (await storage.head(up.key))?.versionId ?? '';
    expect((await uploadForm(up.url, up.fields, 'the version that stays')).status).to.equal(204);
    await storage.removeVersion(up.key, vanished);
    const jobs = createFileJobs(queues, { scanAttempts: 4 });
    await jobs.scan(up.uuid, vanished);
    const workers = await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: silent });
    try {
      const row = await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected']);
      expect(row).to.include({ status: 'Clean', checksum: sha256('the version that stays') });
      expect(row.version_id).to.not.equal(vanished);
      // The scan of the same version can be queued again: the job that ended without a verdict does not stand in its way.
      await jobs.scan(up.uuid, vanished);
      expect(await pendingJob(queues.scans, FileDedup.scan(up.uuid, vanished))).to.not.equal(undefined);
    } finally {
      await workers.close();
    }
  });
});

describe('documents judged before versions were pinned', function () {
  this.timeout(60_000);

  it('stay readable at their copy (documents/<etag>/<key>, no version): a signature check still pending reads it and the file becomes Signed', async () => {
    const { db, config } = await harness();
    const org = await newOrg();
    const storage = createStorage(config);
    const envelope = p7mFixtures().der.rsa;
    const uuid = uuidv7();
    const key = `${uuid}.pdf.p7m`;
    const copy = `documents/0123456789abcdef0123456789abcdef/${key}`;
    await storage.client.send(new PutObjectCommand({ Bucket: config.S3_BUCKET, Key: copy, Body: envelope }));
    // The row as the previous release left it: scanned, copied, its signature check queued.
    const now = new Date();
    await execute(
      db,
      `INSERT INTO files (uuid, object_key, org_id, file_type, is_document_public, status, size, checksum, etag, stored_key,
        scan_engine, scanned_at, expires_at, created_at, updated_at)
      VALUES ($1, $2, $3, 'pdf.p7m', 1, 'In Progress', $4, $5, '0123456789abcdef0123456789abcdef', $6, 'ClamAV', $7, $8, $7, $7)`,
      [uuid, key, org.orgId, envelope.length, sha256(envelope), copy, now, new Date(now.getTime() + 900_000)],
    );
    const workers = await startWorkers(['scan', 'signature'], { config: configWith(FAST_PIPELINE), logger: silent });
    try {
      // Its lost job is found again by the sweeper (as after the upgrade).
      const { queues } = await harness();
      await queues.maintenance.add(MaintenanceJob.sweepUploads, {});
      const maintenance = await startWorkers(['maintenance'], { config: configWith(FAST_PIPELINE), logger: silent });
      try {
        const row = await waitForStatus(uuid, ['Signed', 'Clean', 'Error', 'Infected'], 30_000);
        expect(row).to.include({ status: 'Signed', stored_key: copy, version_id: null });
      } finally {
        await maintenance.close();
      }
    } finally {
      await workers.close();
      storage.client.destroy();
    }
  });
});

describe('a bucket whose versioning came late', function () {
  this.timeout(60_000);

  it('a worker refuses to scan on a bucket without versioning; an upload made before versioning was turned on (version "null") is pinned and judged all the same', async () => {
    const { config } = await harness();
    const bucket = `registry-late-${Date.now()}`;
    const storage = createStorage({ ...config, S3_BUCKET: bucket });
    await storage.client.send(new CreateBucketCommand({ Bucket: bucket }));
    try {
      const settings = configWith({ ...FAST_PIPELINE, S3_BUCKET: bucket });
      let refused: unknown;
      await startWorkers(['scan'], { config: settings, logger: silent }).then(
        (w) => w.close(),
        (err: unknown) => {
          refused = err;
        },
      );
      expect((refused as Error | undefined)?.message).to.include('keeps no object versions');

      const org = await newOrg();
      const up = await presign(org, { fileType: 'pdf' }, 2, await appWith({ ...FAST_PIPELINE, S3_BUCKET: bucket }));
      expect((await uploadForm(up.url, up.fields, 'uploaded before the release turned versioning on')).status).to.equal(204);
      await storage.enableVersioning();
      const workers = await startWorkers(['scan'], { config: settings, logger: silent });
      try {
        const row = await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected'], 30_000);
        expect(row).to.include({ status: 'Clean', version_id: 'null', checksum: sha256('uploaded before the release turned versioning on') });
      } finally {
        await workers.close();
      }
    } finally {
      storage.client.destroy();
    }
  });
});

describe('self-healing: what Redis loses is rebuilt', function () {
  this.timeout(120_000);

  for (const loss of ['restarted without its data', 'flushed'] as const) {
    it(`when Redis is ${loss}, pending deliveries are delivered and notarization goes on, with the workers left running`, async () => {
      const { config, db } = await harness();
      const redis = await privateRedis();
      const producer = producerConnection(redis.url);
      producer.on('error', () => undefined);
      const queues = openQueues(producer, config.QUEUE_PREFIX, silent);
      const events = eventsOver(db, queues, config, silent);
      const http = supertest(appOver({ config, logger: silent, db, queues, events }).callback());
      const workerConfig = configWith({
        REDIS_URL: redis.url,
        NOTARIZATION_INTERVAL_MS: '300',
        WORKER_STALLED_INTERVAL_MS: '1000',
        WORKER_LOCK_DURATION_MS: '2000',
      });
      // Notarization and maintenance run throughout; deliveries only after the loss, so their jobs are in Redis when it goes.
      const running = await startWorkers(['notarization', 'maintenance'], { config: workerConfig, logger: silent, keepSchedulesEveryMs: 500 });
      let webhooks: RunningWorkers | undefined;
      const hooks = await receiver('/lost');
      const org = await newOrg();
      try {
        expect((await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: hooks.url })).status).to.equal(200);
        const create = async (n: number, tag: string) => {
          const ids: string[] = [];
          for (let i = 0; i < n; i++) {
            const res = await http
              .post('/api/v2/guarantees')
              .set('X-API-Key', org.key)
              .send({ details: { policyNumber: `${tag}-${i}` } });
            expect(res.status).to.equal(200);
            ids.push(res.body.id as string);
          }
          return ids;
        };
        const before = await create(5, 'before');
        // The relay handed them to Redis: dispatched, deliveries pending, waiting on the first attempts' list there.
        // guarantee.created only: the records' guarantee.notarized events come as the notarizer gets to them.
        const relayed = async () =>
          select<{ status: string; dispatched: number }>(
            db,
            `SELECT d.status, e.dispatched_at IS NOT NULL AS dispatched FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
           WHERE d.org_id = $1 AND e.type = 'guarantee.created'`,
            [org.orgId],
          );
        let seen: Awaited<ReturnType<typeof relayed>> = [];
        await eventually(
          'the events to be relayed',
          async () => {
            seen = await relayed();
            return seen.length === 5 && seen.every((r) => r.status === 'pending' && Number(r.dispatched) === 1);
          },
          15_000,
          () => JSON.stringify(seen),
        );
        expect(await queues.webhookFirstAttempts.length()).to.be.at.least(5);

        if (loss === 'flushed') await redis.flushAll();
        else await redis.restartEmpty();
        await eventually('Redis to answer, empty', () =>
          queues.webhookFirstAttempts.length().then(
            (n) => n === 0,
            () => false,
          ),
        );

        const after = await create(5, 'after');
        // As if a minute had passed: the deliveries whose jobs were lost are past their due time.
        await execute(db, 'UPDATE webhook_deliveries SET due_at = $2 WHERE org_id = $1', [org.orgId, new Date(Date.now() - 120_000)]);
        webhooks = await startWorkers(['webhooks'], { config: workerConfig, logger: silent });

        // Every guarantee.created (the records' guarantee.notarized events come too).
        const created = () =>
          new Set(
            hooks.received
              .map((r) => JSON.parse(r.body) as { type: string; data: { id: string } })
              .filter((e) => e.type === 'guarantee.created')
              .map((e) => e.data.id),
          );
        await eventually(
          'every guarantee.created delivered',
          () => [...before, ...after].every((id) => created().has(id)),
          40_000,
          () => `${created().size} of 10`,
        );
        await eventually(
          'every record notarized',
          async () => {
            const [row] = await select<{ n: number }>(db, "SELECT COUNT(*) AS n FROM guarantees WHERE org_id = $1 AND notarization_status = 'COMPLETE'", [
              org.orgId,
            ]);
            return Number(row?.n) === 10;
          },
          40_000,
        );
        // The transparency log went on too (it needs no Redis): every leaf in it once, no gap; and checkpointed.
        await expectLogIntact(db);
        await eventually('a checkpoint of the whole log', async () => {
          const c = await transparencyLog(openCore(config, silent, { db })).service.checkpoint();
          return !!c && Number(c.split('\n')[1]) === (await expectLogIntact(db)).size;
        });
      } finally {
        await webhooks?.close();
        await running.close();
        await events.relay.stop();
        await hooks.close();
        await queues.close();
        producer.disconnect();
        await redis.stop();
      }
    });
  }

  it('workers close within their lock duration even when Redis restarted empty under a running job (SIGTERM never hangs)', async () => {
    const redis = await privateRedis();
    const running = await startWorkers(['notarization', 'maintenance'], {
      config: configWith({ REDIS_URL: redis.url, NOTARIZATION_INTERVAL_MS: '100', WORKER_LOCK_DURATION_MS: '1500' }),
      logger: silent,
      keepSchedulesEveryMs: 200,
    });
    try {
      await new Promise((r) => setTimeout(r, 500)); // cycles under way
      await redis.restartEmpty();
      const started = Date.now();
      await running.close();
      expect(Date.now() - started).to.be.below(2 * 1500 + 2000);
    } finally {
      await redis.stop();
    }
  });

  it('a Bull Board retry of a failed delivery delivers it', async () => {
    const { http, queues } = await harness();
    const hooks = await receiver('/retry-by-hand');
    hooks.answer((_req, res) => {
      res.writeHead(500).end();
    });
    const workers = await startWorkers(['webhooks'], { config: configWith({ WEBHOOK_RETRY_SCHEDULE: '0.1,0.1' }), logger: silent });
    const org = await newOrg();
    try {
      expect((await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: hooks.url })).status).to.equal(200);
      const created = await http
        .post('/api/v2/guarantees')
        .set('X-API-Key', org.key)
        .send({ details: { policyNumber: 'retry-me' } });
      const failed = await eventually(
        'the delivery job to fail',
        async () => (await queues.webhooks.getFailed()).find((j) => hooks.received.some((r) => r.headers['webhook-id'] === j.data.eventId)),
        20_000,
      );
      const { db } = await harness();
      const [delivery] = await select<{ status: string }>(db, 'SELECT status FROM webhook_deliveries WHERE event_id = $1', [failed.data.eventId]);
      expect(delivery?.status).to.equal('failed');
      const attemptsBefore = hooks.received.length;
      hooks.answer((_req, res) => {
        res.writeHead(204).end();
      });
      await failed.retry();
      await eventually('the retried delivery to succeed', async () => {
        const [row] = await select<{ status: string }>(db, 'SELECT status FROM webhook_deliveries WHERE event_id = $1', [failed.data.eventId]);
        return row?.status === 'succeeded';
      });
      expect(hooks.received.length).to.equal(attemptsBefore + 1);
      expect(JSON.parse(hooks.received.at(-1)?.body ?? '{}')).to.nested.include({ 'data.id': created.body.id as string });
    } finally {
      await workers.close();
      await hooks.close();
    }
  });
});

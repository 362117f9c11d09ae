import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { Writable } from 'node:stream';
import supertest from 'supertest';
import { configWith, eventually, fileRow, harness, newOrg, pendingJob, presign, uploadForm, waitForStatus, type TestOrg, appOver } from '../support/harness.js';
import { FileDedup } from '../../src/files/file.jobs.js';
import { SCAN_FAILED } from '../../src/files/scan.service.js';
import { FAST_PIPELINE } from '../support/harness.js';
import { tcpProxy, freePort } from '../support/tcp-proxy.js';
import { createAntivirus } from '../../src/files/antivirus.js';
import { configureUploadEvents } from '../../src/files/storage-events.setup.js';
import { execute } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { createStorage } from '../../src/shared/storage.js';
import { startWorkers } from '../../workers/index.js';
import { entry } from '../support/entry.js';

const silent = createLogger('silent');

describe('uploads: clamd down, workers killed, events and fallbacks', function () {
  this.timeout(90_000);
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  it('while clamd is unreachable the file stays In Progress (never a false Clean), and is scanned once clamd is back', async () => {
    const { config } = await harness();
    const proxy = await tcpProxy({ host: config.CLAMD_HOST ?? '127.0.0.1', port: config.CLAMD_PORT ?? 0 }, { listening: false });
    const workers = await startWorkers(['scan'], {
      config: configWith({ ...FAST_PIPELINE, SCAN_ATTEMPTS: '8', CLAMD_PORT: String(proxy.port) }),
      logger: silent,
    });
    try {
      const up = await presign(org);
      expect((await uploadForm(up.url, up.fields, 'clean bytes')).status).to.equal(204);
      await new Promise((r) => setTimeout(r, 2500)); // a few failed attempts
      expect((await fileRow(up.uuid))?.status).to.equal('In Progress');
      await proxy.start();
      expect((await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected'], 30_000)).status).to.equal('Clean');
    } finally {
      await workers.close();
      await proxy.stop();
    }
  });

  it('when clamd stays unreachable through every retry the file becomes Error with the reason', async () => {
    const workers = await startWorkers(['scan'], {
      config: configWith({ ...FAST_PIPELINE, SCAN_ATTEMPTS: '3', CLAMD_PORT: String(await freePort()) }),
      logger: silent,
    });
    try {
      const up = await presign(org);
      expect((await uploadForm(up.url, up.fields, 'clean bytes')).status).to.equal(204);
      const row = await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected'], 30_000);
      expect(row.status).to.equal('Error');
      // The reason names no host and no internal error (the log has them).
      expect(row.status_reason).to.equal(SCAN_FAILED);
      // An admin's retry from Bull Board (the failed job retried) scans it once clamd is back.
      const { queues } = await harness();
      const [failed] = (await queues.scans.getFailed()).filter((j) => j.data.uuid === up.uuid);
      expect(failed).to.not.equal(undefined);
      await workers.close();
      const healthy = await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: silent });
      try {
        await failed?.retry();
        expect((await waitForStatus(up.uuid, ['Clean'], 20_000)).status).to.equal('Clean');
      } finally {
        await healthy.close();
      }
    } finally {
      await workers.close();
    }
  });

  it('a worker killed mid-scan leaves no file In Progress: its job is taken over and completes', async () => {
    const { config } = await harness();
    // The worker to be killed reaches clamd through a slow link (200 kB/s), so that it is killed mid-scan.
    const slow = await tcpProxy({ host: config.CLAMD_HOST ?? '127.0.0.1', port: config.CLAMD_PORT ?? 0 }, { uploadBytesPerSecond: 200_000 });
    const env = { ...process.env, ...FAST_PIPELINE, CLAMD_PORT: String(slow.port), LOG_LEVEL: 'silent' };
    const child = spawn(process.execPath, [...entry('workers/index.ts'), 'scan'], { env, stdio: 'ignore' });
    try {
      const up = await presign(org);
      const content = Buffer.alloc(3 * 1024 * 1024, 'z');
      expect((await uploadForm(up.url, up.fields, content)).status).to.equal(204);
      // Wait until the child's scan is under way (its job active), then kill it without warning.
      await eventually('the scan to start', async () => (await (await harness()).queues.scans.getActive()).some((j) => j.data.uuid === up.uuid), 20_000);
      await new Promise((r) => setTimeout(r, 500));
      child.kill('SIGKILL');
      expect((await fileRow(up.uuid))?.status).to.equal('In Progress');
      const survivor = await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: silent });
      try {
        const row = await waitForStatus(up.uuid, ['Clean', 'Error', 'Infected'], 30_000);
        expect(row.status).to.equal('Clean');
        expect(Number(row.size)).to.equal(content.length);
      } finally {
        await survivor.close();
      }
    } finally {
      child.kill('SIGKILL');
      await slow.stop();
    }
  });

  it('radosgw pushes the upload event to the ingress, which queues a check at once', async () => {
    const { config, db, queues } = await harness();
    const app = appOver({ config, logger: silent, db, queues });
    const handle = app.callback();
    const server = createServer((req, res) => {
      void handle(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const storage = createStorage(config);
    try {
      const { port } = server.address() as { port: number };
      await configureUploadEvents(storage, config, `http://127.0.0.1:${port}`, config.ENCRYPTION_KEY[0] as Buffer);
      const up = await presign(org);
      // No worker runs: the watch job stays queued, and only the event can add the hint.
      expect(await pendingJob(queues.checks, FileDedup.hint(up.uuid))).to.equal(undefined);
      expect((await uploadForm(up.url, up.fields, 'hello')).status).to.equal(204);
      // rgw's non-persistent topic delivers before it answers the uploader.
      const hint = await pendingJob(queues.checks, FileDedup.hint(up.uuid));
      expect(hint?.data).to.deep.equal({ uuid: up.uuid });
    } finally {
      await configureUploadEvents(storage, config, undefined, config.ENCRYPTION_KEY[0] as Buffer);
      storage.client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('the ingress refuses a wrong token (404) and a body that is not JSON (400), and ignores keys that are not issued-key shaped', async () => {
    const { http, config, queues } = await harness();
    expect((await http.post('/internal/storage-events/not-the-token').send({ Records: [] })).status).to.equal(404);
    const { storageEventsToken } = await import('../../src/files/storage-events.routes.js');
    const path = `/internal/storage-events/${storageEventsToken(config.ENCRYPTION_KEY[0] as Buffer)}`;
    expect((await http.post(path).set('Content-Type', 'application/json').send('{nope')).status).to.equal(400);
    const before = await queues.checks.count();
    const res = await http.post(path).send({
      Records: [
        { eventName: 'ObjectCreated:Put', s3: { object: { key: 'documents/x/y.pdf' } } },
        { eventName: 'ObjectRemoved:Delete', s3: { object: { key: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.pdf' } } },
      ],
    });
    expect(res.status).to.equal(204);
    expect(await queues.checks.count()).to.equal(before);
  });

  it('reading the status of a file still waiting for its upload queues a check; the sweeper restarts lost watches', async () => {
    const { http, queues, db, config } = await harness();
    const up = await presign(org);
    const watch = await pendingJob(queues.checks, FileDedup.watch(up.uuid));
    await watch?.remove(); // as if Redis had lost it
    await queues.checks.removeDeduplicationKey(FileDedup.watch(up.uuid));
    expect((await http.get(`/api/v2/file-status/${up.uuid}`).set('X-API-Key', org.key)).body).to.equal('In Progress');
    const hint = await eventually('the hint job', () => pendingJob(queues.checks, FileDedup.hint(up.uuid)), 2000);
    expect(hint.data).to.deep.equal({ uuid: up.uuid });

    await execute(db, 'UPDATE files SET check_due_at = $2 WHERE uuid = $1', [up.uuid, new Date(Date.now() - 10 * 60_000)]);
    const { createScanService } = await import('../../src/files/scan.service.js');
    const { createFileJobs } = await import('../../src/files/file.jobs.js');
    const { createFileRepository } = await import('../../src/files/file.repository.js');
    const sweeper = createScanService({
      repo: createFileRepository(db, (await harness()).events.outbox),
      storage: createStorage((await harness()).config),
      jobs: createFileJobs(queues, { scanAttempts: 1 }),
      logger: silent,
      antivirus: createAntivirus({ host: config.CLAMD_HOST, port: config.CLAMD_PORT }, { timeoutMs: 5000 }),
      settings: { graceMs: 0, pollMaxMs: 1000, scanAttempts: 1 },
    });
    expect(await sweeper.sweep(5 * 60_000)).to.be.at.least(1);
    expect(await (await pendingJob(queues.checks, FileDedup.watch(up.uuid)))?.getState()).to.be.oneOf(['waiting', 'delayed', 'prioritized']);
  });

  it("the extended view is a 404 for another organization's file, by UUID or key", async () => {
    const { http } = await harness();
    const up = await presign(org);
    const other = await newOrg();
    for (const ref of [up.uuid, up.key, 'not-a-uuid']) {
      expect((await http.get(`/api/v2/files/${ref}`).set('X-API-Key', other.key)).status).to.equal(404);
    }
    const own = await http.get(`/api/v2/files/${up.key}`).set('X-API-Key', org.key);
    expect(own.status).to.equal(200);
    expect(own.body).to.include({ status: 'In Progress', checksum: null, scan: null });
  });
});

describe('the store-events ingress in the access log', () => {
  it('logs its route pattern, never the token in the path', async () => {
    const { config, db, queues } = await harness();
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const app = appOver({ config, logger: createLogger('info', sink), db, queues });
    const { storageEventsToken } = await import('../../src/files/storage-events.routes.js');
    const token = storageEventsToken(config.ENCRYPTION_KEY[0] as Buffer);
    const res = await supertest(app.callback()).post(`/internal/storage-events/${token}`).send({ Records: [] });
    expect(res.status).to.equal(204);
    await new Promise((r) => setTimeout(r, 50));
    const entry = lines.map((l) => JSON.parse(l) as { msg: string; path?: string }).find((l) => l.msg === 'request');
    expect(entry?.path).to.equal('/internal/storage-events/:token');
    expect(lines.join('')).to.not.include(token);
  });
});

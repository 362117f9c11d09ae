// The Procfile as operators scale it: the compiled processes, two `web` and two `worker`,
// against one database, Redis and store, with the default lock and stalled-check settings.
// Files are uploaded and guarantees registered through both webs; one worker is killed with
// SIGKILL in the middle of a scan. Every file is scanned once and judged, every event is
// delivered (at least once: duplicates are counted and printed), every record notarized once,
// and the killed worker's scan is taken over within the time docs/operations.md gives.
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { procfileFlags } from '../../scripts/procfile.js';
import { select } from '../../src/shared/db/sequelize.js';
import { eventually, harness, newOrg, uploadForm, waitForStatus } from '../support/harness.js';
import { killOnExit } from '../support/processes.js';
import { receiver } from '../support/receiver.js';
import { freePort, tcpProxy } from '../support/tcp-proxy.js';

interface Proc {
  name: string;
  child: ChildProcess;
  out: string[];
}

function start(name: string, args: string[], env: Record<string, string>): Proc {
  const child = spawn(process.execPath, args, { env: { ...process.env, LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  killOnExit(child);
  const proc: Proc = { name, child, out: [] };
  let partial = '';
  child.stdout?.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    proc.out.push(...lines);
  });
  child.stderr?.on('data', (d: Buffer) => {
    proc.out.push(d.toString());
  });
  return proc;
}

const logLines = (p: Proc) =>
  p.out.flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

describe('scale-out: the compiled Procfile processes, two web and two worker', function () {
  this.timeout(180_000);
  const procs: Proc[] = [];
  after(() => {
    for (const p of procs) p.child.kill('SIGKILL');
  });

  it("scans every file once, delivers every event, notarizes every record once, and takes a killed worker's scan over within about 25 s", async () => {
    const build = spawnSync('npm', ['run', '-s', 'build'], { encoding: 'utf8' });
    expect(build.status, build.stdout + build.stderr).to.equal(0);
    const { config, db } = await harness();
    // Both workers reach clamd through a slow link (300 kB/s), so that a 3 MB scan lasts ~10 s.
    const slowClamd = await tcpProxy({ host: config.CLAMD_HOST ?? '127.0.0.1', port: config.CLAMD_PORT ?? 0 }, { uploadBytesPerSecond: 300_000 });
    const shared = { CLAMD_PORT: String(slowClamd.port), NOTARIZATION_INTERVAL_MS: '1000', WEBHOOK_RETRY_SCHEDULE: '1,2,4' };
    const webPorts = [await freePort(), await freePort()];
    for (const [i, port] of webPorts.entries())
      procs.push(start(`web${i + 1}`, [...procfileFlags('web'), 'dist/src/server.js'], { ...shared, PORT: String(port) }));
    const workers = [1, 2].map((i) => start(`worker${i}`, [...procfileFlags('worker'), 'dist/workers/index.js'], shared));
    procs.push(...workers);
    const hooks = await receiver('/scale-out');
    try {
      for (const port of webPorts)
        await eventually(
          `web on ${port}`,
          () =>
            fetch(`http://127.0.0.1:${port}/readyz`).then(
              (r) => r.ok,
              () => false,
            ),
          20_000,
        );
      await eventually('both workers started', () => workers.every((w) => logLines(w).some((l) => l.msg === 'workers started')), 20_000);
      const web = (i: number) => `http://127.0.0.1:${webPorts[i % 2] as number}`;
      const org = await newOrg();
      const call = async (i: number, method: string, path: string, body?: unknown) => {
        const res = await fetch(`${web(i)}${path}`, {
          method,
          headers: { 'X-API-Key': org.key, 'Content-Type': 'application/json' },
          ...(body !== undefined && { body: JSON.stringify(body) }),
        });
        expect(res.status, `${method} ${path}`).to.equal(200);
        return res.json() as Promise<Record<string, unknown>>;
      };
      await call(0, 'POST', '/api/v1/webhooks', { endpoint: hooks.url });

      // The big upload first, so that it is the one scanning when a worker is killed.
      const uploads: Array<{ key: string; uuid: string }> = [];
      const contents = [Buffer.alloc(3 * 1024 * 1024, 'x'), ...Array.from({ length: 7 }, (_, i) => Buffer.from(`small document ${i}`))];
      for (const [i, content] of contents.entries()) {
        const up = (await call(i, 'POST', '/api/v2/presigned-url', { fileType: 'pdf' })) as {
          key: string;
          presignedUrl: string;
          fields: Record<string, string>;
        };
        expect((await uploadForm(up.presignedUrl, up.fields, content)).status).to.equal(204);
        uploads.push({ key: up.key, uuid: up.key.slice(0, up.key.indexOf('.')) });
      }
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await call(i, 'POST', '/api/v2/guarantees', { details: { policyNumber: `SCALE-${i}` } })).id as string);

      // Kill the worker scanning the big file, mid-scan.
      const { queues } = await harness();
      const big = uploads[0]?.uuid ?? '';
      const active = await eventually(
        "the big file's scan to be running",
        async () => (await queues.scans.getActive()).find((j) => j.data.uuid === big),
        30_000,
      );
      const victim = workers.find((w) => active.processedBy?.endsWith(`:${w.child.pid ?? 0}`));
      expect(victim, `processed by ${active.processedBy ?? '?'}`).to.not.equal(undefined);
      // The small files' verdicts logged before the kill: a worker's log lines are written after
      // its verdict, and SIGKILL loses the lines it has not written yet (once, on a loaded
      // machine, a small file the victim judged had no line: counted 0 where 1 was meant).
      const verdictLogged = (uuid: string) => workers.flatMap(logLines).some((l) => l.msg === 'file scanned' && l.file === uuid);
      await eventually('the small files judged and logged', () => uploads.slice(1).every((u) => verdictLogged(u.uuid)), 30_000);
      await new Promise((r) => setTimeout(r, 1000));
      expect(verdictLogged(big), 'the big file still scanning when its worker is killed').to.equal(false);
      const killedAt = Date.now();
      victim?.child.kill('SIGKILL');
      const survivor = workers.find((w) => w !== victim) as Proc;
      await eventually(
        'the survivor to take the scan over',
        async () => {
          const job = (await queues.scans.getActive()).find((j) => j.data.uuid === big);
          return job?.processedBy?.endsWith(`:${survivor.child.pid ?? 0}`);
        },
        60_000,
      );
      const takeoverMs = Date.now() - killedAt;
      process.stdout.write(`      takeover of the killed worker's scan: ${(takeoverMs / 1000).toFixed(1)} s\n`);
      expect(takeoverMs).to.be.below(27_000);

      for (const u of uploads) expect((await waitForStatus(u.uuid, ['Clean', 'Error', 'Infected'], 60_000)).status, u.key).to.equal('Clean');
      // Scanned once: one verdict logged per file, by whichever worker made it.
      const scanned = workers
        .flatMap(logLines)
        .filter((l) => l.msg === 'file scanned')
        .map((l) => l.file as string);
      for (const u of uploads)
        expect(
          scanned.filter((f) => f === u.uuid),
          u.uuid,
        ).to.have.length(1);

      // Every record notarized, once.
      await eventually(
        'every record notarized',
        async () => {
          const [row] = await select<{ n: number }>(
            db,
            "SELECT COUNT(*) AS n FROM guarantees WHERE id IN ($1) AND notarization_status = 'COMPLETE'",
            [ids],
            undefined,
            { prepared: false },
          );
          return Number(row?.n) === ids.length;
        },
        60_000,
      );
      const proofs = await select<{ guarantee_id: string; n: number }>(
        db,
        'SELECT guarantee_id, COUNT(*) AS n FROM notarization_proofs WHERE guarantee_id IN ($1) GROUP BY guarantee_id',
        [ids],
        undefined,
        { prepared: false },
      );
      expect(proofs.map((p) => Number(p.n))).to.deep.equal(ids.map(() => 1));

      // Every event of the organization delivered, at least once.
      const events = await select<{ id: string; type: string }>(db, 'SELECT id, type FROM webhook_events WHERE org_id = $1', [org.orgId]);
      expect(events.filter((e) => e.type === 'guarantee.notarized')).to.have.length(ids.length);
      await eventually(
        'every event delivered',
        () => events.every((e) => hooks.received.some((r) => r.headers['webhook-id'] === e.id)),
        60_000,
        () => `${new Set(hooks.received.map((r) => r.headers['webhook-id'])).size} of ${events.length}`,
      );
      const counts = new Map<string, number>();
      for (const r of hooks.received) counts.set(String(r.headers['webhook-id']), (counts.get(String(r.headers['webhook-id'])) ?? 0) + 1);
      const duplicates = [...counts.values()].filter((n) => n > 1).length;
      process.stdout.write(`      ${events.length} events, ${hooks.received.length} deliveries received, ${duplicates} delivered more than once\n`);
      expect(hooks.received.length).to.be.at.least(events.length);
      expect(survivor.child.exitCode).to.equal(null);
    } finally {
      await hooks.close();
      await slowClamd.stop();
    }
  });
});

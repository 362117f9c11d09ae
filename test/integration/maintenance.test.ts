import { expect } from 'chai';
import { harness, newOrg } from '../support/harness.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { createIdempotencyStore } from '../../src/shared/idempotency.js';
import { MaintenanceJob, maintenanceHandlers } from '../../src/shared/maintenance.jobs.js';
import { startWorkers } from '../../workers/index.js';

describe('maintenance worker', () => {
  it('purges expired Idempotency-Key records and keeps live ones', async () => {
    const { db } = await harness();
    const org = await newOrg();
    const now = Date.now();
    for (const [key, expires] of [
      ['old-1', now - 1000],
      ['old-2', now - 5000],
      ['live', now + 60_000],
    ] as const) {
      await execute(
        db,
        `INSERT INTO idempotency_keys (org_id, idem_key, request_hash, state, locked_until, created_at, expires_at)
        VALUES ($1, $2, $3, 'done', $4, $4, $5)`,
        [org.orgId, key, Buffer.alloc(32), new Date(now), new Date(expires)],
      );
    }
    const result = await maintenanceHandlers({
      idempotency: createIdempotencyStore(db),
      sweepUploads: () => Promise.resolve(0),
      reconcileDeliveries: () => Promise.resolve(0),
      checkLifecycle: () => Promise.resolve({}),
      lockDocuments: () => Promise.resolve({}),
      applyRetention: () => Promise.resolve({}),
    })[MaintenanceJob.purgeIdempotency]();
    expect((result as { purged: number }).purged).to.be.at.least(2);
    const left = await select<{ idem_key: string }>(db, 'SELECT idem_key FROM idempotency_keys WHERE org_id = $1', [org.orgId]);
    expect(left.map((r) => r.idem_key)).to.deep.equal(['live']);
  });

  it('starts with its schedule in Redis and closes cleanly', async () => {
    const { queues } = await harness();
    const running = await startWorkers(['maintenance']);
    try {
      const schedulers = await queues.maintenance.getJobSchedulers();
      expect(schedulers.map((s) => s.key)).to.include.members([
        MaintenanceJob.purgeIdempotency,
        MaintenanceJob.sweepUploads,
        MaintenanceJob.reconcileDeliveries,
        MaintenanceJob.checkLifecycle,
        MaintenanceJob.lockDocuments,
        MaintenanceJob.applyRetention,
      ]);
    } finally {
      await running.close();
    }
  });
});

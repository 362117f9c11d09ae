// Housekeeping jobs: purge expired Idempotency-Key records; make sure every upload In Progress
// has its job (the sweeper); queue again webhook deliveries whose job Redis lost (the
// reconciler); emit the guarantees' expiries and overdue claims (the lifecycle check); put
// attached documents under Object Lock (the document lock); delete what is kept no longer (the
// retention job: docs/operations.md "Records"). Fixed scheduler ids, so that several worker processes share one schedule; kept
// by keepSchedules, so that a Redis that forgot them gets them back.
import type { Queue } from 'bullmq';
import type { IdempotencyStore } from './idempotency.js';
import type { Schedule } from './schedules.js';

export const MAINTENANCE_QUEUE = 'maintenance';

export const MaintenanceJob = {
  purgeIdempotency: 'purge-idempotency-keys',
  sweepUploads: 'sweep-uploads',
  reconcileDeliveries: 'reconcile-deliveries',
  checkLifecycle: 'check-lifecycle',
  lockDocuments: 'lock-documents',
  applyRetention: 'apply-retention',
} as const;
export type MaintenanceJobName = (typeof MaintenanceJob)[keyof typeof MaintenanceJob];

/** Payload of every maintenance job: none, the job's name says it all. */
export type MaintenancePayload = Record<string, never>;

export interface MaintenanceEvery {
  purge: number;
  sweep: number;
  reconcile: number;
  /** LIFECYCLE_CHECK_EVERY_MS. */
  lifecycle: number;
  /** DOCUMENT_LOCK_EVERY_MS. */
  lock: number;
  /** RETENTION_EVERY_MS. */
  retention: number;
}
export const MAINTENANCE_EVERY: MaintenanceEvery = {
  purge: 15 * 60_000,
  sweep: 30_000,
  reconcile: 30_000,
  lifecycle: 86_400_000,
  lock: 60_000,
  retention: 3_600_000,
};

export function maintenanceSchedules(queue: Queue<MaintenancePayload>, everyMs: MaintenanceEvery = MAINTENANCE_EVERY): Schedule[] {
  const keep = { removeOnComplete: 100, removeOnFail: { age: 7 * 24 * 3600, count: 1000 } };
  return [
    { queue, id: MaintenanceJob.purgeIdempotency, everyMs: everyMs.purge, name: MaintenanceJob.purgeIdempotency, opts: keep },
    { queue, id: MaintenanceJob.sweepUploads, everyMs: everyMs.sweep, name: MaintenanceJob.sweepUploads, opts: keep },
    { queue, id: MaintenanceJob.reconcileDeliveries, everyMs: everyMs.reconcile, name: MaintenanceJob.reconcileDeliveries, opts: keep },
    { queue, id: MaintenanceJob.checkLifecycle, everyMs: everyMs.lifecycle, name: MaintenanceJob.checkLifecycle, opts: keep },
    { queue, id: MaintenanceJob.lockDocuments, everyMs: everyMs.lock, name: MaintenanceJob.lockDocuments, opts: keep },
    { queue, id: MaintenanceJob.applyRetention, everyMs: everyMs.retention, name: MaintenanceJob.applyRetention, opts: keep },
  ];
}

/** Handlers by job name: a missing handler is a compile error. */
export function maintenanceHandlers(deps: {
  idempotency: IdempotencyStore;
  sweepUploads: () => Promise<number>;
  reconcileDeliveries: () => Promise<number>;
  checkLifecycle: () => Promise<unknown>;
  lockDocuments: () => Promise<unknown>;
  applyRetention: () => Promise<unknown>;
}): Record<MaintenanceJobName, () => Promise<unknown>> {
  const { idempotency } = deps;
  return {
    [MaintenanceJob.sweepUploads]: async () => ({ ensured: await deps.sweepUploads() }),
    [MaintenanceJob.reconcileDeliveries]: async () => ({ requeued: await deps.reconcileDeliveries() }),
    [MaintenanceJob.checkLifecycle]: () => deps.checkLifecycle(),
    [MaintenanceJob.lockDocuments]: () => deps.lockDocuments(),
    [MaintenanceJob.applyRetention]: () => deps.applyRetention(),
    [MaintenanceJob.purgeIdempotency]: async () => {
      let total = 0;
      for (let n = -1; n !== 0;) {
        n = await idempotency.purgeExpired();
        total += n;
      }
      return { purged: total };
    },
  };
}

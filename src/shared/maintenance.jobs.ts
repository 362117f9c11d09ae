// Housekeeping jobs: purge expired Idempotency-Key records, and restart the watch of uploads
// that stopped moving. Scheduled once per worker start with fixed scheduler ids, so that
// several worker processes share one schedule.
import type { Queue } from 'bullmq';
import type { IdempotencyStore } from './idempotency.js';

export const MAINTENANCE_QUEUE = 'maintenance';

export const MaintenanceJob = { purgeIdempotency: 'purge-idempotency-keys', sweepUploads: 'sweep-uploads' } as const;
export type MaintenanceJobName = (typeof MaintenanceJob)[keyof typeof MaintenanceJob];

/** Payload of every maintenance job: none, the job's name says it all. */
export type MaintenancePayload = Record<string, never>;

export async function scheduleMaintenance(queue: Queue<MaintenancePayload>, everyMs = { purge: 15 * 60_000, sweep: 60_000 }): Promise<void> {
  await queue.upsertJobScheduler(MaintenanceJob.purgeIdempotency, { every: everyMs.purge }, { name: MaintenanceJob.purgeIdempotency, data: {} });
  await queue.upsertJobScheduler(MaintenanceJob.sweepUploads, { every: everyMs.sweep }, { name: MaintenanceJob.sweepUploads, data: {} });
}

/** Handlers by job name: a missing handler is a compile error. */
export function maintenanceHandlers(deps: { idempotency: IdempotencyStore; sweepUploads: () => Promise<number> }): Record<MaintenanceJobName, () => Promise<unknown>> {
  const { idempotency } = deps;
  return {
    [MaintenanceJob.sweepUploads]: async () => ({ restarted: await deps.sweepUploads() }),
    [MaintenanceJob.purgeIdempotency]: async () => {
      let total = 0;
      for (let n = -1; n !== 0;) { n = await idempotency.purgeExpired(); total += n; }
      return { purged: total };
    },
  };
}

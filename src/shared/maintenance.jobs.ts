// Housekeeping jobs: purge expired Idempotency-Key records. Scheduled once per worker start
// with a fixed scheduler id, so that several worker processes share one schedule.
import type { Queue } from 'bullmq';
import type { IdempotencyStore } from './idempotency.js';

export const MAINTENANCE_QUEUE = 'maintenance';

export const MaintenanceJob = { purgeIdempotency: 'purge-idempotency-keys' } as const;
export type MaintenanceJobName = (typeof MaintenanceJob)[keyof typeof MaintenanceJob];

/** Payload of every maintenance job: none, the job's name says it all. */
export type MaintenancePayload = Record<string, never>;

export async function scheduleMaintenance(queue: Queue<MaintenancePayload>, everyMs = 15 * 60_000): Promise<void> {
  await queue.upsertJobScheduler(MaintenanceJob.purgeIdempotency, { every: everyMs }, { name: MaintenanceJob.purgeIdempotency, data: {} });
}

/** Handlers by job name: a missing handler is a compile error. */
export function maintenanceHandlers(idempotency: IdempotencyStore): Record<MaintenanceJobName, () => Promise<unknown>> {
  return {
    [MaintenanceJob.purgeIdempotency]: async () => {
      let total = 0;
      for (let n = -1; n !== 0;) { n = await idempotency.purgeExpired(); total += n; }
      return { purged: total };
    },
  };
}

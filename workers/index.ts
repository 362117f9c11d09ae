// The worker process (Procfile `worker`): runs every worker, or those named on the command line
// (`node dist/workers/index.js maintenance`). Workers are thin adapters over domain services.
import { Queue, Worker } from 'bullmq';
import { getConfig } from '../config/index.js';
import { createSequelize } from '../src/shared/db/sequelize.js';
import { createIdempotencyStore } from '../src/shared/idempotency.js';
import { createLogger, type Logger } from '../src/shared/logger.js';
import { MAINTENANCE_QUEUE, maintenanceHandlers, scheduleMaintenance, type MaintenanceJobName, type MaintenancePayload } from '../src/shared/maintenance.jobs.js';
import { workerConnection } from '../src/shared/queues.js';

export const WORKER_NAMES = ['maintenance'] as const;
export type WorkerName = (typeof WORKER_NAMES)[number];

export interface RunningWorkers { close(): Promise<void> }

export async function startWorkers(names: readonly WorkerName[] = WORKER_NAMES, logger?: Logger): Promise<RunningWorkers> {
  const config = getConfig();
  const log = logger ?? createLogger(config.LOG_LEVEL);
  const db = createSequelize({ url: config.DATABASE_URL, poolMax: 5, statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS });
  const connection = workerConnection(config.REDIS_URL);
  connection.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
  const closers: Array<() => Promise<unknown>> = [];

  const starters: Record<WorkerName, () => Promise<void>> = {
    maintenance: async () => {
      const handlers = maintenanceHandlers(createIdempotencyStore(db));
      const queue = new Queue<MaintenancePayload>(MAINTENANCE_QUEUE, { connection });
      queue.on('error', (err) => log.warn({ err: err.message, queue: MAINTENANCE_QUEUE }, 'queue error'));
      await scheduleMaintenance(queue);
      const worker = new Worker<MaintenancePayload, unknown, MaintenanceJobName>(MAINTENANCE_QUEUE, (job) => handlers[job.name](), { connection, concurrency: 1 });
      worker.on('error', (err) => log.warn({ err: err.message, queue: MAINTENANCE_QUEUE }, 'worker error'));
      worker.on('failed', (job, err) => log.error({ job: job?.id, err: err.message }, 'maintenance job failed'));
      closers.push(() => worker.close(), () => queue.close());
    },
  };

  for (const name of names) await starters[name]();
  log.info({ workers: names }, 'workers started');
  return {
    async close() {
      for (const close of closers) await close();
      connection.disconnect();
      await db.close();
    },
  };
}

const isMain = import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/workers/index.js');
if (isMain) {
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => !(WORKER_NAMES as readonly string[]).includes(a));
  if (unknown.length) {
    process.stderr.write(`unknown worker(s): ${unknown.join(', ')}; known: ${WORKER_NAMES.join(', ')}\n`);
    process.exit(2);
  }
  try {
    const running = await startWorkers(args.length ? (args as WorkerName[]) : WORKER_NAMES);
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => { void running.close().then(() => process.exit(0), () => process.exit(1)); });
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}

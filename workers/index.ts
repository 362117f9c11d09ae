// The worker process (Procfile `worker`): runs every worker, or those named on the command line
// (`node dist/workers/index.js scan signature`). Workers are thin adapters over domain services.
//   maintenance  purges expired Idempotency-Key records; restarts the watch of stalled uploads
//   scan         watches for uploads (polling, hints) and scans them with clamd
//   signature    checks .p7m signatures of public v2 documents, on worker threads
//   webhooks     delivers webhook events (first attempts off a list, retries as jobs); relays outbox events nobody relayed
//   notarization batches the digests of records whose docs are settled and anchors their Merkle roots
import { hostname } from 'node:os';
import { Worker, type Job, type WorkerOptions } from 'bullmq';
import { getConfig, type Config } from '../config/index.js';
import { openCore, openEvents, transparencyLog, workerServices } from '../src/composition.js';
import { startLogTicks } from '../src/log/log.ticks.js';
import { FileJob, FileQueue, SWEEP_IDLE_MS, type CheckJobName, type CheckPayload, type ScanPayload, type SignaturePayload } from '../src/files/file.jobs.js';
import { NOT_VERSIONED } from '../src/files/scan.service.js';
import { NOTARIZATION_QUEUE, NotarizationJob, notarizationSchedule, type NotarizationPayload } from '../src/notarization/notarization.jobs.js';
import { openQueues } from '../src/queues.js';
import { createLogger, type Logger } from '../src/shared/logger.js';
import {
  MAINTENANCE_EVERY,
  MAINTENANCE_QUEUE,
  MaintenanceJob,
  maintenanceHandlers,
  maintenanceSchedules,
  type MaintenanceJobName,
  type MaintenancePayload,
} from '../src/shared/maintenance.jobs.js';
import { later, processorFor, stop, type Handler } from '../src/shared/job-handlers.js';
import { keepSchedules, type Schedule } from '../src/shared/schedules.js';
import { isLastAttempt, producerConnection, workerConnection } from '../src/shared/queues.js';
import { TimeLimitError, withTimeout } from '../src/shared/time-limit.js';
import { createStorage } from '../src/shared/storage.js';
import type { Resolver } from '../src/webhooks/ssrf.js';
import { startFirstAttempts } from '../src/webhooks/first-attempts.js';
import { BACKOFF_TYPE, createWebhookJobs, DELIVER, firstAttemptsTaker, retryDelay, WEBHOOK_QUEUE, type DeliveryPayload } from '../src/webhooks/webhook.jobs.js';

export const WORKER_NAMES = ['maintenance', 'scan', 'signature', 'webhooks', 'notarization'] as const;
export type WorkerName = (typeof WORKER_NAMES)[number];

export interface RunningWorkers {
  close(): Promise<void>;
}

/** The webhooks worker relays outbox events at least this old that no process relayed (every RELAY_EVERY_MS). */
const RELAY_MIN_AGE_MS = 2_000;
const RELAY_EVERY_MS = 1_000;

export interface WorkerOptionsForTests {
  logger?: Logger;
  config?: Config;
  resolver?: Resolver;
  /** How often the repeatable jobs are checked (KEEP_EVERY_MS). */
  keepSchedulesEveryMs?: number;
}

export async function startWorkers(names: readonly WorkerName[] = WORKER_NAMES, opts: WorkerOptionsForTests = {}): Promise<RunningWorkers> {
  const config = opts.config ?? getConfig();
  const log = opts.logger ?? createLogger(config.LOG_LEVEL);
  // The composition root builds the pools, secrets, repositories, events and services (src/composition.ts).
  const core = openCore(config, log);
  const connection = workerConnection(config.REDIS_URL, config.REDIS_CLUSTER);
  connection.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error'));
  // Enqueueing from inside a job uses a connection of its own that fails fast (the job retries).
  const producer = producerConnection(config.REDIS_URL, config.REDIS_CLUSTER);
  producer.on('error', (err: Error) => log.warn({ err: err.message }, 'redis producer connection error'));
  const queues = openQueues(producer, config.QUEUE_PREFIX, log);
  const storage = createStorage(config);
  // Events committed here (file.status.changed) are relayed by this process's relay, on a
  // connection of its own.
  const emitting = openEvents(core, queues);
  const { events } = emitting;
  const scans = workerServices.scans(core, emitting, { queues, storage });
  // Closed at once on SIGTERM, under one deadline: the BullMQ workers, and what takes work as they do.
  const workers: Array<Pick<Worker, 'close' | 'name'>> = [];
  // What the workers use, closed after them.
  const closers: Array<() => Promise<unknown>> = [];
  // The repeatable jobs of the workers started here: upserted at start, and again whenever Redis lost them.
  const schedules: Schedule[] = [];

  const base: WorkerOptions = {
    // Stored on every job it takes: Bull Board (and an operator) sees which process has it.
    name: `${hostname()}:${process.pid}`,
    connection,
    prefix: config.QUEUE_PREFIX,
    lockDuration: config.WORKER_LOCK_DURATION_MS,
    stalledInterval: config.WORKER_STALLED_INTERVAL_MS,
    maxStalledCount: 2,
  };
  /** A worker for `queue`, each job handled by the handler of its name (src/shared/job-handlers.ts). */
  function run<T, N extends string>(
    queue: string,
    names: readonly N[],
    handlers: Record<N, Handler<T>>,
    concurrency: number,
    extra: Partial<WorkerOptions> = {},
  ): void {
    const worker = new Worker<T, unknown, N>(queue, processorFor(queue, names, handlers), { ...base, ...extra, concurrency });
    worker.on('error', (err) => log.warn({ err: err.message, queue }, 'worker error'));
    worker.on('failed', (job, err) => log.warn({ queue, job: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job attempt failed'));
    workers.push(worker);
  }

  const starters: Record<WorkerName, () => Promise<void> | void> = {
    maintenance: () => {
      const lifecycle = workerServices.lifecycle(core, emitting);
      const documentLock = workerServices.documentLock(core, emitting, storage);
      const retention = workerServices.retention(core, storage);
      const handlers = maintenanceHandlers({
        idempotency: core.repos.idempotency,
        sweepUploads: () => scans.sweep(SWEEP_IDLE_MS),
        reconcileDeliveries: () => events.reconcile(),
        checkLifecycle: () => lifecycle.run(),
        lockDocuments: () => documentLock.run(),
        applyRetention: () => retention.run(),
      });
      schedules.push(
        ...maintenanceSchedules(queues.maintenance, {
          ...MAINTENANCE_EVERY,
          lifecycle: config.LIFECYCLE_CHECK_EVERY_MS,
          lock: config.DOCUMENT_LOCK_EVERY_MS,
          retention: config.RETENTION_EVERY_MS,
        }),
      );
      run<MaintenancePayload, MaintenanceJobName>(MAINTENANCE_QUEUE, Object.values(MaintenanceJob), handlers, 1);
    },
    scan: async () => {
      // Documents are object versions: on a bucket without versioning nothing could be pinned.
      // A store that does not answer now is no reason not to start (the jobs retry).
      const versioned = await storage.isVersioned().catch((err: unknown) => {
        log.warn({ err: (err as Error).message }, 'could not ask the store whether the bucket is versioned');
        return true;
      });
      if (!versioned) throw new Error(`bucket ${storage.bucket}: ${NOT_VERSIONED}`);
      const look = (how: 'watch' | 'hint') => async (job: Job<CheckPayload>) => {
        const outcome = await scans.advance(job.data.uuid, how);
        // Not there yet: the same job looks again later (no attempt spent).
        return outcome.state === 'waiting' && outcome.retryInMs !== undefined ? later(outcome.retryInMs) : outcome;
      };
      run<CheckPayload, CheckJobName>(FileQueue.checks, [FileJob.watch, FileJob.hint], { [FileJob.watch]: look('watch'), [FileJob.hint]: look('hint') }, 8);
      // Four jobs per clamd stream: the copy, the database and the store's latency of some files overlap the scans of others.
      run<ScanPayload, typeof FileJob.scan>(
        FileQueue.scans,
        [FileJob.scan],
        {
          [FileJob.scan]: async (job) => {
            const { uuid, versionId } = job.data;
            // A job queued before versions were pinned names an ETag: look at the file again instead.
            if (!versionId) return scans.advance(uuid, 'hint');
            return scans.scan(uuid, versionId, { last: isLastAttempt(job), restarted: job.attemptsStarted > 1 });
          },
        },
        4 * config.SCAN_CONCURRENCY,
      );
    },
    signature: () => {
      const signatures = workerServices.signatures(core, emitting, { storage });
      run<SignaturePayload, typeof FileJob.verify>(
        FileQueue.signatures,
        [FileJob.verify],
        {
          [FileJob.verify]: (job) => signatures.service.check(job.data.uuid, isLastAttempt(job)),
        },
        config.SIGNATURE_CONCURRENCY,
      );
      closers.push(signatures.close);
    },
    webhooks: () => {
      const deliveries = workerServices.deliveries(core, { ...(opts.resolver && { resolver: opts.resolver }) });
      const schedule = config.WEBHOOK_RETRY_SCHEDULE;
      // Attempts made before the job: its first, when it was made off the first attempts' list.
      const madeBefore = (job?: { data?: unknown }) => (job?.data as Partial<DeliveryPayload> | undefined)?.made ?? 0;
      run<DeliveryPayload, typeof DELIVER>(
        WEBHOOK_QUEUE,
        [DELIVER],
        {
          [DELIVER]: async (job) => {
            const made = madeBefore(job) + job.attemptsMade;
            const outcome = await deliveries.service.deliver(job.data.eventId, job.data.endpointId, { made, last: isLastAttempt(job) });
            // The endpoint has its share in flight: come back shortly, without spending an attempt.
            if (outcome === 'busy') return later(100 + Math.floor(Math.random() * 400));
            return typeof outcome === 'object' ? stop(outcome.giveUp) : outcome;
          },
        },
        config.WEBHOOK_CONCURRENCY,
        {
          settings: {
            backoffStrategy: (attemptsMade: number, type?: string, err?: Error, job?: { data?: unknown }) =>
              type === BACKOFF_TYPE ? retryDelay(schedule, madeBefore(job) + attemptsMade, err) : 1000,
          },
        },
      );
      // New deliveries: taken from the first attempts' list, on a blocking connection of its own.
      const blocking = workerConnection(config.REDIS_URL, config.REDIS_CLUSTER);
      blocking.on('error', (err: Error) => log.warn({ err: err.message }, 'redis connection error (first attempts)'));
      const firstAttempts = startFirstAttempts({
        // A lease lasts as a job's lock does, extended while its attempt is under way.
        taker: firstAttemptsTaker({ blocking, regular: producer }, config.QUEUE_PREFIX, config.WORKER_LOCK_DURATION_MS),
        deliver: (eventId, endpointId, attempt) => deliveries.service.deliver(eventId, endpointId, attempt),
        jobs: createWebhookJobs(queues.webhooks, schedule),
        settings: { concurrency: config.WEBHOOK_CONCURRENCY, retrySchedule: schedule },
        logger: log,
      });
      events.relay.start(RELAY_EVERY_MS, RELAY_MIN_AGE_MS);
      // Stops taking with the BullMQ workers; the attempts under way end first (each within its time limit).
      workers.push({ name: 'webhook first attempts', close: () => firstAttempts.close() });
      closers.push(deliveries.close);
    },
    notarization: () => {
      const notary = workerServices.notarizer(core, emitting);
      schedules.push(notarizationSchedule(queues.notarization, config.NOTARIZATION_INTERVAL_MS));
      run<NotarizationPayload, typeof NotarizationJob.notarize>(
        NOTARIZATION_QUEUE,
        [NotarizationJob.notarize],
        {
          [NotarizationJob.notarize]: async () => (await notary.service.cycle()) ?? { skipped: 'another process is notarizing' },
        },
        1,
      );
      // After the worker, which lets a cycle under way finish with its lock and anchor.
      closers.push(notary.close);
      // The transparency log's ticks: appends, checkpoints and witnesses, on a timer of their own.
      const ticks = startLogTicks(transparencyLog(core).service, config.LOG_CHECKPOINT_INTERVAL_MS, log);
      closers.unshift(() => ticks.stop());
    },
  };

  for (const name of names) await starters[name]();
  const keeper = await keepSchedules(schedules, log, opts.keepSchedulesEveryMs);
  log.info({ workers: names }, 'workers started');
  return {
    async close() {
      // Workers first (each finishes its active jobs), then what they used.
      keeper.stop();
      // All at once, under one deadline (a platform's SIGKILL comes some 30 s after SIGTERM).
      await Promise.all(workers.map((w) => closeWithin(w, config.WORKER_LOCK_DURATION_MS, log)));
      for (const close of closers) await close();
      await events.relay.stop();
      await queues.close();
      producer.disconnect();
      connection.disconnect();
      storage.client.destroy();
      await core.close();
    },
  };
}

/**
 * Closes a worker, letting its active jobs finish for at most `ms`; then it is left behind (its
 * connections are closed with the process's). A job whose completion could not be recorded
 * (Redis restarted empty under it: "Missing key for job") otherwise keeps BullMQ's close
 * waiting for ever, and SIGTERM with it (seen here; taskforcesh/bullmq#2430 is the same kind; a
 * forced close then returns the same pending promise). A job abandoned so is taken over by
 * another worker once its lock lapses; its handlers are idempotent.
 */
async function closeWithin(worker: Pick<Worker, 'close' | 'name'>, ms: number, log: Logger): Promise<void> {
  await withTimeout(worker.close(), ms, `closing the ${worker.name} worker`).catch((err: unknown) => {
    if (err instanceof TimeLimitError) log.warn({ queue: worker.name, waitedMs: ms }, 'worker did not close in time; left to close with the process');
  });
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
      process.once(signal, () => {
        void running.close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}

// Every queue of the service, opened on one connection: the web process enqueues through
// them and shows them in Bull Board; the worker process runs their workers.
import { Queue } from 'bullmq';
import { FileQueue, type FileQueues } from './files/file.jobs.js';
import { NOTARIZATION_QUEUE, type NotarizationQueue } from './notarization/notarization.jobs.js';
import type { Logger } from './shared/logger.js';
import type { RedisConnection } from './shared/queues.js';
import { MAINTENANCE_QUEUE, type MaintenancePayload } from './shared/maintenance.jobs.js';
import { firstAttemptsList, WEBHOOK_QUEUE, type FirstAttemptsList, type WebhookQueue } from './webhooks/webhook.jobs.js';

export interface Queues extends FileQueues {
  maintenance: Queue<MaintenancePayload>;
  webhooks: WebhookQueue;
  notarization: NotarizationQueue;
}

/** The queues, and the list new webhook deliveries wait on for their first attempt (not a queue: not in Bull Board). */
export type OpenQueues = Queues & { webhookFirstAttempts: FirstAttemptsList; all: Queue[]; close(): Promise<void> };

export function openQueues(connection: RedisConnection, prefix: string, logger: Logger): OpenQueues {
  const open = <T>(name: string) => {
    const queue = new Queue(name, { connection, prefix }) as T & Queue;
    queue.on('error', (err) => logger.warn({ err: err.message, queue: name }, 'queue error'));
    return queue;
  };
  const queues = {
    maintenance: open<Queues['maintenance']>(MAINTENANCE_QUEUE),
    checks: open<Queues['checks']>(FileQueue.checks),
    scans: open<Queues['scans']>(FileQueue.scans),
    signatures: open<Queues['signatures']>(FileQueue.signatures),
    webhooks: open<Queues['webhooks']>(WEBHOOK_QUEUE),
    notarization: open<Queues['notarization']>(NOTARIZATION_QUEUE),
  };
  const all: Queue[] = Object.values(queues);
  return {
    ...queues,
    webhookFirstAttempts: firstAttemptsList(connection, prefix),
    all,
    close: async () => {
      await Promise.all(all.map((q) => q.close()));
    },
  };
}

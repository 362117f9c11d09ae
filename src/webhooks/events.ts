// The event plumbing a process needs to emit events: the outbox (written inside the caller's
// transactions) and this process's relay, woken by the outbox after each commit. The relay
// may have a database pool of its own (`relayDb`): in a busy process its four statements a
// round would otherwise each queue behind the requests' transactions for a connection, which
// was most of the time from commit to delivery in a burst.
import type { Sequelize } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import { createOutbox, createRelay, type Outbox, type Relay } from './outbox.js';
import { createWebhookJobs, type WebhookQueue } from './webhook.jobs.js';
import { createWebhookRepository, type WebhookRepository } from './webhook.repository.js';

export interface Events { repo: WebhookRepository; outbox: Outbox; relay: Relay }

export function createEvents(db: Sequelize, queue: WebhookQueue, retrySchedule: readonly number[], logger: Logger, relayDb: Sequelize = db): Events {
  const repo = createWebhookRepository(db);
  const relayRepo = relayDb === db ? repo : createWebhookRepository(relayDb);
  const relay = createRelay({ repo: relayRepo, jobs: createWebhookJobs(queue, retrySchedule), logger });
  return { repo, relay, outbox: createOutbox(repo, relay.wake) };
}

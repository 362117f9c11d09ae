// The event plumbing a process needs to emit events: the outbox (written inside the caller's
// transactions) and this process's relay, woken by the outbox after each commit.
import type { Sequelize } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import { createOutbox, createRelay, type Outbox, type Relay } from './outbox.js';
import { createWebhookJobs, type WebhookQueue } from './webhook.jobs.js';
import { createWebhookRepository, type WebhookRepository } from './webhook.repository.js';

export interface Events { repo: WebhookRepository; outbox: Outbox; relay: Relay }

export function createEvents(db: Sequelize, queue: WebhookQueue, retrySchedule: readonly number[], logger: Logger): Events {
  const repo = createWebhookRepository(db);
  const relay = createRelay({ repo, jobs: createWebhookJobs(queue, retrySchedule), logger });
  return { repo, relay, outbox: createOutbox(repo, relay.wake) };
}

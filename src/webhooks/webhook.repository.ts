// Webhooks in MariaDB: endpoints (secrets sealed), the outbox of events, one delivery per
// event and endpoint (the authority on whether a delivery is still due), and every attempt.
// One repository per concern (endpoint, event and delivery .repository.ts); this one puts them
// together for the callers that use several.
import type { Sequelize, Transaction } from '../shared/db/sequelize.js';
import { createDeliveryRepository } from './delivery.repository.js';
import { createEndpointRepository } from './endpoint.repository.js';
import { createEventRepository } from './event.repository.js';

export {
  pendingDeliveries,
  type AttemptOutcome,
  type AttemptRecord,
  type DeliveryContext,
  type DeliveryKey,
  type DeliveryRef,
  type DeliveryStatus,
  type EndpointRecord,
  type EventRecord,
  type RecordedAttempt,
} from './webhook.records.js';
export { fanOutStatements, lateEventStatement } from './event.repository.js';

export function createWebhookRepository(db: Sequelize) {
  return {
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },
    ...createEndpointRepository(db),
    ...createEventRepository(db),
    ...createDeliveryRepository(db),
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;

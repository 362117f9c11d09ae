// What the webhook tables hold, as the service sees it: endpoints, events, deliveries and
// attempts, and the row mappers the repositories share.
import type { StoredEvent } from '../shared/events/outbox.js';

export interface EndpointRecord {
  id: string;
  orgId: string;
  url: string;
  secretEnc: Buffer;
  previousSecretEnc: Buffer | null;
  previousSecretUntil: Date | null;
  status: 'active' | 'disabled';
  disabledReason: string | null;
  failingSince: Date | null;
  createdAt: Date;
}

/** A webhook_endpoints row (for the repositories). */
export interface EndpointRow {
  id: string;
  org_id: string;
  url: string;
  secret_enc: Buffer;
  previous_secret_enc: Buffer | null;
  previous_secret_until: Date | null;
  status: 'active' | 'disabled';
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
}

export const ENDPOINT_COLUMNS = 'id, org_id, url, secret_enc, previous_secret_enc, previous_secret_until, status, disabled_reason, failing_since, created_at';

export const toEndpoint = (r: EndpointRow): EndpointRecord => ({
  id: r.id,
  orgId: r.org_id,
  url: r.url,
  secretEnc: r.secret_enc,
  previousSecretEnc: r.previous_secret_enc,
  previousSecretUntil: r.previous_secret_until,
  status: r.status,
  disabledReason: r.disabled_reason,
  failingSince: r.failing_since,
  createdAt: r.created_at,
});

/** An event as the outbox stores it in webhooks' table (src/shared/events). */
export type EventRecord = StoredEvent;

export interface DeliveryRef {
  eventId: string;
  endpointId: string;
  replays: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface DeliveryKey {
  eventId: string;
  endpointId: string;
}

export interface DeliveryContext {
  status: DeliveryStatus;
  /** When its next attempt is due (after a failed one, its retry's latest time). */
  dueAt: Date;
  /** How many times it was replayed: the attempt's generation (see RecordedAttempt.replays). */
  replays: number;
  body: string;
  endpoint: EndpointRecord;
}

/** An attempt to record; `wasFailing`: the endpoint had failing_since set when the attempt read it. */
export interface RecordedAttempt extends DeliveryKey {
  outcome: AttemptOutcome;
  wasFailing: boolean;
  /**
   * The delivery's replay count when the attempt read it. A replay asked for meanwhile (the
   * count moved on) keeps the delivery pending and due: the attempt is recorded, but its
   * outcome does not settle a delivery that someone asked to be sent again.
   */
  replays: number;
}

export interface AttemptRecord {
  id: number;
  eventId: string;
  eventType: string;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  succeeded: boolean;
}

export interface AttemptOutcome {
  at: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  succeeded: boolean;
  /** The delivery's state after this attempt: pending (to be retried), succeeded or failed. */
  deliveryStatus: DeliveryStatus;
  /** Disable the endpoint, with this reason (410 Gone, failing too long). */
  disable?: string;
  /** For a delivery left pending: by when its next attempt should have run (the reconciler's mark). */
  dueAt?: Date;
}

/**
 * Deliveries as `(event_id, endpoint_id)` pairs for an IN list of two or more (MariaDB 10.11
 * reads the whole index for a one-pair list: a lone delivery is asked for by equality).
 */
export const pairs = (keys: readonly DeliveryKey[]) => keys.map((k) => [k.eventId, k.endpointId]);

export interface PendingRow {
  event_id: string;
  endpoint_id: string;
  replays: number;
}

export const deliveryRefs = (rows: readonly PendingRow[]): DeliveryRef[] =>
  rows.map((r) => ({ eventId: r.event_id, endpointId: r.endpoint_id, replays: r.replays }));

/** Of the deliveries that fannedOutStatements() made (its last statement's rows), those to queue. */
export function pendingDeliveries(rows: ReadonlyArray<PendingRow & { status: DeliveryStatus }>): DeliveryRef[] {
  return deliveryRefs(rows.filter((r) => r.status === 'pending'));
}

// Webhooks in MariaDB: endpoints (secrets sealed), the outbox of events, one delivery per
// event and endpoint (the authority on whether a delivery is still due), and every attempt.
import { execute, select, truncate, type Sequelize, type Statement, type Transaction } from '../shared/db/sequelize.js';

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

interface EndpointRow {
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

const ENDPOINT_COLUMNS = 'id, org_id, url, secret_enc, previous_secret_enc, previous_secret_until, status, disabled_reason, failing_since, created_at';

const toEndpoint = (r: EndpointRow): EndpointRecord => ({
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

export interface EventRecord {
  id: string;
  orgId: string;
  type: string;
  body: string;
  createdAt: Date;
  /** Set when the writer fans the event out itself (the relay then never reads it). */
  dispatchedAt?: Date;
}

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
  body: string;
  endpoint: EndpointRecord;
}

/** An attempt to record; `wasFailing`: the endpoint had failing_since set when the attempt read it. */
export interface RecordedAttempt extends DeliveryKey {
  outcome: AttemptOutcome;
  wasFailing: boolean;
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
const pairs = (keys: readonly DeliveryKey[]) => keys.map((k) => [k.eventId, k.endpointId]);

/** The outbox write of every create (exported so that the API bench's raw baseline does the same durable work). */
export const INSERT_EVENT_SQL = 'INSERT INTO webhook_events (id, org_id, type, body, created_at) VALUES ($1, $2, $3, $4, $5)';

function insertEventsStatement(events: readonly EventRecord[]): Statement {
  const values = events.map((_, i) => `($${i * 6 + 1}, $${i * 6 + 2}, $${i * 6 + 3}, $${i * 6 + 4}, $${i * 6 + 5}, $${i * 6 + 6})`).join(', ');
  return {
    sql: `INSERT INTO webhook_events (id, org_id, type, body, created_at, dispatched_at) VALUES ${values}`,
    bind: events.flatMap((e) => [e.id, e.orgId, e.type, e.body, e.createdAt, e.dispatchedAt ?? null]),
  };
}

/** An event fanned out by its writer: all of one call share their type and time. */
export interface FannedOutEvent {
  id: string;
  orgId: string;
  body: string;
}

/** The rows of a JSON array of `[id, org_id, body?]` arrays, as a table (one literal per statement, not three per row). */
const EVENTS_TABLE = `JSON_TABLE($1, '$[*]' COLUMNS (id CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin PATH '$[0]',
  org_id CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin PATH '$[1]', body LONGTEXT CHARACTER SET utf8mb4 PATH '$[2]')) j`;

/**
 * Events fanned out by their writer (frequent ones, written by a group commit: public
 * verifications) and their deliveries, in two statements whose rows travel as one JSON
 * literal each: MariaDB spent a third of the group commit's time parsing the literals of
 * row-by-row VALUES lists.
 * - An event is written only if its organization has an endpoint registered by the events'
 *   time (active or disabled: a disabled one's delivery is kept for a replay). Without one, no
 *   delivery would ever be made and nothing but a delivery reads an event: it would be a row
 *   written for nothing, on every public verification. The test is a correlated subquery, an
 *   index seek per event: as an IN, MariaDB may read every organization's endpoints to
 *   materialize it. The endpoints it reads stay locked until the commit (INSERT ... SELECT
 *   under REPEATABLE READ), so a registration waits for it and the second statement sees them.
 * - The deliveries, one per such endpoint and event, returned as they are inserted (RETURNING):
 *   the pending ones are queued once committed (pendingDeliveries()). The events are new, so
 *   a delivery that exists already would be a bug, and an error says so.
 */
function fannedOutEventStatements(type: string, events: readonly FannedOutEvent[], at: Date): [Statement, Statement] {
  return [
    {
      sql: `INSERT INTO webhook_events (id, org_id, type, body, created_at, dispatched_at)
      SELECT j.id, j.org_id, $2, j.body, $3, $3 FROM ${EVENTS_TABLE}
      WHERE (SELECT 1 FROM webhook_endpoints ep WHERE ep.org_id = j.org_id AND ep.created_at <= $3 LIMIT 1) IS NOT NULL`,
      bind: [JSON.stringify(events.map((e) => [e.id, e.orgId, e.body])), type, at],
    },
    {
      // A disabled endpoint's delivery is failed at once, kept for a replay once it is enabled.
      sql: `INSERT INTO webhook_deliveries (event_id, endpoint_id, org_id, status, last_error, created_at, updated_at, due_at)
      SELECT ev.id, ep.id, ev.org_id, IF(ep.status = 'active', 'pending', 'failed'), IF(ep.status = 'active', NULL, 'endpoint disabled'), $2, $2, $2
      FROM ${EVENTS_TABLE} STRAIGHT_JOIN webhook_endpoints ep ON ep.org_id = j.org_id AND ep.created_at <= $2
      STRAIGHT_JOIN webhook_events ev FORCE INDEX (PRIMARY) ON ev.id = j.id
      RETURNING event_id, endpoint_id, replays, status`,
      bind: [JSON.stringify(events.map((e) => [e.id, e.orgId])), at],
    },
  ];
}

/**
 * The deliveries of events (one per endpoint of the event's organization registered by the
 * event's time; existing ones are kept), then those still pending, to be queued. Both start
 * from the organizations' endpoints (STRAIGHT_JOIN): an organization without any costs one
 * index probe instead of a read of every event and delivery key; the events and deliveries are
 * then read by primary key.
 */
export function fanOutStatements(events: ReadonlyArray<{ id: string; orgId: string }>, at: Date): [Statement, Statement] {
  const ids = events.map((e) => e.id);
  const orgs = [...new Set(events.map((e) => e.orgId))];
  return [
    {
      // A disabled endpoint's delivery is failed at once, kept for a replay once it is enabled.
      sql: `INSERT IGNORE INTO webhook_deliveries (event_id, endpoint_id, org_id, status, last_error, created_at, updated_at, due_at)
      SELECT ev.id, ep.id, ev.org_id, IF(ep.status = 'active', 'pending', 'failed'), IF(ep.status = 'active', NULL, 'endpoint disabled'), $1, $1, $1
      FROM webhook_endpoints ep STRAIGHT_JOIN webhook_events ev FORCE INDEX (PRIMARY) ON ev.org_id = ep.org_id AND ep.created_at <= ev.created_at
      WHERE ep.org_id IN ($3) AND ev.id IN ($2)`,
      bind: [at, ids, orgs],
    },
    {
      // By the deliveries' primary key (event_id, endpoint_id): never through an endpoint's
      // index, which would read all its pending deliveries, the most during its outage.
      sql: `SELECT d.event_id, d.endpoint_id, d.replays FROM webhook_endpoints ep STRAIGHT_JOIN webhook_deliveries d FORCE INDEX (PRIMARY) ON d.endpoint_id = ep.id
      WHERE ep.org_id IN ($2) AND d.event_id IN ($1) AND d.status = 'pending'`,
      bind: [ids, orgs],
    },
  ];
}

interface PendingRow {
  event_id: string;
  endpoint_id: string;
  replays: number;
}

const deliveryRefs = (rows: readonly PendingRow[]): DeliveryRef[] => rows.map((r) => ({ eventId: r.event_id, endpointId: r.endpoint_id, replays: r.replays }));

/** Of the deliveries that fannedOutStatements() made (its last statement's rows), those to queue. */
export function pendingDeliveries(rows: ReadonlyArray<PendingRow & { status: DeliveryStatus }>): DeliveryRef[] {
  return deliveryRefs(rows.filter((r) => r.status === 'pending'));
}

export function createWebhookRepository(db: Sequelize) {
  return {
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },

    /** Takes the organization's row lock until the transaction ends (registrations of one organization in turn). */
    async lockOrganization(orgId: string, t: Transaction): Promise<boolean> {
      return (await select(db, 'SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [orgId], t)).length === 1;
    },

    async countEndpoints(orgId: string, t?: Transaction): Promise<number> {
      const [row] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM webhook_endpoints WHERE org_id = $1', [orgId], t);
      return Number(row?.n ?? 0);
    },

    async endpointByUrl(orgId: string, urlHash: Buffer, t?: Transaction): Promise<EndpointRecord | undefined> {
      const [row] = await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND url_hash = $2`, [orgId, urlHash], t);
      return row && toEndpoint(row);
    },

    async endpoint(id: string, orgId?: string): Promise<EndpointRecord | undefined> {
      const [row] =
        orgId === undefined
          ? await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1`, [id])
          : await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND org_id = $2`, [id, orgId]);
      return row && toEndpoint(row);
    },

    async endpoints(orgId: string): Promise<EndpointRecord[]> {
      const rows = await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 ORDER BY created_at, id`, [orgId]);
      return rows.map(toEndpoint);
    },

    async insertEndpoint(e: { id: string; orgId: string; url: string; urlHash: Buffer; secretEnc: Buffer; at: Date }, t: Transaction): Promise<void> {
      await execute(
        db,
        `INSERT INTO webhook_endpoints (id, org_id, url, url_hash, secret_enc, status, created_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, 'active', $6, $6)`,
        [e.id, e.orgId, e.url, e.urlHash, e.secretEnc, e.at],
        t,
      );
    },

    /** Removes an endpoint with its deliveries and attempts; false when it is not this organization's. */
    async deleteEndpoint(orgId: string, id: string): Promise<boolean> {
      return db.transaction(async (t) => {
        const n = await execute(db, 'DELETE FROM webhook_endpoints WHERE id = $1 AND org_id = $2', [id, orgId], t);
        if (n === 0) return false;
        await execute(db, 'DELETE FROM webhook_deliveries WHERE endpoint_id = $1', [id], t);
        await execute(db, 'DELETE FROM webhook_attempts WHERE endpoint_id = $1', [id], t);
        return true;
      });
    },

    async rotateSecret(orgId: string, id: string, secretEnc: Buffer, previousUntil: Date, at: Date): Promise<boolean> {
      const n = await execute(
        db,
        `UPDATE webhook_endpoints SET previous_secret_enc = secret_enc, previous_secret_until = $3, secret_enc = $4, updated_at = $5
        WHERE id = $1 AND org_id = $2`,
        [id, orgId, previousUntil, secretEnc, at],
      );
      return n === 1;
    },

    async enable(orgId: string, id: string, at: Date): Promise<boolean> {
      const n = await execute(
        db,
        `UPDATE webhook_endpoints SET status = 'active', disabled_reason = NULL, failing_since = NULL, updated_at = $3
        WHERE id = $1 AND org_id = $2`,
        [id, orgId, at],
      );
      return n === 1;
    },

    /** Every sealed secret, for re-encryption under a new ENCRYPTION_KEY. */
    async sealedSecrets(): Promise<Array<{ id: string; secretEnc: Buffer; previousSecretEnc: Buffer | null }>> {
      const rows = await select<{ id: string; secret_enc: Buffer; previous_secret_enc: Buffer | null }>(
        db,
        'SELECT id, secret_enc, previous_secret_enc FROM webhook_endpoints',
        [],
      );
      return rows.map((r) => ({ id: r.id, secretEnc: r.secret_enc, previousSecretEnc: r.previous_secret_enc }));
    },

    /** Replaces an endpoint's sealed secrets, only if they are still `was` (false when a rotation changed them meanwhile). */
    async resealSecrets(
      id: string,
      was: { secretEnc: Buffer; previousSecretEnc: Buffer | null },
      next: { secretEnc: Buffer; previousSecretEnc: Buffer | null },
    ): Promise<boolean> {
      return (
        1 ===
        (await execute(
          db,
          `UPDATE webhook_endpoints SET secret_enc = $2, previous_secret_enc = $3
        WHERE id = $1 AND secret_enc = $4 AND previous_secret_enc <=> $5`,
          [id, next.secretEnc, next.previousSecretEnc, was.secretEnc, was.previousSecretEnc],
        ))
      );
    },

    // ---- The outbox ----

    async insertEvent(e: EventRecord, t: Transaction): Promise<void> {
      await execute(db, INSERT_EVENT_SQL, [e.id, e.orgId, e.type, e.body, e.createdAt], t);
    },

    /** Many events in one multi-row INSERT (a notarized batch writes one per record). */
    async insertEvents(events: readonly EventRecord[], t: Transaction): Promise<void> {
      if (!events.length) return;
      const { sql, bind } = insertEventsStatement(events);
      await execute(db, sql, bind, t, { prepared: false });
    },

    /** Events not yet handed to the delivery queue, oldest first, committed before `before`. */
    async undispatched(limit: number, before: Date): Promise<Array<{ id: string; orgId: string; createdAt: Date }>> {
      const rows = await select<{ id: string; org_id: string; created_at: Date }>(
        db,
        `SELECT id, org_id, created_at FROM webhook_events WHERE dispatched_at IS NULL AND created_at < $1 ORDER BY id LIMIT ${Math.trunc(limit)}`,
        [before],
      );
      return rows.map((r) => ({ id: r.id, orgId: r.org_id, createdAt: r.created_at }));
    },

    /**
     * Creates the deliveries of these events (one per endpoint of the event's organization
     * registered by the event's time; existing ones are kept) and returns those still
     * pending, to be queued.
     */
    async fanOut(events: ReadonlyArray<{ id: string; orgId: string }>, at: Date): Promise<DeliveryRef[]> {
      if (!events.length) return [];
      const [create, pending] = fanOutStatements(events, at);
      await execute(db, create.sql, create.bind, undefined, { prepared: false });
      return deliveryRefs(await select<PendingRow>(db, pending.sql, pending.bind, undefined, { prepared: false }));
    },

    /**
     * The statements that write events already fanned out with their deliveries, for a script
     * (src/shared/db/sequelize.ts); the last one's result is the deliveries made, of which
     * pendingDeliveries() gives those to queue once the script has committed.
     */
    fannedOutStatements(type: string, events: readonly FannedOutEvent[], at: Date): Statement[] {
      return fannedOutEventStatements(type, events, at);
    },

    async markDispatched(ids: string[], at: Date): Promise<void> {
      if (ids.length) await execute(db, 'UPDATE webhook_events SET dispatched_at = $1 WHERE id IN ($2)', [at, ids], undefined, { prepared: false });
    },

    // ---- Deliveries ----

    /**
     * What delivery attempts need, for many deliveries in one round trip: each delivery's
     * status, its event's body and its endpoint, in the order asked; undefined for a delivery
     * (or endpoint) that is gone.
     */
    async deliveryContexts(keys: readonly DeliveryKey[]): Promise<Array<DeliveryContext | undefined>> {
      if (!keys.length) return [];
      const [first] = keys;
      const sql = `SELECT d.event_id, d.status AS delivery_status, ev.body, ${ENDPOINT_COLUMNS.replace(/(\w+)/g, 'ep.$1')}
         FROM webhook_deliveries d FORCE INDEX (PRIMARY)
         JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
         JOIN webhook_events ev ON ev.id = d.event_id`;
      type Row = EndpointRow & { event_id: string; delivery_status: DeliveryStatus; body: string };
      const rows =
        keys.length === 1 && first
          ? await select<Row>(db, `${sql} WHERE d.event_id = $1 AND d.endpoint_id = $2`, [first.eventId, first.endpointId])
          : await select<Row>(db, `${sql} WHERE (d.event_id, d.endpoint_id) IN ($1)`, [pairs(keys)], undefined, { prepared: false });
      const found = new Map(rows.map((r) => [`${r.event_id} ${r.id}`, r]));
      return keys.map((k) => {
        const row = found.get(`${k.eventId} ${k.endpointId}`);
        return row && { status: row.delivery_status, body: row.body, endpoint: toEndpoint(row) };
      });
    },

    /**
     * Records attempts (many in one round trip), then their consequences on the deliveries,
     * in this order, so that a delivery is never marked done without its attempt on record (a
     * crash in between leaves it pending: it is sent again, and that attempt recorded too,
     * which is at-least-once as promised). Successes are marked in one statement; other
     * outcomes one by one (failures are the slow path), and never over a delivery that
     * succeeded meanwhile (a replay's job and an older one may overlap). An endpoint row is
     * written only when its state changes (`wasFailing` is what the attempt read), so that
     * concurrent deliveries to one endpoint do not queue on its row lock.
     *
     * Returns, per item, the error that kept it from being recorded, if any: a statement that
     * fails for one delivery (a lock wait, say) fails that delivery only.
     */
    async recordAttempts(items: readonly RecordedAttempt[]): Promise<Array<Error | undefined>> {
      if (!items.length) return [];
      const errorOf = (o: AttemptOutcome) => o.error && truncate(o.error, 500);
      // Shared statements: their failure is every item's.
      await execute(
        db,
        `INSERT INTO webhook_attempts (event_id, endpoint_id, attempted_at, duration_ms, status_code, error, succeeded) VALUES $1`,
        [items.map(({ eventId, endpointId, outcome: o }) => [eventId, endpointId, o.at, Math.round(o.durationMs), o.statusCode, errorOf(o), o.succeeded])],
        undefined,
        { prepared: false },
      );
      const succeeded = items.filter((i) => i.outcome.deliveryStatus === 'succeeded');
      if (succeeded.length) {
        const at = new Date(Math.max(...succeeded.map((i) => i.outcome.at.getTime())));
        const set = "UPDATE webhook_deliveries FORCE INDEX (PRIMARY) SET status = 'succeeded', attempts = attempts + 1, last_error = NULL, updated_at = $1";
        const [one] = succeeded;
        if (succeeded.length === 1 && one) await execute(db, `${set} WHERE event_id = $2 AND endpoint_id = $3`, [at, one.eventId, one.endpointId]);
        else await execute(db, `${set} WHERE (event_id, endpoint_id) IN ($2)`, [at, pairs(succeeded)], undefined, { prepared: false });
      }
      // One item's statements: their failure is that item's.
      const errors: Array<Error | undefined> = items.map(() => undefined);
      const own = async (i: number, work: () => Promise<unknown>) => {
        try {
          await work();
        } catch (err) {
          errors[i] ??= err as Error;
        }
      };
      for (const [i, { eventId, endpointId, outcome: o }] of items.entries()) {
        if (o.deliveryStatus === 'succeeded') continue;
        await own(i, () =>
          execute(
            db,
            `UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1, last_error = $4, updated_at = $5, due_at = $6
          WHERE event_id = $1 AND endpoint_id = $2 AND status = 'pending'`,
            [eventId, endpointId, o.deliveryStatus, errorOf(o), o.at, o.dueAt ?? o.at],
          ),
        );
      }
      // Per endpoint, each change once (a batch often holds many deliveries to one endpoint).
      const changed = new Set<string>();
      for (const [i, { endpointId, outcome: o, wasFailing }] of items.entries()) {
        if (o.disable) {
          await own(i, () =>
            execute(
              db,
              "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = $2, failing_since = COALESCE(failing_since, $3), updated_at = $3 WHERE id = $1",
              [endpointId, truncate(o.disable as string, 500), o.at],
            ),
          );
        } else if (o.succeeded && wasFailing && !changed.has(`${endpointId} ok`)) {
          changed.add(`${endpointId} ok`);
          await own(i, () => execute(db, 'UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL', [endpointId]));
        } else if (!o.succeeded && !wasFailing && !changed.has(`${endpointId} failing`)) {
          changed.add(`${endpointId} failing`);
          await own(i, () => execute(db, 'UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $2) WHERE id = $1', [endpointId, o.at]));
        }
      }
      return errors;
    },

    /**
     * Whether a delivery to the endpoint succeeded (finished) at or after `since`. Success
     * clears the endpoint's failing_since only when the attempt saw it set, so a success
     * racing a failure may leave it set: this is asked before disabling an endpoint for
     * failing too long. `longestAttemptMs` bounds how long before `since` such an attempt
     * may have started (the index on (endpoint_id, succeeded, attempted_at) keeps this a
     * short range, however long the endpoint's history).
     */
    async succeededSince(endpointId: string, since: Date, longestAttemptMs: number): Promise<boolean> {
      const rows = await select(
        db,
        `SELECT 1 FROM webhook_attempts
        WHERE endpoint_id = $1 AND succeeded = 1 AND attempted_at >= $2 AND attempted_at + INTERVAL duration_ms * 1000 MICROSECOND >= $3 LIMIT 1`,
        [endpointId, new Date(since.getTime() - longestAttemptMs), since],
      );
      return rows.length > 0;
    },

    /** The endpoint has failed since `at`, as far as it is known (a success seen by succeededSince). */
    async resetFailingSince(endpointId: string, at: Date): Promise<void> {
      await execute(db, 'UPDATE webhook_endpoints SET failing_since = $2 WHERE id = $1', [endpointId, at]);
    },

    /**
     * A failed delivery whose job runs again (retried from Bull Board): pending again, so that
     * the job attempts it. False when it was not failed (delivered meanwhile, or gone).
     */
    async reopen(eventId: string, endpointId: string, at: Date): Promise<boolean> {
      return (
        1 ===
        (await execute(
          db,
          `UPDATE webhook_deliveries SET status = 'pending', updated_at = $3, due_at = $3
        WHERE event_id = $1 AND endpoint_id = $2 AND status = 'failed'`,
          [eventId, endpointId, at],
        ))
      );
    },

    /**
     * The reconciler's share: up to `limit` deliveries still pending whose next attempt was due
     * by `dueBefore` (their job lost with Redis's data, or never queued), longest due first, each
     * due again at `next` in the same transaction, so that every one gets its turn and two
     * reconcilers never take the same one.
     */
    async takeOverdue(dueBefore: Date, next: Date, limit: number): Promise<DeliveryRef[]> {
      return db.transaction(async (t) => {
        const rows = await select<{ event_id: string; endpoint_id: string; replays: number }>(
          db,
          `SELECT event_id, endpoint_id, replays FROM webhook_deliveries WHERE status = 'pending' AND due_at <= $1
           ORDER BY due_at LIMIT ${Math.trunc(limit)} FOR UPDATE SKIP LOCKED`,
          [dueBefore],
          t,
        );
        const refs = rows.map((r) => ({ eventId: r.event_id, endpointId: r.endpoint_id, replays: r.replays }));
        const [one] = refs;
        // A one-pair IN list is asked by equality (MariaDB reads the whole index for it, here under locks).
        if (refs.length === 1 && one)
          await execute(db, 'UPDATE webhook_deliveries SET due_at = $1 WHERE event_id = $2 AND endpoint_id = $3', [next, one.eventId, one.endpointId], t);
        else if (refs.length)
          await execute(db, 'UPDATE webhook_deliveries SET due_at = $1 WHERE (event_id, endpoint_id) IN ($2)', [next, pairs(refs)], t, { prepared: false });
        return refs;
      });
    },

    /** A delivery that will not be attempted (its endpoint is disabled): failed, kept for replay. */
    async failWithoutAttempt(eventId: string, endpointId: string, reason: string, at: Date): Promise<void> {
      await execute(
        db,
        `UPDATE webhook_deliveries SET status = 'failed', last_error = $3, updated_at = $4
        WHERE event_id = $1 AND endpoint_id = $2 AND status = 'pending'`,
        [eventId, endpointId, truncate(reason, 500), at],
      );
    },

    /**
     * Makes deliveries to `endpointId` due again: of one event of the organization (created if
     * the endpoint had none for it), or every failed one since `failedSince`. Their events go
     * back into the outbox, so the relay queues them (a replay gets a new job id). Returns how many.
     */
    async replay(orgId: string, endpointId: string, which: { eventId: string } | { failedSince: Date }, at: Date): Promise<number> {
      return db.transaction(async (t) => {
        let eventIds: string[];
        if ('eventId' in which) {
          const found = await select<{ id: string }>(db, 'SELECT id FROM webhook_events WHERE id = $1 AND org_id = $2', [which.eventId, orgId], t);
          if (!found.length) return 0;
          await execute(
            db,
            `INSERT INTO webhook_deliveries (event_id, endpoint_id, org_id, status, created_at, updated_at, due_at) VALUES ($1, $2, $3, 'pending', $4, $4, $4)
            ON DUPLICATE KEY UPDATE status = 'pending', replays = replays + 1, updated_at = $4, due_at = $4`,
            [which.eventId, endpointId, orgId, at],
            t,
          );
          eventIds = [which.eventId];
        } else {
          const rows = await select<{ event_id: string }>(
            db,
            `SELECT event_id FROM webhook_deliveries
            WHERE endpoint_id = $1 AND status = 'failed' AND created_at >= $2 FOR UPDATE`,
            [endpointId, which.failedSince],
            t,
          );
          eventIds = rows.map((r) => r.event_id);
          if (!eventIds.length) return 0;
          await execute(
            db,
            `UPDATE webhook_deliveries SET status = 'pending', replays = replays + 1, updated_at = $1, due_at = $1
            WHERE endpoint_id = $2 AND event_id IN ($3)`,
            [at, endpointId, eventIds],
            t,
            { prepared: false },
          );
        }
        await execute(db, 'UPDATE webhook_events SET dispatched_at = NULL WHERE id IN ($1)', [eventIds], t, { prepared: false });
        return eventIds.length;
      });
    },

    async attempts(endpointId: string, page: number, limit: number): Promise<{ total: number; attempts: AttemptRecord[] }> {
      const [count] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM webhook_attempts WHERE endpoint_id = $1', [endpointId]);
      const rows = await select<{
        id: number;
        event_id: string;
        type: string | null;
        attempted_at: Date;
        duration_ms: number;
        status_code: number | null;
        error: string | null;
        succeeded: number;
      }>(
        db,
        `SELECT a.id, a.event_id, e.type, a.attempted_at, a.duration_ms, a.status_code, a.error, a.succeeded
         FROM webhook_attempts a LEFT JOIN webhook_events e ON e.id = a.event_id
         WHERE a.endpoint_id = $1 ORDER BY a.id DESC LIMIT ${Math.trunc(limit)} OFFSET ${Math.trunc((page - 1) * limit)}`,
        [endpointId],
      );
      return {
        total: Number(count?.n ?? 0),
        attempts: rows.map((r) => ({
          id: Number(r.id),
          eventId: r.event_id,
          eventType: r.type ?? '',
          attemptedAt: r.attempted_at,
          durationMs: r.duration_ms,
          statusCode: r.status_code,
          error: r.error,
          succeeded: r.succeeded === 1,
        })),
      };
    },
  };
}

export type WebhookRepository = ReturnType<typeof createWebhookRepository>;

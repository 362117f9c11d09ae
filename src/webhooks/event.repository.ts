// The outbox's tables (webhook_events, and the deliveries it fans events out to): events written
// in their cause's transaction, the relay's reads and marks, and the statements a group commit
// runs to write events already fanned out.
import { execute, script, select, type Sequelize, type Statement, type Transaction } from '../shared/db/sequelize.js';
import type { LateEvent } from '../shared/events/outbox.js';
import { deliveryRefs, type DeliveryRef, type EventRecord, type PendingRow } from './webhook.records.js';

/** An event written in its cause's transaction (a registration's own is lateEventStatement's). */
const INSERT_EVENT_SQL = 'INSERT INTO webhook_events (id, org_id, type, body, created_at) VALUES ($1, $2, $3, $4, $5)';

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

/**
 * The statement of an event completed in its writer's script: each late value's mark in the
 * body replaced by its SQL expression, written only when the writer's condition holds. An
 * event whose organization has no endpoint registered by its time is written dispatched: no
 * delivery could ever be made of it (the fan-out takes endpoints registered by the event's
 * time), so the relay never reads it (most organizations register none, and this is every
 * registration's event). The endpoints are read under REPEATABLE READ's locks of an INSERT ...
 * SELECT, and a registration of an endpoint takes its organization's lock, as the writer of a
 * guarantee.created event did before: the read sees every endpoint registered before it.
 * Exported for the API benchmark's raw baseline.
 */
export function lateEventStatement(e: LateEvent): Statement {
  let body = '$3';
  e.late.forEach((v, i) => {
    body = `REPLACE(${body}, $${i + 4}, ${v.sql})`;
  });
  const noEndpoint = `(SELECT 1 FROM webhook_endpoints ep WHERE ep.org_id = $1 AND ep.created_at <= ${e.createdAtSql} LIMIT 1) IS NULL`;
  return {
    sql: `INSERT INTO webhook_events (id, org_id, type, body, created_at, dispatched_at)
    SELECT ${e.idSql}, $1, $2, ${body}, ${e.createdAtSql}, IF(${noEndpoint}, ${e.createdAtSql}, NULL) FROM DUAL WHERE ${e.whenSql}
    RETURNING dispatched_at`,
    bind: [e.orgId, e.type, e.body, ...e.late.map((v) => v.mark)],
  };
}

/** Whether lateEventStatement's event waits for the relay: written, and not dispatched. */
export function lateEventPending(result: unknown): boolean {
  return Array.isArray(result) && result.some((row: { dispatched_at?: Date | null }) => row.dispatched_at === null);
}

export function createEventRepository(db: Sequelize) {
  return {
    async insertEvent(e: EventRecord, t: Transaction): Promise<void> {
      await execute(db, INSERT_EVENT_SQL, [e.id, e.orgId, e.type, e.body, e.createdAt], t);
    },

    /** Many events in one multi-row INSERT (a notarized batch writes one per record). */
    async insertEvents(events: readonly EventRecord[], t: Transaction): Promise<void> {
      if (!events.length) return;
      const { sql, bind } = insertEventsStatement(events);
      await execute(db, sql, bind, t, { prepared: false });
    },

    /** Events not yet handed to the delivery queue, oldest first; only those whose time is before `before` when given. */
    async undispatched(limit: number, before?: Date): Promise<Array<{ id: string; orgId: string; createdAt: Date }>> {
      const rows = await select<{ id: string; org_id: string; created_at: Date }>(
        db,
        `SELECT id, org_id, created_at FROM webhook_events WHERE dispatched_at IS NULL ${before ? 'AND created_at < $1' : ''} ORDER BY id LIMIT ${Math.trunc(limit)}`,
        before ? [before] : [],
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
      // One round trip (a script): under load each one waits for a turn of a busy event loop.
      const [, pending] = await script(db, fanOutStatements(events, at));
      return deliveryRefs(pending as PendingRow[]);
    },

    /**
     * The statements that write events already fanned out with their deliveries, for a script
     * (src/shared/db/sequelize.ts); the last one's result is the deliveries made, of which
     * pendingDeliveries() gives those to queue once the script has committed.
     */
    fannedOutStatements(type: string, events: readonly FannedOutEvent[], at: Date): Statement[] {
      return fannedOutEventStatements(type, events, at);
    },

    lateEventStatement,
    lateEventPending,

    async markDispatched(ids: string[], at: Date): Promise<void> {
      if (ids.length) await execute(db, 'UPDATE webhook_events SET dispatched_at = $1 WHERE id IN ($2)', [at, ids], undefined, { prepared: false });
    },
  };
}

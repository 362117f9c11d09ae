// Deliveries and their attempts (webhook_deliveries, webhook_attempts): what an attempt needs,
// recording attempts in batches, failing_since and disabling, replays, the reconciler's
// overdue deliveries, and the attempts log.
import { execute, retryDeadlock, select, truncate, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import {
  ENDPOINT_COLUMNS,
  pairs,
  toEndpoint,
  type AttemptOutcome,
  type AttemptRecord,
  type DeliveryContext,
  type DeliveryKey,
  type DeliveryRef,
  type DeliveryStatus,
  type EndpointRow,
  type RecordedAttempt,
} from './webhook.records.js';

export function createDeliveryRepository(db: Sequelize) {
  return {
    /**
     * What delivery attempts need, for many deliveries in one round trip: each delivery's
     * status, its event's body and its endpoint, in the order asked; undefined for a delivery
     * (or endpoint) that is gone.
     */
    async deliveryContexts(keys: readonly DeliveryKey[]): Promise<Array<DeliveryContext | undefined>> {
      if (!keys.length) return [];
      const [first] = keys;
      const sql = `SELECT d.event_id, d.status AS delivery_status, d.due_at AS delivery_due_at, d.replays, ev.body, ${ENDPOINT_COLUMNS.replace(/(\w+)/g, 'ep.$1')}
         FROM webhook_deliveries d FORCE INDEX (PRIMARY)
         JOIN webhook_endpoints ep ON ep.id = d.endpoint_id
         JOIN webhook_events ev ON ev.id = d.event_id`;
      type Row = EndpointRow & { event_id: string; delivery_status: DeliveryStatus; delivery_due_at: Date; replays: number; body: string };
      const rows =
        keys.length === 1 && first
          ? await select<Row>(db, `${sql} WHERE d.event_id = $1 AND d.endpoint_id = $2`, [first.eventId, first.endpointId])
          : await select<Row>(db, `${sql} WHERE (d.event_id, d.endpoint_id) IN ($1)`, [pairs(keys)], undefined, { prepared: false });
      const found = new Map(rows.map((r) => [`${r.event_id} ${r.id}`, r]));
      return keys.map((k) => {
        const row = found.get(`${k.eventId} ${k.endpointId}`);
        return row && { status: row.delivery_status, dueAt: row.delivery_due_at, replays: row.replays, body: row.body, endpoint: toEndpoint(row) };
      });
    },

    /**
     * Records attempts (many in one round trip), then their consequences on the deliveries,
     * in this order, so that a delivery is never marked done without its attempt on record (a
     * crash in between leaves it pending: it is sent again, and that attempt recorded too,
     * which is at-least-once as promised). Successes are marked in one statement; other
     * outcomes one by one (failures are the slow path), and never over a delivery that
     * succeeded meanwhile (a replay's job and an older one may overlap). An attempt whose
     * delivery was replayed after it read it (its `replays` moved on) is counted, but leaves the
     * delivery pending and due, for the replay's own attempt. An endpoint row is
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
        // Marked succeeded unless replayed since the attempt read it (then left pending and due,
        // for the replay's attempt): counted either way.
        const at = new Date(Math.max(...succeeded.map((i) => i.outcome.at.getTime())));
        const set = `UPDATE webhook_deliveries FORCE INDEX (PRIMARY) SET attempts = attempts + 1, last_error = NULL, updated_at = $1,
          status = IF((event_id, endpoint_id, replays) IN ($2), 'succeeded', status)`;
        const generations = succeeded.map((i) => [i.eventId, i.endpointId, i.replays]);
        const [one] = succeeded;
        if (succeeded.length === 1 && one)
          await execute(db, `${set} WHERE event_id = $3 AND endpoint_id = $4`, [at, generations, one.eventId, one.endpointId], undefined, { prepared: false });
        else await execute(db, `${set} WHERE (event_id, endpoint_id) IN ($3)`, [at, generations, pairs(succeeded)], undefined, { prepared: false });
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
      for (const [i, { eventId, endpointId, outcome: o, replays }] of items.entries()) {
        if (o.deliveryStatus === 'succeeded') continue;
        // Status and due time only if not replayed since (a replay's attempt is due now).
        await own(i, () =>
          execute(
            db,
            `UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = $4, updated_at = $5,
              status = IF(replays = $7, $3, status), due_at = IF(replays = $7, $6, due_at)
          WHERE event_id = $1 AND endpoint_id = $2 AND status = 'pending'`,
            [eventId, endpointId, o.deliveryStatus, errorOf(o), o.at, o.dueAt ?? o.at, replays],
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
    /** `also`: more of the same change, in its transaction (its audit row), when something was replayed. */
    async replay(
      orgId: string,
      endpointId: string,
      which: { eventId: string } | { failedSince: Date },
      at: Date,
      also?: (t: Transaction, replayed: number) => Promise<unknown>,
    ): Promise<number> {
      // Events first, then their deliveries, as the webhook log's purge and the relay take them:
      // each waits for the other rather than deadlocking (a deadlock with another writer retries).
      return retryDeadlock(() =>
        db.transaction(async (t) => {
          let eventIds: string[];
          if ('eventId' in which) {
            // Locked to the commit: the webhook log's purge cannot delete the event between this
            // read and its new delivery (it waits, then sees the delivery pending and keeps it);
            // exclusively, as the event is updated below (two replays of it take turns).
            const found = await select<{ id: string }>(db, 'SELECT id FROM webhook_events WHERE id = $1 AND org_id = $2 FOR UPDATE', [which.eventId, orgId], t);
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
            // The candidates, then their events locked, then the deliveries still failed read again under lock.
            const candidates = (
              await select<{ event_id: string }>(
                db,
                `SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'failed' AND created_at >= $2`,
                [endpointId, which.failedSince],
                t,
              )
            ).map((r) => r.event_id);
            if (!candidates.length) return 0;
            const events = (
              await select<{ id: string }>(db, 'SELECT id FROM webhook_events WHERE id IN ($1) ORDER BY id FOR UPDATE', [candidates], t, { prepared: false })
            ).map((r) => r.id);
            if (!events.length) return 0;
            eventIds = (
              await select<{ event_id: string }>(
                db,
                `SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id IN ($2) AND status = 'failed' FOR UPDATE`,
                [endpointId, events],
                t,
                { prepared: false },
              )
            ).map((r) => r.event_id);
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
          await also?.(t, eventIds.length);
          return eventIds.length;
        }),
      );
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

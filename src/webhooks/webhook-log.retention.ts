// The webhooks' log kept WEBHOOK_LOG_DAYS (docs/operations.md "Records", retention table): events whose
// deliveries are all over (succeeded or failed) and their deliveries, and attempts, once older
// than that, are deleted by the maintenance worker's retention job. An event still pending
// somewhere (a replay asked late) stays until it is over.
// In bounded batches (events by primary key: their ids are UUIDv7, in time order; attempts by
// their time's index), each batch a short statement of its own: never a long lock on tables the
// relay and the workers write all the time.
import { execute, retryDeadlock, select, type Sequelize } from '../shared/db/sequelize.js';

const TEXT = { prepared: false } as const;
/** Rows per batch. */
const BATCH = 500;

/** The smallest UUIDv7 of millisecond `ms`: every event id below it was made before `ms`. */
export function uuidv7Floor(ms: number): string {
  const hex = Math.max(0, Math.trunc(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

export interface WebhookLogPurge {
  events: number;
  deliveries: number;
  attempts: number;
}

export function createWebhookLogRetention(db: Sequelize) {
  /** Deletes attempts made before `cutoff`, oldest first, up to `max`; how many. */
  async function purgeAttempts(cutoff: Date, max: number): Promise<number> {
    let deleted = 0;
    while (deleted < max) {
      const n = await execute(db, `DELETE FROM webhook_attempts WHERE attempted_at < $1 ORDER BY attempted_at LIMIT ${BATCH}`, [cutoff]);
      deleted += n;
      if (n < BATCH) break;
    }
    return deleted;
  }

  /**
   * Deletes, in one short transaction, those of `ids` (events made before the cutoff, dispatched)
   * with no delivery pending, and their deliveries; how many events and deliveries. The events
   * are locked first, then their deliveries, as a replay takes them: a replay and the purge take
   * turns on an event, and the one that comes second sees what the first did (a delivery made
   * pending again, or the event gone).
   */
  async function purgeOver(ids: string[]): Promise<{ events: number; deliveries: number }> {
    return retryDeadlock(() =>
      db.transaction(async (t) => {
        // Still dispatched once locked (a replay may have made one due again meanwhile).
        const locked = (
          await select<{ id: string }>(
            db,
            'SELECT id FROM webhook_events WHERE id IN ($1) AND dispatched_at IS NOT NULL ORDER BY id FOR UPDATE',
            [ids],
            t,
            TEXT,
          )
        ).map((r) => r.id);
        if (!locked.length) return { events: 0, deliveries: 0 };
        const pending = new Set(
          (
            await select<{ event_id: string }>(
              db,
              "SELECT DISTINCT event_id FROM webhook_deliveries WHERE event_id IN ($1) AND status = 'pending' FOR UPDATE",
              [locked],
              t,
              TEXT,
            )
          ).map((r) => r.event_id),
        );
        const over = locked.filter((id) => !pending.has(id));
        if (!over.length) return { events: 0, deliveries: 0 };
        const deliveries = await execute(db, "DELETE FROM webhook_deliveries WHERE event_id IN ($1) AND status <> 'pending'", [over], t, TEXT);
        const events = await execute(db, 'DELETE FROM webhook_events WHERE id IN ($1)', [over], t, TEXT);
        return { events, deliveries };
      }),
    );
  }

  /** Where the last pass stopped when it reached its `max` (the next goes on from there); '' when it reached the end. */
  let resumeAfter = '';

  /** Deletes the events made before `cutoff` whose deliveries are over, with their deliveries, oldest first, up to `max` events. */
  async function purgeEvents(cutoff: Date, max: number, result: WebhookLogPurge): Promise<void> {
    const below = uuidv7Floor(cutoff.getTime());
    let after = resumeAfter;
    resumeAfter = '';
    while (result.events < max) {
      const events = await select<{ id: string; dispatched_at: Date | null }>(
        db,
        `SELECT id, dispatched_at FROM webhook_events WHERE id > $1 AND id < $2 ORDER BY id LIMIT ${BATCH}`,
        [after, below],
      );
      if (!events.length) return;
      after = events.at(-1)?.id ?? after;
      // An event not yet dispatched, or with a delivery pending (a replay asked late), stays.
      const ids = events.filter((e) => e.dispatched_at !== null).map((e) => e.id);
      if (ids.length) {
        const done = await purgeOver(ids);
        result.events += done.events;
        result.deliveries += done.deliveries;
      }
      if (events.length < BATCH) return;
    }
    // Stopped at `max`: the next pass starts here rather than reading again the events it keeps.
    resumeAfter = after;
  }

  return {
    /** One pass: attempts and over events older than `cutoff`, at most `max` of each. */
    async purge(cutoff: Date, max = 20_000): Promise<WebhookLogPurge> {
      const result: WebhookLogPurge = { events: 0, deliveries: 0, attempts: 0 };
      result.attempts = await purgeAttempts(cutoff, max);
      await purgeEvents(cutoff, max, result);
      return result;
    },
  };
}

export type WebhookLogRetention = ReturnType<typeof createWebhookLogRetention>;

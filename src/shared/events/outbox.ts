// Domain events, through a transactional outbox. An event is written in the same database
// transaction as the change that causes it, so it exists exactly when the change does, whether
// Redis is there or not. Guarantees, files, notarization and verification produce events here;
// consumers take them from the store: the relay (relay.ts) hands committed events to them, and
// a consumer may take frequent events at write time instead (fannedOut below). Webhooks is the
// consumer today: it keeps the events' table and turns each event into deliveries
// (src/webhooks/events.ts puts the two together).
import { v7 as uuidv7 } from 'uuid';
import type { Statement, Transaction } from '../db/sequelize.js';

export const EVENT_TYPES = [
  'guarantee.created',
  'file.status.changed',
  'guarantee.notarized',
  'guarantee.notarization_blocked',
  'guarantee.verified',
  'guarantee.amended',
  'guarantee.amendment_notarized',
  'guarantee.expired',
  'guarantee.claim_overdue',
  'guarantee.beneficiary_linked',
  'guarantee.demanded',
  'guarantee.amendment_pending',
  'guarantee.amendment_answered',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event as stored: its body is what consumers send, byte for byte. */
export interface StoredEvent {
  id: string;
  orgId: string;
  type: string;
  body: string;
  createdAt: Date;
  /** Set when a consumer took the event at write time (the relay then never reads it). */
  dispatchedAt?: Date;
}

/**
 * A value an event's writer learns only as its one-round-trip script runs (a guarantee's id and
 * createdAt, taken under its organization's lock): the writer puts `mark` in the event's data,
 * and the script replaces it with the SQL expression `sql` (a session variable the script set
 * before). Marks are random per process, so no request can carry one.
 */
export interface LateValue {
  mark: string;
  sql: string;
}

/** An event whose body and time are completed by its writer's script (see Outbox.inScript). */
export interface LateEvent {
  /** SQL: the event's id. */
  idSql: string;
  orgId: string;
  type: string;
  /** The body with marks. */
  body: string;
  late: readonly LateValue[];
  /** SQL: the event's time (DATETIME(3)). */
  createdAtSql: string;
  /** SQL: the condition under which the script writes the event (its change happened). */
  whenSql: string;
}

/** Where events are kept: written in the producer's transaction. */
export interface EventStore {
  insertEvent(e: StoredEvent, t: Transaction): Promise<void>;
  /** Many events in one statement. */
  insertEvents(events: readonly StoredEvent[], t: Transaction): Promise<void>;
  /** The statement that writes a late event, for its writer's script. */
  lateEventStatement(e: LateEvent): Statement;
  /** From that statement's result: whether the event waits for the relay (it may have been written dispatched, or not at all). */
  lateEventPending(result: unknown): boolean;
}

/** A consumer that takes events at write time, in the writer's one-round-trip script (src/shared/db/sequelize.ts). */
export interface WriteTimeConsumer {
  /** The statements that write `events` (already dispatched) and what the consumer makes of them; the last statement's result goes to `taken`. */
  statements(type: EventType, events: readonly StoredEvent[], at: Date): Statement[];
  /** Once the script has committed: the last statement's result of each chunk. Never throws (a failure is the consumer's to recover). */
  taken(results: readonly unknown[]): void;
}

export interface Outbox {
  /** Writes an event in transaction `t`; the relay is woken once `t` commits. Returns its id. */
  add(t: Transaction, orgId: string, type: EventType, data: unknown, at?: Date): Promise<string>;
  /**
   * An event written by its producer's one-round-trip script (src/shared/db/sequelize.ts), for a
   * change whose values are known only as the script runs: `data` carries the marks of `late`
   * values, `idSql` gives its id and `at` its time (its SQL expression and the mark of its ISO
   * string in the body), and the event is written only when `whenSql` holds. Once the script
   * has committed, `committed` with the statement's result wakes the relay if the event waits
   * for it. The script must hold the organization's row lock, as a registration's does: the
   * store may write the event dispatched when no consumer could want it (webhooks: no endpoint
   * registered by then), and only that lock, which a registration of an endpoint takes too,
   * makes the answer final.
   */
  inScript(e: {
    orgId: string;
    type: EventType;
    data: unknown;
    idSql: string;
    at: { sql: string; iso: LateValue };
    late: readonly LateValue[];
    whenSql: string;
  }): { statement: Statement; committed: (result: unknown) => void };
  /** Writes many events of one type in transaction `t` (one statement per 500); returns their ids. */
  addMany(t: Transaction, type: EventType, events: ReadonlyArray<{ orgId: string; data: unknown }>, at?: Date): Promise<string[]>;
  /**
   * Events of one type taken by the consumer as they are written, for frequent events written
   * by batches that many requests wait for (public verifications): the statements that write
   * them already dispatched, with what the consumer makes of them, to run in the writer's
   * one-round-trip script, so that the relay never reads or marks them (its rounds touched
   * each event twice more); then, once the script has committed, `dispatched` with the
   * script's results hands the consumer what it made.
   */
  fannedOut(
    type: EventType,
    events: ReadonlyArray<{ orgId: string; data: unknown }>,
    at: Date,
  ): {
    statements: Statement[];
    dispatched(results: readonly unknown[]): void;
  };
}

/** The body of an event as it is signed and sent, byte for byte: `{type, timestamp, data}`. */
export function eventBody(type: EventType, at: Date, data: unknown): string {
  return JSON.stringify({ type, timestamp: at.toISOString(), data });
}

/** Bounded statements: a MariaDB packet holds a few thousand v2 records comfortably. */
const CHUNK = 500;

/** `onCommit` wakes the relay after a transaction that wrote events commits. */
export function createOutbox(deps: { store: EventStore; onCommit?: () => void; atWrite: WriteTimeConsumer }): Outbox {
  const { store, atWrite } = deps;
  const onCommit = deps.onCommit ?? (() => undefined);
  const rowsOf = (type: EventType, events: ReadonlyArray<{ orgId: string; data: unknown }>, at: Date, dispatchedAt?: Date): StoredEvent[] =>
    events.map((e) => ({
      id: uuidv7({ msecs: at.getTime() }),
      orgId: e.orgId,
      type,
      body: eventBody(type, at, e.data),
      createdAt: at,
      ...(dispatchedAt && { dispatchedAt }),
    }));
  const chunksOf = (rows: StoredEvent[]): StoredEvent[][] => {
    const chunks: StoredEvent[][] = [];
    for (let i = 0; i < rows.length; i += CHUNK) chunks.push(rows.slice(i, i + CHUNK));
    return chunks;
  };
  return {
    async add(t, orgId, type, data, at = new Date()) {
      const id = uuidv7({ msecs: at.getTime() });
      await store.insertEvent({ id, orgId, type, body: eventBody(type, at, data), createdAt: at }, t);
      t.afterCommit(onCommit);
      return id;
    },
    inScript({ orgId, type, data, idSql, at, late, whenSql }) {
      const body = JSON.stringify({ type, timestamp: at.iso.mark, data });
      const statement = store.lateEventStatement({ idSql, orgId, type, body, late: [at.iso, ...late], createdAtSql: at.sql, whenSql });
      return {
        statement,
        committed: (result) => {
          if (store.lateEventPending(result)) onCommit();
        },
      };
    },
    async addMany(t, type, events, at = new Date()) {
      const rows = rowsOf(type, events, at);
      for (const chunk of chunksOf(rows)) await store.insertEvents(chunk, t);
      if (rows.length) t.afterCommit(onCommit);
      return rows.map((r) => r.id);
    },
    fannedOut(type, events, at) {
      const statements: Statement[] = [];
      const lasts: number[] = [];
      for (const chunk of chunksOf(rowsOf(type, events, at, at))) {
        statements.push(...atWrite.statements(type, chunk, at));
        lasts.push(statements.length - 1); // each chunk's statements end with what the consumer made of them
      }
      return {
        statements,
        dispatched: (results) => atWrite.taken(lasts.map((i) => results[i])),
      };
    },
  };
}

// The transactional outbox. An event is written in the same database transaction as the change
// that causes it, so it exists exactly when the change does, whether Redis is there or not.
// The relay moves committed events into the delivery queue: woken at once after each commit
// in this process (an afterCommit hook; the request never waits for it, and creation never
// touches Redis), retried with backoff while Redis is away, and run on an interval by the
// webhooks worker for events whose process died before relaying them. Every step is
// idempotent (deliveries are keyed by event × endpoint, jobs by delivery), so two relays
// working on the same events do no harm. Frequent events written by a group commit
// (guarantee.verified) are fanned out by their writer instead (fannedOut below): written
// dispatched with their deliveries, queued after the commit, left to the reconciler on failure.
import { v7 as uuidv7 } from 'uuid';
import type { Statement, Transaction } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import type { WebhookJobs } from './webhook.jobs.js';
import { pendingDeliveries, type DeliveryRef, type EventRecord, type WebhookRepository } from './webhook.repository.js';

export const EVENT_TYPES = ['guarantee.created', 'file.status.changed', 'guarantee.notarized', 'guarantee.notarization_blocked', 'guarantee.verified'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface Outbox {
  /** Writes an event in transaction `t`; the relay is woken once `t` commits. Returns its id. */
  add(t: Transaction, orgId: string, type: EventType, data: unknown, at?: Date): Promise<string>;
  /** Writes many events of one type in transaction `t` (one statement); returns their ids. */
  addMany(t: Transaction, type: EventType, events: ReadonlyArray<{ orgId: string; data: unknown }>, at?: Date): Promise<string[]>;
  /**
   * Events of one type fanned out by their writer, for frequent events written by batches
   * that many requests wait for (public verifications): the statements that write them
   * already dispatched with their deliveries, to run in the writer's one-round-trip script
   * (src/shared/db/sequelize.ts), so that the relay never reads, fans out or marks them (its
   * rounds touched each event twice more); then, once the script has committed, `dispatched`
   * with these statements' results queues the pending deliveries. A delivery whose queueing
   * fails (Redis away, the process gone) is pending in the database, and the reconciler
   * queues it again. An event whose organization has no endpoint registered by `at` is not
   * written at all: no delivery could ever be made of it.
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

/**
 * `onCommit` wakes the relay; `dispatch` queues deliveries its writer made, once they are
 * committed (it never throws: a failure leaves them to the reconciler).
 */
export function createOutbox(
  repo: Pick<WebhookRepository, 'insertEvent' | 'insertEvents' | 'fannedOutStatements'>,
  onCommit: () => void = () => undefined,
  dispatch: (deliveries: DeliveryRef[]) => void = () => undefined,
): Outbox {
  const rowsOf = (type: EventType, events: ReadonlyArray<{ orgId: string; data: unknown }>, at: Date, dispatchedAt?: Date): EventRecord[] =>
    events.map((e) => ({
      id: uuidv7({ msecs: at.getTime() }),
      orgId: e.orgId,
      type,
      body: eventBody(type, at, e.data),
      createdAt: at,
      ...(dispatchedAt && { dispatchedAt }),
    }));
  // Bounded statements: a MariaDB packet holds a few thousand v2 records comfortably.
  const chunksOf = (rows: EventRecord[]): EventRecord[][] => {
    const chunks: EventRecord[][] = [];
    for (let i = 0; i < rows.length; i += 500) chunks.push(rows.slice(i, i + 500));
    return chunks;
  };
  return {
    async add(t, orgId, type, data, at = new Date()) {
      const id = uuidv7({ msecs: at.getTime() });
      await repo.insertEvent({ id, orgId, type, body: eventBody(type, at, data), createdAt: at }, t);
      t.afterCommit(onCommit);
      return id;
    },
    async addMany(t, type, events, at = new Date()) {
      const rows = rowsOf(type, events, at);
      for (const chunk of chunksOf(rows)) await repo.insertEvents(chunk, t);
      if (rows.length) t.afterCommit(onCommit);
      return rows.map((r) => r.id);
    },
    fannedOut(type, events, at) {
      const statements: Statement[] = [];
      const madeAt: number[] = [];
      for (const chunk of chunksOf(rowsOf(type, events, at, at))) {
        statements.push(...repo.fannedOutStatements(type, chunk, at));
        madeAt.push(statements.length - 1); // each chunk's statements end with the deliveries they made
      }
      return {
        statements,
        dispatched: (results) => {
          const deliveries = madeAt.flatMap((index) => pendingDeliveries(results[index] as Parameters<typeof pendingDeliveries>[0]));
          if (deliveries.length) dispatch(deliveries);
        },
      };
    },
  };
}

export interface RelaySettings {
  /** Events moved per round. */
  batch?: number;
  /** First retry after a failed round (Redis away); doubles up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
}

/** How long after a commit the relay runs: the commits of that moment share one round. */
export const WAKE_DELAY_MS = 10;

export function createRelay(deps: { repo: WebhookRepository; jobs: WebhookJobs; logger: Logger; settings?: RelaySettings; now?: () => Date }) {
  const { repo, jobs, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const batch = deps.settings?.batch ?? 500;
  const retryMs = deps.settings?.retryMs ?? 500;
  const maxRetryMs = deps.settings?.maxRetryMs ?? 30_000;
  let running: Promise<void> | undefined;
  let again = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  let interval: NodeJS.Timeout | undefined;
  let stopped = false;
  let soon: NodeJS.Timeout | undefined;

  /** Moves one batch of events committed before `before`; returns how many. */
  async function relayOnce(before: Date): Promise<number> {
    const events = await repo.undispatched(batch, before);
    if (!events.length) return 0;
    const deliveries = await repo.fanOut(events, now());
    await jobs.queue(deliveries);
    await repo.markDispatched(
      events.map((e) => e.id),
      now(),
    );
    return events.length;
  }

  async function drain(minAgeMs: number): Promise<void> {
    do {
      again = false;
      // A wake-up relays everything committed so far; the interval only what is minAgeMs old.
      while ((await relayOnce(new Date(now().getTime() - minAgeMs + 1))) === batch) {
        /* next batch */
      }
    } while (again);
  }

  function run(minAgeMs: number): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = drain(minAgeMs)
      .then(
        () => {
          failures = 0;
        },
        (err: unknown) => {
          failures++;
          const delay = Math.min(maxRetryMs, retryMs * 2 ** (failures - 1));
          logger.warn({ err: (err as Error).message, retryInMs: delay }, 'webhook relay failed; events stay in the outbox');
          if (!stopped) {
            clearTimeout(retryTimer);
            retryTimer = setTimeout(() => {
              retryTimer = undefined;
              void run(0);
            }, delay);
            retryTimer.unref();
          }
        },
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    /**
     * After a commit: relay within WAKE_DELAY_MS, coalesced with the other commits of that
     * moment and with a run in progress. (Relaying at once after every commit made four
     * statements per event under load, competing with the registrations themselves: a third
     * of their throughput in one organization, measured.) While a failed round waits for its
     * retry (Redis away), commits do not start rounds of their own: each would read the whole
     * backlog again only to fail, on every request, just when the service is degraded.
     */
    wake: (): void => {
      if (stopped || retryTimer || soon) return;
      soon = setTimeout(() => {
        soon = undefined;
        void run(0);
      }, WAKE_DELAY_MS);
      soon.unref();
    },
    /** The fallback: every `everyMs`, relay events older than `minAgeMs` that nobody relayed (not while a retry waits). */
    start(everyMs: number, minAgeMs: number): void {
      interval = setInterval(() => {
        if (!retryTimer) void run(minAgeMs);
      }, everyMs);
      interval.unref();
    },
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(interval);
      clearTimeout(retryTimer);
      clearTimeout(soon);
      await running;
    },
  };
}

export type Relay = ReturnType<typeof createRelay>;

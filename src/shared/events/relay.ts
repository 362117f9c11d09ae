// The outbox's relay: moves committed events to their consumer. Woken after each commit in
// this process (an afterCommit hook; the request never waits for it, and a producer never
// touches Redis), retried with backoff while the consumer fails (Redis away), and run on an
// interval (by the webhooks worker) for events whose process died before relaying them. Every
// step must be idempotent on the consumer's side (webhooks: deliveries are keyed by event ×
// endpoint, jobs by delivery), so two relays working on the same events do no harm.
import type { Logger } from '../logger.js';

export interface RelaySettings {
  /** Events moved per round. */
  batch?: number;
  /** First retry after a failed round (Redis away); doubles up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
}

/** How long after a commit the relay runs: the commits of that moment share one round. */
export const WAKE_DELAY_MS = 10;

/** The events the relay moves: those not yet handed to the consumer. */
export interface RelaySource {
  /** Events not yet dispatched, oldest first; only those whose time is before `before` when given. */
  undispatched(limit: number, before?: Date): Promise<Array<{ id: string; orgId: string; createdAt: Date }>>;
  markDispatched(ids: string[], at: Date): Promise<void>;
}

/** Takes committed events (webhooks: their deliveries made and queued); throws when it could not (the events stay, and are retried). */
export type EventConsumer = (events: ReadonlyArray<{ id: string; orgId: string; createdAt: Date }>) => Promise<void>;

export function createRelay(deps: { source: RelaySource; consume: EventConsumer; logger: Logger; settings?: RelaySettings; now?: () => Date }) {
  const { source, consume, logger } = deps;
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

  /** Moves one batch of events (those whose time is before `before`, when given); returns how many. */
  async function relayOnce(before: Date | undefined): Promise<number> {
    const events = await source.undispatched(batch, before);
    if (!events.length) return 0;
    await consume(events);
    await source.markDispatched(
      events.map((e) => e.id),
      now(),
    );
    return events.length;
  }

  async function drain(minAgeMs: number): Promise<void> {
    do {
      again = false;
      // A wake-up relays everything committed so far, whatever its time (a registration's
      // createdAt runs ahead of the clock when one organization registers more than one a
      // millisecond); the interval only what is minAgeMs old.
      while ((await relayOnce(minAgeMs > 0 ? new Date(now().getTime() - minAgeMs + 1) : undefined)) === batch) {
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
          logger.warn({ err: (err as Error).message, retryInMs: delay }, 'event relay failed; events stay in the outbox');
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

// The per-endpoint bound on requests in flight in one process, so that a slow receiver does
// not take every worker slot. A delivery for an endpoint at its bound waits here, in order,
// for a slot of that endpoint, but only briefly: after `waitMs` it gives up ('busy'), and its
// job goes back to the queue for a while, freeing the worker slot for other endpoints' jobs.
// Waiting first matters when the queue is mostly one endpoint's (a burst): giving up at once
// would send job after job round the queue for nothing, which cost half the throughput.
//
// The bound follows the endpoint's speed. An endpoint whose requests have answered within
// `fastMs` on average (a moving average of the last few), the last of them less than a second
// ago, may have `fastBound` in flight: a slot it holds is soon free again, and with 10 a burst
// to one receiver 20-40 ms away under load was held to a few hundred deliveries a second
// (measured). Any other endpoint (slow, silent for a second, or not heard from yet) has
// `bound`: a receiver that hangs gets no more than that once a second has passed without an
// answer (the requests it holds already end with their time limit), and one that turns slow
// falls back to it as its answers come in (a timeout counts as slow).

export interface EndpointSlots {
  /** Resolves true with a slot of the endpoint taken (release it), or false after waitMs without one. */
  acquire(endpointId: string): Promise<boolean>;
  /** Gives the slot back; `durationMs`: how long its request took, when one was made. */
  release(endpointId: string, durationMs?: number): void;
  /** Slots taken and deliveries waiting, per endpoint, and its bound now (for tests and metrics). */
  usage(endpointId: string): { inFlight: number; waiting: number; bound: number };
}

export interface SpeedBound {
  /** The bound of an endpoint known to be fast. */
  fastBound: number;
  /** Fast: its requests' moving average at most this long. */
  fastMs: number;
}

/** Weight of the newest request in an endpoint's moving average of durations. */
const ALPHA = 0.2;
/** Endpoints whose speed is remembered (a process delivers to far fewer at a time). */
const REMEMBERED = 10_000;
/** An endpoint silent for longer is not known to be fast any more (it may hang). */
const HEARD_WITHIN_MS = 1_000;

export function createEndpointSlots(bound: number, waitMs: number, speed?: SpeedBound, clock: () => number = () => performance.now()): EndpointSlots {
  const inFlight = new Map<string, number>();
  const waiting = new Map<string, Array<() => void>>();
  // Per endpoint: the moving average of its requests' durations, and when the last answered.
  const heard = new Map<string, { averageMs: number; at: number }>();

  const boundOf = (endpointId: string): number => {
    const h = heard.get(endpointId);
    const fast = speed && h !== undefined && h.averageMs <= speed.fastMs && clock() - h.at <= HEARD_WITHIN_MS;
    return fast ? Math.max(bound, speed.fastBound) : bound;
  };

  function dequeue(endpointId: string, waiter: () => void): void {
    const queue = waiting.get(endpointId);
    if (!queue) return;
    const i = queue.indexOf(waiter);
    if (i >= 0) queue.splice(i, 1);
    if (!queue.length) waiting.delete(endpointId);
  }

  function noteDuration(endpointId: string, ms: number): void {
    const h = heard.get(endpointId);
    if (h === undefined && heard.size >= REMEMBERED) heard.clear();
    heard.set(endpointId, { averageMs: h === undefined ? ms : h.averageMs + ALPHA * (ms - h.averageMs), at: clock() });
  }

  return {
    acquire(endpointId) {
      const n = inFlight.get(endpointId) ?? 0;
      if (n < boundOf(endpointId)) {
        inFlight.set(endpointId, n + 1);
        return Promise.resolve(true);
      }
      if (waitMs <= 0) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        // Handed a slot by release(): counted there.
        const waiter = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          dequeue(endpointId, waiter);
          resolve(false);
        }, waitMs);
        const queue = waiting.get(endpointId);
        if (queue) queue.push(waiter);
        else waiting.set(endpointId, [waiter]);
      });
    },

    release(endpointId, durationMs) {
      if (durationMs !== undefined) noteDuration(endpointId, durationMs);
      let n = (inFlight.get(endpointId) ?? 1) - 1;
      // The freed slot, and any the bound gained meanwhile, go to the waiters in order.
      const queue = waiting.get(endpointId);
      while (queue?.length && n < boundOf(endpointId)) {
        n++;
        queue.shift()?.();
      }
      if (queue && !queue.length) waiting.delete(endpointId);
      if (n <= 0) inFlight.delete(endpointId);
      else inFlight.set(endpointId, n);
    },

    usage(endpointId) {
      return { inFlight: inFlight.get(endpointId) ?? 0, waiting: waiting.get(endpointId)?.length ?? 0, bound: boundOf(endpointId) };
    },
  };
}

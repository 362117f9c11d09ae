// The per-endpoint bound on deliveries in flight in one process, so that a slow receiver does
// not take every worker slot. A delivery for an endpoint at its bound waits here, in order,
// for a slot of that endpoint, but only briefly: after `waitMs` it gives up ('busy'), and its
// job goes back to the queue for a while, freeing the worker slot for other endpoints' jobs.
// Waiting first matters when the queue is mostly one endpoint's (a burst): giving up at once
// would send job after job round the queue for nothing, which cost half the throughput.

export interface EndpointSlots {
  /** Resolves true with a slot of the endpoint taken (release it), or false after waitMs without one. */
  acquire(endpointId: string): Promise<boolean>;
  release(endpointId: string): void;
  /** Slots taken and deliveries waiting, per endpoint (for tests and metrics). */
  usage(endpointId: string): { inFlight: number; waiting: number };
}

export function createEndpointSlots(bound: number, waitMs: number): EndpointSlots {
  const inFlight = new Map<string, number>();
  const waiting = new Map<string, Array<() => void>>();

  function dequeue(endpointId: string, waiter: () => void): void {
    const queue = waiting.get(endpointId);
    if (!queue) return;
    const i = queue.indexOf(waiter);
    if (i >= 0) queue.splice(i, 1);
    if (!queue.length) waiting.delete(endpointId);
  }

  return {
    acquire(endpointId) {
      const n = inFlight.get(endpointId) ?? 0;
      if (n < bound) {
        inFlight.set(endpointId, n + 1);
        return Promise.resolve(true);
      }
      if (waitMs <= 0) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        // Handed a slot by release(): the count stays as it was (one out, one in).
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

    release(endpointId) {
      const queue = waiting.get(endpointId);
      const next = queue?.shift();
      if (queue && !queue.length) waiting.delete(endpointId);
      if (next) {
        next();
        return;
      }
      const n = (inFlight.get(endpointId) ?? 1) - 1;
      if (n <= 0) inFlight.delete(endpointId);
      else inFlight.set(endpointId, n);
    },

    usage(endpointId) {
      return { inFlight: inFlight.get(endpointId) ?? 0, waiting: waiting.get(endpointId)?.length ?? 0 };
    },
  };
}

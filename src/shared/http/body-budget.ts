// Bytes of request bodies in flight, bounded per process and per owner (an API key). A body is
// read whole before it is parsed, so a client that opens many requests, sends most of a
// large body on each and stalls holds that memory until the request timeout: without a bound,
// one key opening 200 such requests holds 200 MiB of one process. A request whose body would
// go over either bound is refused at once, before any of it is read (429 for the owner's
// share, 503 for the process's), and its connection closed; everyone else goes on.
import type { Context, Next } from 'koa';
import { RateLimitedError, UnavailableError } from '../errors.js';

export interface BodyBudgetLimits {
  /** All bodies in flight in this process. */
  processBytes: number;
  /** One owner's bodies in flight. */
  perOwnerBytes: number;
  /** The largest body a route reads; what a body of unknown length (chunked) is counted as. */
  maxBodyBytes: number;
}

export interface BodyBudget {
  /**
   * Runs `next` with the request's body counted against `owner`'s share until it is received, or
   * refuses it. `maxBodyBytes`: the largest body the routes behind it read, when smaller than the
   * budget's (a chunked body is counted as that much).
   */
  within(ctx: Context, owner: string, next: Next, maxBodyBytes?: number): Promise<void>;
  /** Bytes counted now (for tests and metrics). */
  inFlight(): number;
}

export function createBodyBudget(limits: BodyBudgetLimits): BodyBudget {
  let total = 0;
  const byOwner = new Map<string, number>();
  return {
    async within(ctx, owner, next, maxBodyBytes = limits.maxBodyBytes) {
      const declared = Number(ctx.get('Content-Length') || '0');
      const chunked = ctx.get('Transfer-Encoding') !== '';
      // No body, or one larger than any route reads (the route answers 413 without reading it).
      if ((!chunked && !(declared > 0)) || declared > maxBodyBytes) {
        await next();
        return;
      }
      const bytes = declared > 0 ? declared : maxBodyBytes;
      const mine = byOwner.get(owner) ?? 0;
      if (mine + bytes > limits.perOwnerBytes || total + bytes > limits.processBytes) {
        // Not read, and not left on a kept-alive connection: the stalled sender is cut off.
        ctx.set('Connection', 'close');
        if (mine + bytes > limits.perOwnerBytes) throw new RateLimitedError(1);
        throw new UnavailableError('Too many request bodies in flight; retry shortly.');
      }
      total += bytes;
      byOwner.set(owner, mine + bytes);
      let released = false;
      // Given back once the body has been received (the request's work goes on without it), or
      // when the request ends without reading it.
      const release = () => {
        if (released) return;
        released = true;
        total -= bytes;
        const left = (byOwner.get(owner) ?? bytes) - bytes;
        if (left > 0) byOwner.set(owner, left);
        else byOwner.delete(owner);
      };
      ctx.req.once('end', release);
      ctx.req.once('close', release);
      try {
        await next();
      } finally {
        release();
      }
    },
    inFlight: () => total,
  };
}

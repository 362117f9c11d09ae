// The limits of the public endpoints (no key): requests per minute per client address and per
// IPv6 /64, counted in Redis so that every web process counts the same client once (a guesser
// spread over N processes gets no N times the tries), and a service-wide count of misses that
// says when someone is guessing codes. Only clients are limited, never a policy number: a limit
// per policy would let anyone block the verification of someone else's guarantee.
// Redis away (or slow beyond REDIS_LIMIT_TIMEOUT_MS) never stops a verification: each process
// then counts in memory, and leaves Redis alone for REDIS_PAUSE_MS (a Redis that hangs would
// otherwise cost every request the time limit, and pile commands up in the client).
import type { Middleware } from 'koa';
import { Counter, Gauge, type Registry } from 'prom-client';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimitedError } from '../shared/errors.js';
import { clientAddress } from '../shared/http/client-address.js';
import { retryAfterSeconds } from '../shared/http/failed-logins.js';
import type { Logger } from '../shared/logger.js';
import type { RedisConnection } from '../shared/queues.js';
import { withTimeout } from '../shared/time-limit.js';

/** How long a limit's call to Redis may take before the process counts in memory instead. */
export const REDIS_LIMIT_TIMEOUT_MS = 250;
/** How long the process then counts in memory before it asks Redis again. */
export const REDIS_PAUSE_MS = 5_000;

/** Whether Redis is worth asking now: not while it is away, nor for a while after it failed to answer in time. */
function redisBreaker(redis: RedisConnection | undefined) {
  let pausedUntil = 0;
  return {
    usable: () => redis !== undefined && redis.status === 'ready' && Date.now() >= pausedUntil,
    failed: () => {
      pausedUntil = Date.now() + REDIS_PAUSE_MS;
    },
  };
}

export interface PublicLimitOptions {
  /** Requests per minute per address (an IPv4 address, or one IPv6 address); 0: none. */
  perAddress: number;
  /** Requests per minute per IPv6 /64; 0: none. */
  perNetwork: number;
  /** Shared counts; without it (tests of one process), each process counts alone. */
  redis?: RedisConnection;
  /** Prefix of the Redis keys (the deployment's QUEUE_PREFIX). */
  keyPrefix: string;
}

/** Takes a point for `key`: in Redis when it is usable, else in this process's memory; 429 beyond the limit. */
function limiter(points: number, name: string, o: PublicLimitOptions, breaker: ReturnType<typeof redisBreaker>) {
  if (points <= 0) return undefined;
  const memory = new RateLimiterMemory({ points, duration: 60 });
  const shared =
    o.redis && new RateLimiterRedis({ storeClient: o.redis, points, duration: 60, keyPrefix: `${o.keyPrefix}:limit:${name}`, rejectIfRedisNotReady: true });
  const consume = async (key: string): Promise<void> => {
    if (shared && breaker.usable()) {
      try {
        await withTimeout(shared.consume(key), REDIS_LIMIT_TIMEOUT_MS, 'rate limit');
        return;
      } catch (res) {
        if (res instanceof RateLimiterRes) throw res;
        breaker.failed();
      }
    }
    await memory.consume(key);
  };
  return async (key: string): Promise<void> => {
    try {
      await consume(key);
    } catch (res) {
      throw new RateLimitedError(retryAfterSeconds(res));
    }
  };
}

/**
 * Limits the public endpoints per client, before a body is read (malformed requests count too).
 * An IPv4 client is its address; an IPv6 client is counted both as its address and as its /64.
 */
export function publicLimits(o: PublicLimitOptions): Middleware {
  const breaker = redisBreaker(o.redis);
  const byAddress = limiter(o.perAddress, 'verify-address', o, breaker);
  const byNetwork = limiter(o.perNetwork, 'verify-network', o, breaker);
  return async (ctx, next) => {
    const client = clientAddress(ctx.ip);
    // Both at once: a slow Redis costs its time limit once, not twice.
    await Promise.all([byAddress?.(client.address), client.network !== client.address ? byNetwork?.(client.network) : undefined]);
    await next();
  };
}

/**
 * Misses of the public verification, counted for the whole service: a Prometheus counter per
 * process (`verification_misses_total`, summed by the scraper), a count per minute in Redis
 * shared by every process, and one warning log line in the minute that count reaches
 * `surgePerMinute` (the first process to see it claims the minute's warning in Redis; the others
 * stay quiet). Without Redis each process counts its own misses against the same threshold.
 */
export function createMissWatch(o: {
  redis?: RedisConnection;
  keyPrefix: string;
  surgePerMinute: number;
  registry: Registry;
  logger: Logger;
  now?: () => number;
}) {
  const now = o.now ?? Date.now;
  const total = new Counter({ name: 'verification_misses_total', help: 'Public verifications that matched nothing', registers: [o.registry] });
  const minute = new Gauge({
    name: 'verification_misses_this_minute',
    help: 'Misses of the whole service in the current minute (Redis), as this process last counted them',
    registers: [o.registry],
  });
  // Without Redis, this process's own count of the minute.
  let local = { at: 0, n: 0 };
  const countLocally = (at: number) => {
    if (local.at !== at) local = { at, n: 0 };
    return ++local.n;
  };
  const breaker = redisBreaker(o.redis);
  let warnedLocally = -1;
  /** The minute's count, and whether this process is the one to warn of it. */
  const count = async (at: number): Promise<{ n: number; warn: boolean }> => {
    const local = () => {
      const n = countLocally(at);
      const warn = n >= o.surgePerMinute && warnedLocally !== at;
      if (warn) warnedLocally = at;
      return { n, warn };
    };
    if (!o.redis || !breaker.usable()) return local();
    const key = `${o.keyPrefix}:verify-misses:${at}`;
    try {
      const res = await withTimeout(o.redis.multi().incr(key).expire(key, 180).exec(), REDIS_LIMIT_TIMEOUT_MS, 'miss count');
      const n = Number(res?.[0]?.[1]);
      if (!Number.isFinite(n)) return local();
      // At or past the threshold (a count that jumped it still warns), once a minute for the whole service.
      const warn =
        n >= o.surgePerMinute && (await withTimeout(o.redis.set(`${key}:warned`, '1', 'EX', 180, 'NX'), REDIS_LIMIT_TIMEOUT_MS, 'miss warning')) === 'OK';
      return { n, warn };
    } catch {
      breaker.failed();
      return local();
    }
  };
  return {
    /** Counts a miss; never waits for Redis (the miss's answer must not take longer than another's). */
    record(): void {
      total.inc();
      const at = Math.floor(now() / 60_000);
      void count(at).then(({ n, warn }) => {
        minute.set(n);
        if (warn)
          o.logger.warn(
            { misses: n, minute: new Date(at * 60_000).toISOString() },
            'public verification misses are surging (the whole service, this minute): someone may be guessing codes',
          );
      });
    },
  };
}

export type MissWatch = ReturnType<typeof createMissWatch>;

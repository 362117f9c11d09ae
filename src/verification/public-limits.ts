// The limits of the public endpoints (no key): requests per minute per client address and per
// IPv6 /64, counted in Redis so that every web process counts the same client once (a guesser
// spread over N processes gets no N times the tries), and a service-wide count of misses that
// says when someone is guessing codes. Only clients are limited, never a policy number: a limit
// per policy would let anyone block the verification of someone else's guarantee.
// Redis away (or slow beyond REDIS_LIMIT_TIMEOUT_MS) never stops a verification: each process
// then counts in memory, as it did before Redis answered.
import type { Middleware } from 'koa';
import { Counter, Gauge, type Registry } from 'prom-client';
import { RateLimiterMemory, RateLimiterRedis, RLWrapperTimeouts, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { RateLimitedError } from '../shared/errors.js';
import { clientAddress } from '../shared/http/client-address.js';
import { retryAfterSeconds } from '../shared/http/failed-logins.js';
import type { Logger } from '../shared/logger.js';
import type { RedisConnection } from '../shared/queues.js';
import { withTimeout } from '../shared/time-limit.js';

/** How long a limit's call to Redis may take before the process counts in memory instead. */
export const REDIS_LIMIT_TIMEOUT_MS = 250;

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

function limiter(points: number, name: string, o: PublicLimitOptions): RateLimiterAbstract | undefined {
  if (points <= 0) return undefined;
  const memory = new RateLimiterMemory({ points, duration: 60 });
  if (!o.redis) return memory;
  const shared = new RateLimiterRedis({
    storeClient: o.redis,
    points,
    duration: 60,
    keyPrefix: `${o.keyPrefix}:limit:${name}`,
    rejectIfRedisNotReady: true,
    insuranceLimiter: memory,
  });
  return new RLWrapperTimeouts({ limiter: shared, timeoutMs: REDIS_LIMIT_TIMEOUT_MS, insuranceLimiter: memory });
}

/**
 * Limits the public endpoints per client, before a body is read (malformed requests count too).
 * An IPv4 client is its address; an IPv6 client is counted both as its address and as its /64.
 */
export function publicLimits(o: PublicLimitOptions): Middleware {
  const byAddress = limiter(o.perAddress, 'verify-address', o);
  const byNetwork = limiter(o.perNetwork, 'verify-network', o);
  const take = async (l: RateLimiterAbstract | undefined, key: string) => {
    if (!l) return;
    try {
      await l.consume(key);
    } catch (res) {
      throw new RateLimitedError(retryAfterSeconds(res));
    }
  };
  return async (ctx, next) => {
    const client = clientAddress(ctx.ip);
    await take(byAddress, client.address);
    if (client.network !== client.address) await take(byNetwork, client.network);
    await next();
  };
}

/**
 * Misses of the public verification, counted for the whole service: a Prometheus counter per
 * process (`verification_misses_total`, summed by the scraper), a count per minute in Redis
 * shared by every process, and one warning log line in the minute that count reaches
 * `surgePerMinute` (the process whose miss reached it logs; the others stay quiet).
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
  const count = async (at: number): Promise<number> => {
    if (!o.redis || o.redis.status !== 'ready') return countLocally(at);
    const key = `${o.keyPrefix}:verify-misses:${at}`;
    try {
      const res = await withTimeout(o.redis.multi().incr(key).expire(key, 180).exec(), REDIS_LIMIT_TIMEOUT_MS, 'miss count');
      const n = Number(res?.[0]?.[1]);
      return Number.isFinite(n) ? n : countLocally(at);
    } catch {
      return countLocally(at);
    }
  };
  return {
    /** Counts a miss; never waits for Redis (the miss's answer must not take longer than another's). */
    record(): void {
      total.inc();
      const at = Math.floor(now() / 60_000);
      void count(at).then((n) => {
        minute.set(n);
        if (n === o.surgePerMinute)
          o.logger.warn(
            { misses: n, minute: new Date(at * 60_000).toISOString() },
            'public verification misses are surging (the whole service, this minute): someone may be guessing codes',
          );
      });
    },
  };
}

export type MissWatch = ReturnType<typeof createMissWatch>;

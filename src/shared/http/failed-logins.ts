// Failed authentications per client address, in memory: an address over the limit is refused
// (429) before its credentials are looked at, so that a right guess then tells it nothing.
// Shared by API keys and the admin board's basic auth.
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimitedError } from '../errors.js';

/** Seconds until a rate limiter lets the caller in again (at least 1). */
export const retryAfterSeconds = (res: unknown): number => Math.max(1, Math.ceil((res instanceof RateLimiterRes ? res.msBeforeNext : 60_000) / 1000));

export interface FailedLogins {
  /** 429 when `address` has failed `perMinute` times within the minute. */
  refuseIfLimited(address: string): Promise<void>;
  record(address: string): Promise<void>;
}

export function failedLogins(perMinute: number): FailedLogins {
  const failures = new RateLimiterMemory({ points: perMinute, duration: 60 });
  return {
    async refuseIfLimited(address) {
      const record = await failures.get(address);
      if (record && record.remainingPoints <= 0) throw new RateLimitedError(retryAfterSeconds(record));
    },
    async record(address) {
      await failures.consume(address).catch(() => undefined);
    },
  };
}

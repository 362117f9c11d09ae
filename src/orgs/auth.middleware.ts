// Authentication of every /api request: the key travels in X-API-Key, or as
// `Authorization: Bearer <key>`. Missing, malformed, unknown or revoked keys, two X-API-Key
// headers, or two different keys are a 401. Requests are limited per key, and failed
// authentications per client address (429 with Retry-After).
import type { Middleware } from 'koa';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { RateLimitedError, UnauthorizedError } from '../shared/errors.js';
import { failedLogins, retryAfterSeconds } from '../shared/http/failed-logins.js';
import type { OrgService, Principal } from './org.service.js';

export interface AuthState {
  principal: Principal;
}

/** Who makes a change through the API, for the audit trail: the key's public prefix and the request's id. */
export interface ApiActor {
  actor: string;
  requestId: string | null;
}

/** The caller as the audit trail names it; fails closed (401) without authentication. */
export function actorOf(state: Partial<AuthState> & { requestId?: string }): ApiActor {
  if (!state.principal) throw new UnauthorizedError();
  return { actor: state.principal.keyPrefix, requestId: state.requestId ?? null };
}

/** The caller's organization; fails closed (401) should a route ever run without authentication. */
export function orgIdOf(state: Partial<AuthState>): string {
  if (!state.principal) throw new UnauthorizedError();
  return state.principal.orgId;
}

export interface AuthOptions {
  /** Requests per minute per key; 0 turns the limit off. */
  perKeyPerMinute: number;
  /** Failed authentications per minute per client address. */
  failuresPerMinute: number;
}

/**
 * The values of the X-API-Key and Authorization headers, each header line kept apart, read
 * from rawHeaders (cheaper than building headersDistinct for every header of every request).
 */
export function credentialHeaders(rawHeaders: string[]): { 'x-api-key'?: string[]; authorization?: string[] } {
  let apiKeys: string[] | undefined;
  let auth: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const raw = rawHeaders[i] as string;
    // Only a name of 9 or 13 characters can be either: the others are not even lowercased.
    if (raw.length !== 9 && raw.length !== 13) continue;
    const name = raw.toLowerCase();
    if (name === 'x-api-key') (apiKeys ??= []).push(rawHeaders[i + 1] as string);
    else if (name === 'authorization') (auth ??= []).push(rawHeaders[i + 1] as string);
  }
  const out: { 'x-api-key'?: string[]; authorization?: string[] } = {};
  if (apiKeys) out['x-api-key'] = apiKeys;
  if (auth) out.authorization = auth;
  return out;
}

/** The single key a request presents, or undefined when it presents none or several. */
export function presentedKey(headers: { 'x-api-key'?: string[]; authorization?: string[] }): string | undefined {
  const apiKeys = headers['x-api-key'] ?? [];
  const auth = headers.authorization ?? [];
  if (apiKeys.length > 1 || auth.length > 1) return undefined;
  const bearer = auth[0] !== undefined ? /^Bearer[ ]+(\S+)\s*$/i.exec(auth[0])?.[1] : undefined;
  if (auth[0] !== undefined && bearer === undefined && apiKeys.length === 0) return undefined;
  const direct = apiKeys[0]?.trim();
  if (direct !== undefined && bearer !== undefined && direct !== bearer) return undefined;
  return direct || bearer;
}

export function authenticate(orgs: OrgService, opts: AuthOptions): Middleware<AuthState> {
  const perKey = opts.perKeyPerMinute > 0 ? new RateLimiterMemory({ points: opts.perKeyPerMinute, duration: 60 }) : undefined;
  const failures = failedLogins(opts.failuresPerMinute);

  return async (ctx, next) => {
    const key = presentedKey(credentialHeaders(ctx.req.rawHeaders));
    let principal = key === undefined ? undefined : orgs.authenticateCached(key);
    if (!principal) {
      principal = key === undefined ? undefined : await orgs.authenticate(key);
      if (!principal) {
        // An address that keeps failing gets 429 instead of 401. A valid key is never refused:
        // at 256 bits a key cannot be guessed, and refusing valid keys let anyone who shares the
        // address (everyone behind the router when TRUST_PROXY is off, a NAT) lock every key out.
        await failures.refuseIfLimited(ctx.ip);
        await failures.record(ctx.ip);
        throw new UnauthorizedError();
      }
    }
    if (perKey) {
      try {
        await perKey.consume(principal.keyPrefix);
      } catch (res) {
        throw new RateLimitedError(retryAfterSeconds(res));
      }
    }
    ctx.state.principal = principal;
    await next();
  };
}

// Sends one signed delivery: a POST through an undici Agent (a connection pool per origin;
// global fetch is several times slower), whose sockets connect only through the SSRF guard's
// lookup. Redirects are not followed (a 3xx is a failure like any non-2xx), the whole attempt
// is bounded by a timeout, and at most 64 KiB of the answer is read (and dropped).
import { isIP } from 'node:net';
import { Agent } from 'undici';
import { guardedLookup, hostOf, RefusedAddressError, type AddressPolicy, type Resolver } from './ssrf.js';

export interface SendResult {
  statusCode: number | null;
  durationMs: number;
  error: string | null;
  /** From Retry-After on a 429 or 503 (seconds or an HTTP date). */
  retryAfterMs?: number;
}

export interface Sender {
  send(url: string, headers: Record<string, string>, body: string): Promise<SendResult>;
  close(): Promise<void>;
}

export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function createSender(opts: {
  resolver: Resolver;
  policy: AddressPolicy;
  timeoutMs: number;
  connectionsPerOrigin?: number;
  userAgent?: string;
}): Sender {
  const agent = new Agent({
    connect: { lookup: guardedLookup(opts.resolver, opts.policy), timeout: Math.min(opts.timeoutMs, 10_000) },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connections: opts.connectionsPerOrigin ?? 32,
    keepAliveTimeout: 4_000,
  });
  const userAgent = opts.userAgent ?? 'GuaranteeRegistry-Webhooks/1';
  // The policy's answer per literal address (the policy never changes in a process).
  const literals = new Map<string, string | undefined>();
  const literalRefusal = (host: string): string | undefined => {
    if (!literals.has(host)) {
      if (literals.size >= 1000) literals.clear();
      literals.set(host, opts.policy.refusal(host));
    }
    return literals.get(host);
  };
  return {
    async send(url, headers, body) {
      const started = performance.now();
      const target = new URL(url);
      const host = hostOf(target);
      // A literal address never goes through the lookup hook: checked here.
      const literal = isIP(host) ? literalRefusal(host) : undefined;
      if (literal) return { statusCode: null, durationMs: 0, error: `refused: ${literal}` };
      try {
        const res = await agent.request({
          origin: target.origin,
          path: `${target.pathname}${target.search}`,
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', 'user-agent': userAgent },
          body,
          signal: AbortSignal.timeout(opts.timeoutMs),
        });
        await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        const durationMs = performance.now() - started;
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        let error: string | null = null;
        if (!ok) {
          const location = res.statusCode >= 300 && res.statusCode < 400 ? res.headers.location : undefined;
          error = location ? `HTTP ${res.statusCode}, redirect to ${String(location).slice(0, 200)} not followed` : `HTTP ${res.statusCode}`;
        }
        const retryAfterMs = res.statusCode === 429 || res.statusCode === 503 ? parseRetryAfter(res.headers['retry-after']) : undefined;
        return { statusCode: res.statusCode, durationMs, error, ...(retryAfterMs !== undefined && { retryAfterMs }) };
      } catch (err) {
        const durationMs = performance.now() - started;
        const refused = findRefusal(err);
        // The organization reads attempts: what its name resolved to is not told (as at registration).
        if (refused) return { statusCode: null, durationMs, error: `refused: ${refused.publicReason}` };
        const e = err as Error & { code?: string };
        const timedOut =
          e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT';
        return { statusCode: null, durationMs, error: timedOut ? `no answer within ${opts.timeoutMs} ms` : `${e.code ?? e.name}: ${e.message}` };
      }
    },
    close: () => agent.close(),
  };
}

function findRefusal(err: unknown): RefusedAddressError | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof RefusedAddressError) return e;
  }
  return undefined;
}

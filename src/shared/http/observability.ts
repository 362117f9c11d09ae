// Request ids, one log line per request, and Prometheus metrics of requests by route and status.
import { randomUUID } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../logger.js';

export interface HttpMetrics {
  registry: Registry;
  requests: Counter<'method' | 'route' | 'status'>;
  duration: Histogram<'method' | 'route' | 'status'>;
}

export function createMetrics(): HttpMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    requests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** The route pattern that matched (`/api/v1/guarantees/:id`), never the raw path (unbounded labels). */
export function routeOf(ctx: Context): string {
  return (ctx as Context & { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
}

export function observe(logger: Logger, metrics: HttpMetrics): Middleware {
  // prom-client hashes the labels on every call; the bound children are kept per label set
  // (bounded: route patterns, methods and statuses are few).
  const children = new Map<string, { count: () => void; time: (s: number) => void }>();
  const record = (method: string, route: string, status: number, seconds: number) => {
    const key = `${method} ${status} ${route}`;
    let child = children.get(key);
    if (!child) {
      const labels = { method, route, status: String(status) };
      const counter = metrics.requests.labels(labels);
      const histogram = metrics.duration.labels(labels);
      child = { count: () => counter.inc(), time: (s) => histogram.observe(s) };
      if (children.size < 10_000) children.set(key, child);
    }
    child.count();
    child.time(seconds);
  };
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('X-Request-Id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', requestId);
    ctx.state.requestId = requestId;
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf(ctx);
      record(ctx.method, route, ctx.status, seconds);
      logger.info(
        {
          // A path that carries a secret (the store-events token) is logged as its route pattern.
          reqId: requestId,
          method: ctx.method,
          path: route.includes(':token') ? route : ctx.path,
          route,
          status: ctx.status,
          ms: Math.round(seconds * 1e4) / 10,
          orgId: (ctx.state as { principal?: { orgId: string } }).principal?.orgId,
        },
        'request',
      );
    }
  };
}

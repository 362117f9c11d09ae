// Mounted first: turns every error into a response. By default the body is empty, as the
// API as specified says; a client that accepts application/problem+json gets an RFC 9457 document.
// Database and queue faults are a 503, never a hang; anything unexpected is a 500 whose
// details stay in the log.
import type { Context, Middleware } from 'koa';
import { isTransientDatabaseError } from '../db/sequelize.js';
import { AppError, RateLimitedError, UnavailableError, ValidationError } from '../errors.js';
import type { Logger } from '../logger.js';

const PROBLEM_JSON = 'application/problem+json';
const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

const ROUTING_STATUSES: Record<number, [string, string]> = {
  404: ['not_found', 'No such route'],
  405: ['method_not_allowed', 'Method not allowed on this path'],
  501: ['not_implemented', 'Method not implemented'],
};

const UNAVAILABLE = new Set([
  'SequelizeConnectionError',
  'SequelizeConnectionRefusedError',
  'SequelizeConnectionAcquireTimeoutError',
  'SequelizeHostNotReachableError',
  'SequelizeHostNotFoundError',
  'SequelizeConnectionTimedOutError',
  'SequelizeAccessDeniedError',
  'SequelizeTimeoutError',
]);

/** Any thrown value as an AppError: ours, an http-errors error (body parsing), or an unexpected fault. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as { name?: string; status?: unknown; expose?: unknown; message?: string; fatal?: unknown } | null;
  if (e && typeof e.name === 'string' && UNAVAILABLE.has(e.name)) return new UnavailableError('The database is unavailable; retry later.', err);
  if (isTransientDatabaseError(err)) return new UnavailableError('The database is busy; retry later.', err);
  // mysql2's own fatal errors (connection lost or refused mid-query) on the lean query path.
  if (e?.fatal === true) return new UnavailableError('The database connection failed; retry later.', err);
  if (e && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return new AppError(e.status, 'bad_request', e.expose === true && e.message ? e.message : (TITLES[e.status] ?? 'Bad request'), { cause: err });
  }
  return new AppError(500, 'internal', 'Internal server error.', { expose: false, cause: err });
}

export function wantsProblem(ctx: Context): boolean {
  return (ctx.get('Accept') || '').toLowerCase().includes(PROBLEM_JSON);
}

/** Answers `status` with an empty body (the API as specified), or a problem document when the client asks. */
export function respondError(ctx: Context, err: AppError): void {
  if (err instanceof RateLimitedError) ctx.set('Retry-After', String(err.retryAfterSeconds));
  if (err.status === 503) ctx.set('Retry-After', '5');
  if (wantsProblem(ctx)) {
    ctx.status = err.status;
    ctx.type = PROBLEM_JSON;
    ctx.body = {
      type: `urn:guarantee-registry:problem:${err.code}`,
      title: TITLES[err.status] ?? 'Error',
      status: err.status,
      ...(err.expose && { detail: err.message }),
      ...(err instanceof ValidationError && err.errors.length > 0 && { errors: err.errors }),
    };
    return;
  }
  ctx.body = null;
  ctx.status = err.status;
}

export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      // Statuses set without a body by the router (no route, wrong method with its Allow
      // header, unknown method) are answered like errors.
      if (ctx.body == null && ROUTING_STATUSES[ctx.status]) {
        const [code, message] = ROUTING_STATUSES[ctx.status] as [string, string];
        respondError(ctx, new AppError(ctx.status, code, `${message}: ${ctx.method} ${ctx.path}.`));
      }
    } catch (err) {
      const appError = toAppError(err);
      const log = logger.child({ reqId: (ctx.state as { requestId?: string }).requestId });
      if (appError.status >= 500) log.error({ err: appError.cause ?? appError }, 'request failed');
      else log.debug({ status: appError.status, detail: appError.message }, 'request refused');
      respondError(ctx, appError);
    }
  };
}

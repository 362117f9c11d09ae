// The service's error hierarchy. Services throw these; one Koa middleware (http/error-handler)
// turns them into responses. `expose` says whether `detail` may be shown to the client.

/** One problem with a request field, as in RFC 9457's validation example. */
export interface FieldProblem {
  /** JSON Pointer in URI fragment form, e.g. `#/details/actType`. */
  pointer: string;
  detail: string;
}

export class AppError extends Error {
  readonly status: number;
  readonly code: string;
  readonly expose: boolean;

  constructor(status: number, code: string, message: string, opts: { expose?: boolean; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.expose = opts.expose ?? status < 500;
  }
}

/** 400: the request is malformed or breaks a rule. */
export class ValidationError extends AppError {
  constructor(
    message: string,
    readonly errors: FieldProblem[] = [],
  ) {
    super(400, 'validation_failed', message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'A valid API key is required (X-API-Key header or Authorization: Bearer).') {
    super(401, 'unauthorized', message);
  }
}

/** 403: the key is valid, but its kind of organization does not reach this route (an authority's key on an issuer's route, or the reverse). */
export class ForbiddenError extends AppError {
  constructor(message: string) {
    super(403, 'forbidden', message);
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found.') {
    super(404, 'not_found', message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string) {
    super(413, 'payload_too_large', message);
  }
}

export class RateLimitedError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'rate_limited', `Too many requests: retry after ${retryAfterSeconds} s.`);
  }
}

/** 503: a dependency (database, queue) is unavailable; the client may retry. */
export class UnavailableError extends AppError {
  constructor(message: string, cause?: unknown) {
    super(503, 'unavailable', message, { expose: true, cause });
  }
}

// Reads a JSON request body: at most 1 MiB (413 beyond), application/json only, a JSON object.
// A request with no body at all reads as {}. With `timeoutMs`, a body that has not arrived whole
// by then is answered 408 and its connection closed (a stalled sender is cut off).
import parse from 'co-body';
import type { Context } from 'koa';
import { AppError, PayloadTooLargeError, ValidationError } from '../errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export class BodyTimeoutError extends AppError {
  constructor(ms: number) {
    super(408, 'body_timeout', `The body did not arrive within ${ms} ms.`);
  }
}

export async function readJsonObject(ctx: Context, limit = MAX_BODY_BYTES, opts: { timeoutMs?: number } = {}): Promise<Record<string, unknown>> {
  const kind = ctx.request.is('application/json', 'application/*+json');
  if (kind === null || ctx.get('Content-Length') === '0') return {}; // no body
  if (kind === false) throw new ValidationError('The body must be JSON, sent with Content-Type: application/json.');
  let body: unknown;
  let timer: NodeJS.Timeout | undefined;
  try {
    const reading = parse.json(ctx.req, { limit, strict: false, encoding: 'utf8' }) as Promise<unknown>;
    if (opts.timeoutMs === undefined) body = await reading;
    else {
      const ms = opts.timeoutMs;
      // The read goes on until the connection closes (after the 408): its end is of no interest.
      reading.catch(() => undefined);
      body = await Promise.race([
        reading,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new BodyTimeoutError(ms)), ms);
        }),
      ]);
    }
  } catch (err) {
    if (err instanceof BodyTimeoutError) {
      ctx.set('Connection', 'close');
      throw err;
    }
    const e = err as { status?: number; type?: string };
    if (e.status === 413) throw new PayloadTooLargeError(`The body is larger than ${limit} bytes.`);
    if (e.status === 415) throw new AppError(415, 'unsupported_encoding', 'Unsupported Content-Encoding or charset.', { cause: err });
    throw new ValidationError('The body is not valid JSON.');
  } finally {
    clearTimeout(timer);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new ValidationError('The body must be a JSON object.');
  return body as Record<string, unknown>;
}

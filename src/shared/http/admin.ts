// Bull Board at /admin/queues, behind HTTP basic auth (ADMIN_USER / ADMIN_PASSWORD): every
// queue, with retry and clean. Not mounted at all (404) when the credentials are unset.
import { sameSecret } from '../secrets.js';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Queue } from 'bullmq';
import type { Middleware } from 'koa';
import { UnauthorizedError } from '../errors.js';
import { failedLogins } from './failed-logins.js';

export const ADMIN_PATH = '/admin/queues';

/** Compares digests, so that neither the length nor the content leaks through timing. */

/** The user and password of a Basic Authorization header, or undefined. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header?.trim() ?? '');
  if (!m?.[1]) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? undefined : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function basicAuth(user: string, password: string, failuresPerMinute: number): Middleware {
  const failures = failedLogins(failuresPerMinute);
  return async (ctx, next) => {
    await failures.refuseIfLimited(ctx.ip);
    const given = basicCredentials(ctx.get('Authorization'));
    // Both compared, always: a wrong user costs as much as a wrong password.
    const ok = given !== undefined && [sameSecret(given.user, user), sameSecret(given.password, password)].every(Boolean);
    if (!ok) {
      await failures.record(ctx.ip);
      ctx.set('WWW-Authenticate', 'Basic realm="Guarantee Registry queues", charset="UTF-8"');
      throw new UnauthorizedError('Administrator credentials are required.');
    }
    await next();
  };
}

/** Bull Board over `queues`, mounted at ADMIN_PATH behind basic auth. */
export function adminBoard(queues: readonly Queue[], credentials: { user: string; password: string }, failuresPerMinute: number): Middleware {
  const serverAdapter = new KoaAdapter();
  serverAdapter.setBasePath(ADMIN_PATH);
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  const board = serverAdapter.registerPlugin();
  const auth = basicAuth(credentials.user, credentials.password, failuresPerMinute);
  return async (ctx, next) => {
    // Any spelling of the prefix is guarded, whatever the board itself would match.
    const path = ctx.path.toLowerCase();
    if (path === ADMIN_PATH || path.startsWith(`${ADMIN_PATH}/`))
      await auth(ctx, async () => {
        await board(ctx, next);
      });
    else await next();
  };
}

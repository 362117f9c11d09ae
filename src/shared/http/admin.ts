// Bull Board at /admin/queues, behind HTTP basic auth (ADMIN_USER / ADMIN_PASSWORD): every
// queue, with retry and clean. Not mounted at all (404) when the credentials are unset.
import { sameSecret } from '../secrets.js';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { KoaAdapter } from '@bull-board/koa';
import type { Queue } from 'bullmq';
import type { Middleware } from 'koa';
import { UnauthorizedError, UnavailableError } from '../errors.js';
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

/** Verbs of Bull Board's API that follow a job's id (`/api/queues/<queue>/<job>/<verb>`) rather than a queue's name. */
const QUEUE_VERBS = new Set(['retry', 'promote', 'clean', 'pause', 'resume', 'empty', 'obliterate', 'add', 'concurrency', 'rate-limit', 'job-schedulers']);

/** A path segment decoded, or as it is when its escapes are malformed (the board answers such a request; it must still be recorded). */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** What a change through Bull Board's API does, and to what: `board.<verb>` on `queue:<name>` or `job:<queue>/<id>`. */
export function boardAction(method: string, path: string): { action: string; target: string } {
  const rest = path.slice(`${ADMIN_PATH}/api/`.length).split('/').filter(Boolean).map(safeDecode);
  const [kind, queue, ...tail] = rest;
  if (kind !== 'queues' || queue === undefined) return { action: `board.${method.toLowerCase()}`, target: `board:${rest.join('/')}` };
  if (!tail.length) return { action: `board.${queue}`, target: 'queue:*' };
  const [first = '', ...more] = tail;
  if (first === 'job-schedulers' && more.length >= 1) {
    const [scheduler = '', ...verb] = more;
    return { action: `board.job-schedulers${verb.length ? `.${verb.join('.')}` : ''}`, target: `job-scheduler:${queue}/${scheduler}` };
  }
  if (!QUEUE_VERBS.has(first) && more.length) return { action: `board.${more.join('.')}`, target: `job:${queue}/${first}` };
  return { action: `board.${tail.join('.')}`, target: `queue:${queue}` };
}

/** Records an administrator's change in the audit trail (the system chain); throws when it cannot. */
export type AdminAudit = (entry: { user: string; action: string; target: string; outcome: string; requestId: string | null }) => Promise<void>;

/**
 * Bull Board over `queues`, mounted at ADMIN_PATH behind basic auth. With `audit`, every change
 * through its API (any method but GET: retry, remove, promote, clean, pause...) is recorded
 * twice in the audit trail's system chain: `requested` before it runs (a database that cannot
 * record it refuses the change: 503), then how it ended. Redis has no transaction with the
 * database: the first row is the guarantee that no change goes unrecorded.
 */
export function adminBoard(
  queues: readonly Queue[],
  credentials: { user: string; password: string },
  failuresPerMinute: number,
  audit?: AdminAudit,
): Middleware {
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
        const change =
          audit && !['GET', 'HEAD', 'OPTIONS'].includes(ctx.method) && path.startsWith(`${ADMIN_PATH}/api/`) ? boardAction(ctx.method, ctx.path) : undefined;
        if (!change || !audit) {
          await board(ctx, next);
          return;
        }
        const who = { user: credentials.user, requestId: (ctx.state as { requestId?: string }).requestId ?? null, ...change };
        await audit({ ...who, outcome: 'requested' }).catch((err: unknown) => {
          throw new UnavailableError(`The change was not made: the audit trail could not record it (${(err as Error).message}).`);
        });
        // The change is made (or refused) by now: a row that cannot say how it ended must not
        // replace the board's answer (the operator would repeat the change); the requested row stands.
        const ended = (outcome: string) => audit({ ...who, outcome }).catch(() => undefined);
        try {
          await board(ctx, next);
        } catch (err) {
          await ended('failed');
          throw err;
        }
        await ended(ctx.status >= 400 ? `failed ${ctx.status}` : 'ok');
      });
    else await next();
  };
}

// The ingress for the object store's upload events (radosgw's bucket notifications, pushed
// over HTTP). The store waits for the answer before it answers the uploader, and never
// retries, so this answers at once: the keys become hints that a worker confirms with
// HeadObject. The path carries a token derived from ENCRYPTION_KEY; the events themselves are
// unsigned, so nothing in them is trusted beyond "look at this key".
import { createHmac } from 'node:crypto';
import type { Router } from '@koa/router';
import type { AuthState } from '../orgs/auth.middleware.js';
import parse from 'co-body';
import { NotFoundError, ValidationError } from '../shared/errors.js';
import { sameSecret } from '../shared/secrets.js';
import type { FileService } from './file.service.js';

export const STORAGE_EVENTS_PATH = '/internal/storage-events';

/** The secret path segment: the same in every process that shares ENCRYPTION_KEY. */
export function storageEventsToken(encryptionKey: Buffer): string {
  return createHmac('sha256', encryptionKey).update('storage-events/v1').digest('base64url').slice(0, 32);
}

/** Object keys of the ObjectCreated records of an S3 event notification; anything else is ignored. */
export function createdKeys(body: unknown): string[] {
  const records = (body as { Records?: unknown } | null)?.Records;
  if (!Array.isArray(records)) return [];
  const keys: string[] = [];
  for (const r of records.slice(0, 1000)) {
    const rec = r as { eventName?: unknown; s3?: { object?: { key?: unknown } } } | null;
    const key = rec?.s3?.object?.key;
    if (typeof rec?.eventName !== 'string' || !rec.eventName.includes('ObjectCreated') || typeof key !== 'string') continue;
    try {
      keys.push(decodeURIComponent(key.replace(/\+/g, ' ')));
    } catch {
      // not URL-encoded as S3 does: not one of ours
    }
  }
  return keys;
}

export function registerStorageEventRoutes(router: Router<AuthState>, files: Pick<FileService, 'uploadEvent'>, encryptionKey: Buffer): void {
  const expected = storageEventsToken(encryptionKey);
  router.post(`${STORAGE_EVENTS_PATH}/:token`, async (ctx) => {
    if (!sameSecret(ctx.params.token ?? '', expected)) throw new NotFoundError('Not found.');
    let body: unknown;
    try {
      body = await parse.json(ctx.req, { limit: 256 * 1024, strict: true });
    } catch {
      throw new ValidationError('The body is not an S3 event notification.');
    }
    files.uploadEvent(createdKeys(body));
    ctx.status = 204;
  });
}

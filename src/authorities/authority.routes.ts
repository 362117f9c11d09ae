// The contracting authorities' API (/api/authority/v1), reached only with an authority's key
// (app.ts refuses the other kind with a 403). Thin: parse, call the service, answer.
import type { Router } from '@koa/router';
import type { Middleware } from 'koa';
import { actorOf, orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { NotFoundError } from '../shared/errors.js';
import { readJsonObject } from '../shared/http/body.js';
import { parseOrThrow } from '../shared/validation.js';
import type { MissWatch } from '../verification/public-limits.js';
import { authorityListQuery, createAuthorityAct, takeCharge } from './authority.schemas.js';
import { parseIdempotencyKey } from '../shared/idempotency.js';
import type { FileService } from '../files/file.service.js';
import { presignV2 } from '../files/file.schemas.js';
import type { AuthorityService } from './authority.service.js';

export function registerAuthorityRoutes(
  router: Router<AuthState>,
  deps: {
    service: AuthorityService;
    /** The authority's uploads (a demand's documents), in its own name. */
    files: FileService;
    /** The public verification's limits per client: taking charge is a lookup by the same codes. */
    limit: Middleware;
    /** Its misses counted with the verifications'. */
    misses?: MissWatch;
  },
): void {
  const { service, limit, misses, files } = deps;

  router.post('/api/authority/v1/guarantees/:id/amendments', async (ctx) => {
    const raw = await readJsonObject(ctx);
    const idempotencyKey = parseIdempotencyKey(ctx.req.headersDistinct['idempotency-key']);
    const input = parseOrThrow(createAuthorityAct, raw, 'act');
    const result = await service.act(
      orgIdOf(ctx.state),
      ctx.params.id ?? '',
      input,
      actorOf(ctx.state),
      idempotencyKey === undefined ? undefined : { key: idempotencyKey, scope: `POST ${ctx.path}` },
    );
    ctx.status = result.status;
    ctx.body = result.body;
  });

  router.post('/api/authority/v1/presigned-url', async (ctx) => {
    const input = parseOrThrow(presignV2, await readJsonObject(ctx), 'upload request');
    ctx.body = await files.issueUploadUrl(orgIdOf(ctx.state), { ...input, api: 2 }, actorOf(ctx.state));
  });

  router.get('/api/authority/v1/file-status/:uuid', async (ctx) => {
    const status = await files.status(orgIdOf(ctx.state), ctx.params.uuid ?? '');
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(status);
  });

  router.post('/api/authority/v1/guarantees', limit, async (ctx) => {
    const raw = await readJsonObject(ctx);
    const q = parseOrThrow(takeCharge, raw, 'the tender data');
    try {
      ctx.body = await service.takeCharge(orgIdOf(ctx.state), q, actorOf(ctx.state));
    } catch (err) {
      if (err instanceof NotFoundError) misses?.record();
      throw err;
    }
    ctx.set('Cache-Control', 'no-store');
  });

  router.get('/api/authority/v1/guarantees', async (ctx) => {
    const q = parseOrThrow(authorityListQuery, ctx.query, 'query');
    ctx.body = await service.list(orgIdOf(ctx.state), q);
  });

  router.get('/api/authority/v1/guarantees/:id', async (ctx) => {
    ctx.body = await service.view(orgIdOf(ctx.state), ctx.params.id ?? '');
    ctx.set('Cache-Control', 'no-store');
  });
}

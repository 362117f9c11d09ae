// The contracting authorities' API (/api/authority/v1), reached only with an authority's key
// (app.ts refuses the other kind with a 403). Thin: parse, call the service, answer.
import type { Router } from '@koa/router';
import type { Middleware } from 'koa';
import { actorOf, orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { NotFoundError } from '../shared/errors.js';
import { readJsonObject } from '../shared/http/body.js';
import { parseOrThrow } from '../shared/validation.js';
import type { MissWatch } from '../verification/public-limits.js';
import { authorityListQuery, takeCharge } from './authority.schemas.js';
import type { AuthorityService } from './authority.service.js';

export function registerAuthorityRoutes(
  router: Router<AuthState>,
  deps: {
    service: AuthorityService;
    /** The public verification's limits per client: taking charge is a lookup by the same codes. */
    limit: Middleware;
    /** Its misses counted with the verifications'. */
    misses?: MissWatch;
  },
): void {
  const { service, limit, misses } = deps;

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

// The amendments endpoints (docs/api.md "A guarantee's life"): record one, list them a page at a time, and
// the state they fold to. Thin: parse, call the service, answer.
import type { Router } from '@koa/router';
import { readJsonObject } from '../shared/http/body.js';
import { parseIdempotencyKey } from '../shared/idempotency.js';
import { parseOrThrow } from '../shared/validation.js';
import { actorOf, orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { amendmentsQuery, createAmendment } from './amendment.schemas.js';
import { toAmendmentView, toStateView } from './amendment.serializer.js';
import { toNewAmendment, type AmendmentService } from './amendment.service.js';

export function registerAmendmentRoutes(router: Router<AuthState>, service: AmendmentService): void {
  router.post('/api/v2/guarantees/:id/amendments', async (ctx) => {
    const raw = await readJsonObject(ctx);
    const idempotencyKey = parseIdempotencyKey(ctx.req.headersDistinct['idempotency-key']);
    const input = toNewAmendment(parseOrThrow(createAmendment, raw, 'amendment'));
    const result = await service.record(
      orgIdOf(ctx.state),
      ctx.params.id ?? '',
      input,
      idempotencyKey === undefined ? undefined : { key: idempotencyKey, scope: `POST ${ctx.path}` },
      actorOf(ctx.state),
    );
    ctx.status = result.status;
    ctx.body = result.body;
  });

  router.get('/api/v2/guarantees/:id/amendments', async (ctx) => {
    const { after, limit } = parseOrThrow(amendmentsQuery, ctx.query, 'query');
    const page = await service.page(orgIdOf(ctx.state), ctx.params.id ?? '', after, limit);
    ctx.body = { amendments: page.amendments.map(toAmendmentView), next: page.next };
  });

  router.get('/api/v2/guarantees/:id/state', async (ctx) => {
    ctx.body = toStateView(await service.state(orgIdOf(ctx.state), ctx.params.id ?? ''));
  });
}

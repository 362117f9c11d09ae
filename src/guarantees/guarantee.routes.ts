// The specified endpoints 1–5, plus GET /api/v2/guarantees/{ID}. Thin: parse, call the
// service, answer.
import type { Router } from '@koa/router';
import { readJsonObject } from '../shared/http/body.js';
import { parseIdempotencyKey } from '../shared/idempotency.js';
import { parseOrThrow } from '../shared/validation.js';
import { actorOf, orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { serializers, type ApiVersion } from './guarantee.serializer.js';
import { createGuaranteeV1, createGuaranteeV2, listQuery } from './guarantee.schemas.js';
import type { GuaranteeService } from './guarantee.service.js';

const createSchemas = { 1: createGuaranteeV1, 2: createGuaranteeV2 } as const;

export function registerGuaranteeRoutes(router: Router<AuthState>, service: GuaranteeService): void {
  for (const version of [1, 2] as const satisfies readonly ApiVersion[]) {
    const serialize = serializers[version];

    router.get(`/api/v${version}/guarantees`, async (ctx) => {
      const { page, limit } = parseOrThrow(listQuery, ctx.query, 'query'); // a repeated parameter arrives as an array, and is refused;
      const { totalItems, guarantees } = await service.list(orgIdOf(ctx.state), page, limit);
      ctx.body = { totalItems, guarantees: guarantees.map(serialize) };
    });

    router.post(`/api/v${version}/guarantees`, async (ctx) => {
      const raw = await readJsonObject(ctx);
      const idempotencyKey = parseIdempotencyKey(ctx.req.headersDistinct['idempotency-key']);
      const input = parseOrThrow(createSchemas[version], raw, 'guarantee');
      const result = await service.create(orgIdOf(ctx.state), input, {
        respond: serialize,
        by: actorOf(ctx.state),
        idempotency: idempotencyKey === undefined ? undefined : { key: idempotencyKey, scope: `POST ${ctx.path}` },
      });
      ctx.status = result.status;
      ctx.body = result.body;
    });

    router.get(`/api/v${version}/guarantees/:id`, async (ctx) => {
      ctx.body = serialize(await service.get(orgIdOf(ctx.state), ctx.params.id ?? ''));
    });
  }
}

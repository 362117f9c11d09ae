// The specified endpoints 9 and 10 (list and register webhooks) and, beyond them, one
// endpoint's view, removal, secret rotation, re-enabling, delivery attempts and replays.
import type { Router } from '@koa/router';
import { actorOf, orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { toAppError } from '../shared/http/error-handler.js';
import { readJsonObject } from '../shared/http/body.js';
import { parseOrThrow } from '../shared/validation.js';
import { attemptsQuery, registerWebhook, replayRequest } from './webhook.schemas.js';
import type { WebhookService } from './webhook.service.js';

export function registerWebhookRoutes(router: Router<AuthState>, service: WebhookService): void {
  router.get('/api/v1/webhooks', async (ctx) => {
    ctx.body = await service.list(orgIdOf(ctx.state));
  });

  // The registration's 400 has a body here, unlike elsewhere: {success: false, error}.
  router.post('/api/v1/webhooks', async (ctx) => {
    try {
      const { endpoint } = parseOrThrow(registerWebhook, await readJsonObject(ctx), 'webhook registration');
      const { webhookId, secret } = await service.register(orgIdOf(ctx.state), endpoint, actorOf(ctx.state));
      ctx.body = { success: true, webhookId, secret };
    } catch (err) {
      const e = toAppError(err);
      if (e.status !== 400) throw err;
      ctx.status = 400;
      ctx.body = { success: false, error: e.message };
    }
  });

  router.get('/api/v1/webhooks/:id', async (ctx) => {
    ctx.body = await service.get(orgIdOf(ctx.state), ctx.params.id ?? '');
  });
  router.delete('/api/v1/webhooks/:id', async (ctx) => {
    await service.remove(orgIdOf(ctx.state), ctx.params.id ?? '', actorOf(ctx.state));
    ctx.status = 204;
  });
  router.post('/api/v1/webhooks/:id/rotate-secret', async (ctx) => {
    ctx.body = await service.rotateSecret(orgIdOf(ctx.state), ctx.params.id ?? '', actorOf(ctx.state));
  });
  router.post('/api/v1/webhooks/:id/enable', async (ctx) => {
    ctx.body = await service.enable(orgIdOf(ctx.state), ctx.params.id ?? '', actorOf(ctx.state));
  });
  router.get('/api/v1/webhooks/:id/attempts', async (ctx) => {
    const { page, limit } = parseOrThrow(attemptsQuery, ctx.query, 'query');
    ctx.body = await service.attempts(orgIdOf(ctx.state), ctx.params.id ?? '', page, limit);
  });
  router.post('/api/v1/webhooks/:id/replay', async (ctx) => {
    const which = parseOrThrow(replayRequest, await readJsonObject(ctx), 'replay request');
    ctx.status = 202;
    ctx.body = await service.replay(orgIdOf(ctx.state), ctx.params.id ?? '', which, actorOf(ctx.state));
  });
}

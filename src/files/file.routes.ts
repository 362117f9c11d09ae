// The specified endpoints 6, 7 and 8 (upload URLs, file status) and the extended file view.
// Thin: parse, call the service, answer.
import type { Router } from '@koa/router';
import { actorOf, orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { ValidationError } from '../shared/errors.js';
import { readJsonObject } from '../shared/http/body.js';
import { parseOrThrow } from '../shared/validation.js';
import { presignV1, presignV2 } from './file.schemas.js';
import type { FileService } from './file.service.js';

export function registerFileRoutes(router: Router<AuthState>, service: FileService): void {
  router.post('/api/v1/presigned-url', async (ctx) => {
    const input = parseOrThrow(presignV1, await readJsonObject(ctx), 'upload request');
    ctx.body = await service.issueUploadUrl(orgIdOf(ctx.state), { ...input, api: 1 }, actorOf(ctx.state));
  });
  router.post('/api/v2/presigned-url', async (ctx) => {
    const input = parseOrThrow(presignV2, await readJsonObject(ctx), 'upload request');
    ctx.body = await service.issueUploadUrl(orgIdOf(ctx.state), { ...input, api: 2 }, actorOf(ctx.state));
  });

  // Endpoint 8. The body is a JSON string ("Clean"); the specified 400 is a missing file key.
  router.get('/api/v2/file-status', () => {
    throw new ValidationError('The file key or UUID is missing: GET /api/v2/file-status/{uuid}.', [{ pointer: '#/path/uuid', detail: 'is missing' }]);
  });
  router.get('/api/v2/file-status/:uuid', async (ctx) => {
    const status = await service.status(orgIdOf(ctx.state), ctx.params.uuid ?? '');
    ctx.type = 'application/json';
    ctx.body = JSON.stringify(status);
  });

  // everything known about a file, for humans (status, checksum, threat, signature).
  router.get('/api/v2/files/:uuid', async (ctx) => {
    ctx.body = await service.view(orgIdOf(ctx.state), ctx.params.uuid ?? '');
  });
}

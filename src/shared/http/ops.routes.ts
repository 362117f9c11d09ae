// Operations endpoints: liveness, readiness (the database decides; the bucket's Object Lock is told), Prometheus metrics, the
// OpenAPI document and a docs page served from the swagger-ui-dist package (no CDN).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Router } from '@koa/router';
import type { Sequelize } from 'sequelize';
import { AppError } from '../errors.js';
import { sameSecret } from '../secrets.js';
import type { HttpMetrics } from './observability.js';

const require = createRequire(import.meta.url);
const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Guarantee Registry API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script></body></html>`;
const DOCS_INIT = "window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#ui', deepLinking: true });\n";

export interface OpsDeps {
  db: Sequelize;
  metrics: HttpMetrics;
  metricsToken?: string;
  openApi: () => unknown;
  /** Whether the bucket keeps attached documents under Object Lock, as last asked ('unknown' before the store answered). */
  objectLock?: () => string;
  /** The transparency log's witnesses as they last answered (told, not deciding: the log goes on without them). */
  logWitnesses?: () => Promise<Array<{ name: string; url: string; up: boolean; size: number | null; lastError: string | null }>>;
}

export function registerOpsRoutes<S>(router: Router<S>, deps: OpsDeps): void {
  let openApiJson: string | undefined;

  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  // Detail that does not decide readiness: a bucket without Object Lock still serves (docs/operations.md "Records").
  const detail = () => (deps.objectLock ? { documents: { objectLock: deps.objectLock() } } : {});

  /** The witnesses' state: 'degraded' while one is down (checkpoints go on, uncosigned by it). */
  const logDetail = async () => {
    if (!deps.logWitnesses) return {};
    const witnesses = await deps.logWitnesses().catch(() => undefined);
    if (!witnesses) return { log: { status: 'unknown' } };
    if (!witnesses.length) return {};
    return { log: { status: witnesses.every((w) => w.up) ? 'ok' : 'degraded', witnesses } };
  };

  router.get('/readyz', async (ctx) => {
    try {
      await deps.db.query('SELECT 1', { raw: true });
      ctx.body = { status: 'ready', database: 'up', ...detail(), ...(await logDetail()) };
    } catch {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', database: 'down', ...detail() };
    }
  });

  router.get('/metrics', async (ctx) => {
    if (deps.metricsToken) {
      const bearer = /^Bearer (.+)$/.exec(ctx.get('Authorization'))?.[1];
      if (!bearer || !sameSecret(bearer, deps.metricsToken)) throw new AppError(401, 'unauthorized', 'The metrics need Authorization: Bearer <METRICS_TOKEN>.');
    }
    ctx.type = deps.metrics.registry.contentType;
    ctx.body = await deps.metrics.registry.metrics();
  });

  router.get('/openapi.json', (ctx) => {
    openApiJson ??= JSON.stringify(deps.openApi());
    ctx.type = 'application/json';
    ctx.body = openApiJson;
  });

  router.get('/docs', (ctx) => {
    ctx.type = 'html';
    ctx.body = DOCS_HTML;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = DOCS_INIT;
  });
  router.get('/docs/assets/:file', async (ctx) => {
    const file = ctx.params.file ?? '';
    const type = ASSETS[file];
    if (!type) throw new AppError(404, 'not_found', 'No such asset.');
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = await readFile(join(SWAGGER_DIR, file));
  });
}

// Builds the Koa application without listening: server.ts listens, tests drive it in-process.
import { Router } from '@koa/router';
import Koa from 'koa';
import type { Config } from '../config/index.js';
import type { WebServices } from './composition.js';
import { registerFileRoutes } from './files/file.routes.js';
import { registerStorageEventRoutes, STORAGE_EVENTS_PATH } from './files/storage-events.routes.js';
import { registerAmendmentRoutes } from './guarantees/amendment.routes.js';
import { registerGuaranteeRoutes } from './guarantees/guarantee.routes.js';
import { registerNotarizationRoutes } from './notarization/notarization.routes.js';
import { registerAuditRoutes } from './audit/audit.routes.js';
import { registerLogRoutes } from './log/log.routes.js';
import { registerAuthorityRoutes } from './authorities/authority.routes.js';
import { PAGE_FORM_BYTES, registerAuthorityPages } from './authorities/pages/pages.routes.js';
import { buildOpenApiDocument } from './openapi.js';
import { authenticate, type AuthState } from './orgs/auth.middleware.js';
import type { OrgKind } from './orgs/org.repository.js';
import type { OpenQueues } from './queues.js';
import { ForbiddenError } from './shared/errors.js';
import type { Sequelize } from './shared/db/sequelize.js';
import { clientAddress } from './shared/http/client-address.js';
import { adminBoard } from './shared/http/admin.js';
import { MAX_BODY_BYTES } from './shared/http/body.js';
import { createBodyBudget } from './shared/http/body-budget.js';
import { errorHandler } from './shared/http/error-handler.js';
import { createMetrics, observe, type HttpMetrics } from './shared/http/observability.js';
import { registerOpsRoutes } from './shared/http/ops.routes.js';
import type { Logger } from './shared/logger.js';
import type { RedisConnection } from './shared/queues.js';
import { createMissWatch, publicLimits } from './verification/public-limits.js';
import { MAX_VERIFICATION_BODY_BYTES, registerVerificationRoutes } from './verification/verification.routes.js';
import { registerVerifyPage } from './verification/verify-page.js';
import { registerWebhookRoutes } from './webhooks/webhook.routes.js';

export interface AppDeps {
  config: Config;
  logger: Logger;
  /** The pool the readiness check pings. */
  db: Sequelize;
  metrics?: HttpMetrics;
  /** The queues Bull Board shows (the caller owns their connection). */
  queues: OpenQueues;
  /** Where the public endpoints' limits and misses are counted for every web process (the caller owns it); without it, per process. */
  redis?: RedisConnection;
  /** The API's services, built by the composition root (src/composition.ts). */
  services: WebServices;
  /** The bucket's Object Lock as last asked, for /readyz (src/files/document-lock.ts watchObjectLock). */
  objectLock?: () => string;
}

/** The Koa application, with the routes it answers ("get /api/v2/guarantees/{id}"), which the OpenAPI document must match (test/integration/ops.test.ts). */
export type RegistryApp = Koa & { routes: readonly string[] };

/** Bytes of public bodies (4 KiB at most each) in flight in a process, and from one client (an address, or an IPv6 /64). */
export const PUBLIC_BODY_BYTES_IN_FLIGHT = 4 * 1024 * 1024;
export const PUBLIC_BODY_BYTES_PER_CLIENT = 64 * 1024;

/** The largest document the /authority pages take with a form (the API's presigned uploads take up to MAX_UPLOAD_BYTES). */
export const MAX_PAGE_UPLOAD_BYTES = 20 * 1024 * 1024;

/** Paths both kinds of key reach (each organization its own webhook endpoints). */
const SHARED_PREFIXES = ['/api/v1/webhooks'];
/** The authorities' API: their keys reach it, and only it (and SHARED_PREFIXES). */
export const AUTHORITY_PREFIX = '/api/authority/';

/** A 403 for a key whose kind of organization does not reach `path` (lower-cased), before its body is read. */
function refuseOtherKind(kind: OrgKind, path: string): void {
  if (SHARED_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`))) return;
  const authorityPath = path.startsWith(AUTHORITY_PREFIX) || path === AUTHORITY_PREFIX.slice(0, -1);
  if (authorityPath && kind !== 'authority') throw new ForbiddenError("This is the contracting authorities' API: an issuer's key does not reach it.");
  if (!authorityPath && kind === 'authority') {
    throw new ForbiddenError(`An authority's key reaches only ${AUTHORITY_PREFIX}... and the webhooks endpoints: this route is the issuers'.`);
  }
}

export function createApp(deps: AppDeps): RegistryApp {
  const { config, logger, db, queues } = deps;
  const metrics = deps.metrics ?? createMetrics();
  const { orgs, guarantees, amendments, proofs, verifications, webhooks, files, audit, authorities, sessions, signIn, log } = deps.services;

  // Behind a router, the client's address is the last X-Forwarded-For hop, the one the router
  // appended: the hops before it are whatever the client sent.
  const app = new Koa({ proxy: config.TRUST_PROXY, maxIpsCount: 1 });
  app.silent = true; // errors are logged by errorHandler, once
  app.use(observe(logger, metrics));
  app.use(errorHandler(logger));

  if (config.ADMIN_USER && config.ADMIN_PASSWORD) {
    app.use(
      adminBoard(queues.all, { user: config.ADMIN_USER, password: config.ADMIN_PASSWORD }, config.AUTH_FAILURES_PER_MINUTE, async (e) => {
        await audit.record(
          { orgId: null, actor: `admin:${e.user}`, action: e.action, target: e.target, requestId: e.requestId, outcome: e.outcome },
          new Date(),
        );
      }),
    );
  }

  // Every /api path needs a key, matched by a route or not (so that probing reveals nothing).
  const requireKey = authenticate(orgs, { perKeyPerMinute: config.RATE_LIMIT_PER_MINUTE, failuresPerMinute: config.AUTH_FAILURES_PER_MINUTE });
  // Bodies are received only once the key is known, within its share of the process's bytes in flight.
  const bodies = createBodyBudget({
    processBytes: config.BODY_BYTES_IN_FLIGHT,
    perOwnerBytes: config.BODY_BYTES_IN_FLIGHT_PER_KEY,
    maxBodyBytes: MAX_BODY_BYTES,
  });
  // Public bodies have a budget of their own, so that clients without a key, however many
  // networks they come from, never take the bytes the API keys' requests need.
  const publicBodies = createBodyBudget({
    processBytes: PUBLIC_BODY_BYTES_IN_FLIGHT,
    perOwnerBytes: PUBLIC_BODY_BYTES_PER_CLIENT,
    maxBodyBytes: MAX_VERIFICATION_BODY_BYTES,
  });
  // A page's form carries at most one document of the pages' upload limit.
  const pageUploadBytes = Math.min(config.MAX_UPLOAD_BYTES, MAX_PAGE_UPLOAD_BYTES);
  const pageBodies = createBodyBudget({
    processBytes: config.BODY_BYTES_IN_FLIGHT,
    perOwnerBytes: 2 * (pageUploadBytes + PAGE_FORM_BYTES),
    maxBodyBytes: pageUploadBytes + PAGE_FORM_BYTES,
  });
  const limits = { redis: deps.redis, keyPrefix: config.QUEUE_PREFIX };
  const publicLimit = publicLimits({ perAddress: config.VERIFY_RATE_PER_MINUTE, perNetwork: config.VERIFY_RATE_PER_MINUTE_PER_NETWORK, ...limits });
  const misses = createMissWatch({ ...limits, surgePerMinute: config.VERIFY_MISS_SURGE_PER_MINUTE, registry: metrics.registry, logger });
  // The prefix is compared case-insensitively: no spelling of /api gets past without a key.
  // Only /api/public/ (contracting authorities' verifications) takes none: limited per client
  // instead, and each client's bodies in flight are its own share of the public budget (a chunked
  // body counted at the route's 4 KiB), so that one client's stalled bodies never refuse another's.
  app.use(async (ctx, next) => {
    const path = ctx.path.toLowerCase();
    if (path.startsWith('/api/public/')) {
      await publicLimit(ctx, () => publicBodies.within(ctx, clientAddress(ctx.ip).network, next));
    } else if (path.startsWith('/api/') || path === '/api') {
      await requireKey(ctx, () => {
        const { principal } = ctx.state as AuthState;
        refuseOtherKind(principal.kind, path);
        return bodies.within(ctx, principal.keyPrefix, next);
      });
    } else if (path.startsWith(STORAGE_EVENTS_PATH)) await bodies.within(ctx, 'storage-events', next);
    // The authorities' pages' forms (a demand's document among them), each client within its share.
    else if (path.startsWith('/authority/') && ctx.method === 'POST') await pageBodies.within(ctx, clientAddress(ctx.ip).network, next);
    else await next();
  });

  // One router for everything: each request is matched once, and paths match exactly
  // (@koa/router would otherwise match /API/... too).
  const router = new Router<AuthState>({ sensitive: true });
  registerOpsRoutes(router, {
    db,
    metrics,
    metricsToken: config.METRICS_TOKEN,
    openApi: () => buildOpenApiDocument(config.PUBLIC_BASE_URL),
    ...(deps.objectLock && { objectLock: deps.objectLock }),
    logWitnesses: () => log.service.witnessStates(),
  });
  registerGuaranteeRoutes(router, guarantees);
  registerAmendmentRoutes(router, amendments);
  registerNotarizationRoutes(router, guarantees, amendments, proofs);
  registerAuditRoutes(router, audit);
  registerVerificationRoutes(router, { verifications, guarantees, misses, bodyTimeoutMs: config.PUBLIC_BODY_TIMEOUT_MS });
  registerVerifyPage(router);
  registerLogRoutes(router, { log: log.service, registry: metrics.registry });
  registerAuthorityRoutes(router, { service: authorities, limit: publicLimit, misses, files });
  registerAuthorityPages(router, { config, logger, sessions, signIn, service: authorities, files, limit: publicLimit, maxUploadBytes: pageUploadBytes });
  registerFileRoutes(router, files);
  registerWebhookRoutes(router, webhooks);
  registerStorageEventRoutes(router, files, config.ENCRYPTION_KEY[0] as Buffer);
  app.use(router.routes());
  // 405 (with Allow) and 501 are set here and answered by errorHandler like any error.
  app.use(router.allowedMethods());
  const routes = router.stack.flatMap((layer) =>
    layer.methods
      .filter((m) => m !== 'HEAD')
      .map(
        (m) =>
          `${m.toLowerCase()} ${String(layer.path)
            .replace(/:(\w+)/g, '{$1}')
            .replace(/\*(\w+)/g, '{$1}')}`,
      ),
  );
  return Object.assign(app, { routes });
}

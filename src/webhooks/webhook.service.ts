// Webhook endpoints of an organization: registration (URL rules and the SSRF guard, the same
// endpoint twice gives the same webhookId and secret, at most 20), listing, removal, secret
// rotation (the old secret keeps signing for a grace period), re-enabling, the attempts made,
// and replays. A replay only writes to the database (the deliveries are due again and their
// events back in the outbox); the relay queues them, so it works while Redis is away too.
import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { Transaction } from '../shared/db/sequelize.js';
import { NotFoundError, ValidationError } from '../shared/errors.js';
import { SecretContext, type SecretBox } from '../shared/secrets.js';
import { isUuid } from '../shared/validation.js';
import { checkHost, hostOf, RefusedAddressError, type AddressPolicy, type Resolver } from './ssrf.js';
import { checkEndpointUrl } from './webhook-url.js';
import type { EndpointRecord, WebhookRepository } from './webhook.repository.js';
import type { WebhookView } from './webhook.schemas.js';
import type { AuditRepository } from '../audit/audit.repository.js';
import type { ApiActor } from '../orgs/auth.middleware.js';

/** At most this many webhook endpoints per organization (docs/api.md). */
export const MAX_WEBHOOKS_PER_ORG = 20;

export interface WebhookSettings {
  allowHttp: boolean;
  /** How long the previous secret keeps signing after a rotation. */
  rotationGraceMs: number;
}

/** A new signing secret: `whsec_` and 32 random bytes in base64, as Standard Webhooks libraries take it. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function createWebhookService(deps: {
  repo: WebhookRepository;
  /** The organizations' owner: a registration takes its organization's row lock (orgs). */
  organizations: { lockForUpdate(orgId: string, t: Transaction): Promise<boolean> };
  secrets: SecretBox;
  resolver: Resolver;
  policy: AddressPolicy;
  settings: WebhookSettings;
  /** Wakes the outbox relay after a replay committed. */
  wake: () => void;
  /** The audit trail: each change to an endpoint is a row of its organization's chain, written with it. */
  audit: Pick<AuditRepository, 'append'>;
  now?: () => Date;
}) {
  const { repo, secrets, settings } = deps;
  const now = deps.now ?? (() => new Date());

  async function own(orgId: string, id: string): Promise<EndpointRecord> {
    const endpoint = isUuid(id) ? await repo.endpoint(id, orgId) : undefined;
    if (!endpoint) throw new NotFoundError(`No webhook ${id}.`);
    return endpoint;
  }

  const view = (e: EndpointRecord, at: Date): WebhookView => ({
    webhookId: e.id,
    endpoint: e.url,
    status: e.status,
    disabledReason: e.disabledReason,
    failingSince: e.failingSince?.toISOString() ?? null,
    previousSecretValidUntil: e.previousSecretEnc && e.previousSecretUntil && e.previousSecretUntil > at ? e.previousSecretUntil.toISOString() : null,
    createdAt: e.createdAt.toISOString(),
  });

  /** The audit row of a change to endpoint `id`, to write in the change's transaction; none without an actor. */
  const audited = (orgId: string, by: ApiActor | undefined, action: string, id: string) =>
    by && ((t: Transaction, at: Date) => deps.audit.append({ orgId, ...by, action, target: `webhook:${id}`, outcome: 'ok' }, at, t));

  return {
    /** Registers `endpoint`, or finds it registered: the same webhookId and secret either way. */
    async register(orgId: string, endpoint: string, by?: ApiActor): Promise<{ webhookId: string; secret: string; created: boolean }> {
      const checked = checkEndpointUrl(endpoint, { allowHttp: settings.allowHttp });
      if (!checked.ok) throw new ValidationError(checked.error, [{ pointer: '#/endpoint', detail: checked.error }]);
      try {
        await checkHost(hostOf(checked.url), deps.resolver, deps.policy);
      } catch (err) {
        if (!(err instanceof RefusedAddressError)) throw err;
        const detail = `endpoint is not reachable as a public address: ${err.publicReason}`;
        throw new ValidationError(detail, [{ pointer: '#/endpoint', detail }]);
      }
      const urlHash = createHash('sha256').update(checked.normalized).digest();
      return repo.transaction(async (t) => {
        // Registrations of one organization take turns: the duplicate check and the limit hold.
        if (!(await deps.organizations.lockForUpdate(orgId, t))) throw new NotFoundError('The organization no longer exists.');
        const existing = await repo.endpointByUrl(orgId, urlHash, t);
        if (existing) return { webhookId: existing.id, secret: secrets.open(existing.secretEnc, SecretContext.webhook(existing.id)), created: false };
        if ((await repo.countEndpoints(orgId, t)) >= MAX_WEBHOOKS_PER_ORG) {
          const detail = `at most ${MAX_WEBHOOKS_PER_ORG} webhooks per organization; delete one first`;
          throw new ValidationError(detail, [{ pointer: '#/endpoint', detail }]);
        }
        const secret = newSecret();
        const id = uuidv7();
        const at = now();
        await repo.insertEndpoint({ id, orgId, url: checked.normalized, urlHash, secretEnc: secrets.seal(secret, SecretContext.webhook(id)), at }, t);
        await audited(orgId, by, 'webhook.register', id)?.(t, at);
        return { webhookId: id, secret, created: true };
      });
    },

    async list(orgId: string): Promise<Array<{ webhookId: string; endpoint: string }>> {
      return (await repo.endpoints(orgId)).map((e) => ({ webhookId: e.id, endpoint: e.url }));
    },

    async get(orgId: string, id: string): Promise<WebhookView> {
      return view(await own(orgId, id), now());
    },

    async remove(orgId: string, id: string, by?: ApiActor): Promise<void> {
      const record = audited(orgId, by, 'webhook.delete', id);
      if (!isUuid(id) || !(await repo.deleteEndpoint(orgId, id, record && ((t) => record(t, now()))))) throw new NotFoundError(`No webhook ${id}.`);
    },

    /** A new secret; the previous one keeps signing (alongside) until the grace period ends. */
    async rotateSecret(orgId: string, id: string, by?: ApiActor): Promise<{ webhookId: string; secret: string; previousSecretValidUntil: string }> {
      await own(orgId, id);
      const secret = newSecret();
      const at = now();
      const until = new Date(at.getTime() + settings.rotationGraceMs);
      const record = audited(orgId, by, 'webhook.rotate_secret', id);
      if (!(await repo.rotateSecret(orgId, id, secrets.seal(secret, SecretContext.webhook(id)), until, at, record && ((t) => record(t, at)))))
        throw new NotFoundError(`No webhook ${id}.`);
      return { webhookId: id, secret, previousSecretValidUntil: until.toISOString() };
    },

    async enable(orgId: string, id: string, by?: ApiActor): Promise<WebhookView> {
      await own(orgId, id);
      const at = now();
      const record = audited(orgId, by, 'webhook.enable', id);
      await repo.enable(orgId, id, at, record && ((t) => record(t, at)));
      return view(await own(orgId, id), now());
    },

    async attempts(orgId: string, id: string, page: number, limit: number) {
      await own(orgId, id);
      const { total, attempts } = await repo.attempts(id, page, limit);
      return {
        totalItems: total,
        attempts: attempts.map((a) => ({
          attemptId: a.id,
          eventId: a.eventId,
          eventType: a.eventType,
          attemptedAt: a.attemptedAt.toISOString(),
          durationMs: a.durationMs,
          statusCode: a.statusCode,
          error: a.error,
          succeeded: a.succeeded,
        })),
      };
    },

    /** Makes one event, or every failed delivery since a time, due again to this endpoint. */
    async replay(orgId: string, id: string, which: { eventId: string } | { since: Date }, by?: ApiActor): Promise<{ replayed: number }> {
      const endpoint = await own(orgId, id);
      if (endpoint.status === 'disabled')
        throw new ValidationError('The webhook is disabled; enable it first (POST .../enable).', [{ pointer: '#/path/id', detail: 'is disabled' }]);
      const target = 'eventId' in which ? { eventId: which.eventId } : { failedSince: which.since };
      if ('eventId' in which && !isUuid(which.eventId)) throw new NotFoundError(`No event ${which.eventId}.`);
      const at = now();
      const record = audited(orgId, by, 'webhook.replay', id);
      const replayed = await repo.replay(orgId, id, target, at, record && ((t) => record(t, at)));
      if ('eventId' in which && replayed === 0) throw new NotFoundError(`No event ${which.eventId}.`);
      deps.wake();
      return { replayed };
    },
  };
}

export type WebhookService = ReturnType<typeof createWebhookService>;

// Organizations and API keys: creation, revocation, and authentication of a presented key.
import { NotFoundError, ValidationError } from '../shared/errors.js';
import { apiKeyMatches, apiKeyPrefix, generateApiKey } from './api-key.js';
import { normalizeRegister, normalizeVat } from './org-identity.js';
import type { Organization, OrgRepository, StoredApiKey } from './org.repository.js';
import type { AuditRepository } from '../audit/audit.repository.js';
import type { Transaction } from '../shared/db/sequelize.js';

/** Who makes an operator's change, for the audit trail: `cli` (the operator's commands). */
export interface Actor {
  actor: string;
  requestId?: string | null;
}

/** Who is calling: the organization a valid key belongs to. */
export interface Principal {
  orgId: string;
  keyPrefix: string;
}

export interface OrgServiceOptions {
  /** The audit trail: the operator's changes to organizations and keys are rows of each organization's chain. */
  audit?: Pick<AuditRepository, 'append'>;
  /** How long a looked-up key is trusted without asking the database again; revocation takes at most this long. */
  cacheTtlMs?: number;
  cacheMaxEntries?: number;
  now?: () => number;
}

/** How long a prefix that matched no key is answered as unknown without asking the database. */
export const UNKNOWN_TTL_MS = 60_000;

function orgName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 255) throw new ValidationError('An organization name has 1 to 255 characters.');
  return trimmed;
}

export function createOrgService(repo: OrgRepository, opts: OrgServiceOptions = {}) {
  const audited = (t: Transaction, by: Actor, orgId: string, action: string, target: string) => {
    if (!opts.audit) throw new Error('an audited change without the audit trail');
    return opts.audit.append({ orgId, actor: by.actor, requestId: by.requestId ?? null, action, target, outcome: 'ok' }, new Date(), t);
  };
  const ttl = opts.cacheTtlMs ?? 1000;
  const maxEntries = opts.cacheMaxEntries ?? 10_000;
  const now = opts.now ?? Date.now;
  const cache = new Map<string, { key: StoredApiKey; until: number }>();
  // Prefixes that matched no key: asked again only after UNKNOWN_TTL_MS. A client hammering with
  // a wrong or deleted key costs no database read per request. (Prefixes are random: one unknown
  // now is not about to be created.)
  const unknown = new Map<string, number>();

  /** The cached record of a key's prefix, while it is fresh. */
  function cached(prefix: string): StoredApiKey | undefined {
    const hit = cache.get(prefix);
    return hit && hit.until > now() ? hit.key : undefined;
  }

  function principalOf(presented: string, stored: StoredApiKey): Principal | undefined {
    if (stored.revokedAt || !apiKeyMatches(presented, stored.hash)) return undefined;
    return { orgId: stored.orgId, keyPrefix: stored.prefix };
  }

  return {
    /** Creates an organization, with the public identifiers the operator records for it (VAT number, register entry). */
    async createOrganization(name: string, identity: { vat?: string; register?: string } = {}, by?: Actor): Promise<Organization> {
      return repo.createOrganization(
        orgName(name),
        {
          ...(identity.vat !== undefined && { vatNumber: normalizeVat(identity.vat) }),
          ...(identity.register !== undefined && { register: normalizeRegister(identity.register) }),
        },
        by && ((t, org) => audited(t, by, org.id, 'organization.create', `organization:${org.id}`)),
      );
    },

    /** Changes an organization's public identity (the operator's CLI only: no API route reaches it). */
    async setPublicIdentity(orgId: string, changes: { name?: string; vat?: string; register?: string }, by?: Actor): Promise<Organization> {
      if (changes.name === undefined && changes.vat === undefined && changes.register === undefined) {
        throw new ValidationError('Nothing to change: give --name, --vat or --register.');
      }
      const found = await repo.setIdentity(
        orgId,
        {
          ...(changes.name !== undefined && { name: orgName(changes.name) }),
          ...(changes.vat !== undefined && { vatNumber: normalizeVat(changes.vat) }),
          ...(changes.register !== undefined && { register: normalizeRegister(changes.register) }),
        },
        by && ((t) => audited(t, by, orgId, 'organization.set_identity', `organization:${orgId}`)),
      );
      const org = found ? await repo.findOrganization(orgId) : undefined;
      if (!org) throw new NotFoundError(`No organization ${orgId}.`);
      return org;
    },

    /** Creates a key for an organization; the returned key is shown once and never stored. */
    async createApiKey(orgId: string, by?: Actor): Promise<{ key: string; prefix: string }> {
      if (!(await repo.findOrganization(orgId))) throw new NotFoundError(`No organization ${orgId}.`);
      const { key, prefix, hash } = generateApiKey();
      // The key's public prefix names it in the trail; the key itself is in no row.
      await repo.insertApiKey(orgId, prefix, hash, by && ((t) => audited(t, by, orgId, 'api_key.create', `api_key:${prefix}`)));
      return { key, prefix };
    },

    async revokeApiKey(prefix: string, by?: Actor): Promise<void> {
      if (!(await repo.revokeApiKey(prefix, by && ((t, orgId) => audited(t, by, orgId, 'api_key.revoke', `api_key:${prefix}`))))) {
        throw new NotFoundError(`No active API key ${prefix}.`);
      }
      cache.delete(prefix);
    },

    /** The key's principal when it is known from the last `cacheTtlMs`, without a database read. */
    authenticateCached(presented: string): Principal | undefined {
      const prefix = apiKeyPrefix(presented);
      const stored = prefix === undefined ? undefined : cached(prefix);
      return stored && principalOf(presented, stored);
    },

    /** The principal of a presented key, or undefined when it is malformed, unknown or revoked. */
    async authenticate(presented: string): Promise<Principal | undefined> {
      const prefix = apiKeyPrefix(presented);
      if (prefix === undefined) return undefined;
      const fresh = cached(prefix);
      if (fresh) return principalOf(presented, fresh);
      if ((unknown.get(prefix) ?? 0) > now()) return undefined;
      const stored = await repo.findApiKey(prefix);
      if (!stored) {
        if (unknown.size >= maxEntries) unknown.clear();
        unknown.set(prefix, now() + UNKNOWN_TTL_MS);
        return undefined;
      }
      if (cache.size >= maxEntries) cache.clear();
      cache.set(prefix, { key: stored, until: now() + ttl });
      return principalOf(presented, stored);
    },
  };
}

export type OrgService = ReturnType<typeof createOrgService>;

// Organizations and API keys: creation, revocation, and authentication of a presented key.
import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import { ER_DUP_ENTRY, mysqlErrno } from '../shared/db/sequelize.js';
import { apiKeyMatches, apiKeyPrefix, generateApiKey } from './api-key.js';
import { normalizeAusa, normalizeFiscalCode, normalizeIpa, normalizeRegister, normalizeVat } from './org-identity.js';
import { isVatHeldConflict, type Organization, type OrgKind, type OrgRepository, type StoredApiKey, type VatHolder } from './org.repository.js';
import type { AuditRepository } from '../audit/audit.repository.js';
import type { Transaction } from '../shared/db/sequelize.js';

/** Who makes an operator's change, for the audit trail: `cli` (the operator's commands). */
export interface Actor {
  actor: string;
  requestId?: string | null;
}

/** Who is calling: the organization a valid key belongs to, and its kind (which routes it reaches). */
export interface Principal {
  orgId: string;
  kind: OrgKind;
  keyPrefix: string;
}

/** What the operator gives for a new organization besides its name (CLI `org create`). */
export interface NewOrgIdentity {
  kind?: OrgKind;
  vat?: string | undefined;
  /** Another organization may have the same VAT number (a group of companies shares one; `--allow-shared-vat`). */
  allowSharedVat?: boolean | undefined;
  register?: string | undefined;
  /** An authority's: required for one, refused for an issuer (whose identity is its VAT number). */
  fiscalCode?: string | undefined;
  ausa?: string | undefined;
  ipa?: string | undefined;
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

/** An organization as changed, and the other organizations that have its VAT number too (none when it has it alone). */
export type OrgWithVat = Organization & { vatSharedWith: VatHolder[] };

/** How a refusal or a message names an organization. */
export const namedOrg = (o: VatHolder) => `${o.id} ("${o.name}")`;

/** The refusal of a VAT number other organizations have (when not given as shared). */
function vatConflict(vat: string, holders: VatHolder[]): ConflictError {
  const [one, has] = holders.length === 1 ? ['Organization', 'has'] : ['Organizations', 'have'];
  return new ConflictError(
    `${one} ${holders.map(namedOrg).join(', ')} already ${has} the VAT number ${vat}: nothing was changed. ` +
      'Give --allow-shared-vat if they share it (a group of companies may have one VAT number).',
  );
}

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

  /**
   * The other organizations that have `vat` (but `orgId`), read in the change's transaction `t`;
   * refused unless `shared`. Two changes racing to hold the same VAT number as their own meet on
   * the unique key (migration 0031), whose violation `refusedOnRace` turns into this refusal.
   */
  async function vetVat(vat: string, orgId: string | null, shared: boolean, t: Transaction): Promise<VatHolder[]> {
    const holders = await repo.vatHolders(vat, orgId, t);
    if (holders.length && !shared) throw vatConflict(vat, holders);
    return holders;
  }
  /** A lost race to hold `vat` as one's own (another organization committed it meanwhile): the refusal naming it. */
  async function refusedOnRace(err: unknown, vat: string | undefined, orgId: string | null): Promise<never> {
    if (vat === undefined || !isVatHeldConflict(err)) throw err;
    const holders = await repo.vatHolders(vat, orgId);
    throw holders.length ? vatConflict(vat, holders) : err;
  }
  // Prefixes that matched no key: asked again only after UNKNOWN_TTL_MS. A client hammering with
  // a wrong or deleted key costs no database read per request. (Prefixes are random: one unknown
  // now is not about to be created.)
  const unknown = new Map<string, number>();

  /** The cached record of a key's prefix, while it is fresh. */
  function cached(prefix: string): StoredApiKey | undefined {
    const hit = cache.get(prefix);
    return hit && hit.until > now() ? hit.key : undefined;
  }

  // Reads of a prefix's record in flight: the requests that present a key while it is not cached
  // share one database read, and each compares its own key with the record. One key opening 200
  // requests at once made a read for each request whose headers came before the first read's
  // answer (up to 119 of the 200 in bench/hostile.ts), queued on the pool, each costing the web
  // process and MariaDB CPU while the burst was being answered.
  const lookups = new Map<string, Promise<StoredApiKey | undefined>>();

  /**
   * The stored record of a prefix, read once for all who ask meanwhile, and remembered (found: for
   * `cacheTtlMs`; unknown: for UNKNOWN_TTL_MS) unless the key was revoked while it was read.
   */
  function lookUp(prefix: string): Promise<StoredApiKey | undefined> {
    const pending = lookups.get(prefix);
    if (pending) return pending;
    const lookup: Promise<StoredApiKey | undefined> = repo.findApiKey(prefix).then(
      (stored) => {
        // A revocation meanwhile forgot this read: its record is given to who asked, not remembered.
        if (lookups.get(prefix) !== lookup) return stored;
        lookups.delete(prefix);
        if (!stored) {
          if (unknown.size >= maxEntries) unknown.clear();
          unknown.set(prefix, now() + UNKNOWN_TTL_MS);
        } else {
          if (cache.size >= maxEntries) cache.clear();
          cache.set(prefix, { key: stored, until: now() + ttl });
        }
        return stored;
      },
      (err: unknown) => {
        if (lookups.get(prefix) === lookup) lookups.delete(prefix);
        throw err;
      },
    );
    lookups.set(prefix, lookup);
    return lookup;
  }

  function principalOf(presented: string, stored: StoredApiKey): Principal | undefined {
    if (stored.revokedAt || !apiKeyMatches(presented, stored.hash)) return undefined;
    return { orgId: stored.orgId, kind: stored.kind, keyPrefix: stored.prefix };
  }

  return {
    /**
     * Creates an organization, with the public identifiers the operator records for it (VAT
     * number, register entry); an authority with its fiscal code (required, one organization
     * per code: a 409 for a second), codice AUSA and IPA code. A VAT number another organization
     * has is refused (a 409 naming it) unless `allowSharedVat`.
     */
    async createOrganization(name: string, identity: NewOrgIdentity = {}, by?: Actor): Promise<OrgWithVat> {
      const kind = identity.kind ?? 'issuer';
      if (kind === 'authority' && identity.fiscalCode === undefined)
        throw new ValidationError('An authority needs its fiscal code (--fiscal-code, 11 digits).');
      if (kind === 'issuer' && (identity.fiscalCode !== undefined || identity.ausa !== undefined || identity.ipa !== undefined)) {
        throw new ValidationError("--fiscal-code, --ausa and --ipa are an authority's (--kind authority); an issuer is named by its VAT number.");
      }
      if (identity.allowSharedVat && identity.vat === undefined) throw new ValidationError('--allow-shared-vat goes with --vat.');
      const fiscalCode = identity.fiscalCode === undefined ? undefined : normalizeFiscalCode(identity.fiscalCode);
      const vat = identity.vat === undefined ? undefined : normalizeVat(identity.vat);
      const shared = identity.allowSharedVat === true;
      let vatSharedWith: VatHolder[] = [];
      try {
        const org = await repo.createOrganization(
          orgName(name),
          {
            kind,
            ...(vat !== undefined && { vatNumber: vat, vatShared: shared }),
            ...(identity.register !== undefined && { register: normalizeRegister(identity.register) }),
            ...(fiscalCode !== undefined && { fiscalCode }),
            ...(identity.ausa !== undefined && { ausa: normalizeAusa(identity.ausa) }),
            ...(identity.ipa !== undefined && { ipa: normalizeIpa(identity.ipa) }),
          },
          by && ((t, org) => audited(t, by, org.id, 'organization.create', `organization:${org.id}`)),
          vat === undefined ? undefined : async (t) => (vatSharedWith = await vetVat(vat, null, shared, t)),
        );
        return { ...org, vatSharedWith };
      } catch (err) {
        if (isVatHeldConflict(err)) return refusedOnRace(err, vat, null);
        if (mysqlErrno(err) === ER_DUP_ENTRY)
          throw new ConflictError(`Another organization has the fiscal code ${fiscalCode}: an authority is one organization.`);
        throw err;
      }
    },

    /** The organization, if there is one. */
    async find(orgId: string): Promise<Organization | undefined> {
      return repo.findOrganization(orgId);
    },

    /**
     * Changes an organization's public identity (the operator's CLI only: no API route reaches
     * it). A VAT number another organization has is refused (a 409 naming it) unless
     * `allowSharedVat`; the organization's own VAT number given again is no change.
     */
    async setPublicIdentity(
      orgId: string,
      changes: { name?: string; vat?: string; register?: string; ausa?: string; ipa?: string; allowSharedVat?: boolean },
      by?: Actor,
    ): Promise<OrgWithVat> {
      const { allowSharedVat, ...fields } = changes;
      if (allowSharedVat && changes.vat === undefined) throw new ValidationError('--allow-shared-vat goes with --vat.');
      if (Object.values(fields).every((v) => v === undefined)) {
        throw new ValidationError('Nothing to change: give --name, --vat, --register, --ausa or --ipa.');
      }
      const vat = changes.vat === undefined ? undefined : normalizeVat(changes.vat);
      const shared = allowSharedVat === true;
      let vatSharedWith: VatHolder[] = [];
      if ((changes.ausa !== undefined || changes.ipa !== undefined) && (await repo.findOrganization(orgId))?.kind === 'issuer') {
        throw new ValidationError("--ausa and --ipa are an authority's; this organization is an issuer.");
      }
      const found = await repo
        .setIdentity(
          orgId,
          {
            ...(changes.name !== undefined && { name: orgName(changes.name) }),
            ...(vat !== undefined && { vatNumber: vat, vatShared: shared }),
            ...(changes.register !== undefined && { register: normalizeRegister(changes.register) }),
            ...(changes.ausa !== undefined && { ausa: normalizeAusa(changes.ausa) }),
            ...(changes.ipa !== undefined && { ipa: normalizeIpa(changes.ipa) }),
          },
          by && ((t) => audited(t, by, orgId, 'organization.set_identity', `organization:${orgId}`)),
          vat === undefined
            ? undefined
            : async (t, current) => {
                // Its own VAT number again is no change: whoever else has it is said, not refused.
                vatSharedWith = current.vatNumber === vat ? await repo.vatHolders(vat, orgId, t) : await vetVat(vat, orgId, shared, t);
              },
        )
        .catch((err: unknown) => refusedOnRace(err, vat, orgId));
      const org = found ? await repo.findOrganization(orgId) : undefined;
      if (!org) throw new NotFoundError(`No organization ${orgId}.`);
      return { ...org, vatSharedWith };
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
      lookups.delete(prefix);
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
      const stored = await lookUp(prefix);
      return stored && principalOf(presented, stored);
    },
  };
}

export type OrgService = ReturnType<typeof createOrgService>;

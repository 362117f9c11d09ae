// The people of a contracting authority: the operator binds a person, by the fiscal code their
// identity provider vouches for (SPID, CIE), to one authority (`cli authority add-user`); whoever
// signs in to /authority is matched on it. Each binding and unbinding is a row of the
// authority's audit chain, actor `cli`.
import type { AuditRepository } from '../audit/audit.repository.js';
import type { Organization } from '../orgs/org.repository.js';
import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { AuthorityRepository } from './authority.repository.js';
import { personFiscalCode } from './fiscal-number.js';

export function createAuthorityUsers(deps: {
  repo: Pick<AuthorityRepository, 'bindUser' | 'unbindUser' | 'users' | 'authorityOfUser'>;
  orgs: { findOrganization(id: string): Promise<Organization | undefined> };
  audit: Pick<AuditRepository, 'append'>;
  now?: () => Date;
}) {
  const { repo, orgs, audit } = deps;
  const now = deps.now ?? (() => new Date());

  async function authority(orgId: string): Promise<Organization> {
    const org = await orgs.findOrganization(orgId);
    if (!org) throw new NotFoundError(`No organization ${orgId}.`);
    if (org.kind !== 'authority') throw new ValidationError(`Organization ${orgId} is an issuer: people are bound to contracting authorities only.`);
    return org;
  }
  function fiscalCodeOf(input: string): string {
    const code = personFiscalCode(input);
    if (!code) throw new ValidationError(`"${input}" is not a person's fiscal code (16 characters, the last one a check character; TINIT- may precede it).`);
    return code;
  }
  const row = (orgId: string, action: string, code: string) => ({
    orgId,
    actor: 'cli',
    requestId: null,
    action,
    target: `user:${code}`,
    outcome: 'ok',
  });

  return {
    /** Binds the person to the authority; a 409 when they are bound to another (one authority a person). */
    async add(orgId: string, fiscalCode: string): Promise<{ fiscalCode: string; already: boolean }> {
      await authority(orgId);
      const code = fiscalCodeOf(fiscalCode);
      const at = now();
      const done = await repo.bindUser(orgId, code, at, (t) => audit.append(row(orgId, 'authority.user_add', code), at, t));
      if (typeof done === 'object') throw new ConflictError(`${code} is bound to another authority (${done.other}): remove it there first.`);
      return { fiscalCode: code, already: done === 'already' };
    },

    async remove(orgId: string, fiscalCode: string): Promise<string> {
      await authority(orgId);
      const code = fiscalCodeOf(fiscalCode);
      const at = now();
      if (!(await repo.unbindUser(orgId, code, (t) => audit.append(row(orgId, 'authority.user_remove', code), at, t)))) {
        throw new NotFoundError(`${code} is not bound to authority ${orgId}.`);
      }
      return code;
    },

    async list(orgId: string): Promise<Array<{ fiscalCode: string; since: Date }>> {
      await authority(orgId);
      return repo.users(orgId);
    },

    /** The authority of whoever signed in with this fiscal code (any spelling an identity provider uses), if they are bound to one. */
    async authorityOf(fiscalNumber: string): Promise<string | undefined> {
      const code = personFiscalCode(fiscalNumber);
      return code === undefined ? undefined : repo.authorityOfUser(code);
    },
  };
}

export type AuthorityUsers = ReturnType<typeof createAuthorityUsers>;

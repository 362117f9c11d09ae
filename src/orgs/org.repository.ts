// Organizations and API keys in the database. Returns plain objects.
import { v7 as uuidv7 } from 'uuid';
import { AUDIT_SQL } from '../audit/audit.sql.js';
import { ER_DUP_ENTRY, execute, mysqlErrno, select, write, type Sequelize, type Statement, type Transaction } from '../shared/db/sequelize.js';

/** An issuer registers guarantees; an authority (a contracting authority, stazione appaltante) is their beneficiary. */
export type OrgKind = 'issuer' | 'authority';

export interface Organization {
  id: string;
  name: string;
  kind: OrgKind;
  vatNumber: string | null;
  /** The VAT number was given as shared with other organizations (a group of companies: `--allow-shared-vat`). */
  vatShared: boolean;
  register: string | null;
  /** An authority's: its fiscal code (11 digits), codice AUSA and IPA code. */
  fiscalCode: string | null;
  ausa: string | null;
  ipa: string | null;
  createdAt: Date;
}
export interface StoredApiKey {
  prefix: string;
  orgId: string;
  /** The kind of its organization: which routes the key reaches. */
  kind: OrgKind;
  hash: Buffer;
  revokedAt: Date | null;
}

/** The key lookup of every request (cache miss), with its organization's kind; exported for the API benchmark's raw baseline. */
export const FIND_API_KEY_SQL =
  'SELECT k.prefix, k.org_id, k.key_hash, k.revoked_at, o.kind FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE k.prefix = $1';

interface OrganizationRow {
  id: string;
  name: string;
  kind: OrgKind;
  vat_number: string | null;
  vat_shared: number;
  register_entry: string | null;
  fiscal_code: string | null;
  ausa_code: string | null;
  ipa_code: string | null;
  created_at: Date;
}

const toOrganization = (r: OrganizationRow): Organization => ({
  id: r.id,
  name: r.name,
  kind: r.kind,
  vatNumber: r.vat_number,
  vatShared: Boolean(r.vat_shared),
  register: r.register_entry,
  fiscalCode: r.fiscal_code,
  ausa: r.ausa_code,
  ipa: r.ipa_code,
  createdAt: r.created_at,
});

/** What the operator records of an organization besides its name. */
export interface OrgIdentity {
  kind?: OrgKind;
  vatNumber?: string;
  /** vatNumber is shared with other organizations (the unique key on VAT numbers held as one's own lets it by). */
  vatShared?: boolean;
  register?: string;
  fiscalCode?: string;
  ausa?: string;
  ipa?: string;
}

/** The registry place's UPDATE but its WHERE (REGISTRY_SQL.takePlace, takeAuditedPlace). */
const TAKE_PLACE = `UPDATE organizations SET guarantee_count = guarantee_count + 1,
    last_created_ms = LAST_INSERT_ID(GREATEST($2, COALESCE(last_created_ms, 0) + 1))`;

/**
 * An organization's registry of guarantees, kept on its row: how many it registered (the last
 * one's sequence number) and when the last one was registered. Only this folder writes them:
 * guarantees take a place with takeRegistryPlace and read the number just taken through
 * `seqOf`, a fragment for their INSERT. Exported for the API benchmark's raw baseline.
 */
export const REGISTRY_SQL = {
  /** Takes the organization's row lock, its next number and a createdAt (epoch ms) handed back as the insert id. */
  takePlace: `${TAKE_PLACE} WHERE id = $1`,
  /** takePlace for a registration that writes its audit row: its chain's next seq too (as AUDIT_SEQ_SQL.take), left in the session variable `seqVar`. */
  takeAuditedPlace: (seqVar: string) => `${TAKE_PLACE}, audit_seq = (${seqVar} := audit_seq + 1) WHERE id = $1`,
  /** The number takePlace just took, as a scalar subquery on the organization id bound at `param` (same transaction). */
  seqOf: (param: string) => `(SELECT guarantee_count FROM organizations WHERE id = ${param})`,
  size: 'SELECT guarantee_count AS n FROM organizations WHERE id = $1',
} as const;

/**
 * An organization's audit chain's last seq, kept on its row (migration 0021): the row whose
 * lock already serializes the organization's registrations serializes its chain too, and a
 * registration's place takes the next seq in the same UPDATE (registryPlaceStatements with
 * `auditSeqVar`). src/audit takes and reads seqs only through the repository's functions.
 */
const AUDIT_SEQ_SQL = {
  /** Takes the row's lock and the chain's next seq, handed back as the insert id. */
  take: 'UPDATE organizations SET audit_seq = LAST_INSERT_ID(audit_seq + 1) WHERE id = $1',
  /**
   * Brings the head up to the chain's last row when it is behind it: the previous release,
   * during a rolling release, appended with its heads kept elsewhere (migration 0021), and an
   * append of this release then collided with its row. Only then: its locking read of the
   * chain's end takes a gap lock that two organizations' appends would deadlock on.
   */
  heal: `UPDATE organizations SET audit_seq = ${AUDIT_SQL.lastSeqOf('$1')} WHERE id = $1 AND audit_seq < ${AUDIT_SQL.lastSeqOf('$1')}`,
  /** Every organization's chain that has rows, and its last seq: the chains' heads. */
  heads: 'SELECT id AS chain, audit_seq AS seq FROM organizations WHERE audit_seq > 0',
} as const;

/**
 * takeRegistryPlace for a one-round-trip script (src/shared/db/sequelize.ts): its statements
 * leave the createdAt taken (epoch ms) in the session variable `msVar`, NULL when the
 * organization is unknown; the lock is held until the script's COMMIT. Exported for the API
 * benchmark's raw baseline.
 */
export function registryPlaceStatements(orgId: string, now: Date, msVar: string, auditSeqVar?: string): Statement[] {
  return [
    // `auditSeqVar`: the registration writes its audit row, whose seq the same UPDATE takes (AUDIT_SEQ_SQL).
    { sql: auditSeqVar ? REGISTRY_SQL.takeAuditedPlace(auditSeqVar) : REGISTRY_SQL.takePlace, bind: [orgId, now.getTime()] },
    // The seq too is this script's only when the place was taken (a pooled connection keeps variables).
    {
      sql: `SET ${msVar} = IF(ROW_COUNT() = 1, LAST_INSERT_ID(), NULL)${auditSeqVar ? `, ${auditSeqVar} = IF(ROW_COUNT() = 1, ${auditSeqVar}, NULL)` : ''}`,
      bind: [],
    },
  ];
}

/**
 * An organization's public identity beside another domain's rows (a public verification shows
 * its issuer): the join on the organization id column `orgIdColumn`, as `alias`, and its columns.
 */
export const ISSUER_SQL = {
  join: (alias: string, orgIdColumn: string) => `JOIN organizations ${alias} ON ${alias}.id = ${orgIdColumn}`,
  columns: (alias: string) => `${alias}.name AS org_name, ${alias}.vat_number AS org_vat, ${alias}.register_entry AS org_register`,
} as const;

/** The columns ISSUER_SQL.columns reads. */
export interface IssuerRow {
  org_name: string;
  org_vat: string | null;
  org_register: string | null;
}

/** An organization that has a VAT number, as a refusal names it. */
export interface VatHolder {
  id: string;
  name: string;
}

const ORGANIZATION_COLUMNS = 'id, name, kind, vat_number, vat_shared, register_entry, fiscal_code, ausa_code, ipa_code, created_at';

/** The unique key of the VAT numbers held as one's own, not shared (migration 0031): its violation is a race lost to another organization. */
const VAT_HELD_KEY = 'uq_organizations_vat_held';

/** Whether `err` is a violation of the unique key on VAT numbers held as one's own. */
export function isVatHeldConflict(err: unknown): boolean {
  if (mysqlErrno(err) !== ER_DUP_ENTRY) return false;
  const e = err as { message?: string; parent?: { message?: string }; original?: { message?: string } };
  return [e.message, e.parent?.message, e.original?.message].some((m) => m?.includes(VAT_HELD_KEY));
}

export function createOrgRepository(db: Sequelize) {
  return {
    /**
     * Takes the organization's next place in its registry: its count advances (the next
     * sequence number, which REGISTRY_SQL.seqOf reads) and the createdAt, later than the
     * previous guarantee's by at least a millisecond whatever the clock of the process (`now`),
     * comes back in one statement. The row lock serializes registrations within one
     * organization until `t` ends; a rollback gives the place back, so sequences have no gaps.
     * Undefined when the organization is unknown.
     */
    async takeRegistryPlace(orgId: string, now: Date, t: Transaction): Promise<{ createdAt: Date } | undefined> {
      const { affectedRows, insertId } = await write(db, REGISTRY_SQL.takePlace, [orgId, now.getTime()], t);
      return affectedRows === 1 ? { createdAt: new Date(insertId) } : undefined;
    },

    /** takeRegistryPlace as statements of a one-round-trip script (see the function). */
    registryPlaceStatements,

    /**
     * Takes the organization's row lock until `t` ends and its audit chain's next seq;
     * undefined when there is no such organization.
     */
    async takeAuditSeq(orgId: string, t: Transaction): Promise<number | undefined> {
      const { affectedRows, insertId } = await write(db, AUDIT_SEQ_SQL.take, [orgId], t);
      return affectedRows === 1 ? Number(insertId) : undefined;
    },

    /** AUDIT_SEQ_SQL.heal, in `t` or on its own; whether the head was behind (and is healed). */
    async healAuditSeq(orgId: string, t?: Transaction): Promise<boolean> {
      return (await execute(db, AUDIT_SEQ_SQL.heal, [orgId], t)) === 1;
    },

    /** Every organization's chain that has rows, and its last seq. */
    async auditHeads(): Promise<Array<{ chain: string; seq: number }>> {
      return (await select<{ chain: string; seq: string | number }>(db, AUDIT_SEQ_SQL.heads, [])).map((r) => ({ chain: r.chain, seq: Number(r.seq) }));
    },

    /** How many guarantees the organization registered: one primary-key read of its counter. */
    async registrySize(orgId: string): Promise<number> {
      const [row] = await select<{ n: string }>(db, REGISTRY_SQL.size, [orgId]);
      return row ? Number(row.n) : 0;
    },

    /**
     * Takes the organization's row lock until `t` ends, so that another domain's changes for one
     * organization take turns (webhook registrations); false when there is no such organization.
     */
    async lockForUpdate(orgId: string, t: Transaction): Promise<boolean> {
      return (await select(db, 'SELECT id FROM organizations WHERE id = $1 FOR UPDATE', [orgId], t)).length === 1;
    },

    /**
     * `before`: what the change checks first, in its transaction (that no other organization has
     * its VAT number); `also`: more of the same change, in its transaction (its audit row).
     */
    async createOrganization(
      name: string,
      identity: OrgIdentity = {},
      also?: (t: Transaction, org: Organization) => Promise<unknown>,
      before?: (t: Transaction) => Promise<unknown>,
    ): Promise<Organization> {
      const org: Organization = {
        id: uuidv7(),
        name,
        kind: identity.kind ?? 'issuer',
        vatNumber: identity.vatNumber ?? null,
        vatShared: identity.vatNumber !== undefined && identity.vatShared === true,
        register: identity.register ?? null,
        fiscalCode: identity.fiscalCode ?? null,
        ausa: identity.ausa ?? null,
        ipa: identity.ipa ?? null,
        createdAt: new Date(),
      };
      await db.transaction(async (t) => {
        await before?.(t);
        await execute(
          db,
          `INSERT INTO organizations (id, name, kind, vat_number, vat_shared, register_entry, fiscal_code, ausa_code, ipa_code, guarantee_count, created_at)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0, $10)`,
          [org.id, org.name, org.kind, org.vatNumber, org.vatShared, org.register, org.fiscalCode, org.ausa, org.ipa, org.createdAt],
          t,
        );
        await also?.(t, org);
      });
      return org;
    },

    async findOrganization(id: string): Promise<Organization | undefined> {
      const [row] = await select<OrganizationRow>(db, `SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE id = $1`, [id]);
      return row && toOrganization(row);
    },

    /** The organizations but `exceptId` that have this VAT number (shared or not), oldest first. */
    async vatHolders(vatNumber: string, exceptId: string | null, t?: Transaction): Promise<VatHolder[]> {
      return select<VatHolder>(
        db,
        "SELECT id, name FROM organizations WHERE vat_number = $1 AND id <> COALESCE($2, '') ORDER BY created_at, id",
        [vatNumber, exceptId],
        t,
      );
    },

    /** The authority with this fiscal code, if there is one. */
    async findAuthorityByFiscalCode(fiscalCode: string): Promise<Organization | undefined> {
      const [row] = await select<OrganizationRow>(db, `SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE fiscal_code = $1 AND kind = 'authority'`, [
        fiscalCode,
      ]);
      return row && toOrganization(row);
    },

    /**
     * Changes the given fields of an organization's public identity; false when there is no such
     * organization. A VAT number other than its current one is shared when `vatShared` says so
     * (and not otherwise); its current one given again stays as it was, shared when `vatShared`.
     * `before`: what the change checks first, given the organization as it is (its row locked
     * until the change ends); `also`: more of the same change, in its transaction (its audit row).
     */
    async setIdentity(
      id: string,
      changes: { name?: string; vatNumber?: string; vatShared?: boolean; register?: string; ausa?: string; ipa?: string },
      also?: (t: Transaction) => Promise<unknown>,
      before?: (t: Transaction, current: Organization) => Promise<unknown>,
    ): Promise<boolean> {
      return db.transaction(async (t) => {
        const [row] = await select<OrganizationRow>(db, `SELECT ${ORGANIZATION_COLUMNS} FROM organizations WHERE id = $1 FOR UPDATE`, [id], t);
        if (!row) return false;
        const current = toOrganization(row);
        await before?.(t, current);
        const vatShared =
          changes.vatNumber === undefined ? undefined : changes.vatNumber !== current.vatNumber ? changes.vatShared === true : changes.vatShared || undefined;
        const sets: string[] = [];
        const values: unknown[] = [id];
        for (const [column, value] of [
          ['name', changes.name],
          ['vat_number', changes.vatNumber],
          ['vat_shared', vatShared],
          ['register_entry', changes.register],
          ['ausa_code', changes.ausa],
          ['ipa_code', changes.ipa],
        ] as const) {
          if (value === undefined) continue;
          values.push(value);
          sets.push(`${column} = $${values.length}`);
        }
        if (sets.length) await execute(db, `UPDATE organizations SET ${sets.join(', ')} WHERE id = $1`, values, t);
        await also?.(t);
        return true;
      });
    },

    async insertApiKey(orgId: string, prefix: string, hash: Buffer, also?: (t: Transaction) => Promise<unknown>): Promise<void> {
      await db.transaction(async (t) => {
        // `also` (an audit row) first: see the audit repository's append.
        await also?.(t);
        await execute(
          db,
          'INSERT INTO api_keys (id, org_id, prefix, key_hash, created_at) VALUES ($1, $2, $3, $4, $5)',
          [uuidv7(), orgId, prefix, hash, new Date()],
          t,
        );
      });
    },

    async findApiKey(prefix: string): Promise<StoredApiKey | undefined> {
      const [row] = await select<{ prefix: string; org_id: string; key_hash: Buffer; revoked_at: Date | null; kind: OrgKind }>(db, FIND_API_KEY_SQL, [prefix]);
      return row && { prefix: row.prefix, orgId: row.org_id, kind: row.kind, hash: row.key_hash, revokedAt: row.revoked_at };
    },

    /** Marks a key revoked; false when no such key, or it was revoked already. `also`: more of the same change, in its transaction, given the key's organization. */
    async revokeApiKey(prefix: string, also?: (t: Transaction, orgId: string) => Promise<unknown>): Promise<boolean> {
      return db.transaction(async (t) => {
        const [key] = await select<{ org_id: string }>(db, 'SELECT org_id FROM api_keys WHERE prefix = $1 AND revoked_at IS NULL FOR UPDATE', [prefix], t);
        if (!key) return false;
        await execute(db, 'UPDATE api_keys SET revoked_at = $1 WHERE prefix = $2 AND revoked_at IS NULL', [new Date(), prefix], t);
        await also?.(t, key.org_id);
        return true;
      });
    },
  };
}

export type OrgRepository = ReturnType<typeof createOrgRepository>;

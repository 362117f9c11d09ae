// guarantee_beneficiaries: which contracting authority took charge of which guarantee (at most
// one each), numbered per authority in the order it took charge, so that its list's pages are
// ranges of (authority_id, seq) however deep. Written in the BENEFICIARY_LINKED amendment's
// transaction, which holds the guarantee's row lock and the authority's organization row
// (its audit row): the next seq is read under that lock.
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import { GUARANTEE_REF_SQL } from '../guarantees/guarantee.repository.js';
import { ISSUER_SQL, type IssuerRow } from '../orgs/org.repository.js';

/** A guarantee the authority took charge of, as its list shows it. */
export interface LinkedGuarantee {
  guaranteeId: string;
  issuer: { orgId: string; name: string };
  policyNumber: string | null;
  cig: string | null;
  linkedAt: Date;
  seq: number;
}

interface LinkRow extends IssuerRow {
  guarantee_id: string;
  org_id: string;
  policy_number: string | null;
  cig: string | null;
  linked_at: Date;
  seq: number;
}

const toLinked = (r: LinkRow): LinkedGuarantee => ({
  guaranteeId: r.guarantee_id,
  issuer: { orgId: r.org_id, name: r.org_name },
  policyNumber: r.policy_number,
  cig: r.cig,
  linkedAt: r.linked_at,
  seq: Number(r.seq),
});

const LINKED = `SELECT b.guarantee_id, b.seq, b.linked_at, ${GUARANTEE_REF_SQL.columns('g')}, ${ISSUER_SQL.columns('o')}
  FROM guarantee_beneficiaries b ${GUARANTEE_REF_SQL.join('g', 'b.guarantee_id')} ${ISSUER_SQL.join('o', 'g.org_id')}`;

export function createAuthorityRepository(db: Sequelize) {
  return {
    /** Links the guarantee to the authority, as its next in order; in `t`, which holds the authority's organization row. */
    async link(guaranteeId: string, authorityId: string, at: Date, t: Transaction): Promise<void> {
      await execute(
        db,
        `INSERT INTO guarantee_beneficiaries (guarantee_id, authority_id, seq, linked_at)
        SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3 FROM guarantee_beneficiaries WHERE authority_id = $2`,
        [guaranteeId, authorityId, at],
        t,
      );
    },

    /** The issuer of the guarantee when it is linked to this authority; undefined otherwise (another's, or none). */
    async issuerOf(authorityId: string, guaranteeId: string): Promise<string | undefined> {
      const [row] = await select<{ org_id: string }>(
        db,
        `SELECT g.org_id FROM guarantee_beneficiaries b ${GUARANTEE_REF_SQL.join('g', 'b.guarantee_id')} WHERE b.guarantee_id = $1 AND b.authority_id = $2`,
        [guaranteeId, authorityId],
      );
      return row?.org_id;
    },

    /** The link of a guarantee linked to this authority, with its issuer's name. */
    async linkOf(authorityId: string, guaranteeId: string): Promise<LinkedGuarantee | undefined> {
      const [row] = await select<LinkRow>(db, `${LINKED} WHERE b.guarantee_id = $1 AND b.authority_id = $2`, [guaranteeId, authorityId]);
      return row && toLinked(row);
    },

    /** How many guarantees the authority took charge of (its last seq). */
    async count(authorityId: string): Promise<number> {
      const [row] = await select<{ n: string | number | null }>(db, 'SELECT MAX(seq) AS n FROM guarantee_beneficiaries WHERE authority_id = $1', [authorityId]);
      return Number(row?.n ?? 0);
    },

    /** Those with seq in (from, to], newest first: a range of the unique key. */
    async bySeq(authorityId: string, fromExclusive: number, toInclusive: number): Promise<LinkedGuarantee[]> {
      const rows = await select<LinkRow>(db, `${LINKED} WHERE b.authority_id = $1 AND b.seq > $2 AND b.seq <= $3 ORDER BY b.seq DESC`, [
        authorityId,
        fromExclusive,
        toInclusive,
      ]);
      return rows.map(toLinked);
    },

    /**
     * Binds a person (their fiscal code) to the authority, with `also` (its audit row) in the same
     * transaction: 'bound', 'already' (bound to it before: nothing written) or the id of the
     * other authority the person is bound to (nothing written).
     */
    async bindUser(orgId: string, fiscalCode: string, at: Date, also: (t: Transaction) => Promise<unknown>): Promise<'bound' | 'already' | { other: string }> {
      return db.transaction(async (t) => {
        const [row] = await select<{ org_id: string }>(db, 'SELECT org_id FROM authority_users WHERE fiscal_number = $1 FOR UPDATE', [fiscalCode], t);
        if (row) return row.org_id === orgId ? 'already' : { other: row.org_id };
        await also(t);
        await execute(db, 'INSERT INTO authority_users (fiscal_number, org_id, created_at) VALUES ($1, $2, $3)', [fiscalCode, orgId, at], t);
        return 'bound';
      });
    },

    /** Unbinds the person from the authority, with `also` in the same transaction; false when they were not bound to it. */
    async unbindUser(orgId: string, fiscalCode: string, also: (t: Transaction) => Promise<unknown>): Promise<boolean> {
      return db.transaction(async (t) => {
        const [row] = await select(db, 'SELECT 1 FROM authority_users WHERE fiscal_number = $1 AND org_id = $2 FOR UPDATE', [fiscalCode, orgId], t);
        if (!row) return false;
        await also(t);
        await execute(db, 'DELETE FROM authority_users WHERE fiscal_number = $1 AND org_id = $2', [fiscalCode, orgId], t);
        return true;
      });
    },

    /** The people bound to the authority, by fiscal code. */
    async users(orgId: string): Promise<Array<{ fiscalCode: string; since: Date }>> {
      const rows = await select<{ fiscal_number: string; created_at: Date }>(
        db,
        'SELECT fiscal_number, created_at FROM authority_users WHERE org_id = $1 ORDER BY fiscal_number',
        [orgId],
      );
      return rows.map((r) => ({ fiscalCode: r.fiscal_number, since: r.created_at }));
    },

    /** The authority a person is bound to, if any (a sign-in). */
    async authorityOfUser(fiscalCode: string): Promise<string | undefined> {
      const [row] = await select<{ org_id: string }>(db, 'SELECT org_id FROM authority_users WHERE fiscal_number = $1', [fiscalCode]);
      return row?.org_id;
    },

    /**
     * Those whose guarantee carries this CIG and/or has this status at `at` (as every amendment
     * recorded applies: GUARANTEE_REF_SQL.statusIs), newest first: a page of them and how many
     * there are.
     */
    async filtered(
      authorityId: string,
      by: { cig?: string | undefined; status?: string | undefined },
      at: Date,
      offset: number,
      limit: number,
    ): Promise<{ total: number; items: LinkedGuarantee[] }> {
      const params: unknown[] = [authorityId];
      const conditions = ['b.authority_id = $1'];
      if (by.cig !== undefined) {
        params.push(by.cig);
        conditions.push(GUARANTEE_REF_SQL.cigIs('g', `$${params.length}`));
      }
      if (by.status !== undefined) {
        params.push(by.status, at);
        conditions.push(GUARANTEE_REF_SQL.statusIs('g', 'f', `$${params.length - 1}`, `$${params.length}`));
      }
      const where = `${GUARANTEE_REF_SQL.foldJoin('f', 'g')} WHERE ${conditions.join(' AND ')}`;
      const [count] = await select<{ n: string | number }>(
        db,
        `SELECT COUNT(*) AS n FROM guarantee_beneficiaries b ${GUARANTEE_REF_SQL.join('g', 'b.guarantee_id')} ${where}`,
        params,
      );
      const n = params.length;
      const rows = await select<LinkRow>(db, `${LINKED} ${where} ORDER BY b.seq DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [...params, limit, offset]);
      return { total: Number(count?.n ?? 0), items: rows.map(toLinked) };
    },
  };
}

export type AuthorityRepository = ReturnType<typeof createAuthorityRepository>;

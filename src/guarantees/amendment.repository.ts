// guarantee_amendments and guarantee_amendment_docs: a guarantee's amendments, appended under
// the guarantee's row lock (so that seq is dense however many race), and read in seq order
// with their documents (each doc's checksum is its file's: files lend the join, FILE_SQL).
import { Transaction as SequelizeTransaction } from 'sequelize';
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import { FILE_SQL, attachStatement } from '../files/file.sql.js';
import type { Amendment, AmendmentDoc, AmendmentType, Issued } from './amendments.js';

interface Row {
  id: string;
  guarantee_id: string;
  org_id: string;
  seq: number;
  type: AmendmentType;
  effective_at: Date;
  expires_at: Date | null;
  garanted_amount: string | null;
  claimed_amount: string | null;
  paid_amount: string | null;
  reason: string | null;
  created_at: Date;
  notarization_status: 'PENDING' | 'COMPLETE';
  tx_hash: string | null;
  notarization_reason: string | null;
  notary_state: string;
}

interface DocRow {
  amendment_id: string;
  type: AmendmentDoc['type'];
  file_key: string;
  original_file_name: string | null;
  checksum: string | null;
}

const COLUMNS = [
  'id',
  'guarantee_id',
  'org_id',
  'seq',
  'type',
  'effective_at',
  'expires_at',
  'garanted_amount',
  'claimed_amount',
  'paid_amount',
  'reason',
  'created_at',
  'notarization_status',
  'tx_hash',
  'notarization_reason',
  'notary_state',
]
  .map((c) => `a.${c}`)
  .join(', ');

const num = (v: string | null) => (v === null ? null : Number(v));

function toAmendment(r: Row, docs: AmendmentDoc[]): Amendment & { orgId: string } {
  return {
    id: r.id,
    orgId: r.org_id,
    guaranteeId: r.guarantee_id,
    seq: Number(r.seq),
    type: r.type,
    effectiveAt: r.effective_at,
    expiresAt: r.expires_at,
    garantedAmount: num(r.garanted_amount),
    claimedAmount: num(r.claimed_amount),
    paidAmount: num(r.paid_amount),
    reason: r.reason,
    docs,
    createdAt: r.created_at,
    notarizationStatus: r.notarization_status,
    txHash: r.tx_hash,
    notarizationReason: r.notary_state === 'blocked' ? r.notarization_reason : null,
  };
}

interface IssuedRow {
  garanted_amount: string | null;
  expires_at: Date | null;
  is_automatic_renewal: number | null;
}

const toIssued = (r: IssuedRow): Issued => ({
  garantedAmount: num(r.garanted_amount),
  expiresAt: r.expires_at,
  isAutomaticRenewal: r.is_automatic_renewal === null ? null : r.is_automatic_renewal === 1,
});

const ISSUED_SQL = 'SELECT garanted_amount, expires_at, is_automatic_renewal FROM guarantees WHERE id = $1 AND org_id = $2';

const TEXT = { prepared: false } as const;

export function createAmendmentRepository(db: Sequelize) {
  /** Amendments matching `where` (on alias a), by guarantee and seq, each with its documents. */
  async function read(where: string, params: unknown[], t?: Transaction, opts?: typeof TEXT): Promise<(Amendment & { orgId: string })[]> {
    const rows = await select<Row>(db, `SELECT ${COLUMNS} FROM guarantee_amendments a WHERE ${where} ORDER BY a.guarantee_id, a.seq`, params, t, opts);
    if (!rows.length) return [];
    const docs = await select<DocRow>(
      db,
      // A hashed amendment shows the checksums it was hashed with (pinned by the notarizer); a waiting one, its files'.
      `SELECT d.amendment_id, d.type, d.file_key, d.original_file_name, CASE WHEN a.notary_state = 'waiting' THEN f.checksum ELSE d.checksum END AS checksum
      FROM guarantee_amendments a
      JOIN guarantee_amendment_docs d ON d.amendment_id = a.id ${FILE_SQL.ofKey('f', 'd.file_key', 'LEFT JOIN')}
      WHERE ${where} ORDER BY d.amendment_id, d.position`,
      params,
      t,
      opts,
    );
    const byAmendment = new Map<string, AmendmentDoc[]>();
    for (const d of docs) {
      const list = byAmendment.get(d.amendment_id) ?? [];
      list.push({ type: d.type, key: d.file_key, originalFileName: d.original_file_name, checksum: d.checksum });
      byAmendment.set(d.amendment_id, list);
    }
    return rows.map((r) => toAmendment(r, byAmendment.get(r.id) ?? []));
  }

  return {
    /**
     * At READ COMMITTED: the lock on the guarantee's row serializes its amendments, and every
     * read after it sees the amendment committed just before (under REPEATABLE READ that held
     * only while no plain read came before the lock); no gap locks on the guarantees' index.
     */
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction({ isolationLevel: SequelizeTransaction.ISOLATION_LEVELS.READ_COMMITTED }, work);
    },

    /** What the organization's guarantee was registered with, its row locked until `t` ends; undefined if it has no such guarantee. */
    async lockIssued(orgId: string, guaranteeId: string, t: Transaction): Promise<Issued | undefined> {
      const [row] = await select<IssuedRow>(db, `${ISSUED_SQL} FOR UPDATE`, [guaranteeId, orgId], t);
      return row && toIssued(row);
    },

    /** The same, unlocked. */
    async issued(orgId: string, guaranteeId: string): Promise<Issued | undefined> {
      const [row] = await select<IssuedRow>(db, ISSUED_SQL, [guaranteeId, orgId]);
      return row && toIssued(row);
    },

    /** The guarantee's amendments, oldest first. */
    async list(guaranteeId: string, t?: Transaction): Promise<Amendment[]> {
      return read('a.guarantee_id = $1', [guaranteeId], t);
    },

    /** The guarantee's amendment `seq`, if it has one. */
    async bySeq(guaranteeId: string, seq: number): Promise<Amendment | undefined> {
      return (await read('a.guarantee_id = $1 AND a.seq = $2', [guaranteeId, seq]))[0];
    },

    /** The amendments of these ids, by guarantee and seq (the notarizer's). */
    async findByIds(ids: readonly string[]): Promise<(Amendment & { orgId: string })[]> {
      return ids.length ? read('a.id IN ($1)', [ids], undefined, TEXT) : [];
    },

    async insert(orgId: string, a: Amendment, t: Transaction): Promise<void> {
      await execute(
        db,
        `INSERT INTO guarantee_amendments (id, guarantee_id, org_id, seq, type, effective_at, expires_at, garanted_amount, claimed_amount, paid_amount, reason, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [a.id, a.guaranteeId, orgId, a.seq, a.type, a.effectiveAt, a.expiresAt, a.garantedAmount, a.claimedAmount, a.paidAmount, a.reason, a.createdAt],
        t,
      );
      if (a.docs.length) {
        // The files' rows first: the exclusive lock before the foreign key's shared one (see guarantee.repository.ts).
        const attach = attachStatement(
          a.docs.map((d) => d.key),
          a.createdAt,
        );
        await execute(db, attach.sql, attach.bind, t, { prepared: false });
        await execute(
          db,
          'INSERT INTO guarantee_amendment_docs (amendment_id, position, type, file_key, original_file_name) VALUES $1',
          [a.docs.map((d, i) => [a.id, i, d.type, d.key, d.originalFileName])],
          t,
          { prepared: false },
        );
      }
    },
  };
}

export type AmendmentRepository = ReturnType<typeof createAmendmentRepository>;

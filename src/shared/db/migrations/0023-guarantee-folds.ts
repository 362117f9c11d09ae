// A guarantee's state kept folded (issue 27, bounded work per request): recording an amendment
// read every amendment before it, under the guarantee's lock, to decide its 409s and answer the
// state after it, and GET .../state folded them all, so that a guarantee's history cost each
// request more as it grew. Owned by guarantees.
// - guarantee_folds: one row per guarantee with amendments, the fold of src/guarantees/
//   amendments.ts after its last one (last_seq): the amount and expiry now, the open claim
//   (claim_seq, its amount and date), whether it ended (RELEASED or CANCELLED) and whether a
//   partial release was ever recorded. Written in each amendment's transaction, under the
//   guarantee's row lock; a guarantee without amendments has none (its registration is its fold).
// - Backfilled here for the guarantees with amendments (backfillFolds, in batches).
// A new table only: the previous release runs unchanged. The amendments it records during a
// rolling release leave the fold behind the guarantee's last seq; this release folds those on
// from the stored fold when it reads it (the amendments' repository, `current`), and writes the
// healed fold with its next amendment.
import { foldFrom, foldStart, type Folded, type FoldedAmendment } from '../../../guarantees/amendments.js';
import type { Migration, Query } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';

/** Amendments read per statement of the backfill. */
const BACKFILL_BATCH = 1000;

interface Row {
  guarantee_id: string;
  seq: number;
  type: FoldedAmendment['type'];
  effective_at: Date;
  expires_at: Date | null;
  garanted_amount: string | null;
  claimed_amount: string | null;
  paid_amount: string | null;
  issued_amount: string | null;
  issued_expires_at: Date | null;
}

const num = (v: string | null) => (v === null ? null : Number(v));

// The values are written into the SQL (a migration's query takes no parameters): each checked or made here.
const idLiteral = (id: string) => {
  if (!/^[0-9a-f-]{36}$/.test(id)) throw new Error(`unexpected guarantee id ${JSON.stringify(id)}`);
  return `'${id}'`;
};
const amountLiteral = (n: number | null) => {
  if (n !== null && !Number.isFinite(n)) throw new Error(`unexpected amount ${n}`);
  return n === null ? 'NULL' : n.toFixed(2);
};
/** A DATETIME in UTC, as the driver writes one. */
const dateLiteral = (d: Date | null) => (d === null ? 'NULL' : `'${d.toISOString().replace('T', ' ').replace('Z', '')}'`);
const intLiteral = (n: number | null) => (n === null ? 'NULL' : String(Math.trunc(n)));

function foldValues(guaranteeId: string, f: Folded): string {
  return `(${[
    idLiteral(guaranteeId),
    amountLiteral(f.garantedAmount),
    dateLiteral(f.expiresAt),
    intLiteral(f.openClaim?.seq ?? null),
    amountLiteral(f.openClaim?.claimedAmount ?? null),
    dateLiteral(f.openClaim?.effectiveAt ?? null),
    f.ended === null ? 'NULL' : `'${f.ended === 'RELEASED' ? 'RELEASED' : 'CANCELLED'}'`,
    f.partiallyReleased ? '1' : '0',
    intLiteral(f.lastSeq),
  ].join(', ')})`;
}

/**
 * The folds of the guarantees with amendments, from their amendments by (guarantee, seq), `batch`
 * amendments a statement (a guarantee's may span several: its fold is carried to the next), each
 * batch's finished folds written in one statement. A fold already stored is left as it is (one
 * the service wrote meanwhile is at least as far on, and one behind is folded on when read), so
 * that running it again, or beside processes that record amendments, changes nothing they wrote.
 */
export async function backfillFolds(q: Query, batch = BACKFILL_BATCH): Promise<void> {
  let after: { guaranteeId: string; seq: number } | undefined;
  let current: { guaranteeId: string; fold: Folded } | undefined;
  for (;;) {
    const from =
      after &&
      `WHERE a.guarantee_id > ${idLiteral(after.guaranteeId)} OR (a.guarantee_id = ${idLiteral(after.guaranteeId)} AND a.seq > ${intLiteral(after.seq)})`;
    const [rows] = (await q(`SELECT a.guarantee_id, a.seq, a.type, a.effective_at, a.expires_at, a.garanted_amount, a.claimed_amount, a.paid_amount,
        g.garanted_amount AS issued_amount, g.expires_at AS issued_expires_at
      FROM guarantee_amendments a JOIN guarantees g ON g.id = a.guarantee_id ${from ?? ''}
      ORDER BY a.guarantee_id, a.seq LIMIT ${Math.trunc(batch)}`)) as [Row[]];
    const done: string[] = [];
    for (const r of rows) {
      if (current?.guaranteeId !== r.guarantee_id) {
        if (current) done.push(foldValues(current.guaranteeId, current.fold));
        // The start of the fold: what the registration says (isAutomaticRenewal is the state's, not the fold's).
        current = {
          guaranteeId: r.guarantee_id,
          fold: foldStart({ garantedAmount: num(r.issued_amount), expiresAt: r.issued_expires_at, isAutomaticRenewal: null }),
        };
      }
      const amendment: FoldedAmendment = {
        seq: Number(r.seq),
        type: r.type,
        effectiveAt: r.effective_at,
        expiresAt: r.expires_at,
        garantedAmount: num(r.garanted_amount),
        claimedAmount: num(r.claimed_amount),
        paidAmount: num(r.paid_amount),
        // Every amendment before migration 0027 was its issuer's.
        actorOrgId: null,
      };
      current.fold = foldFrom(current.fold, [amendment]);
    }
    const end = rows.length < batch;
    if (end && current) done.push(foldValues(current.guaranteeId, current.fold));
    if (done.length) {
      await q(`INSERT INTO guarantee_folds (guarantee_id, garanted_amount, expires_at, claim_seq, claimed_amount, claim_effective_at, ended, partially_released, last_seq)
        VALUES ${done.join(', ')} ON DUPLICATE KEY UPDATE last_seq = last_seq`);
    }
    const last = rows.at(-1);
    if (end || !last) return;
    after = { guaranteeId: last.guarantee_id, seq: Number(last.seq) };
  }
}

export const migration: Migration = {
  name: '0023-guarantee-folds',
  async up({ context: q }) {
    await q(`CREATE TABLE guarantee_folds (
      guarantee_id ${ID} NOT NULL PRIMARY KEY,
      garanted_amount DECIMAL(15,2) NULL,
      expires_at DATETIME(3) NULL,
      -- The open claim (all three NULL: none).
      claim_seq INT UNSIGNED NULL,
      claimed_amount DECIMAL(15,2) NULL,
      claim_effective_at DATETIME(3) NULL,
      ended ENUM('RELEASED','CANCELLED') NULL,
      partially_released TINYINT(1) NOT NULL,
      -- The seq of the last amendment folded in: behind the guarantee's last one when the previous release recorded some.
      last_seq INT UNSIGNED NOT NULL,
      CONSTRAINT fk_guarantee_folds_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await backfillFolds(q);
  },
  async down({ context: q }) {
    // The previous release folds every amendment each time: nothing of this table is its.
    await q('DROP TABLE guarantee_folds');
  },
};

// Where each guarantee stands in notarization, kept on its row (notary_state: waiting →
// batched → done, or blocked; notarization_status, tx_hash, notarization_reason) and on its
// documents' rows (notarized_at). Guarantees own these columns; notarization moves them only
// through these functions, each conditional on the state it leaves, so that a retried or
// overlapping step changes nothing twice.
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import { ACCEPTED_FILE_STATUSES, REJECTED_FILE_STATUSES } from '../files/file.statuses.js';
import { FILE_SQL } from '../files/file.sql.js';

/** Text protocol: a list bound at one `$n` is written out as the list (`IN ($1)`). */
const TEXT = { prepared: false } as const;
/** Ids per statement: a batch of thousands is marked in a few statements of bounded size. */
const CHUNK = 1000;

export interface BlockedDoc {
  id: string;
  orgId: string;
  key: string;
  status: string;
}

export function createNotaryState(db: Sequelize) {
  return {
    /** Waiting guarantees with a doc whose file ended Infected or Error (the first such doc of each), oldest first. */
    async blocked(limit: number): Promise<{ found: BlockedDoc[]; full: boolean }> {
      const rows = await select<{ id: string; org_id: string; file_key: string; status: string }>(
        db,
        `SELECT g.id, g.org_id, d.file_key, f.status FROM guarantees g
          JOIN guarantee_docs d ON d.guarantee_id = g.id ${FILE_SQL.ofKey('f', 'd.file_key')}
        WHERE g.notary_state = 'waiting' AND ${FILE_SQL.statusIn('f', REJECTED_FILE_STATUSES)}
        ORDER BY g.id, d.position LIMIT ${Math.trunc(limit)}`,
        [],
      );
      const first = new Map<string, BlockedDoc>();
      for (const r of rows) if (!first.has(r.id)) first.set(r.id, { id: r.id, orgId: r.org_id, key: r.file_key, status: r.status });
      return { found: [...first.values()], full: rows.length === limit };
    },

    /** Waiting guarantees whose docs are all Clean or Signed (none at all included), oldest first. */
    async eligible(limit: number): Promise<string[]> {
      const rows = await select<{ id: string }>(
        db,
        `SELECT g.id FROM guarantees g WHERE g.notary_state = 'waiting' AND NOT EXISTS (
          SELECT 1 FROM guarantee_docs d ${FILE_SQL.ofKey('f', 'd.file_key')}
          WHERE d.guarantee_id = g.id AND ${FILE_SQL.statusNotIn('f', ACCEPTED_FILE_STATUSES)})
        ORDER BY g.id LIMIT ${Math.trunc(limit)}`,
        [],
      );
      return rows.map((r) => r.id);
    },

    /** Blocks a waiting guarantee for ever, with its reason; false when it was not waiting. */
    async block(id: string, reason: string, t: Transaction): Promise<boolean> {
      const sql = `UPDATE guarantees SET notary_state = 'blocked', notarization_reason = $2 WHERE id = $1 AND notary_state = 'waiting'`;
      return (await execute(db, sql, [id, reason], t)) === 1;
    },

    /** Moves waiting guarantees to batched, in `t`; how many were waiting (fewer than `ids` when some no longer were). */
    async markBatched(ids: readonly string[], t: Transaction): Promise<number> {
      let moved = 0;
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        // By primary key: through the state index the update would also lock the gaps of the
        // 'waiting' range, where new registrations insert.
        const sql = `UPDATE guarantees FORCE INDEX (PRIMARY) SET notary_state = 'batched' WHERE notary_state = 'waiting' AND id IN ($1)`;
        moved += await execute(db, sql, [chunk], t, TEXT);
      }
      return moved;
    },

    /** Batched guarantees anchored, in `t`: COMPLETE with the anchor's txHash, their docs notarized at `anchoredAt`. */
    async markDone(ids: readonly string[], txHash: string, anchoredAt: Date, t: Transaction): Promise<void> {
      for (let i = 0; i < ids.length; i += CHUNK) {
        const chunk = ids.slice(i, i + CHUNK);
        await execute(
          db,
          `UPDATE guarantees FORCE INDEX (PRIMARY) SET notary_state = 'done', notarization_status = 'COMPLETE', tx_hash = $1
          WHERE notary_state = 'batched' AND id IN ($2)`,
          [txHash, chunk],
          t,
          TEXT,
        );
        await execute(db, 'UPDATE guarantee_docs SET notarized_at = $1 WHERE guarantee_id IN ($2)', [anchoredAt, chunk], t, TEXT);
      }
    },
  };
}

export type NotaryState = ReturnType<typeof createNotaryState>;

// Where each guarantee stands in notarization, kept on its row (notary_state: waiting →
// batched → done, or blocked; notarization_status, tx_hash, notarization_reason) and on its
// documents' rows (notarized_at); and where each amendment stands, on its row likewise (with
// its digest, the next amendment's link). Guarantees own these columns; notarization moves
// them only through these functions, each conditional on the state it leaves, so that a
// retried or overlapping step changes nothing twice.
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

/** A waiting amendment whose documents are all settled, and what its link to the chain needs. */
export interface AmendmentCandidate {
  id: string;
  guaranteeId: string;
  seq: number;
  /** Where its guarantee stands: never 'waiting' (an amendment follows its guarantee into the batches). */
  guaranteeState: 'batched' | 'done' | 'blocked';
  /** The previous amendment (none for seq 1): where it stands and its digest, once it has one. */
  previous: { state: 'waiting' | 'batched' | 'done' | 'blocked'; digest: string | null } | null;
  /** Its first document that ended Infected or Error (`status key`), if any. */
  rejectedDoc: { key: string; status: string } | null;
}

const AMENDMENT_CHUNK = 500;

export function createNotaryState(db: Sequelize) {
  /** The file of document `d` of an amendment is not settled (neither accepted nor rejected): its amendment waits. */
  const unsettledDoc = `${FILE_SQL.statusNotIn('f', [...ACCEPTED_FILE_STATUSES, ...REJECTED_FILE_STATUSES])}`;

  /** Pins the checksums an amendment's digest covers on its documents (by position); none for an amendment without documents. */
  async function pinChecksums(amendmentId: string, checksums: readonly (string | null)[], t?: Transaction): Promise<void> {
    if (!checksums.length) return;
    const cases = checksums.map((_, i) => `WHEN ${i} THEN $${i + 2}`).join(' ');
    await execute(
      db,
      `UPDATE guarantee_amendment_docs SET checksum = CASE position ${cases} END WHERE amendment_id = $1`,
      [amendmentId, ...checksums],
      t,
      TEXT,
    );
  }
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

    /**
     * Waiting amendments ready to be chained, by guarantee and seq: their guarantee is batched,
     * done or blocked, their documents are all settled, and so are those of every earlier
     * waiting amendment of theirs (a page is then a prefix of each chain, never a link without
     * the one before it; an amendment whose scan runs holds back only its own successors).
     */
    async amendmentCandidates(limit: number): Promise<AmendmentCandidate[]> {
      const rows = await select<{
        id: string;
        guarantee_id: string;
        seq: number;
        guarantee_state: AmendmentCandidate['guaranteeState'];
        previous_state: 'waiting' | 'batched' | 'done' | 'blocked' | null;
        previous_digest: string | null;
        rejected_doc: string | null;
      }>(
        db,
        `SELECT a.id, a.guarantee_id, a.seq, g.notary_state AS guarantee_state, p.notary_state AS previous_state, p.digest AS previous_digest,
          (SELECT CONCAT(f.status, ' ', d.file_key) FROM guarantee_amendment_docs d ${FILE_SQL.ofKey('f', 'd.file_key')}
            WHERE d.amendment_id = a.id AND ${FILE_SQL.statusIn('f', REJECTED_FILE_STATUSES)} ORDER BY d.position LIMIT 1) AS rejected_doc
        FROM guarantee_amendments a
          JOIN guarantees g ON g.id = a.guarantee_id
          LEFT JOIN guarantee_amendments p ON p.guarantee_id = a.guarantee_id AND p.seq = a.seq - 1
        WHERE a.notary_state = 'waiting' AND g.notary_state <> 'waiting' AND NOT EXISTS (
          SELECT 1 FROM guarantee_amendments w JOIN guarantee_amendment_docs d ON d.amendment_id = w.id ${FILE_SQL.ofKey('f', 'd.file_key')}
          WHERE w.guarantee_id = a.guarantee_id AND w.seq <= a.seq AND w.notary_state = 'waiting' AND ${unsettledDoc})
        ORDER BY a.guarantee_id, a.seq LIMIT ${Math.trunc(limit)}`,
        [],
      );
      return rows.map((r) => {
        const space = r.rejected_doc?.indexOf(' ') ?? -1;
        return {
          id: r.id,
          guaranteeId: r.guarantee_id,
          seq: Number(r.seq),
          guaranteeState: r.guarantee_state,
          previous: r.previous_state === null ? null : { state: r.previous_state, digest: r.previous_digest },
          rejectedDoc: r.rejected_doc === null || space < 0 ? null : { status: r.rejected_doc.slice(0, space), key: r.rejected_doc.slice(space + 1) },
        };
      });
    },

    /**
     * Blocks a waiting amendment for ever, with its reason and (when it has one) its digest, the
     * next one's link, and the checksums the digest covers (by doc position); false when it was
     * not waiting. The checksums are pinned first: they count only once the amendment has left
     * 'waiting', so a crash in between leaves nothing half done.
     */
    async blockAmendment(id: string, reason: string, hashed: { digest: string; checksums: readonly (string | null)[] } | null): Promise<boolean> {
      if (hashed) await pinChecksums(id, hashed.checksums);
      const sql = `UPDATE guarantee_amendments SET notary_state = 'blocked', notarization_reason = $2, digest = $3 WHERE id = $1 AND notary_state = 'waiting'`;
      return (await execute(db, sql, [id, reason, hashed?.digest ?? null])) === 1;
    },

    /** Moves waiting amendments to batched with their digests and the checksums they cover, in `t`; how many were waiting. */
    async markAmendmentsBatched(leaves: readonly { id: string; digest: string; checksums: readonly (string | null)[] }[], t: Transaction): Promise<number> {
      for (const l of leaves) await pinChecksums(l.id, l.checksums, t);
      let moved = 0;
      for (let i = 0; i < leaves.length; i += AMENDMENT_CHUNK) {
        const chunk = leaves.slice(i, i + AMENDMENT_CHUNK);
        const cases = chunk.map((_, j) => `WHEN $${j * 2 + 1} THEN $${j * 2 + 2}`).join(' ');
        const ids = chunk.map((_, j) => `$${j * 2 + 1}`).join(', ');
        moved += await execute(
          db,
          `UPDATE guarantee_amendments FORCE INDEX (PRIMARY) SET notary_state = 'batched', digest = CASE id ${cases} END
          WHERE notary_state = 'waiting' AND id IN (${ids})`,
          chunk.flatMap((l) => [l.id, l.digest]),
          t,
          TEXT,
        );
      }
      return moved;
    },

    /** Batched amendments anchored, in `t`: COMPLETE with the anchor's txHash; how many were batched. */
    async markAmendmentsDone(ids: readonly string[], txHash: string, t: Transaction): Promise<number> {
      let moved = 0;
      for (let i = 0; i < ids.length; i += CHUNK) {
        moved += await execute(
          db,
          `UPDATE guarantee_amendments FORCE INDEX (PRIMARY) SET notary_state = 'done', notarization_status = 'COMPLETE', tx_hash = $1
          WHERE notary_state = 'batched' AND id IN ($2)`,
          [txHash, ids.slice(i, i + CHUNK)],
          t,
          TEXT,
        );
      }
      return moved;
    },

    /** Amendments batched (sealed in a batch not yet recorded as anchored, normally), oldest first, at most `limit`. */
    async batchedAmendments(limit: number): Promise<string[]> {
      const rows = await select<{ id: string }>(
        db,
        `SELECT id FROM guarantee_amendments WHERE notary_state = 'batched' ORDER BY id LIMIT ${Math.trunc(limit)}`,
        [],
      );
      return rows.map((r) => r.id);
    },

    /** Why an amendment will never be notarized, and its digest when it has one; undefined unless it is blocked. */
    async amendmentBlock(id: string): Promise<{ reason: string; digest: string | null } | undefined> {
      const [row] = await select<{ notarization_reason: string | null; digest: string | null }>(
        db,
        `SELECT notarization_reason, digest FROM guarantee_amendments WHERE id = $1 AND notary_state = 'blocked'`,
        [id],
      );
      return row ? { reason: row.notarization_reason ?? '', digest: row.digest } : undefined;
    },
  };
}

export type NotaryState = ReturnType<typeof createNotaryState>;

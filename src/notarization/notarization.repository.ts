// Notarization's rows: each guarantee's notary_state (waiting → batched → done, or blocked),
// the batches and the proofs. Every change of state is conditional on the state it leaves, so
// that a retried or overlapping step changes nothing twice.
import { execute, select, write, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import { ACCEPTED_FILE_STATUSES, REJECTED_FILE_STATUSES, sqlStatusList } from '../files/file.statuses.js';
import type { PathStep } from './merkle.js';
import type { AnchorKind, Submission } from './anchor.js';

export interface SealedProof {
  guaranteeId: string;
  leafIndex: number;
  digest: string;
  path: PathStep[];
}

export interface BatchRow {
  id: number;
  anchorKind: AnchorKind;
  root: string;
  size: number;
  state: 'sealed' | 'submitted' | 'anchored';
  txHash: string | null;
  receipt: Record<string, unknown> | null;
  anchoredAt: Date | null;
}

interface BatchDbRow {
  id: string | number;
  anchor_kind: AnchorKind;
  root: string;
  size: number;
  state: BatchRow['state'];
  tx_hash: string | null;
  receipt: string | null;
  anchored_at: Date | null;
}

const batchOf = (r: BatchDbRow): BatchRow => ({
  id: Number(r.id),
  anchorKind: r.anchor_kind,
  root: r.root,
  size: r.size,
  state: r.state,
  txHash: r.tx_hash,
  receipt: r.receipt === null ? null : (JSON.parse(r.receipt) as Record<string, unknown>),
  anchoredAt: r.anchored_at,
});

const marks = (n: number, from = 1) => Array.from({ length: n }, (_, i) => `$${i + from}`).join(', ');
const TEXT = { prepared: false } as const;

export interface ProofRow {
  guaranteeId: string;
  leafIndex: number;
  digest: string;
  path: PathStep[];
  batch: BatchRow;
}

/** `lockDb`: a pool of its own for the notarizers' lock (one connection is enough). */
export function createNotarizationRepository(db: Sequelize, lockDb: Sequelize = db) {
  return {
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },

    /**
     * Runs `work` holding the database's named lock `name` (GET_LOCK), or returns undefined at
     * once when another session holds it. The lock is taken on `lockDb`, a pool of its own
     * (never the connections `work` needs), inside a transaction, so its connection stays
     * checked out (never reaped as idle) until the work ends; a process that dies drops the
     * connection and with it the lock. `held()` asks the server whether this connection still
     * holds it (a killed or timed-out connection loses it silently): ask before each step that
     * must not run twice at once.
     */
    async exclusive<T>(name: string, work: (held: () => Promise<boolean>) => Promise<T>): Promise<T | undefined> {
      return lockDb.transaction(async (t) => {
        const [row] = await select<{ got: number | null }>(lockDb, 'SELECT GET_LOCK($1, 0) AS got', [name], t);
        if (row?.got !== 1) return undefined;
        const held = async () => (await select<{ mine: number | null }>(lockDb, 'SELECT IS_USED_LOCK($1) = CONNECTION_ID() AS mine', [name], t))[0]?.mine === 1;
        try {
          return await work(held);
        } finally {
          await select(lockDb, 'SELECT RELEASE_LOCK($1)', [name], t).catch(() => undefined);
        }
      });
    },

    /** Waiting guarantees with a doc whose file ended Infected or Error, oldest first. */
    async blocked(limit: number): Promise<{ found: Array<{ id: string; orgId: string; key: string; status: string }>; full: boolean }> {
      const rows = await select<{ id: string; org_id: string; file_key: string; status: string }>(
        db,
        `SELECT g.id, g.org_id, d.file_key, f.status FROM guarantees g
          JOIN guarantee_docs d ON d.guarantee_id = g.id JOIN files f ON f.object_key = d.file_key
        WHERE g.notary_state = 'waiting' AND f.status IN (${sqlStatusList(REJECTED_FILE_STATUSES)})
        ORDER BY g.id, d.position LIMIT ${Math.trunc(limit)}`,
        [],
      );
      const first = new Map<string, { id: string; orgId: string; key: string; status: string }>();
      for (const r of rows) if (!first.has(r.id)) first.set(r.id, { id: r.id, orgId: r.org_id, key: r.file_key, status: r.status });
      return { found: [...first.values()], full: rows.length === limit };
    },

    /** Waiting guarantees whose docs are all Clean or Signed (none at all included), oldest first. */
    async eligible(limit: number): Promise<string[]> {
      const rows = await select<{ id: string }>(
        db,
        `SELECT g.id FROM guarantees g WHERE g.notary_state = 'waiting' AND NOT EXISTS (
          SELECT 1 FROM guarantee_docs d JOIN files f ON f.object_key = d.file_key
          WHERE d.guarantee_id = g.id AND f.status NOT IN (${sqlStatusList(ACCEPTED_FILE_STATUSES)}))
        ORDER BY g.id LIMIT ${Math.trunc(limit)}`,
        [],
      );
      return rows.map((r) => r.id);
    },

    /** Blocks a waiting guarantee for ever, with its reason; false when it was not waiting. */
    async block(id: string, reason: string, t: Transaction): Promise<boolean> {
      return (
        1 ===
        (await execute(
          db,
          `UPDATE guarantees SET notary_state = 'blocked', notarization_reason = $2
        WHERE id = $1 AND notary_state = 'waiting'`,
          [id, reason],
          t,
        ))
      );
    },

    /**
     * Writes a batch (sealed: root and proofs, not yet anchored) and moves its guarantees from
     * waiting to batched. Returns the batch id, or undefined (and writes nothing) when one of
     * them was no longer waiting.
     */
    async seal(kind: AnchorKind, root: string, proofs: SealedProof[], at: Date): Promise<number | undefined> {
      const notWaiting = new Error('a guarantee of the batch is no longer waiting');
      return db
        .transaction(async (t) => {
          const ids = proofs.map((p) => p.guaranteeId);
          // By primary key: through the state index the update would also lock the gaps of the
          // 'waiting' range, where new registrations insert.
          const moved = await execute(
            db,
            `UPDATE guarantees FORCE INDEX (PRIMARY) SET notary_state = 'batched' WHERE notary_state = 'waiting' AND id IN (${marks(ids.length)})`,
            ids,
            t,
            TEXT,
          );
          if (moved !== ids.length) throw notWaiting;
          const { insertId } = await write(
            db,
            `INSERT INTO notarization_batches (anchor_kind, root, size, state, created_at) VALUES ($1, $2, $3, 'sealed', $4)`,
            [kind, root, proofs.length, at],
            t,
          );
          // In statements of 500 proofs (about 1 MB each), well under MariaDB's packet limit.
          for (let i = 0; i < proofs.length; i += 500) {
            const chunk = proofs.slice(i, i + 500);
            const values = chunk.map((_, j) => `($${j * 4 + 2}, $1, $${j * 4 + 3}, $${j * 4 + 4}, $${j * 4 + 5})`).join(', ');
            await execute(
              db,
              `INSERT INTO notarization_proofs (guarantee_id, batch_id, leaf_index, digest, path) VALUES ${values}`,
              [insertId, ...chunk.flatMap((p) => [p.guaranteeId, p.leafIndex, p.digest, JSON.stringify(p.path)])],
              t,
              TEXT,
            );
          }
          return insertId;
        })
        .catch((err: unknown) => {
          if (err === notWaiting) return undefined;
          throw err;
        });
    },

    async markSubmitted(batchId: number, s: Submission): Promise<void> {
      await execute(db, `UPDATE notarization_batches SET state = 'submitted', tx_hash = $2, receipt = $3 WHERE id = $1 AND state = 'sealed'`, [
        batchId,
        s.txHash,
        JSON.stringify(s.receipt),
      ]);
    },

    /** Batches not yet final, oldest first: what a worker that died left to finish. */
    async unfinished(): Promise<BatchRow[]> {
      const rows = await select<BatchDbRow>(
        db,
        `SELECT id, anchor_kind, root, size, state, tx_hash, receipt, anchored_at FROM notarization_batches WHERE state IN ('sealed', 'submitted') ORDER BY id`,
        [],
      );
      return rows.map(batchOf);
    },

    /** The guarantees of a batch, in leaf order. */
    async members(batchId: number): Promise<string[]> {
      const rows = await select<{ guarantee_id: string }>(db, 'SELECT guarantee_id FROM notarization_proofs WHERE batch_id = $1 ORDER BY leaf_index', [
        batchId,
      ]);
      return rows.map((r) => r.guarantee_id);
    },

    /**
     * Records a batch as anchored, in transaction `t`: the batch final, its guarantees COMPLETE
     * with the txHash, their docs notarized at `anchoredAt`. False when it already was.
     */
    async complete(batchId: number, s: Submission & { anchoredAt: Date }, t: Transaction): Promise<boolean> {
      const done = await execute(
        db,
        `UPDATE notarization_batches SET state = 'anchored', tx_hash = $2, receipt = $3, anchored_at = $4
        WHERE id = $1 AND state IN ('sealed', 'submitted')`,
        [batchId, s.txHash, JSON.stringify(s.receipt), s.anchoredAt],
        t,
      );
      if (done !== 1) return false;
      await execute(
        db,
        `UPDATE guarantees g JOIN notarization_proofs p ON p.guarantee_id = g.id
        SET g.notary_state = 'done', g.notarization_status = 'COMPLETE', g.tx_hash = $2
        WHERE p.batch_id = $1 AND g.notary_state = 'batched'`,
        [batchId, s.txHash],
        t,
      );
      await execute(
        db,
        `UPDATE guarantee_docs d JOIN notarization_proofs p ON p.guarantee_id = d.guarantee_id
        SET d.notarized_at = $2 WHERE p.batch_id = $1`,
        [batchId, s.anchoredAt],
        t,
      );
      return true;
    },

    /** The proof of one of the organization's guarantees, when it has one. */
    async proofOf(orgId: string, guaranteeId: string): Promise<ProofRow | undefined> {
      const [r] = await select<BatchDbRow & { guarantee_id: string; leaf_index: number; digest: string; path: string }>(
        db,
        `SELECT p.guarantee_id, p.leaf_index, p.digest, p.path, b.id, b.anchor_kind, b.root, b.size, b.state, b.tx_hash, b.receipt, b.anchored_at
        FROM notarization_proofs p JOIN guarantees g ON g.id = p.guarantee_id JOIN notarization_batches b ON b.id = p.batch_id
        WHERE p.guarantee_id = $1 AND g.org_id = $2`,
        [guaranteeId, orgId],
      );
      return r && { guaranteeId: r.guarantee_id, leafIndex: r.leaf_index, digest: r.digest, path: JSON.parse(r.path) as PathStep[], batch: batchOf(r) };
    },
  };
}

export type NotarizationRepository = ReturnType<typeof createNotarizationRepository>;

// Notarization's rows: the batches and the proofs. Where each guarantee stands (its
// notary_state: waiting → batched → done, or blocked) is the guarantees' (notary-state.ts),
// moved in the same transactions. Every change of state is conditional on the state it
// leaves, so that a retried or overlapping step changes nothing twice.
import { databaseLockName, execute, select, write, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import type { PathStep } from './merkle.js';
import type { AnchorKind, Submission } from './anchor.js';

export interface SealedProof {
  guaranteeId: string;
  leafIndex: number;
  digest: string;
  path: PathStep[];
  /** Where its leaf is in the transparency log (appended in the same transaction). */
  logIndex: number;
}

/** An amendment's leaf: its digest covers its canonical form and these two links. */
export interface SealedAmendmentProof {
  amendmentId: string;
  leafIndex: number;
  digest: string;
  guaranteeDigest: string;
  previousDigest: string | null;
  path: PathStep[];
  logIndex: number;
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

const TEXT = { prepared: false } as const;

/** An amendment's sealed leaf with its batch. */
export interface AmendmentProofRow extends Omit<SealedAmendmentProof, 'logIndex'> {
  logIndex: number | null;
  batch: BatchRow;
}

export interface ProofRow {
  guaranteeId: string;
  leafIndex: number;
  digest: string;
  path: PathStep[];
  logIndex: number | null;
  batch: BatchRow;
}

/** `lockDb`: a pool of its own for the notarizers' lock (one connection is enough). */
export function createNotarizationRepository(db: Sequelize, lockDb: Sequelize = db) {
  return {
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },

    /**
     * Runs `work` holding the database's named lock `name` (GET_LOCK, scoped to the database: databaseLockName), or returns undefined at
     * once when another session holds it. The lock is taken on `lockDb`, a pool of its own
     * (never the connections `work` needs), inside a transaction, so its connection stays
     * checked out (never reaped as idle) until the work ends; a process that dies drops the
     * connection and with it the lock. `held()` asks the server whether this connection still
     * holds it (a killed or timed-out connection loses it silently): ask before each step that
     * must not run twice at once.
     */
    async exclusive<T>(name: string, work: (held: () => Promise<boolean>) => Promise<T>): Promise<T | undefined> {
      const lock = databaseLockName(lockDb, name);
      return lockDb.transaction(async (t) => {
        const [row] = await select<{ got: number | null }>(lockDb, 'SELECT GET_LOCK($1, 0) AS got', [lock], t);
        if (row?.got !== 1) return undefined;
        const held = async () => (await select<{ mine: number | null }>(lockDb, 'SELECT IS_USED_LOCK($1) = CONNECTION_ID() AS mine', [lock], t))[0]?.mine === 1;
        try {
          return await work(held);
        } finally {
          await select(lockDb, 'SELECT RELEASE_LOCK($1)', [lock], t).catch(() => undefined);
        }
      });
    },

    /**
     * Writes a sealed batch (root and proofs, not yet anchored) in `t`, where the caller moved its
     * guarantees and amendments from waiting to batched (guarantees' notary state); returns its id.
     */
    async insertBatch(
      kind: AnchorKind,
      root: string,
      proofs: SealedProof[],
      at: Date,
      t: Transaction,
      amendmentProofs: SealedAmendmentProof[] = [],
    ): Promise<number> {
      const { insertId } = await write(
        db,
        `INSERT INTO notarization_batches (anchor_kind, root, size, state, created_at) VALUES ($1, $2, $3, 'sealed', $4)`,
        [kind, root, proofs.length + amendmentProofs.length, at],
        t,
      );
      for (let i = 0; i < amendmentProofs.length; i += 500) {
        const chunk = amendmentProofs.slice(i, i + 500);
        await execute(
          db,
          `INSERT INTO notarization_amendment_proofs (amendment_id, batch_id, leaf_index, digest, guarantee_digest, previous_digest, path, log_index) VALUES $1`,
          [chunk.map((p) => [p.amendmentId, insertId, p.leafIndex, p.digest, p.guaranteeDigest, p.previousDigest, JSON.stringify(p.path), p.logIndex])],
          t,
          TEXT,
        );
      }
      // In statements of 500 proofs (about 1 MB each), well under MariaDB's packet limit.
      for (let i = 0; i < proofs.length; i += 500) {
        const chunk = proofs.slice(i, i + 500);
        const values = chunk.map((_, j) => `($${j * 5 + 2}, $1, $${j * 5 + 3}, $${j * 5 + 4}, $${j * 5 + 5}, $${j * 5 + 6})`).join(', ');
        await execute(
          db,
          `INSERT INTO notarization_proofs (guarantee_id, batch_id, leaf_index, digest, path, log_index) VALUES ${values}`,
          [insertId, ...chunk.flatMap((p) => [p.guaranteeId, p.leafIndex, p.digest, JSON.stringify(p.path), p.logIndex])],
          t,
          TEXT,
        );
      }
      return insertId;
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

    /** Of these amendments, those whose batch is anchored, with its txHash and time. */
    async anchoredAmendments(ids: readonly string[]): Promise<Map<string, { txHash: string; anchoredAt: Date }>> {
      if (!ids.length) return new Map();
      const rows = await select<{ amendment_id: string; tx_hash: string; anchored_at: Date }>(
        db,
        `SELECT p.amendment_id, b.tx_hash, b.anchored_at FROM notarization_amendment_proofs p JOIN notarization_batches b ON b.id = p.batch_id
        WHERE p.amendment_id IN ($1) AND b.state = 'anchored' AND b.tx_hash IS NOT NULL AND b.anchored_at IS NOT NULL`,
        [ids],
        undefined,
        TEXT,
      );
      return new Map(rows.map((r) => [r.amendment_id, { txHash: r.tx_hash, anchoredAt: r.anchored_at }]));
    },

    /** The amendments of a batch, in leaf order. */
    async amendmentMembers(batchId: number): Promise<string[]> {
      const rows = await select<{ amendment_id: string }>(
        db,
        'SELECT amendment_id FROM notarization_amendment_proofs WHERE batch_id = $1 ORDER BY leaf_index',
        [batchId],
      );
      return rows.map((r) => r.amendment_id);
    },

    /** The sealed digests of these guarantees (those batched or done), by id: their amendments' first link. */
    async guaranteeDigests(ids: readonly string[]): Promise<Map<string, string>> {
      if (!ids.length) return new Map();
      const rows = await select<{ guarantee_id: string; digest: string }>(
        db,
        'SELECT guarantee_id, digest FROM notarization_proofs WHERE guarantee_id IN ($1)',
        [ids],
        undefined,
        TEXT,
      );
      return new Map(rows.map((r) => [r.guarantee_id, r.digest]));
    },

    /** The proofs of these amendments (the caller read them as an organization's), by amendment id: those that have one. */
    async amendmentProofsOf(amendmentIds: readonly string[]): Promise<Map<string, AmendmentProofRow>> {
      if (!amendmentIds.length) return new Map();
      const rows = await select<
        BatchDbRow & {
          amendment_id: string;
          leaf_index: number;
          digest: string;
          guarantee_digest: string;
          previous_digest: string | null;
          path: string;
          log_index: string | number | null;
        }
      >(
        db,
        `SELECT p.amendment_id, p.leaf_index, p.digest, p.guarantee_digest, p.previous_digest, p.path, p.log_index,
          b.id, b.anchor_kind, b.root, b.size, b.state, b.tx_hash, b.receipt, b.anchored_at
        FROM notarization_amendment_proofs p JOIN notarization_batches b ON b.id = p.batch_id
        WHERE p.amendment_id IN ($1)`,
        [amendmentIds],
        undefined,
        TEXT,
      );
      return new Map(
        rows.map((r) => [
          r.amendment_id,
          {
            amendmentId: r.amendment_id,
            leafIndex: r.leaf_index,
            digest: r.digest,
            guaranteeDigest: r.guarantee_digest,
            previousDigest: r.previous_digest,
            path: JSON.parse(r.path) as PathStep[],
            logIndex: r.log_index === null ? null : Number(r.log_index),
            batch: batchOf(r),
          },
        ]),
      );
    },

    /**
     * Records a batch as anchored, in transaction `t` (where the caller marks its guarantees
     * done: guarantees' notary state). False when it already was.
     */
    async complete(batchId: number, s: Submission & { anchoredAt: Date }, t: Transaction): Promise<boolean> {
      const done = await execute(
        db,
        `UPDATE notarization_batches SET state = 'anchored', tx_hash = $2, receipt = $3, anchored_at = $4
        WHERE id = $1 AND state IN ('sealed', 'submitted')`,
        [batchId, s.txHash, JSON.stringify(s.receipt), s.anchoredAt],
        t,
      );
      return done === 1;
    },

    /** The proof of a guarantee (the caller read it as its organization's), when it has one. */
    async proofOf(guaranteeId: string): Promise<ProofRow | undefined> {
      const [r] = await select<BatchDbRow & { guarantee_id: string; leaf_index: number; digest: string; path: string; log_index: string | number | null }>(
        db,
        `SELECT p.guarantee_id, p.leaf_index, p.digest, p.path, p.log_index, b.id, b.anchor_kind, b.root, b.size, b.state, b.tx_hash, b.receipt, b.anchored_at
        FROM notarization_proofs p JOIN notarization_batches b ON b.id = p.batch_id
        WHERE p.guarantee_id = $1`,
        [guaranteeId],
      );
      return (
        r && {
          guaranteeId: r.guarantee_id,
          leafIndex: r.leaf_index,
          digest: r.digest,
          path: JSON.parse(r.path) as PathStep[],
          logIndex: r.log_index === null ? null : Number(r.log_index),
          batch: batchOf(r),
        }
      );
    },

    /**
     * Up to `limit` sealed leaves not in the transparency log (sealed before it, or by the
     * previous release's worker during a rolling release), in batch and leaf order: records
     * before amendments.
     */
    async unloggedLeaves(limit: number): Promise<Array<{ kind: 'record' | 'amendment'; id: string; digest: string }>> {
      const n = Math.trunc(limit);
      const records = await select<{ id: string; digest: string }>(
        db,
        `SELECT guarantee_id AS id, digest FROM notarization_proofs WHERE log_index IS NULL ORDER BY batch_id, leaf_index LIMIT ${n}`,
        [],
      );
      const amendments =
        records.length < n
          ? await select<{ id: string; digest: string }>(
              db,
              `SELECT amendment_id AS id, digest FROM notarization_amendment_proofs WHERE log_index IS NULL ORDER BY batch_id, leaf_index LIMIT ${n - records.length}`,
              [],
            )
          : [];
      return [...records.map((r) => ({ kind: 'record' as const, ...r })), ...amendments.map((a) => ({ kind: 'amendment' as const, ...a }))];
    },

    /** Records where these leaves are in the log, in `t` (each once: a leaf that has its index keeps it). */
    async setLogIndexes(leaves: ReadonlyArray<{ kind: 'record' | 'amendment'; id: string; index: number }>, t: Transaction): Promise<void> {
      for (const l of leaves) {
        const n =
          l.kind === 'record'
            ? await execute(db, 'UPDATE notarization_proofs SET log_index = $2 WHERE guarantee_id = $1 AND log_index IS NULL', [l.id, l.index], t)
            : await execute(db, 'UPDATE notarization_amendment_proofs SET log_index = $2 WHERE amendment_id = $1 AND log_index IS NULL', [l.id, l.index], t);
        if (n !== 1) throw new Error(`the ${l.kind} ${l.id} was logged meanwhile`);
      }
    },
  };
}

export type NotarizationRepository = ReturnType<typeof createNotarizationRepository>;

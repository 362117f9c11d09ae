// The transparency log's rows (migration 0030): the sequencer's lease and the log's size, the
// entries and their leaf hashes, the stored hashes above them, checkpoints, cosignatures, the
// witnesses' state, what of the audit heads and keys the log holds, and the development key.
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';

/** An append by a process whose lease another took (or that ran out): nothing of it was written. */
export class FencedError extends Error {
  override readonly name = 'FencedError';
}

export interface StoredCheckpoint {
  size: number;
  root: Uint8Array;
  /** The note as the registry signed it (its text and its own signature). */
  note: string;
  createdAt: Date;
}

export interface WitnessState {
  vkey: string;
  size: number | null;
  lastOkAt: Date | null;
  lastTryAt: Date | null;
  lastError: string | null;
}

const BINARY = { prepared: false } as const;

/** The leases of log_sequencer's rows: the sequencer's (appends, fenced), and the publisher's (migration 0032). */
export const SEQUENCER = 1;
export const PUBLISHER = 2;
export type Lease = typeof SEQUENCER | typeof PUBLISHER;

export function createLogRepository(db: Sequelize) {
  return {
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },

    /**
     * Takes the sequencer's lease for `ms` when it is free or ran out: its new fencing token, or
     * undefined when another holds it. Each taking bumps the token, so that an append of an
     * earlier holder, carrying the old one, changes nothing.
     */
    async acquire(holder: string, ms: number, lease: Lease = SEQUENCER): Promise<number | undefined> {
      const taken = await execute(
        db,
        `UPDATE log_sequencer SET holder = $1, token = token + 1, renewals = 0, expires_at = NOW(3) + INTERVAL $2 MICROSECOND
        WHERE id = $3 AND expires_at < NOW(3)`,
        [holder, ms * 1000, lease],
      );
      if (taken !== 1) return undefined;
      const [row] = await select<{ token: string | number }>(db, 'SELECT token FROM log_sequencer WHERE id = $2 AND holder = $1', [holder, lease]);
      return row === undefined ? undefined : Number(row.token);
    },

    /** Extends the lease of `token` by `ms`; false when it is no longer held (taken over, or run out). */
    async renew(token: number, ms: number, lease: Lease = SEQUENCER): Promise<boolean> {
      const n = await execute(
        db,
        `UPDATE log_sequencer SET renewals = renewals + 1, expires_at = NOW(3) + INTERVAL $2 MICROSECOND
        WHERE id = $3 AND token = $1 AND expires_at >= NOW(3)`,
        [token, ms * 1000, lease],
      );
      return n === 1;
    },

    /** Gives the lease of `token` up at once (the next taker need not wait for it to run out). */
    async release(token: number, lease: Lease = SEQUENCER): Promise<void> {
      await execute(db, `UPDATE log_sequencer SET expires_at = '1970-01-02 00:00:00' WHERE id = $2 AND token = $1`, [token, lease]);
    },

    /** The log's size as committed. */
    async size(t?: Transaction): Promise<number> {
      const [row] = await select<{ size: string | number }>(db, 'SELECT size FROM log_sequencer WHERE id = 1', [], t);
      return Number(row?.size ?? 0);
    },

    /**
     * Appends `entries` (their bytes and leaf hashes) in `t` when `token` still holds the lease:
     * the index of the first. Throws FencedError (and `t` must roll back) otherwise. The lease's
     * row is locked until `t` ends: appends are one after the other.
     */
    async append(entries: ReadonlyArray<{ bytes: Uint8Array; leafHash: Uint8Array }>, token: number, at: Date, t: Transaction): Promise<number> {
      const [row] = await select<{ size: string | number }>(
        db,
        'SELECT size FROM log_sequencer WHERE id = 1 AND token = $1 AND expires_at >= NOW(3) FOR UPDATE',
        [token],
        t,
      );
      if (!row) throw new FencedError(`the sequencer's lease (token ${token}) is no longer held: nothing appended`);
      const first = Number(row.size);
      if (!entries.length) return first;
      for (let i = 0; i < entries.length; i += 1000) {
        const chunk = entries.slice(i, i + 1000);
        await execute(
          db,
          'INSERT INTO log_entries (idx, entry, leaf_hash, created_at) VALUES $1',
          [chunk.map((e, j) => [first + i + j, Buffer.from(e.bytes), Buffer.from(e.leafHash), at])],
          t,
          BINARY,
        );
      }
      // The fence again, in the same statement as the size: on a Galera cluster two holders'
      // transactions both writing this row cannot both commit.
      const moved = await execute(db, 'UPDATE log_sequencer SET size = size + $2 WHERE id = 1 AND token = $1 AND size = $3', [token, entries.length, first], t);
      if (moved !== 1) throw new FencedError(`the sequencer's lease (token ${token}) was taken over: nothing appended`);
      return first;
    },

    /** Entries `from` to `to` (exclusive), in order. */
    async entries(from: number, to: number): Promise<Uint8Array[]> {
      if (to <= from) return [];
      const rows = await select<{ entry: Buffer }>(db, 'SELECT entry FROM log_entries WHERE idx >= $1 AND idx < $2 ORDER BY idx', [from, to]);
      return rows.map((r) => new Uint8Array(r.entry));
    },

    /** Stored hashes of `level` from `from` to `to` (exclusive), in order (level 0: the leaf hashes). */
    async hashes(level: number, from: number, to: number): Promise<Uint8Array[]> {
      if (to <= from) return [];
      const rows =
        level === 0
          ? await select<{ h: Buffer }>(db, 'SELECT leaf_hash AS h FROM log_entries WHERE idx >= $1 AND idx < $2 ORDER BY idx', [from, to])
          : await select<{ h: Buffer }>(db, 'SELECT hash AS h FROM log_hashes WHERE level = $1 AND idx >= $2 AND idx < $3 ORDER BY idx', [level, from, to]);
      return rows.map((r) => new Uint8Array(r.h));
    },

    /** Stores hashes of `level` (>= 1), each once (the same again changes nothing). */
    async putHashes(level: number, hashes: ReadonlyArray<{ index: number; hash: Uint8Array }>): Promise<void> {
      for (let i = 0; i < hashes.length; i += 1000) {
        await execute(
          db,
          'INSERT IGNORE INTO log_hashes (level, idx, hash) VALUES $1',
          [hashes.slice(i, i + 1000).map((h) => [level, h.index, Buffer.from(h.hash)])],
          undefined,
          BINARY,
        );
      }
    },

    /** The latest checkpoint, if any. */
    async latestCheckpoint(): Promise<StoredCheckpoint | undefined> {
      const [r] = await select<{ size: string | number; root: Buffer; note: string; created_at: Date }>(
        db,
        'SELECT size, root, note, created_at FROM log_checkpoints ORDER BY size DESC LIMIT 1',
        [],
      );
      return r && { size: Number(r.size), root: new Uint8Array(r.root), note: r.note, createdAt: r.created_at };
    },

    /**
     * Of the newest `recent` checkpoints larger than `above`, the newest with at least
     * `cosigners` cosignatures; or, when none has that many, the newest of them.
     */
    async bestCheckpoint(above: number, cosigners: number, recent = 100): Promise<StoredCheckpoint | undefined> {
      const [r] = await select<{ size: string | number; root: Buffer; note: string; created_at: Date; n: string | number }>(
        db,
        `SELECT c.size, c.root, c.note, c.created_at, COUNT(s.witness) AS n
        FROM (SELECT size, root, note, created_at FROM log_checkpoints WHERE size > $1 ORDER BY size DESC LIMIT ${Math.trunc(recent)}) c
        LEFT JOIN log_cosignatures s ON s.size = c.size
        GROUP BY c.size, c.root, c.note, c.created_at
        ORDER BY COUNT(s.witness) >= $2 DESC, c.size DESC LIMIT 1`,
        [above, cosigners],
      );
      return r && { size: Number(r.size), root: new Uint8Array(r.root), note: r.note, createdAt: r.created_at };
    },

    /** The checkpoint of `size`, if one was published. */
    async checkpoint(size: number): Promise<StoredCheckpoint | undefined> {
      const [r] = await select<{ size: string | number; root: Buffer; note: string; created_at: Date }>(
        db,
        'SELECT size, root, note, created_at FROM log_checkpoints WHERE size = $1',
        [size],
      );
      return r && { size: Number(r.size), root: new Uint8Array(r.root), note: r.note, createdAt: r.created_at };
    },

    async putCheckpoint(c: StoredCheckpoint): Promise<void> {
      await execute(db, 'INSERT IGNORE INTO log_checkpoints (size, root, note, created_at) VALUES ($1, $2, $3, $4)', [
        c.size,
        Buffer.from(c.root),
        c.note,
        c.createdAt,
      ]);
    },

    /** The witnesses' cosignature lines on the checkpoint of `size`. */
    async cosignatures(size: number): Promise<string[]> {
      const rows = await select<{ line: string }>(db, 'SELECT line FROM log_cosignatures WHERE size = $1 ORDER BY witness', [size]);
      return rows.map((r) => r.line);
    },

    async putCosignature(size: number, witness: string, line: string, at: Date): Promise<void> {
      await execute(db, 'INSERT IGNORE INTO log_cosignatures (size, witness, line, created_at) VALUES ($1, $2, $3, $4)', [size, witness, line, at]);
    },

    async witnesses(): Promise<WitnessState[]> {
      const rows = await select<{ vkey: string; size: string | number | null; last_ok_at: Date | null; last_try_at: Date | null; last_error: string | null }>(
        db,
        'SELECT vkey, size, last_ok_at, last_try_at, last_error FROM log_witnesses',
        [],
      );
      return rows.map((r) => ({
        vkey: r.vkey,
        size: r.size === null ? null : Number(r.size),
        lastOkAt: r.last_ok_at,
        lastTryAt: r.last_try_at,
        lastError: r.last_error,
      }));
    },

    /** Records a witness's answer: the size it cosigned (or holds), or the error it gave. */
    async witnessAnswered(vkey: string, at: Date, outcome: { size: number } | { error: string }): Promise<void> {
      if ('size' in outcome)
        await execute(
          db,
          `INSERT INTO log_witnesses (vkey, size, last_ok_at, last_try_at, last_error) VALUES ($1, $2, $3, $3, NULL)
          ON DUPLICATE KEY UPDATE size = GREATEST(COALESCE(size, 0), VALUES(size)), last_ok_at = VALUES(last_ok_at), last_try_at = VALUES(last_try_at), last_error = NULL`,
          [vkey, outcome.size, at],
        );
      else
        await execute(
          db,
          `INSERT INTO log_witnesses (vkey, last_try_at, last_error) VALUES ($1, $2, $3)
          ON DUPLICATE KEY UPDATE last_try_at = VALUES(last_try_at), last_error = VALUES(last_error)`,
          [vkey, at, outcome.error.slice(0, 500)],
        );
    },

    /** What the log already holds of each observed subject ('audit:<chain>' its seq, 'key:<kid>' its state). */
    async observed(): Promise<Map<string, string>> {
      const rows = await select<{ subject: string; state: string }>(db, 'SELECT subject, state FROM log_observed', []);
      return new Map(rows.map((r) => [r.subject, r.state]));
    },

    async setObserved(subjects: ReadonlyArray<[string, string]>, t: Transaction): Promise<void> {
      if (!subjects.length) return;
      await execute(
        db,
        'INSERT INTO log_observed (subject, state) VALUES $1 ON DUPLICATE KEY UPDATE state = VALUES(state)',
        [subjects.map(([s, v]) => [s, v])],
        t,
        BINARY,
      );
    },

    /** The sealed development key of the log named `name`, if one was made. */
    async sealedKey(name: string): Promise<Buffer | undefined> {
      const [row] = await select<{ private_enc: Buffer }>(db, 'SELECT private_enc FROM log_keys WHERE name = $1', [name]);
      return row?.private_enc;
    },

    /** Keeps a generated key unless one is there already (two processes starting at once: the first one's stays). */
    async putSealedKey(name: string, sealed: Buffer): Promise<void> {
      await execute(db, 'INSERT IGNORE INTO log_keys (name, private_enc, created_at) VALUES ($1, $2, $3)', [name, sealed, new Date()]);
    },
  };
}

export type LogRepository = ReturnType<typeof createLogRepository>;

// The embedded anchor: an append-only, hash-chained ledger in the service's own database. Each
// entry commits to the previous entry's hash, and the entry's hash is the batch's txHash:
//   entryHash = SHA-256(RFC 8785 JSON of {schema, seq, prevHash, root, size, recordedAt})
// with prevHash of the first entry 64 zeros. Changing any past entry changes every hash after
// it. What it cannot prove: anything against whoever controls the database, who can rewrite
// the whole chain (docs/api.md "Notarization and proofs"). An EVM chain is the anchor for that.
import { ER_DUP_ENTRY, mysqlErrno, select, execute, type Sequelize } from '../shared/db/sequelize.js';
import type { Anchor, BatchToAnchor, FinalReceipt, Submission } from './anchor.js';
import { LEDGER_SCHEMA, ledgerEntryHash, type LedgerEntry } from './ledger-entry.js';

export { LEDGER_SCHEMA, ledgerEntryHash, type LedgerEntry };
export const GENESIS_HASH = '0'.repeat(64);

interface LedgerRow {
  seq: string | number;
  prev_hash: string;
  entry_hash: string;
  root: string;
  size: number;
  recorded_at: Date;
  batch_id: string | number;
}

const entryOf = (r: LedgerRow): LedgerEntry => ({
  schema: LEDGER_SCHEMA,
  seq: Number(r.seq),
  prevHash: r.prev_hash,
  root: r.root,
  size: r.size,
  recordedAt: r.recorded_at.toISOString(),
});

const COLUMNS = 'seq, prev_hash, entry_hash, root, size, recorded_at, batch_id';

export function createLedgerAnchor(
  db: Sequelize,
  now: () => Date = () => new Date(),
): Anchor & {
  /** The entry whose hash is `txHash`, and whether the chain from it to the head is intact. */
  check(txHash: string): Promise<{ entry: LedgerEntry; intact: boolean; problem?: string } | undefined>;
} {
  async function entryForBatch(batchId: number): Promise<LedgerRow | undefined> {
    const [row] = await select<LedgerRow>(db, `SELECT ${COLUMNS} FROM notarization_ledger WHERE batch_id = $1`, [batchId]);
    return row;
  }
  const submission = (row: LedgerRow): Submission => ({ txHash: row.entry_hash, receipt: { entry: entryOf(row) } });

  return {
    kind: 'ledger',

    async submit(batch: BatchToAnchor): Promise<Submission> {
      const existing = await entryForBatch(batch.id);
      if (existing) return submission(existing);
      try {
        await db.transaction(async (t) => {
          // The head, locked: appends are one at a time (and the unique prev_hash would refuse a fork anyway).
          const [head] = await select<LedgerRow>(db, `SELECT ${COLUMNS} FROM notarization_ledger ORDER BY seq DESC LIMIT 1 FOR UPDATE`, [], t);
          const recordedAt = new Date(Math.max(now().getTime(), head ? head.recorded_at.getTime() : 0));
          const entry: LedgerEntry = {
            schema: LEDGER_SCHEMA,
            seq: head ? Number(head.seq) + 1 : 1,
            prevHash: head?.entry_hash ?? GENESIS_HASH,
            root: batch.root,
            size: batch.size,
            recordedAt: recordedAt.toISOString(),
          };
          await execute(
            db,
            `INSERT INTO notarization_ledger (seq, prev_hash, entry_hash, batch_id, root, size, recorded_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)`,
            [entry.seq, entry.prevHash, ledgerEntryHash(entry), batch.id, entry.root, entry.size, recordedAt],
            t,
          );
        });
      } catch (err) {
        // Appended meanwhile by another process: the first append is the anchor.
        if (mysqlErrno(err) !== ER_DUP_ENTRY) throw err;
      }
      const row = await entryForBatch(batch.id);
      if (!row) throw new Error(`ledger append for batch ${batch.id} left no entry`);
      return submission(row);
    },

    // An entry is final once committed.
    confirm(_batch: BatchToAnchor, s: Submission): Promise<FinalReceipt> {
      const entry = s.receipt.entry as LedgerEntry;
      return Promise.resolve({ ...s, anchoredAt: new Date(entry.recordedAt) });
    },

    async check(txHash: string) {
      const [row] = await select<LedgerRow>(db, `SELECT ${COLUMNS} FROM notarization_ledger WHERE entry_hash = $1`, [txHash]);
      if (!row) return undefined;
      const entry = entryOf(row);
      // From this entry to the head: every entry must hash to what it says, and name its predecessor.
      let prev: LedgerRow | undefined;
      let page = [row];
      while (page.length) {
        for (const r of page) {
          if (prev && r.prev_hash !== prev.entry_hash) return { entry, intact: false, problem: `entry ${r.seq} does not follow entry ${prev.seq}` };
          if (ledgerEntryHash(entryOf(r)) !== r.entry_hash) return { entry, intact: false, problem: `entry ${r.seq} does not hash to its recorded hash` };
          prev = r;
        }
        page = await select<LedgerRow>(db, `SELECT ${COLUMNS} FROM notarization_ledger WHERE seq > $1 ORDER BY seq LIMIT 1000`, [prev?.seq]);
      }
      return { entry, intact: true };
    },
  };
}

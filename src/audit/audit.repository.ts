// audit_log and audit_heads: rows appended to their chain in the transaction of the change they
// record (append), or as statements of a registration's one-round-trip script (scriptStatements);
// an organization's rows read back (list); every chain checked (verify).
// Appending locks the chain's head row: an organization's changes take turns on it, and a
// retried or racing change can neither reuse a seq nor leave a gap.
import { execute, select, type Sequelize, type Statement, type Transaction } from '../shared/db/sequelize.js';
import { auditHash, auditHashSql, chainOf, GENESIS_HASH, type AuditEntry, type AuditRow } from './audit-chain.js';

interface Row {
  chain: string;
  seq: string | number;
  at: Date;
  org_id: string | null;
  actor: string;
  action: string;
  target: string;
  request_id: string | null;
  outcome: string;
  prev_hash: string;
  hash: string;
}

const COLUMNS = 'chain, seq, at, org_id, actor, action, target, request_id, outcome, prev_hash, hash';

const rowOf = (r: Row): AuditRow => ({
  chain: r.chain,
  seq: Number(r.seq),
  at: r.at,
  orgId: r.org_id,
  actor: r.actor,
  action: r.action,
  target: r.target,
  requestId: r.request_id,
  outcome: r.outcome,
  prevHash: r.prev_hash,
  hash: r.hash,
});

/** Where a chain stops verifying: the first row that does not hash as recorded, or does not follow the one before. */
export interface BrokenRow {
  chain: string;
  seq: number;
  problem: string;
}

/** An SQL value: a bound string, or an expression of the script's (a session variable). */
export type SqlValue = string | null | { sql: string };

/**
 * The statements that append a row to the organization's chain inside a registration's
 * script (one round trip), only when `whenSql` holds; `at`/`iso` are the script's time as
 * DATETIME(3) and as its RFC 3339 string, `target` may be an expression of the script's.
 * The organization's row is locked by the script before (its registry place), so its head
 * is not contended.
 */
export function auditScriptStatements(
  entry: Omit<AuditEntry, 'target' | 'orgId'> & { orgId: string; target: SqlValue },
  time: { atSql: string; isoSql: string },
  whenSql: string,
): Statement[] {
  const chain = chainOf(entry.orgId);
  const value = (v: SqlValue, n: number): { sql: string; bind: unknown[] } =>
    v !== null && typeof v === 'object' ? { sql: v.sql, bind: [] } : { sql: `$${n}`, bind: [v ?? ''] };
  // Bound in this order: chain $1, orgId $2, actor $3, action $4, target $5 (unless an expression), requestId $6, outcome $7.
  const target = value(entry.target, 5);
  const bind = [chain, entry.orgId, entry.actor, entry.action, target.bind[0] ?? '', entry.requestId ?? '', entry.outcome];
  const hash = auditHashSql({
    prevHash: '@audit_prev',
    chain: '$1',
    seq: 'CAST(@audit_seq + 1 AS CHAR)',
    iso: time.isoSql,
    orgId: '$2',
    actor: '$3',
    action: '$4',
    target: target.sql,
    requestId: '$6',
    outcome: '$7',
  });
  // Four statements, run under the organization's row lock that the script took first (each
  // one lengthens the time that lock is held: the organization's registrations wait for it).
  // The head's seq and hash are read by the statement that takes its lock (or makes it).
  return [
    { sql: `SET @audit_seq = 0, @audit_prev = '${GENESIS_HASH}', @audit_hash = NULL`, bind: [] },
    {
      sql: `INSERT INTO audit_heads (chain, seq, hash) SELECT $1, 0, $2 FROM DUAL WHERE ${whenSql}
      ON DUPLICATE KEY UPDATE seq = (@audit_seq := audit_heads.seq), hash = (@audit_prev := audit_heads.hash)`,
      bind: [chain, GENESIS_HASH],
    },
    {
      sql: `INSERT INTO audit_log (${COLUMNS}) SELECT $1, @audit_seq + 1, ${time.atSql}, $2, $3, $4, ${target.sql}, NULLIF($6, ''), $7, @audit_prev, (@audit_hash := ${hash})
      FROM DUAL WHERE ${whenSql}`,
      bind,
    },
    { sql: 'UPDATE audit_heads SET seq = @audit_seq + 1, hash = @audit_hash WHERE chain = $1 AND @audit_hash IS NOT NULL', bind: [chain] },
  ];
}

export function createAuditRepository(db: Sequelize) {
  /** Appends `entry` at `at` to its chain, in `t` (the change's own transaction); its row. */
  async function append(entry: AuditEntry, at: Date, t: Transaction): Promise<AuditRow> {
    const chain = chainOf(entry.orgId);
    // Creates the chain's head, or takes its exclusive lock at once (INSERT IGNORE would take a
    // shared one first, and two appenders upgrading theirs would deadlock).
    await execute(db, 'INSERT INTO audit_heads (chain, seq, hash) VALUES ($1, 0, $2) ON DUPLICATE KEY UPDATE seq = seq', [chain, GENESIS_HASH], t);
    const [head] = await select<{ seq: string | number; hash: string }>(db, 'SELECT seq, hash FROM audit_heads WHERE chain = $1 FOR UPDATE', [chain], t);
    const row: Omit<AuditRow, 'hash'> = { ...entry, chain, seq: Number(head?.seq ?? 0) + 1, at, prevHash: head?.hash ?? GENESIS_HASH };
    const hash = auditHash(row);
    await execute(
      db,
      `INSERT INTO audit_log (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [chain, row.seq, at, entry.orgId, entry.actor, entry.action, entry.target, entry.requestId, entry.outcome, row.prevHash, hash],
      t,
    );
    await execute(db, 'UPDATE audit_heads SET seq = $2, hash = $3 WHERE chain = $1', [chain, row.seq, hash], t);
    return { ...row, hash };
  }

  return {
    append,

    /** Appends `entry` in a transaction of its own (a change that is not the database's: Bull Board's, in Redis). */
    async record(entry: AuditEntry, at: Date): Promise<AuditRow> {
      return db.transaction((t) => append(entry, at, t));
    },

    /** The statements of a registration's script that append its row (auditScriptStatements). */
    scriptStatements: auditScriptStatements,

    /** The organization's rows after `since`, oldest first, at most `limit`. */
    async list(orgId: string, since: number, limit: number): Promise<AuditRow[]> {
      const rows = await select<Row>(db, `SELECT ${COLUMNS} FROM audit_log WHERE chain = $1 AND seq > $2 ORDER BY seq LIMIT ${Math.trunc(limit)}`, [
        chainOf(orgId),
        since,
      ]);
      return rows.map(rowOf);
    },

    /**
     * Checks every chain, row by row: each hashes as recorded, follows the one before (seq + 1,
     * its prevHash), and the chain ends where its head says. The first broken row of each
     * broken chain; how many rows were checked.
     */
    async verify(): Promise<{ rows: number; chains: number; broken: BrokenRow[] }> {
      // On a running system rows keep coming: the chains first, then their heads, and each chain
      // read up to the head read (a row appended since is the next check's). A chain with rows
      // but no head had its head removed.
      const chains = new Set((await select<{ chain: string }>(db, 'SELECT DISTINCT chain FROM audit_log', [])).map((r) => r.chain));
      const heads = await select<{ chain: string; seq: string | number; hash: string }>(db, 'SELECT chain, seq, hash FROM audit_heads ORDER BY chain', []);
      for (const h of heads) chains.add(h.chain);
      const broken: BrokenRow[] = [];
      let checked = 0;
      for (const chain of [...chains].sort()) {
        const head = heads.find((h) => h.chain === chain);
        const upTo = head ? Number(head.seq) : Number.MAX_SAFE_INTEGER;
        let prev = GENESIS_HASH;
        let seq = 0;
        let problem: BrokenRow | undefined;
        for (;;) {
          const page = (
            await select<Row>(db, `SELECT ${COLUMNS} FROM audit_log WHERE chain = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT 1000`, [chain, seq, upTo])
          ).map(rowOf);
          for (const r of page) {
            checked++;
            if (r.seq !== seq + 1) problem = { chain, seq: seq + 1, problem: `row ${seq + 1} is missing (the next is ${r.seq})` };
            else if (r.prevHash !== prev) problem = { chain, seq: r.seq, problem: "its prevHash is not the previous row's hash" };
            else if (auditHash(r) !== r.hash) problem = { chain, seq: r.seq, problem: 'it does not hash to its recorded hash (a field was changed)' };
            if (problem) break;
            prev = r.hash;
            seq = r.seq;
          }
          if (problem || page.length < 1000) break;
        }
        if (!problem && (!head || Number(head.seq) !== seq || head.hash !== prev))
          problem = {
            chain,
            seq: seq + 1,
            problem: `the chain ends at row ${seq}, its head says ${head ? `row ${String(head.seq)}` : 'nothing'} (rows removed from its end?)`,
          };
        if (problem) broken.push(problem);
      }
      return { rows: checked, chains: chains.size, broken };
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;

// audit_log and audit_heads: rows appended to their chain in the transaction of the change they
// record (append), or as statements of a registration's one-round-trip script (scriptStatements);
// an organization's rows read back (list); every chain checked (verify).
// Appending locks the chain's head: an organization's row (its audit_seq, migration 0021), or
// the system chain's audit_heads row. An organization's changes take turns on it, and a retried
// or racing change can neither reuse a seq nor leave a gap.
import { ER_DUP_ENTRY, execute, mysqlErrno, select, type Sequelize, type Statement, type Transaction } from '../shared/db/sequelize.js';
import { createOrgRepository } from '../orgs/org.repository.js';
import { AUDIT_SEQ_VAR } from './audit.sql.js';
import { auditHash, auditHashSql, chainOf, GENESIS_HASH, SYSTEM_CHAIN, type AuditEntry, type AuditRow } from './audit-chain.js';

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

/**
 * The statements that append a row to the organization's chain inside a registration's script
 * (one round trip), only when `whenSql` holds; `at`/`iso` are the script's time as DATETIME(3)
 * and as its RFC 3339 string, `target` an expression of the script's (the record's id is known
 * only there). The script's place must be taken with AUDIT_SEQ_VAR (orgs'
 * registryPlaceStatements): that UPDATE took the organization's row lock and the row's seq, so
 * the chain is not contended; the previous row's hash is read here by primary key.
 */
export function auditScriptStatements(
  entry: Omit<AuditEntry, 'target' | 'orgId'> & { orgId: string; target: { sql: string } },
  time: { atSql: string; isoSql: string },
  whenSql: string,
): Statement[] {
  const chain = chainOf(entry.orgId);
  // Bound: chain $1, orgId $2, actor $3, action $4, requestId $5, outcome $6, then the hash's known fields from $7 on.
  const bind = [chain, entry.orgId, entry.actor, entry.action, entry.requestId ?? '', entry.outcome];
  const hash = auditHashSql(
    {
      prevHash: '@audit_prev',
      chain: { value: chain },
      seq: AUDIT_SEQ_VAR,
      iso: time.isoSql,
      orgId: { value: entry.orgId },
      actor: { value: entry.actor },
      action: { value: entry.action },
      target: entry.target.sql,
      requestId: { value: entry.requestId ?? '' },
      outcome: { value: entry.outcome },
    },
    bind.length + 1,
  );
  // Two statements under the organization's row lock, which the script took first: each one
  // lengthens the time the organization's registrations wait for it (docs/benchmarks.md, "The
  // audit row on the create path"; an INSERT reading the previous row itself costs more, MariaDB
  // copying the table it inserts into). The INSERT runs only with a seq this script took.
  return [
    {
      sql: `SET @audit_prev = COALESCE((SELECT hash FROM audit_log WHERE chain = $1 AND seq = ${AUDIT_SEQ_VAR} - 1), '${GENESIS_HASH}')`,
      bind: [chain],
    },
    {
      sql: `INSERT INTO audit_log (${COLUMNS}) SELECT $1, ${AUDIT_SEQ_VAR}, ${time.atSql}, $2, $3, $4, ${entry.target.sql}, NULLIF($5, ''), $6, @audit_prev, ${hash.sql}
      FROM DUAL WHERE ${whenSql} AND ${AUDIT_SEQ_VAR} IS NOT NULL`,
      bind: [...bind, ...hash.bind],
    },
  ];
}

/** Whether `err` is an audit row colliding with a row of the organization's chain (its primary key, `<chain>-<seq>`). */
function isChainCollision(err: unknown, orgId: string): boolean {
  if (mysqlErrno(err) !== ER_DUP_ENTRY) return false;
  const e = err as { message?: unknown; parent?: { message?: unknown } } | null;
  const text = e?.parent?.message ?? e?.message;
  const message = typeof text === 'string' ? text : '';
  return message.includes(`'${orgId}-`) && message.includes("for key 'PRIMARY'");
}

export function createAuditRepository(db: Sequelize) {
  const orgs = createOrgRepository(db);

  /** The system chain's next seq and the hash before it, its head's row locked until `t` ends. */
  async function takeSystemSeq(t: Transaction): Promise<{ seq: number; prevHash: string }> {
    // Creates the chain's head, or takes its exclusive lock at once (INSERT IGNORE would take a
    // shared one first, and two appenders upgrading theirs would deadlock).
    await execute(db, 'INSERT INTO audit_heads (chain, seq, hash) VALUES ($1, 0, $2) ON DUPLICATE KEY UPDATE seq = seq', [SYSTEM_CHAIN, GENESIS_HASH], t);
    const [head] = await select<{ seq: string | number; hash: string }>(db, 'SELECT seq, hash FROM audit_heads WHERE chain = $1 FOR UPDATE', [SYSTEM_CHAIN], t);
    return { seq: Number(head?.seq ?? 0) + 1, prevHash: head?.hash ?? GENESIS_HASH };
  }

  /** An organization's chain's next seq (its row locked until `t` ends) and the hash of the row before it. */
  async function takeOrgSeq(orgId: string, t: Transaction): Promise<{ seq: number; prevHash: string }> {
    const seq = await orgs.takeAuditSeq(orgId, t);
    if (seq === undefined) throw new Error(`No organization ${orgId} to record a change of.`);
    // As the registration's script reads it (a row missing there is `cli audit verify`'s to name).
    // A locking read: the latest row, whatever snapshot the caller's earlier reads opened.
    const [prev] =
      seq > 1 ? await select<{ hash: string }>(db, 'SELECT hash FROM audit_log WHERE chain = $1 AND seq = $2 LOCK IN SHARE MODE', [orgId, seq - 1], t) : [];
    return { seq, prevHash: prev?.hash ?? GENESIS_HASH };
  }

  /**
   * Appends `entry` at `at` to its chain, in `t` (the change's own transaction); its row. For an
   * organization's chain it locks the organization's row (the head): call it before the
   * change's own writes, whose foreign keys would take that row shared first (two such changes
   * then deadlock, each upgrading its lock), and before the change locks rows a registration
   * locks after the organization's (its documents' files, its webhook endpoints).
   */
  async function append(entry: AuditEntry, at: Date, t: Transaction): Promise<AuditRow> {
    const chain = chainOf(entry.orgId);
    for (let attempt = 1; ; attempt++) {
      const { seq, prevHash } = entry.orgId === null ? await takeSystemSeq(t) : await takeOrgSeq(entry.orgId, t);
      const row: Omit<AuditRow, 'hash'> = { ...entry, chain, seq, at, prevHash };
      const hash = auditHash(row);
      try {
        await execute(
          db,
          `INSERT INTO audit_log (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
          [chain, row.seq, at, entry.orgId, entry.actor, entry.action, entry.target, entry.requestId, entry.outcome, row.prevHash, hash],
          t,
        );
      } catch (err) {
        // The seq is taken: the organization's head is behind rows the previous release appended
        // during a rolling release (migration 0021). A duplicate key rolls back the statement
        // only: the head is healed in the same transaction, and the row goes after them.
        if (entry.orgId === null || !isChainCollision(err, entry.orgId)) throw err;
        if (attempt >= 3) throw new Error(`the audit chain of ${entry.orgId} collided ${attempt} times with rows past its head`, { cause: err });
        // Up to the chain's last row (unless the seq just taken is that row's: the next take is after it).
        await orgs.healAuditSeq(entry.orgId, t);
        continue;
      }
      if (entry.orgId === null) await execute(db, 'UPDATE audit_heads SET seq = $2, hash = $3 WHERE chain = $1', [chain, row.seq, hash], t);
      return { ...row, hash };
    }
  }

  return {
    append,

    /** Appends `entry` in a transaction of its own (a change that is not the database's: Bull Board's, in Redis). */
    async record(entry: AuditEntry, at: Date): Promise<AuditRow> {
      return db.transaction((t) => append(entry, at, t));
    },

    /** The statements of a registration's script that append its row (auditScriptStatements). */
    scriptStatements: auditScriptStatements,

    /**
     * After a registration's script failed with `err`: whether it was its audit row colliding
     * with its chain (the organization's head behind the previous release's rows, during a
     * rolling release), now healed, so that the script can run again. Any other error (a
     * transactionId raced, say) is left as it is.
     */
    async healChain(err: unknown, orgId: string): Promise<boolean> {
      if (!isChainCollision(err, orgId)) return false;
      // A heal that fails (the organization busy) leaves the collision as the answer.
      return orgs.healAuditSeq(orgId).catch(() => false);
    },

    /**
     * Every chain's head as its appenders left it: each organization's seq (its row) and the
     * system chain's (audit_heads). What the transparency log records as the chains' ends.
     */
    async heads(): Promise<Array<{ chain: string; seq: number }>> {
      const system = await select<{ seq: string | number }>(db, 'SELECT seq FROM audit_heads WHERE chain = $1', [SYSTEM_CHAIN]);
      return [...(await orgs.auditHeads()), ...system.map((r) => ({ chain: SYSTEM_CHAIN, seq: Number(r.seq) }))];
    },

    /** The hashes of these chains' rows (each a chain and seq), by chain: those that exist. */
    async hashesAt(heads: ReadonlyArray<{ chain: string; seq: number }>): Promise<Map<string, string>> {
      const out = new Map<string, string>();
      for (let i = 0; i < heads.length; i += 500) {
        const chunk = heads.slice(i, i + 500);
        const rows = await select<{ chain: string; hash: string }>(
          db,
          `SELECT chain, hash FROM audit_log WHERE (chain, seq) IN ($1)`,
          [chunk.map((h) => [h.chain, h.seq])],
          undefined,
          { prepared: false },
        );
        for (const r of rows) out.set(r.chain, r.hash);
      }
      return out;
    },

    /**
     * Checks the chains' ends against heads a transparency log recorded (`cli audit verify
     * --log`): each recorded head's row must still be there with the same hash. The chain's own
     * links prove every row before it; the log, held by others, proves its end was not cut or
     * rewritten. What does not hold, each named.
     */
    async checkRecordedHeads(heads: ReadonlyArray<{ chain: string; seq: number; hash: string; index: number }>): Promise<BrokenRow[]> {
      const found = new Map<string, string>();
      for (let i = 0; i < heads.length; i += 500) {
        const chunk = heads.slice(i, i + 500);
        const rows = await select<{ chain: string; seq: string | number; hash: string }>(
          db,
          'SELECT chain, seq, hash FROM audit_log WHERE (chain, seq) IN ($1)',
          [chunk.map((h) => [h.chain, h.seq])],
          undefined,
          { prepared: false },
        );
        for (const r of rows) found.set(`${r.chain} ${Number(r.seq)}`, r.hash);
      }
      const broken: BrokenRow[] = [];
      for (const h of heads) {
        const hash = found.get(`${h.chain} ${h.seq}`);
        if (hash === h.hash) continue;
        broken.push({
          chain: h.chain,
          seq: h.seq,
          problem:
            hash === undefined
              ? `the transparency log holds row ${h.seq} as the chain's head (entry ${h.index}); the chain no longer has it (its end was cut)`
              : `its hash is not the one the transparency log holds (entry ${h.index}): the row was rewritten`,
        });
      }
      return broken;
    },

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
      // The system chain's head is its audit_heads row, with its last hash. An organization's
      // is its row's seq, unless the previous release appended after it during a rolling
      // release: then the head it left in audit_heads (migration 0021), which is further on.
      const heads: Array<{ chain: string; seq: number; hash?: string }> = (
        await select<{ chain: string; seq: string | number; hash: string }>(db, 'SELECT chain, seq, hash FROM audit_heads', [])
      ).map((h) => ({ chain: h.chain, seq: Number(h.seq), hash: h.hash }));
      for (const h of await orgs.auditHeads()) {
        const kept = heads.findIndex((k) => k.chain === h.chain);
        if (kept === -1) heads.push(h);
        else if ((heads[kept]?.seq ?? 0) < h.seq) heads[kept] = h;
      }
      for (const h of heads) chains.add(h.chain);
      const broken: BrokenRow[] = [];
      let checked = 0;
      for (const chain of [...chains].sort()) {
        const head = heads.find((h) => h.chain === chain);
        const upTo = head ? head.seq : Number.MAX_SAFE_INTEGER;
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
        if (!problem && (!head || head.seq !== seq || (head.hash !== undefined && head.hash !== prev)))
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

// One Sequelize instance per process, on mysql2, in UTC. Repositories receive it as an argument.
import { QueryTypes, Sequelize, type Transaction } from 'sequelize';

export { QueryTypes, Sequelize };
export type { Transaction };

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  /** Milliseconds a query may wait for a pool connection before failing (never a hang). */
  acquireTimeoutMs?: number;
}

export function createSequelize(opts: DatabaseOptions): Sequelize {
  return new Sequelize(opts.url, {
    dialect: 'mysql',
    logging: false,
    timezone: '+00:00',
    benchmark: false,
    pool: { max: opts.poolMax, min: 0, idle: 10_000, acquire: opts.acquireTimeoutMs ?? 10_000, evict: 5_000 },
    dialectOptions: {
      // mysql2's own compiled row parser. Sequelize installs a typeCast function, which makes
      // mysql2 build a wrapper object per field of every row (a fifth of the CPU of a list
      // request, measured); our queries are raw and read DATETIME in UTC, which mysql2 does
      // itself from the timezone option.
      typeCast: true,
      // DECIMAL arrives as a string; serializers turn it into a JSON number exactly.
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectTimeout: 5_000,
      charset: 'utf8mb4',
    },
    define: { timestamps: false, underscored: true, freezeTableName: true },
  });
}

/** The MySQL error number of a driver error, if it is one (1062 is a duplicate key). */
export function mysqlErrno(err: unknown): number | undefined {
  const e = err as { parent?: { errno?: number }; original?: { errno?: number }; errno?: number } | null;
  return e?.parent?.errno ?? e?.original?.errno ?? e?.errno;
}

export const ER_DUP_ENTRY = 1062;

// ---- The lean form of the hot paths ------------------------------------------------------
// Sequelize's query() pipeline (hooks, logging, bind formatting, an Error per query for its
// stack, result formatting) cost a third of a get-by-id request, measured. Hot statements
// keep Sequelize's pool and transactions but run through mysql2's execute (prepared
// statements) on the pooled connection itself.

interface MysqlConnection {
  execute(sql: string, values: unknown[], callback: (err: Error | null, result: unknown) => void): unknown;
}

const MAX_PREPARED_FORMS = 1000;
const positional = new Map<string, { sql: string; order: number[] }>();

/** `$1, $2...` (the bind syntax used here) to mysql2's `?`, with the parameters in order of use. */
export function toPositional(sql: string): { sql: string; order: number[] } {
  let p = positional.get(sql);
  if (!p) {
    const order: number[] = [];
    p = { sql: sql.replace(/\$(\d+)/g, (_, n: string) => { order.push(Number(n) - 1); return '?'; }), order };
    if (positional.size >= MAX_PREPARED_FORMS) positional.clear();
    positional.set(sql, p);
  }
  return p;
}

async function run(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction): Promise<unknown> {
  const p = toPositional(sql);
  const values = p.order.map((i) => bind[i] ?? null);
  const own = transaction === undefined;
  const connection = (own
    ? await db.connectionManager.getConnection({ type: 'write' })
    : (transaction as unknown as { connection: object }).connection) as MysqlConnection;
  try {
    return await new Promise((resolve, reject) => {
      connection.execute(p.sql, values, (err, result) => (err ? reject(err) : resolve(result)));
    });
  } finally {
    if (own) db.connectionManager.releaseConnection(connection);
  }
}

/** Runs a SELECT with positional bind parameters ($1, $2...) and returns plain rows. */
export async function select<T extends object>(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction): Promise<T[]> {
  return (await run(db, sql, bind, transaction)) as T[];
}

/** Runs a statement that changes rows; resolves with the affected row count. */
export async function execute(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction): Promise<number> {
  return ((await run(db, sql, bind, transaction)) as { affectedRows?: number }).affectedRows ?? 0;
}

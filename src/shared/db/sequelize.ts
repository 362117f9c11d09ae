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

/** Runs a SELECT with positional bind parameters ($1, $2...) and returns plain rows. */
export function select<T extends object>(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction): Promise<T[]> {
  return db.query<T>(sql, { bind, type: QueryTypes.SELECT, transaction, raw: true });
}

/** Runs a statement that changes rows; resolves with the affected row count. */
export async function execute(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction): Promise<number> {
  const [result] = await db.query(sql, { bind, transaction, raw: true });
  return (result as { affectedRows?: number } | undefined)?.affectedRows ?? 0;
}

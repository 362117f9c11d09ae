// One Sequelize instance per process, on mysql2, in UTC. Repositories receive it as an argument.
import { createHash } from 'node:crypto';
import { parse as parseQuery } from 'node:querystring';
import { ConnectionAcquireTimeoutError, Sequelize, type Options, type Transaction } from 'sequelize';

export { Sequelize };
export type { Transaction };

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  /** Milliseconds a query may wait for a pool connection before failing (never a hang). */
  acquireTimeoutMs?: number;
  /**
   * Longest a statement may run or wait for a lock, in milliseconds: set on the server for
   * every connection (max_statement_time, lock waits) and enforced by the client on the lean
   * path, whose connection is destroyed when the server does not answer in time. Unset for
   * migrations, whose statements may rightly take long.
   */
  statementTimeoutMs?: number;
  /** How much longer than statementTimeoutMs the client waits for an answer (default 5 s). */
  clientGraceMs?: number;
  /** Connections that take several statements in one query: only the scripts' own pool (script()). */
  multipleStatements?: boolean;
  /** Connections of the registrations' scripts (script()'s `registrations` lane): 1 by default; the API's, as many as its requests'. */
  scriptPoolMax?: number;
}

const optionsOf = new WeakMap<Sequelize, DatabaseOptions>();
/** Each database's pool for scripts (script()), made on first use and closed with it. */
/**
 * The pools of script(), per database and lane: `serial` (one connection: the verifications'
 * group commit, one batch at a time) and `registrations` (scriptPoolMax connections: every
 * registration is a script, and those of a busy organization wait for its lock on theirs, never
 * on the group commit's).
 */
export type ScriptLane = 'serial' | 'registrations';
const scriptPools = new WeakMap<Sequelize, Map<ScriptLane, Sequelize>>();

/** A database URL's dialect, database, credentials, host, port and query (host, driver options), as Sequelize reads them. */
type UrlOptions = Pick<Options, 'dialect' | 'database' | 'username' | 'password' | 'host' | 'port'> & { query: Record<string, string | string[] | undefined> };

/**
 * What Sequelize reads from a database URL given to its constructor, read here with the WHATWG
 * URL parser: Sequelize reads it with url.parse(), which is deprecated (DEP0169; a warning on
 * Node 20 under --pending-deprecation). Only a URL both parsers read alike is read here (already
 * in WHATWG's canonical form, of plain characters, its host a name url.parse() takes as it is or
 * a bracketed IPv6 address); for any other, undefined: Sequelize reads it itself, as before
 * (test/unit/shared/database-url.test.ts holds URLs of each kind with what Sequelize made of them).
 */
export function databaseUrlOptions(url: string): UrlOptions | undefined {
  if (!/^(mysql|mariadb):\/\/[\w.~%!$&()*+,;=:@/?[\]-]*$/.test(url) || !URL.canParse(url)) return undefined;
  const u = new URL(url);
  if (u.href !== url) return undefined;
  const name = u.hostname.toLowerCase();
  const ipv6 = /^\[[0-9a-f:.]+\]$/.test(name);
  // url.parse() passes a name through IDNA (ToASCII): only names that leaves as they are (no xn-- label).
  if (!ipv6 && (name.length > 255 || !/^[\w-]{0,63}(\.[\w-]{0,63})*$/.test(name) || /(^|\.)xn--/.test(name))) return undefined;
  const query = parseQuery(u.search.slice(1));
  const queryHost = query.host;
  if (Array.isArray(queryHost)) return undefined;
  const options: UrlOptions = { dialect: u.protocol.slice(0, -1) as 'mysql' | 'mariadb', host: queryHost || (ipv6 ? name.slice(1, -1) : name), query };
  // Empty parts are no parts: Sequelize takes each from its options when the URL's is empty.
  const database = u.pathname.replace(/^\//, '');
  if (database) options.database = database;
  if (u.port) options.port = Number(u.port); // Sequelize kept the digits as a string, which mysql2 reads as this number
  // url.parse() gives the user information percent-decoded as a whole, which Sequelize splits at its first colon.
  let auth: string;
  try {
    auth = decodeURIComponent(u.password ? `${u.username}:${u.password}` : u.username);
  } catch {
    return undefined;
  }
  const [username, ...password] = auth.split(':');
  if (username) options.username = username;
  if (password.join(':')) options.password = password.join(':');
  return options;
}

export function createSequelize(opts: DatabaseOptions): Sequelize {
  const options: Options = {
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
      // mysql2 reads and writes DATETIME in UTC either way, but '+00:00' (Sequelize's timezone,
      // which it also sets as the session's time_zone) makes it build a string and parse it for
      // every DATETIME of every row; 'Z' builds the Date from its fields (a get reads five).
      timezone: 'Z',
      // DECIMAL arrives as a string; serializers turn it into a JSON number exactly.
      supportBigNumbers: true,
      bigNumberStrings: true,
      connectTimeout: 5_000,
      charset: 'utf8mb4',
      // Each pooled connection keeps its prepared statements; bounded so that processes x
      // connections x statements stays far below the server's max_prepared_stmt_count.
      maxPreparedStatements: 64,
      multipleStatements: opts.multipleStatements === true,
    },
    define: { timestamps: false, underscored: true, freezeTableName: true },
  };
  const fromUrl = databaseUrlOptions(opts.url);
  let db: Sequelize;
  if (fromUrl) {
    // As Sequelize does with a URL: its parts over the options, its query over the driver's options.
    const { query, ...parts } = fromUrl;
    db = new Sequelize({ ...options, ...parts, dialectOptions: { ...options.dialectOptions, ...query } });
  } else {
    db = new Sequelize(opts.url, options);
  }
  const timeoutMs = opts.statementTimeoutMs;
  if (timeoutMs !== undefined) {
    const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
    db.addHook('afterConnect', async (connection) => {
      await new Promise<void>((resolve, reject) => {
        (connection as MysqlConnection).query(
          `SET SESSION max_statement_time = ${timeoutMs / 1000}, lock_wait_timeout = ${seconds}, innodb_lock_wait_timeout = ${seconds}`,
          (err) => (err ? reject(err) : resolve()),
        );
      });
    });
  }
  if (opts.multipleStatements) {
    // Several statements per query rest on the driver's escaping, which uses backslashes: a
    // server running with NO_BACKSLASH_ESCAPES would read an escaped quote as the string's end.
    db.addHook('afterConnect', async (connection) => {
      await new Promise<void>((resolve, reject) => {
        (connection as MysqlConnection).query("SET SESSION sql_mode = REPLACE(@@SESSION.sql_mode, 'NO_BACKSLASH_ESCAPES', '')", (err) =>
          err ? reject(err) : resolve(),
        );
      });
    });
  }
  optionsOf.set(db, opts);
  const close = db.close.bind(db);
  db.close = async () => {
    for (const pool of scriptPools.get(db)?.values() ?? []) await pool.close();
    return close();
  };
  return db;
}

/**
 * Errors that say "the database is busy or unreachable, retry": lock wait timeout (1205),
 * deadlock (1213), statement time limit (1969), and the client's own timeout.
 */
export function isTransientDatabaseError(err: unknown): boolean {
  const errno = mysqlErrno(err);
  const code = (err as { code?: unknown } | null)?.code;
  return errno === 1205 || errno === 1213 || errno === 1969 || code === 'PROTOCOL_SEQUENCE_TIMEOUT';
}

/** The MySQL error number of a driver error, if it is one (1062 is a duplicate key). */
export function mysqlErrno(err: unknown): number | undefined {
  const e = err as { parent?: { errno?: number }; original?: { errno?: number }; errno?: number } | null;
  return e?.parent?.errno ?? e?.original?.errno ?? e?.errno;
}

export const ER_DUP_ENTRY = 1062;
/** A row names a parent that is not there (a foreign key): for documents, a file deleted meanwhile. */
export const ER_NO_REFERENCED_ROW = 1452;
/** InnoDB chose this transaction to roll back, to break a deadlock. */
export const ER_LOCK_DEADLOCK = 1213;
/** A row still named by another (a foreign key) cannot be deleted. */
export const ER_ROW_IS_REFERENCED = 1451;

/** `work`, again (up to three times in all) when InnoDB chose it to break a deadlock. */
export async function retryDeadlock<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= 3 || mysqlErrno(err) !== ER_LOCK_DEADLOCK) throw err;
    }
  }
}

/** Text cut to fit a VARCHAR(max) column, with an ellipsis when it was longer. */
/**
 * The name of a named lock (GET_LOCK) of `db`'s database. MariaDB's named locks are the server's,
 * not a database's: scoped to the database, two registries on one server (or two test workers,
 * each with its database) never hold each other up, while two processes of one registry
 * share the lock. A long database name is replaced by its digest (a lock name has 64 characters at most).
 */
export function databaseLockName(db: Sequelize, name: string): string {
  const scoped = `${name}:${db.getDatabaseName()}`;
  return scoped.length <= 64
    ? scoped
    : `${name}:${createHash('sha256')
        .update(db.getDatabaseName())
        .digest('hex')
        .slice(0, Math.max(8, 63 - name.length))}`;
}

export const truncate = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

// ---- The lean form of the hot paths ------------------------------------------------------
// Sequelize's query() pipeline (hooks, logging, bind formatting, an Error per query for its
// stack, result formatting) cost a third of a get-by-id request, measured. Hot statements
// keep Sequelize's pool and transactions but run through mysql2's execute (prepared
// statements) on the pooled connection itself.

interface MysqlConnection {
  destroy(): void;
  execute(sql: string, values: unknown[], callback: (err: Error | null, result: unknown) => void): unknown;
  query(sql: string | { sql: string }, values: unknown[] | ((err: Error | null) => void), callback?: (err: Error | null, result: unknown) => void): unknown;
}

export interface RunOptions {
  /**
   * false: send as text (client-side escaping) instead of a prepared statement: for
   * statements whose shape varies (IN lists, multi-row inserts), which would otherwise fill
   * the prepared-statement cache with one entry per arity.
   */
  prepared?: boolean;
}

const MAX_PREPARED_FORMS = 1000;
const positional = new Map<string, { sql: string; order: number[] }>();

/** `$1, $2...` (the bind syntax used here) to mysql2's `?`, with the parameters in order of use. */
export function toPositional(sql: string): { sql: string; order: number[] } {
  let p = positional.get(sql);
  if (!p) {
    const order: number[] = [];
    p = {
      sql: sql.replace(/\$(\d+)/g, (_, n: string) => {
        order.push(Number(n) - 1);
        return '?';
      }),
      order,
    };
    if (positional.size >= MAX_PREPARED_FORMS) positional.clear();
    positional.set(sql, p);
  }
  return p;
}

/** What acquire() reaches in Sequelize's connection manager. */
interface ConnectionManagerInternals {
  pool: { acquire(): Promise<object>; release(connection: object): void };
}

/**
 * A connection of the pool, for the lean path. Sequelize's getConnection() asks the server's
 * version on first use and runs its pool hooks, two awaits of async functions on every call
 * (none is registered here); once the version is known and no such hook is registered, the
 * pool is asked directly, its timeout raised as getConnection raises it.
 */
async function acquire(db: Sequelize): Promise<MysqlConnection> {
  const version = (db as unknown as { options: { databaseVersion?: unknown } }).options.databaseVersion;
  const direct = version !== 0 && !db.hasHook('beforePoolAcquire') && !db.hasHook('afterPoolAcquire');
  if (!direct) return (await db.connectionManager.getConnection({ type: 'write' })) as MysqlConnection;
  try {
    return (await (db.connectionManager as unknown as ConnectionManagerInternals).pool.acquire()) as MysqlConnection;
  } catch (err) {
    // sequelize-pool's TimeoutError (its name is Error's), as Sequelize's getConnection() maps it.
    if ((err as Error | null)?.constructor.name === 'TimeoutError') throw new ConnectionAcquireTimeoutError(err as Error);
    throw err;
  }
}

/** Gives a connection of acquire() back to the pool (what releaseConnection() does, without its debug line). */
function release(db: Sequelize, connection: MysqlConnection): void {
  (db.connectionManager as unknown as ConnectionManagerInternals).pool.release(connection);
}

/** Connections whose command outlived the client's time limit: never reused. */
const broken = new WeakSet<MysqlConnection>();

/** Closes a broken connection's socket now (a polite end would wait for the silent server) and lets the pool forget it. */
function forget(db: Sequelize, connection: MysqlConnection): void {
  connection.destroy();
  void (db.connectionManager as unknown as { pool: { destroy(c: object): Promise<void> } }).pool.destroy(connection).catch(() => undefined);
}

/** How long the client waits for an answer: the statement's limit and a grace; none without a limit. */
const clientTimeoutMs = (opts: DatabaseOptions | undefined): number | undefined =>
  opts?.statementTimeoutMs === undefined ? undefined : opts.statementTimeoutMs + (opts.clientGraceMs ?? 5_000);

/** One command on `connection`, within the client's time limit (our own timer, around prepare and execute alike: mysql2's covers the execute only). */
function send(db: Sequelize, connection: MysqlConnection, sql: string, values: unknown[], prepared = true): Promise<unknown> {
  const timeoutMs = clientTimeoutMs(optionsOf.get(db));
  let timer: NodeJS.Timeout | undefined;
  return new Promise((resolve, reject) => {
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        broken.add(connection);
        reject(Object.assign(new Error(`The database did not answer within ${timeoutMs} ms`), { code: 'PROTOCOL_SEQUENCE_TIMEOUT' }));
      }, timeoutMs);
    }
    const done = (err: Error | null, result: unknown) => {
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(result);
    };
    // The SQL as a string: mysql2 spreads an options object into a new one on every call.
    if (prepared) connection.execute(sql, values, done);
    else connection.query({ sql }, values, done);
  });
}

/** A statement with positional bind parameters ($1, $2...), for script(). */
export interface Statement {
  sql: string;
  bind: unknown[];
}

/**
 * Runs `statements` as one transaction in one round trip, START TRANSACTION and COMMIT
 * included, and returns each statement's result. For writes that many requests wait for
 * together (the public verifications' group commit): five round trips to the database were
 * most of the time its batch waited, and the requests behind it with it; a registration,
 * whose organization's lock is then held for the server's work only. The values are escaped by
 * mysql2 as on every text query; only this function's own pool (scriptPoolMax connections per
 * database, made on first use) allows several statements in one query. A statement that
 * fails ends the script there, and the transaction is rolled back.
 */
export async function script(db: Sequelize, statements: readonly Statement[], lane: ScriptLane = 'serial'): Promise<unknown[]> {
  const lanes = scriptPools.get(db) ?? new Map<ScriptLane, Sequelize>();
  scriptPools.set(db, lanes);
  let pool = lanes.get(lane);
  if (!pool) {
    const opts = optionsOf.get(db);
    if (!opts) throw new Error('script() needs a database made by createSequelize');
    pool = createSequelize({ ...opts, poolMax: lane === 'registrations' ? (opts.scriptPoolMax ?? 1) : 1, multipleStatements: true });
    lanes.set(lane, pool);
  }
  const sql = ['START TRANSACTION'];
  const values: unknown[] = [];
  for (const s of statements) {
    const p = toPositional(s.sql);
    sql.push(p.sql);
    for (const i of p.order) {
      const v = s.bind[i] ?? null;
      // The driver turns a plain object into `key = value` pairs, its keys unescaped: never here.
      if (typeof v === 'object' && v !== null && !(v instanceof Date) && !Buffer.isBuffer(v) && !Array.isArray(v))
        throw new TypeError('a script takes values, dates, buffers and lists only');
      values.push(v);
    }
  }
  sql.push('COMMIT');
  const connection = await acquire(pool);
  try {
    const results = (await send(pool, connection, sql.join(';\n'), values, false)) as unknown[];
    return results.slice(1, -1);
  } catch (err) {
    // A connection lost or broken rolls back on the server when it closes.
    if (!broken.has(connection))
      await send(pool, connection, 'ROLLBACK', [], false).catch(() => {
        broken.add(connection);
      });
    throw err;
  } finally {
    if (broken.has(connection)) forget(pool, connection);
    else release(pool, connection);
  }
}

async function run(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction, opts: RunOptions = {}): Promise<unknown> {
  const p = toPositional(sql);
  const values = p.order.map((i) => bind[i] ?? null);
  const own = transaction === undefined;
  const connection = own ? await acquire(db) : ((transaction as unknown as { connection: object }).connection as MysqlConnection);
  try {
    return await send(db, connection, p.sql, values, opts.prepared !== false);
  } finally {
    // A connection whose command is still running is never reused: destroyed, the pool makes another.
    if (broken.has(connection)) forget(db, connection);
    else if (own) release(db, connection);
  }
}

/** Runs a SELECT with positional bind parameters ($1, $2...) and returns plain rows. */
export async function select<T extends object>(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction, opts?: RunOptions): Promise<T[]> {
  return (await run(db, sql, bind, transaction, opts)) as T[];
}

/** Runs a statement that changes rows; resolves with the affected row count. */
export async function execute(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction, opts?: RunOptions): Promise<number> {
  return ((await run(db, sql, bind, transaction, opts)) as { affectedRows?: number }).affectedRows ?? 0;
}

/** Runs a statement that changes rows; resolves with MySQL's result header (insertId...). */
export async function write(db: Sequelize, sql: string, bind: unknown[], transaction?: Transaction): Promise<{ affectedRows: number; insertId: number }> {
  return (await run(db, sql, bind, transaction)) as { affectedRows: number; insertId: number };
}

// Runs pending migrations with umzug under a MariaDB named lock of the database (GET_LOCK), so
// that two releases never migrate one database at once. It uses its own one-connection
// Sequelize: the lock belongs to a connection, and every migration statement then runs on it.
import { SequelizeStorage, Umzug } from 'umzug';
import type { Logger } from '../logger.js';
import { migrations, type Query } from './migrations/index.js';
import { createSequelize, databaseLockName, select } from './sequelize.js';

const LOCK = 'guarantee_registry_migrations';
const TABLE = 'schema_migrations';

/**
 * Applies the pending migrations; returns their names. Its caller says which it applied (`cli
 * migrate` lists them, `npm start` counts them): each is logged here only at debug level (once
 * logged here and listed by the CLI, every migration of a new database was said twice).
 */
export async function migrate(databaseUrl: string, logger: Pick<Logger, 'debug'>, lockTimeoutSeconds = 120): Promise<string[]> {
  const db = createSequelize({ url: databaseUrl, poolMax: 1 });
  try {
    const lock = databaseLockName(db, LOCK);
    const [row] = await select<{ got: number | null }>(db, 'SELECT GET_LOCK($1, $2) AS got', [lock, lockTimeoutSeconds]);
    if (row?.got !== 1) throw new Error(`could not take the migration lock within ${lockTimeoutSeconds} s`);
    try {
      const umzug = new Umzug({
        migrations: migrations.map((m) => ({ name: m.name, up: (p: { context: Query }) => m.up(p), down: (p: { context: Query }) => m.down(p) })),
        // A function given as context is called once to make it: hence the double arrow.
        context: () => (sql: string) => db.query(sql, { raw: true }),
        storage: new SequelizeStorage({ sequelize: db, tableName: TABLE }),
        logger: undefined,
      });
      const applied = await umzug.up();
      for (const m of applied) logger.debug({ migration: m.name }, 'migration applied');
      return applied.map((m) => m.name);
    } finally {
      await db.query('SELECT RELEASE_LOCK(?)', { replacements: [lock], raw: true });
    }
  } finally {
    await db.close();
  }
}

/** The migrations the database at `databaseUrl` has not had yet, in order (all of them on a new database). Reads only. */
export async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const db = createSequelize({ url: databaseUrl, poolMax: 1 });
  try {
    const [table] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = $1', [
      TABLE,
    ]);
    const applied = new Set(Number(table?.n) ? (await select<{ name: string }>(db, `SELECT name FROM ${TABLE}`, [])).map((r) => r.name) : []);
    return migrations.map((m) => m.name).filter((name) => !applied.has(name));
  } finally {
    await db.close();
  }
}

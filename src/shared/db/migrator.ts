// Runs pending migrations with umzug under a MariaDB named lock (GET_LOCK), so that two
// releases or two test workers never migrate at once. It uses its own one-connection
// Sequelize: the lock belongs to a connection, and every migration statement then runs on it.
import { SequelizeStorage, Umzug } from 'umzug';
import type { Logger } from '../logger.js';
import { migrations, type Query } from './migrations/index.js';
import { createSequelize, select } from './sequelize.js';

const LOCK = 'guarantee_registry_migrations';

export async function migrate(databaseUrl: string, logger: Pick<Logger, 'info'>, lockTimeoutSeconds = 120): Promise<string[]> {
  const db = createSequelize({ url: databaseUrl, poolMax: 1 });
  try {
    const [row] = await select<{ got: number | null }>(db, 'SELECT GET_LOCK($1, $2) AS got', [LOCK, lockTimeoutSeconds]);
    if (row?.got !== 1) throw new Error(`could not take the migration lock within ${lockTimeoutSeconds} s`);
    try {
      const umzug = new Umzug({
        migrations: migrations.map((m) => ({ name: m.name, up: (p: { context: Query }) => m.up(p), down: (p: { context: Query }) => m.down(p) })),
        // A function given as context is called once to make it: hence the double arrow.
        context: () => (sql: string) => db.query(sql, { raw: true }),
        storage: new SequelizeStorage({ sequelize: db, tableName: 'schema_migrations' }),
        logger: undefined,
      });
      const applied = await umzug.up();
      for (const m of applied) logger.info({ migration: m.name }, 'migration applied');
      return applied.map((m) => m.name);
    } finally {
      await db.query('SELECT RELEASE_LOCK(?)', { replacements: [LOCK], raw: true });
    }
  } finally {
    await db.close();
  }
}

// MariaDB from Debian, one private server per profile under .data/<profile>/mariadb.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePackages, readPid, run, startDaemon, stopDaemon, waitFor } from './process.js';
import { socketPath, type LocalService, type ServiceContext } from './types.js';

const USER = 'registry';
const PASSWORD = 'registry-local-only';

const paths = (ctx: ServiceContext) => {
  const dir = join(ctx.dataDir, 'mariadb');
  return { dir, data: join(dir, 'data'), socket: socketPath(dir, 'mysqld.sock'), pid: join(dir, 'mysqld.pid'), log: join(dir, 'mysqld.err') };
};

export const databaseName = (ctx: ServiceContext) => `registry_${ctx.profile}`;

/** Runs SQL as the server's root user over its socket. */
export function rootSql(ctx: ServiceContext, sql: string): Promise<string> {
  return run('mariadb', ['--no-defaults', '-uroot', `--socket=${paths(ctx).socket}`, '-N', '-e', sql]);
}

export const mariadb: LocalService = {
  name: 'mariadb',
  externalWhen: ['DATABASE_URL'],
  install() {
    return ensurePackages(['mariadbd', 'mariadb-install-db', 'mariadb'], ['mariadb-server', 'mariadb-client'], [], 'mariadb');
  },
  async isUp(ctx) {
    const p = paths(ctx);
    if (readPid(p.pid) === undefined) return false;
    await run('mariadb-admin', ['--no-defaults', '-uroot', `--socket=${p.socket}`, 'ping'], 5000);
    return true;
  },
  async start(ctx) {
    const p = paths(ctx);
    mkdirSync(p.dir, { recursive: true });
    const fresh = !existsSync(join(p.data, 'mysql'));
    if (fresh) {
      await run('mariadb-install-db', [
        '--no-defaults',
        '--user=root',
        `--datadir=${p.data}`,
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
        '--skip-name-resolve',
      ]);
    }
    // The bench loads a million guarantees: its buffer pool holds them all.
    const bufferPool = ctx.profile === 'bench' ? '2G' : '128M';
    startDaemon(
      'mariadbd',
      [
        '--no-defaults',
        '--user=root',
        `--datadir=${p.data}`,
        `--socket=${p.socket}`,
        `--port=${ctx.ports.mariadb}`,
        '--bind-address=127.0.0.1',
        `--pid-file=${p.pid}`,
        `--log-error=${p.log}`,
        '--skip-log-bin',
        '--skip-name-resolve',
        '--character-set-server=utf8mb4',
        '--collation-server=utf8mb4_unicode_ci',
        `--innodb-buffer-pool-size=${bufferPool}`,
        '--innodb-flush-log-at-trx-commit=2',
        '--max-connections=500',
        '--default-time-zone=+00:00',
      ],
      { logFile: join(p.dir, 'stdout.log'), pidFile: join(p.dir, 'daemon.pid') },
    );
    await waitFor('mariadb', () => this.isUp(ctx), 60_000, p.log);
    const db = databaseName(ctx);
    await rootSql(
      ctx,
      `CREATE DATABASE IF NOT EXISTS ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
      CREATE USER IF NOT EXISTS '${USER}'@'127.0.0.1' IDENTIFIED BY '${PASSWORD}';
      GRANT ALL ON \`registry\\_%\`.* TO '${USER}'@'127.0.0.1';`,
    );
  },
  async stop(ctx) {
    const pid = await stopDaemon('mariadb', join(paths(ctx).dir, 'daemon.pid'), 30_000);
    return pid === undefined ? [] : [pid];
  },
  env(ctx) {
    return { DATABASE_URL: `mysql://${USER}:${PASSWORD}@127.0.0.1:${ctx.ports.mariadb}/${databaseName(ctx)}` };
  },
};

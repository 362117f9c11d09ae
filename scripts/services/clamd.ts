// ClamAV's clamd from Debian, one per profile under .data/<profile>/clamd, loading the
// project's test signatures (config/clamav) and the system's official databases if present.
import { copyFileSync, existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePackages, readPid, startDaemon, stopDaemon, tcpExchange, waitFor } from './process.js';
import { socketPath, type LocalService, type ServiceContext } from './types.js';

const dirOf = (ctx: ServiceContext) => join(ctx.dataDir, 'clamd');
const OFFICIAL_DB = '/var/lib/clamav';

export const clamd: LocalService = {
  name: 'clamd',
  externalWhen: ['CLAMD_HOST', 'CLAMD_SOCKET'],
  install() {
    return ensurePackages(['clamd', 'sigtool'], ['clamav', 'clamav-daemon'], [], 'clamd');
  },
  async isUp(ctx) {
    if (readPid(join(dirOf(ctx), 'daemon.pid')) === undefined) return false;
    return (await tcpExchange(ctx.ports.clamd, 'zPING\0')).startsWith('PONG');
  },
  async start(ctx) {
    const dir = dirOf(ctx);
    const db = join(dir, 'db');
    mkdirSync(db, { recursive: true });
    const shipped = join(ctx.root, 'config', 'clamav');
    for (const f of readdirSync(shipped).filter((n) => /\.(hdb|ndb)$/.test(n))) copyFileSync(join(shipped, f), join(db, f));
    if (existsSync(OFFICIAL_DB)) {
      for (const f of readdirSync(OFFICIAL_DB).filter((n) => /\.(cvd|cld)$/.test(n))) {
        if (!existsSync(join(db, f))) symlinkSync(join(OFFICIAL_DB, f), join(db, f));
      }
    }
    // Never Clean unless fully scanned (docs/operations.md, "What an operator must configure"). The limits are above the
    // largest allowed upload (50 MiB by default), and anything over them is reported as
    // Heuristics.Limits.Exceeded instead of passing unscanned as clean. MaxFileSize equals
    // MaxScanSize: a single archive entry larger than MaxFileSize is otherwise scanned up to
    // that size without any alert (ClamAV 1.4, seen here), while one that exceeds MaxScanSize
    // alerts. Encrypted archives and documents, which cannot be scanned, alert too. The test
    // profile's limits are small, so that tests reach them with a few megabytes.
    const limits =
      ctx.profile === 'test' ? ['StreamMaxLength 8M', 'MaxFileSize 6M', 'MaxScanSize 6M'] : ['StreamMaxLength 100M', 'MaxFileSize 400M', 'MaxScanSize 400M'];
    writeFileSync(
      join(dir, 'clamd.conf'),
      [
        'Foreground yes',
        `LocalSocket ${socketPath(dir, 'clamd.sock')}`,
        `TCPSocket ${ctx.ports.clamd}`,
        'TCPAddr 127.0.0.1',
        `DatabaseDirectory ${db}`,
        `PidFile ${join(dir, 'clamd.pid')}`,
        ...limits,
        'MaxRecursion 16',
        'MaxFiles 10000',
        'AlertExceedsMax yes',
        'AlertEncrypted yes',
        'MaxThreads 4',
        'SelfCheck 0',
        '',
      ].join('\n'),
    );
    startDaemon('clamd', ['-c', join(dir, 'clamd.conf')], { logFile: join(dir, 'clamd.log'), pidFile: join(dir, 'daemon.pid') });
    await waitFor('clamd', () => this.isUp(ctx), 120_000, join(dir, 'clamd.log'));
  },
  async stop(ctx) {
    const pid = await stopDaemon('clamd', join(dirOf(ctx), 'daemon.pid'));
    return pid === undefined ? [] : [pid];
  },
  env(ctx) {
    return { CLAMD_HOST: '127.0.0.1', CLAMD_PORT: String(ctx.ports.clamd) };
  },
};

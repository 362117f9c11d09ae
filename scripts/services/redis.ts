// Redis from Debian, one private server per profile under .data/<profile>/redis.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePackages, readPid, startDaemon, stopDaemon, tcpExchange, waitFor } from './process.js';
import type { LocalService, ServiceContext } from './types.js';

const dirOf = (ctx: ServiceContext) => join(ctx.dataDir, 'redis');

export const redis: LocalService = {
  name: 'redis',
  externalWhen: ['REDIS_URL'],
  install() {
    return ensurePackages(['redis-server'], ['redis-server'], [], 'redis');
  },
  async isUp(ctx) {
    if (readPid(join(dirOf(ctx), 'daemon.pid')) === undefined) return false;
    return (await tcpExchange(ctx.ports.redis, 'PING\r\n')).startsWith('+PONG');
  },
  async start(ctx) {
    const dir = dirOf(ctx);
    mkdirSync(dir, { recursive: true });
    // Development keeps its queues across restarts; tests and benches start empty.
    const persist = ctx.profile === 'dev' ? ['--appendonly', 'yes'] : ['--appendonly', 'no'];
    startDaemon(
      'redis-server',
      [
        '--port',
        String(ctx.ports.redis),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        ...persist,
        '--dir',
        dir,
        '--daemonize',
        'no',
        '--maxmemory-policy',
        'noeviction',
      ],
      { logFile: join(dir, 'redis.log'), pidFile: join(dir, 'daemon.pid') },
    );
    await waitFor('redis', () => this.isUp(ctx), 20_000, join(dir, 'redis.log'));
  },
  async stop(ctx) {
    const pid = await stopDaemon('redis', join(dirOf(ctx), 'daemon.pid'));
    return pid === undefined ? [] : [pid];
  },
  env(ctx) {
    return { REDIS_URL: `redis://127.0.0.1:${ctx.ports.redis}/0` };
  },
};

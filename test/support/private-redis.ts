// A Redis server of the test's own (Debian's redis-server, as npm test installs it), without
// persistence, for tests that restart it: killed and started again on the same port, it comes
// back empty, as a production Redis without persistence (or after a failover) does.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { killOnExit } from './processes.js';
import { freePort } from './tcp-proxy.js';

export interface PrivateRedis {
  url: string;
  /** SIGKILL, then a new empty server on the same port. */
  restartEmpty(): Promise<void>;
  /** FLUSHALL, as an operator's mistake or a failover to an empty replica would do. */
  flushAll(): Promise<void>;
  stop(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  // As scripts/services does: Debian installs it in /usr/bin.
  const bin = 'redis-server';
  let child: ChildProcess | undefined;
  const url = `redis://127.0.0.1:${port}/0`;

  async function start(): Promise<void> {
    child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--maxmemory-policy', 'noeviction'], {
      stdio: 'ignore',
    });
    killOnExit(child);
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      for (let i = 0; i < 100; i++) {
        try {
          await probe.connect();
          if ((await probe.ping()) === 'PONG') return;
        } catch {
          /* not yet */
        }
        probe.disconnect();
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('the private redis-server did not start');
    } finally {
      probe.disconnect();
    }
  }

  async function kill(): Promise<void> {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGKILL');
    });
  }

  await start();
  return {
    url,
    async restartEmpty() {
      await kill();
      await start();
    },
    async flushAll() {
      const r = new Redis(url);
      try {
        await r.flushall();
      } finally {
        r.disconnect();
      }
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

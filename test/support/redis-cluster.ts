// A local three-node Redis Cluster (Debian's redis-server with cluster-enabled, joined by
// `redis-cli --cluster create`, no replicas, no persistence), for tests that run the queues
// on a cluster as operators may.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killOnExit } from './processes.js';
import { freePort } from './tcp-proxy.js';

export interface LocalRedisCluster {
  /** One node's URL (REDIS_URL with REDIS_CLUSTER=true). */
  url: string;
  stop(): Promise<void>;
}

export async function redisCluster(): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
  const ports = [await freePort(), await freePort(), await freePort()];
  const nodes: ChildProcess[] = ports.map((port) => {
    const nodeDir = join(dir, String(port));
    mkdirSync(nodeDir);
    return spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(nodeDir, 'nodes.conf'),
        '--cluster-node-timeout',
        '5000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        nodeDir,
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: 'ignore' },
    );
  });
  for (const node of nodes) killOnExit(node);
  const cli = (...args: string[]) => execFileSync('redis-cli', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const stop = async () => {
    await Promise.all(
      nodes.map(
        (n) =>
          new Promise<void>((resolve) => {
            if (n.exitCode !== null) {
              resolve();
              return;
            }
            n.once('exit', () => resolve());
            n.kill('SIGKILL');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) {
      for (let i = 0; ; i++) {
        try {
          if (cli('-p', String(port), 'ping').includes('PONG')) break;
        } catch {
          /* starting */
        }
        if (i > 100) throw new Error(`redis node ${port} did not start`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    cli('--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes');
    for (let i = 0; !cli('-p', String(ports[0]), 'cluster', 'info').includes('cluster_state:ok'); i++) {
      if (i > 200) throw new Error('the cluster did not become ready');
      await new Promise((r) => setTimeout(r, 50));
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${ports[0]}`, stop };
}

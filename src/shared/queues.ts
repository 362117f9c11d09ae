// BullMQ plumbing shared by producers and workers. Workers use connections with
// `maxRetriesPerRequest: null` (they wait for Redis to come back); producers fail fast. With
// `cluster`, REDIS_URL is one node of a Redis Cluster and the others are discovered.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from './logger.js';

/** A connection to Redis: one server, or a cluster. */
export type RedisConnection = Redis | Cluster;

function connect(url: string, cluster: boolean, options: RedisOptions, clusterOptions: { enableOfflineQueue?: boolean } = {}): RedisConnection {
  if (!cluster) return new Redis(url, options);
  const u = new URL(url);
  return new Cluster([{ host: u.hostname, port: Number(u.port || 6379) }], {
    ...clusterOptions,
    enableReadyCheck: true,
    redisOptions: {
      ...options,
      ...(u.username && { username: decodeURIComponent(u.username) }),
      ...(u.password && { password: decodeURIComponent(u.password) }),
      ...(u.protocol === 'rediss:' && { tls: {} }),
    },
  });
}

export function workerConnection(url: string, cluster = false): RedisConnection {
  return connect(url, cluster, { maxRetriesPerRequest: null, enableReadyCheck: true });
}

export function producerConnection(url: string, cluster = false): RedisConnection {
  return connect(url, cluster, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 }, { enableOfflineQueue: false });
}

/**
 * Redis health as a metric (`redis_up`, 1 or 0) and a log line on each change: the API keeps
 * serving without Redis (docs/operations.md "What heals itself"), so this is what tells an operator. Returns
 * the watch's stop, called before the connection is closed on purpose: a shutdown is no
 * outage (its "connection closed" would otherwise be logged after the process said it shut down).
 */
export function watchRedisHealth(connection: RedisConnection, registry: Registry, logger: Logger): () => void {
  const up = new Gauge({ name: 'redis_up', help: 'Whether this process is connected to Redis (1) or not (0)', registers: [registry] });
  let last: number | undefined;
  let stopped = false;
  const set = (value: 0 | 1, why: string) => {
    if (stopped) return;
    up.set(value);
    if (value !== last)
      (value ? logger.info.bind(logger) : logger.warn.bind(logger))({ redis: value ? 'up' : 'down', why }, value ? 'redis reachable' : 'redis unreachable');
    last = value;
  };
  // A connection still being made at start-up is not an outage: the gauge says 0, and a line is
  // logged only once it is ready or fails.
  if (connection.status === 'ready') set(1, 'ready');
  else up.set(0);
  connection.on('ready', () => set(1, 'ready'));
  connection.on('error', (err: Error) => set(0, err.message));
  connection.on('end', () => set(0, 'connection ended'));
  connection.on('close', () => set(0, 'connection closed'));
  // The listeners stay (an error with none would be printed by ioredis), saying nothing more.
  return () => {
    stopped = true;
  };
}

/**
 * Failed jobs of every queue stay a week (at most 10,000 a queue), for Bull Board and a retry
 * from it. Job ids are never reused, so a kept failure never blocks queueing the work again.
 */
export const KEEP_FAILED = { age: 7 * 24 * 3600, count: 10_000 };

/** Should this failed attempt be the last one (then the job's subject gets its terminal state)? */
export function isLastAttempt(job: { attemptsMade: number; opts: { attempts?: number } }): boolean {
  return job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
}

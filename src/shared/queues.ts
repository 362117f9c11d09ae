// BullMQ plumbing shared by producers and workers. Workers use connections with
// `maxRetriesPerRequest: null` (they wait for Redis to come back); producers fail fast.
import { Redis, type RedisOptions } from 'ioredis';

export function workerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true } satisfies RedisOptions);
}

export function producerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 } satisfies RedisOptions);
}

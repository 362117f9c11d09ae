// The API process (Procfile `web`): validates its configuration, serves, and shuts down
// gracefully on SIGTERM (stop accepting, finish in-flight requests, close the pool).
import { createServer } from 'node:http';
import { getConfig } from '../config/index.js';
import { createApp } from './app.js';
import { openQueues } from './queues.js';
import { openCore, openEvents, webServices } from './composition.js';
import { createMetrics } from './shared/http/observability.js';
import { createLogger } from './shared/logger.js';
import { producerConnection, watchRedisHealth } from './shared/queues.js';
import { createStorage } from './shared/storage.js';
import { watchObjectLock } from './files/document-lock.js';

const SHUTDOWN_GRACE_MS = 25_000;

export interface ServerOptions {
  /** A file the log lines are appended to instead of stdout (`npm start`'s .data/dev/api.log). */
  logFile?: string;
}

export async function startServer(opts: ServerOptions = {}): Promise<{ port: number; close: () => Promise<void> }> {
  const config = getConfig();
  // Buffered: the request log's write per line was a fifth of a get's CPU (src/shared/logger.ts).
  const logger = createLogger(config.LOG_LEVEL, undefined, { buffered: true, file: opts.logFile });
  // The composition root builds the pools, secrets, repositories, events and services (src/composition.ts).
  const core = openCore(config, logger);
  const metrics = createMetrics();
  // Redis serves uploads (enqueueing checks), store events, Bull Board and the public limits; guarantees never need it.
  const redis = producerConnection(config.REDIS_URL, config.REDIS_CLUSTER);
  const stopWatchingRedis = watchRedisHealth(redis, metrics.registry, logger);
  const queues = openQueues(redis, config.QUEUE_PREFIX, logger);
  // Events committed here (guarantee.created) are relayed to the delivery queue by this
  // process, on a connection of the relay's own (never queued behind requests).
  const emitting = openEvents(core, queues);
  const { events } = emitting;
  const storage = createStorage(config);
  const services = webServices(core, emitting, { queues, storage });
  // Said at boot and in /readyz: whether attached documents are protected against deletion.
  const objectLock = watchObjectLock(storage, logger);
  const app = createApp({ config, logger, db: core.db, metrics, queues, redis, services, objectLock: objectLock.state });
  const handle = app.callback();
  const server = createServer((req, res) => {
    void handle(req, res);
  });
  // A slow or stalled client cannot hold a connection for ever.
  server.requestTimeout = 30_000;
  server.headersTimeout = 20_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  logger.info({ port }, 'API listening');
  // Said at once, not with the buffer's next write: whoever starts the process waits for it.
  logger.flush();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      logger.info('shutting down: no new connections, finishing in-flight requests');
      const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
      force.unref();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A keep-alive connection whose request finishes becomes idle: close it then, rather
      // than after its keep-alive timeout.
      const reaper = setInterval(() => server.closeIdleConnections(), 100);
      server.closeIdleConnections();
      await closed;
      clearInterval(reaper);
      clearTimeout(force);
      objectLock.stop();
      await events.relay.stop();
      await queues.close();
      // Closed on purpose: no outage to report (it would come after "shut down").
      stopWatchingRedis();
      redis.disconnect();
      await core.close();
      logger.info('shut down');
    })());
  return { port, close };
}

const isMain = import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/server.js');
if (isMain) {
  try {
    const { close } = await startServer();
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        void close().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      });
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}

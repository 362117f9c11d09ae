// A describe block's store client and scan worker (real clamd and radosgw), for tests of what
// happens to uploads once judged: before/after hooks start and stop them; stop() and start()
// hold the scans back within a test.
import { createLogger } from '../../src/shared/logger.js';
import { createStorage, type Storage } from '../../src/shared/storage.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';
import { FAST_PIPELINE, configWith, harness } from './harness.js';

export interface Scanning {
  storage: Storage;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export function scanning(): Scanning {
  let workers: RunningWorkers | undefined;
  const world: Scanning = {
    storage: undefined as unknown as Storage,
    async stop() {
      await workers?.close();
      workers = undefined;
    },
    async start() {
      workers ??= await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: createLogger('silent') });
    },
  };
  before(async () => {
    world.storage = createStorage((await harness()).config);
    await world.start();
  });
  after(async () => {
    await world.stop();
    world.storage.client.destroy();
  });
  return world;
}

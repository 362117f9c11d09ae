// What the webhook delivery tests share: retries in fractions of a second, and a mocha world of
// a webhooks worker for a describe block, with a new organization and receiver for each test.
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';
import { configWith, newOrg, type TestOrg } from './harness.js';
import { receiver, type Receiver } from './receiver.js';

/** Retries in fractions of a second, attempts bounded to under a second. */
export const FAST_WEBHOOKS = {
  WEBHOOK_RETRY_SCHEDULE: '0.2,0.3,0.4',
  WEBHOOK_TIMEOUT_MS: '800',
  WORKER_STALLED_INTERVAL_MS: '1000',
  WORKER_LOCK_DURATION_MS: '2000',
};

export interface DeliveryWorld {
  /** The block's worker (a test may close it and start another in its place). */
  workers: RunningWorkers;
  org: TestOrg;
  rx: Receiver;
}

/** Registers the hooks of the calling describe block: its worker, and each test's organization and receiver. */
export function deliveryWorld(): DeliveryWorld {
  const world = {} as DeliveryWorld;
  before(async () => {
    world.workers = await startWorkers(['webhooks'], { config: configWith(FAST_WEBHOOKS), logger: createLogger('silent') });
  });
  after(async () => {
    await world.workers.close();
  });
  beforeEach(async () => {
    world.org = await newOrg();
    world.rx = await receiver();
  });
  afterEach(async () => {
    await world.rx.close();
  });
  return world;
}

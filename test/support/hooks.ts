// Mocha root hooks: close the shared database pool once the run is over (in parallel mode, once
// each file is over: the next file on that worker opens it again). A parallel worker first
// makes its own world (database, queues, log bucket: test/support/worker-world.ts), before any
// module that may read the environment is loaded, and notes how long each file took, hooks
// included, in TEST_DURATIONS_FILE (npm test orders the next run's files by it and names the slowest).
import { appendFileSync } from 'node:fs';
import type { Context } from 'mocha';
import { enterWorkerWorld } from './worker-world.js';

if (process.env.MOCHA_WORKER_ID !== undefined) await enterWorkerWorld(process.env.MOCHA_WORKER_ID);

let started = 0;
export const mochaHooks = {
  beforeAll(): void {
    started = Date.now();
  },
  async afterAll(this: Context): Promise<void> {
    const { closeHarness } = await import('./harness.js');
    await closeHarness();
    const file = this.test?.parent?.suites[0]?.file;
    if (process.env.MOCHA_WORKER_ID !== undefined && process.env.TEST_DURATIONS_FILE && file)
      appendFileSync(process.env.TEST_DURATIONS_FILE, `${JSON.stringify({ file, ms: Date.now() - started })}\n`);
  },
};

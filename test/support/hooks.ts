// Mocha root hooks: close the shared database pool once the run is over.
import { closeHarness } from './harness.js';

export const mochaHooks = {
  async afterAll(): Promise<void> {
    await closeHarness();
  },
};

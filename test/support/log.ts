// The transparency log's parts for tests that build a notarizer or a log of their own.
import { createLogRepository } from '../../src/log/log.repository.js';
import { createSequencer, type Sequencer } from '../../src/log/sequencer.js';
import type { Sequelize } from '../../src/shared/db/sequelize.js';

/** A sequencer of its own over `db` (another holder than any other): as a worker process has. */
export function testSequencer(db: Sequelize, leaseMs = 30_000): Sequencer {
  return createSequencer({ repo: createLogRepository(db), leaseMs });
}

// The transparency log's parts for tests that build a notarizer or a log of their own.
import { createLogRepository } from '../../src/log/log.repository.js';
import { createSequencer, type Sequencer } from '../../src/log/sequencer.js';
import { AUDIT_GUARDS, DROP_AUDIT_GUARDS } from '../../src/shared/db/migrations/0030-transparency-log.js';
import type { Sequelize } from '../../src/shared/db/sequelize.js';

/** A sequencer of its own over `db` (another holder than any other): as a worker process has. */
export function testSequencer(db: Sequelize, leaseMs = 30_000): Sequencer {
  return createSequencer({ repo: createLogRepository(db), leaseMs });
}

/** Drops the triggers that keep audit rows unchanged: what a database administrator bent on rewriting them can do. */
export async function dropAuditGuards(db: Sequelize): Promise<void> {
  for (const sql of DROP_AUDIT_GUARDS) await db.query(sql, { raw: true });
}

export async function restoreAuditGuards(db: Sequelize): Promise<void> {
  await dropAuditGuards(db);
  for (const sql of AUDIT_GUARDS) await db.query(sql, { raw: true });
}

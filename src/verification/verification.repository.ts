// The verification counts of each guarantee (table verification_counts, owned here).
import { execute, leanTransaction, select, type LeanTransaction, type Sequelize, type Tx } from '../shared/db/sequelize.js';

export interface VerificationCount { count: number; lastAt: Date | null }

export function createVerificationRepository(db: Sequelize) {
  return {
    /** A lean transaction (src/shared/db/sequelize.ts): the group commit of verifications runs often. */
    transaction<T>(work: (t: LeanTransaction) => Promise<T>): Promise<T> {
      return leanTransaction(db, work);
    },

    /** Adds `n` verifications at `at` to each guarantee, in one statement. */
    async add(t: Tx, counts: ReadonlyMap<string, number>, at: Date): Promise<void> {
      if (!counts.size) return;
      const ids = [...counts.keys()];
      const values = ids.map((_, i) => `($${i * 2 + 2}, $${i * 2 + 3}, $1)`).join(', ');
      await execute(db, `INSERT INTO verification_counts (guarantee_id, verifications, last_verified_at) VALUES ${values}
        ON DUPLICATE KEY UPDATE verifications = verifications + VALUES(verifications),
          last_verified_at = GREATEST(last_verified_at, VALUES(last_verified_at))`,
      [at, ...ids.flatMap((id) => [id, counts.get(id)])], t, { prepared: false });
    },

    async countOf(guaranteeId: string): Promise<VerificationCount> {
      const [row] = await select<{ verifications: string | number; last_verified_at: Date }>(db,
        'SELECT verifications, last_verified_at FROM verification_counts WHERE guarantee_id = $1', [guaranteeId]);
      return row ? { count: Number(row.verifications), lastAt: row.last_verified_at } : { count: 0, lastAt: null };
    },
  };
}

export type VerificationRepository = ReturnType<typeof createVerificationRepository>;

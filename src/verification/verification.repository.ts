// The verification counts of each guarantee (table verification_counts, owned here).
import { script, select, type Sequelize, type Statement } from '../shared/db/sequelize.js';

export interface VerificationCount {
  count: number;
  lastAt: Date | null;
}

export function createVerificationRepository(db: Sequelize) {
  return {
    /** Runs statements (this repository's and others') as one transaction in one round trip. */
    script(statements: readonly Statement[]): Promise<unknown[]> {
      return script(db, statements);
    },

    /** The statement that adds `n` verifications at `at` to each guarantee. */
    addStatement(counts: ReadonlyMap<string, number>, at: Date): Statement {
      if (!counts.size) throw new Error('no verification to count');
      // In key order: two processes' batches lock their rows in the same order (no deadlock).
      // The rows travel as one JSON literal: MariaDB parsed a VALUES list's literals one by one,
      // most of what the statement cost it.
      const rows = [...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      return {
        sql: `INSERT INTO verification_counts (guarantee_id, verifications, last_verified_at)
          SELECT j.id, j.n, $2 FROM JSON_TABLE($1, '$[*]' COLUMNS (id CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin PATH '$[0]', n INT PATH '$[1]')) j
          ON DUPLICATE KEY UPDATE verifications = verifications + VALUES(verifications),
            last_verified_at = GREATEST(last_verified_at, VALUES(last_verified_at))`,
        bind: [JSON.stringify(rows), at],
      };
    },

    async countOf(guaranteeId: string): Promise<VerificationCount> {
      const [row] = await select<{ verifications: string | number; last_verified_at: Date }>(
        db,
        'SELECT verifications, last_verified_at FROM verification_counts WHERE guarantee_id = $1',
        [guaranteeId],
      );
      return row ? { count: Number(row.verifications), lastAt: row.last_verified_at } : { count: 0, lastAt: null };
    },
  };
}

export type VerificationRepository = ReturnType<typeof createVerificationRepository>;

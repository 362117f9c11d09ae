// Which documents were attached (named by a guarantee or an amendment) in a window of time, for
// the files' document lock (src/files/document-lock.ts), which never names guarantees' tables.
// Attaching records files.attached_at in the same transaction; this is the lock's look back
// over recent attachments, for what the previous release attached during a rolling release.
import { select, type Sequelize } from '../shared/db/sequelize.js';

export interface Attachment {
  key: string;
  at: Date;
}

export function createAttachments(db: Sequelize) {
  return {
    /** The keys attached in (from, to], each with the time of that attachment (a key may come twice). */
    async attachedBetween(from: Date, to: Date): Promise<Attachment[]> {
      const rows = await select<{ k: string; at: Date }>(
        db,
        `SELECT d.file_key AS k, g.created_at AS at FROM guarantees g JOIN guarantee_docs d ON d.guarantee_id = g.id
          WHERE g.created_at > $1 AND g.created_at <= $2
        UNION ALL
        SELECT ad.file_key, a.created_at FROM guarantee_amendments a JOIN guarantee_amendment_docs ad ON ad.amendment_id = a.id
          WHERE a.created_at > $1 AND a.created_at <= $2`,
        [from, to],
      );
      return rows.map((r) => ({ key: r.k, at: r.at }));
    },
  };
}

export type Attachments = ReturnType<typeof createAttachments>;

// Which documents were attached (named by a guarantee or an amendment) in a window of time
// without the files' record of it, for the files' document lock (src/files/document-lock.ts),
// which never names guarantees' tables. Attaching records files.attached_at in the same
// transaction; this is the lock's look back over recent attachments, for what the previous
// release attached during a rolling release.
import { FILE_SQL } from '../files/file.sql.js';
import { select, type Sequelize } from '../shared/db/sequelize.js';

export interface Attachment {
  key: string;
  at: Date;
}

export function createAttachments(db: Sequelize) {
  return {
    /**
     * The keys attached in (from, to] whose file has no record of an attachment, each with the
     * time of that attachment (a key may come twice). An anti-join: only the rare rows missing
     * their record come back, not every attachment of the window.
     */
    async unrecordedBetween(from: Date, to: Date): Promise<Attachment[]> {
      const rows = await select<{ k: string; at: Date }>(
        db,
        `SELECT d.file_key AS k, g.created_at AS at FROM guarantees g JOIN guarantee_docs d ON d.guarantee_id = g.id ${FILE_SQL.ofKey('f', 'd.file_key')}
          WHERE g.created_at > $1 AND g.created_at <= $2 AND ${FILE_SQL.unrecorded('f')}
        UNION ALL
        SELECT ad.file_key, a.created_at FROM guarantee_amendments a JOIN guarantee_amendment_docs ad ON ad.amendment_id = a.id ${FILE_SQL.ofKey('f', 'ad.file_key')}
          WHERE a.created_at > $1 AND a.created_at <= $2 AND ${FILE_SQL.unrecorded('f')}`,
        [from, to],
      );
      return rows.map((r) => ({ key: r.k, at: r.at }));
    },
  };
}

export type Attachments = ReturnType<typeof createAttachments>;

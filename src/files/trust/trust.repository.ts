// The imported EU trusted lists (tables trusted_lists and trust_services, owned here): one list
// per territory, replaced by a newer one, with the services a signature check may end at. A
// removed list's row stays, marked, so that its sequence number still refuses older lists.
import type { X509Certificate } from 'node:crypto';
import { Transaction } from 'sequelize';
import { ER_DUP_ENTRY, ER_LOCK_DEADLOCK, execute, mysqlErrno, select, type Sequelize } from '../../shared/db/sequelize.js';
import { CA_QC, TSA_QTST, type ServiceRecord } from '../p7m/p7m.trust.js';
import type { TrustedList } from './trusted-list.js';

/** The services kept: those that issue qualified certificates and qualified timestamps. */
export const KEPT_SERVICE_TYPES: ReadonlySet<string> = new Set([CA_QC, TSA_QTST]);

export interface ImportedList {
  territory: string;
  sequenceNumber: number;
  issuedAt: Date;
  nextUpdate: Date | null;
  importedAt: Date;
  services: number;
}

export type ImportOutcome = { result: 'imported'; services: number; replaced: number | null } | { result: 'unchanged' } | { result: 'refused'; why: string };

const der64 = (c: X509Certificate) => c.raw.toString('base64');
/** What identifies the kept lists: territory, sequence number and digest of each. */
const versionOf = (lists: ReadonlyArray<{ territory: string; sequence_number: number; sha256: Buffer }>): string =>
  lists.map((l) => `${l.territory}:${l.sequence_number}:${l.sha256.toString('hex')}`).join(',');
/** Two first imports of one territory at once: one waits on the other's lock or collides with its row. */

export function createTrustRepository(db: Sequelize) {
  async function replaceOnce(list: TrustedList, now: Date): Promise<ImportOutcome> {
    return db.transaction(async (transaction) => {
      const [kept] = await select<{ sequence_number: number; sha256: Buffer; removed_at: Date | null }>(
        db,
        'SELECT sequence_number, sha256, removed_at FROM trusted_lists WHERE territory = $1 FOR UPDATE',
        [list.territory],
        transaction,
      );
      const removed = kept?.removed_at ? ' (removed since)' : '';
      if (kept && kept.sequence_number > list.sequenceNumber) {
        return {
          result: 'refused' as const,
          why: `list ${list.sequenceNumber} is older than the ${list.territory} list ${kept.sequence_number} imported before${removed}`,
        };
      }
      if (kept && kept.sequence_number === list.sequenceNumber && !kept.sha256.equals(list.digest)) {
        return {
          result: 'refused' as const,
          why: `another ${list.territory} list with the same sequence number ${list.sequenceNumber} was imported before${removed}`,
        };
      }
      if (kept && kept.sequence_number === list.sequenceNumber && !kept.removed_at) return { result: 'unchanged' as const };
      await execute(db, 'DELETE FROM trusted_lists WHERE territory = $1', [list.territory], transaction);
      await execute(
        db,
        `INSERT INTO trusted_lists (territory, list_type, sequence_number, issued_at, next_update, sha256, imported_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [list.territory, list.type, list.sequenceNumber, list.issuedAt, list.nextUpdate, list.digest, now],
        transaction,
      );
      const services = list.services.filter((s) => KEPT_SERVICE_TYPES.has(s.type) && s.certificates.length > 0);
      for (const s of services) {
        const history = [{ status: s.status, from: s.statusFrom }, ...s.history].map((h) => ({ status: h.status, from: h.from.toISOString() }));
        await execute(
          db,
          'INSERT INTO trust_services (territory, service_type, provider, name, history, certificates, uses) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [
            list.territory,
            s.type,
            s.provider,
            s.name,
            JSON.stringify(history),
            JSON.stringify(s.certificates.map(der64)),
            JSON.stringify(s.additionalInformation),
          ],
          transaction,
        );
      }
      return { result: 'imported' as const, services: services.length, replaced: kept && !kept.removed_at ? kept.sequence_number : null };
    });
  }

  return {
    /**
     * Keeps `list` as its territory's, unless the one kept (or removed) is newer (a replayed old
     * list would bring back a withdrawn service) or is another list under the same number.
     */
    async replace(list: TrustedList, now: Date): Promise<ImportOutcome> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await replaceOnce(list, now);
        } catch (err) {
          const errno = mysqlErrno(err);
          if (attempt >= 3 || (errno !== ER_LOCK_DEADLOCK && errno !== ER_DUP_ENTRY)) throw err;
        }
      }
    },

    /** Forgets a territory's list and its services (its sequence number stays); whether one was kept. */
    async remove(territory: string, now: Date): Promise<boolean> {
      return db.transaction(async (transaction) => {
        const changed = await execute(
          db,
          'UPDATE trusted_lists SET removed_at = $2 WHERE territory = $1 AND removed_at IS NULL',
          [territory, now],
          transaction,
        );
        await execute(db, 'DELETE FROM trust_services WHERE territory = $1', [territory], transaction);
        return changed > 0;
      });
    },

    async lists(): Promise<ImportedList[]> {
      const rows = await select<{ territory: string; sequence_number: number; issued_at: Date; next_update: Date | null; imported_at: Date; services: number }>(
        db,
        `SELECT l.territory, l.sequence_number, l.issued_at, l.next_update, l.imported_at,
          (SELECT COUNT(*) FROM trust_services s WHERE s.territory = l.territory) AS services
        FROM trusted_lists l WHERE l.removed_at IS NULL ORDER BY l.territory`,
        [],
      );
      return rows.map((r) => ({
        territory: r.territory,
        sequenceNumber: r.sequence_number,
        issuedAt: r.issued_at,
        nextUpdate: r.next_update,
        importedAt: r.imported_at,
        services: Number(r.services),
      }));
    },

    /** What identifies the kept lists (it changes with every import and removal), and their services, read together. */
    async snapshot(): Promise<{ version: string; services: ServiceRecord[] }> {
      // Both reads in one consistent snapshot: an import or removal between them cannot mix two versions.
      return db.transaction({ isolationLevel: Transaction.ISOLATION_LEVELS.REPEATABLE_READ }, async (transaction) => {
        const lists = await select<{ territory: string; sequence_number: number; sha256: Buffer; next_update: Date | null }>(
          db,
          'SELECT territory, sequence_number, sha256, next_update FROM trusted_lists WHERE removed_at IS NULL ORDER BY territory',
          [],
          transaction,
        );
        const rows = await select<{
          territory: string;
          service_type: string;
          provider: string;
          name: string;
          history: string;
          certificates: string;
          uses: string;
        }>(db, 'SELECT territory, service_type, provider, name, history, certificates, uses FROM trust_services ORDER BY id', [], transaction);
        const nextUpdate = new Map(lists.map((l) => [l.territory, l.next_update]));
        return {
          version: versionOf(lists),
          services: rows
            .filter((r) => nextUpdate.has(r.territory))
            .map((r) => ({
              territory: r.territory,
              type: r.service_type,
              provider: r.provider,
              name: r.name,
              history: JSON.parse(r.history) as ServiceRecord['history'],
              certificates: JSON.parse(r.certificates) as string[],
              uses: JSON.parse(r.uses) as string[],
              listNextUpdate: nextUpdate.get(r.territory)?.toISOString() ?? null,
            })),
        };
      });
    },

    /** The cheap part of {@link snapshot}: has anything changed since? */
    async version(): Promise<string> {
      const lists = await select<{ territory: string; sequence_number: number; sha256: Buffer }>(
        db,
        'SELECT territory, sequence_number, sha256 FROM trusted_lists WHERE removed_at IS NULL ORDER BY territory',
        [],
      );
      return versionOf(lists);
    },
  };
}

export type TrustRepository = ReturnType<typeof createTrustRepository>;

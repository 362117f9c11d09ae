// The imported EU trusted lists (tables trusted_lists and trust_services, owned here): one list
// per territory, replaced by a newer one, with the services a signature check may end at.
import type { X509Certificate } from 'node:crypto';
import { execute, select, type Sequelize } from '../../shared/db/sequelize.js';
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

export type ImportOutcome =
  | { result: 'imported'; services: number; replaced: number | null }
  | { result: 'unchanged' }
  | { result: 'refused'; why: string };

const der64 = (c: X509Certificate) => c.raw.toString('base64');

export function createTrustRepository(db: Sequelize) {
  return {
    /**
     * Keeps `list` as its territory's, unless the one kept is newer (a replayed old list would
     * bring back a withdrawn service) or is another list under the same sequence number.
     */
    async replace(list: TrustedList, sha256: Buffer, now: Date): Promise<ImportOutcome> {
      return db.transaction(async (transaction) => {
        const [kept] = await select<{ sequence_number: number; sha256: Buffer }>(db,
          'SELECT sequence_number, sha256 FROM trusted_lists WHERE territory = $1 FOR UPDATE', [list.territory], transaction);
        if (kept && kept.sequence_number > list.sequenceNumber) {
          return { result: 'refused' as const, why: `list ${list.sequenceNumber} is older than the ${list.territory} list ${kept.sequence_number} imported before` };
        }
        if (kept && kept.sequence_number === list.sequenceNumber) {
          return kept.sha256.equals(sha256) ? { result: 'unchanged' as const }
            : { result: 'refused' as const, why: `another ${list.territory} list with the same sequence number ${list.sequenceNumber} was imported before` };
        }
        await execute(db, 'DELETE FROM trusted_lists WHERE territory = $1', [list.territory], transaction);
        await execute(db, `INSERT INTO trusted_lists (territory, list_type, sequence_number, issued_at, next_update, sha256, imported_at)
          VALUES ($1, $2, $3, $4, $5, $6, $7)`, [list.territory, list.type, list.sequenceNumber, list.issuedAt, list.nextUpdate, sha256, now], transaction);
        const services = list.services.filter((s) => KEPT_SERVICE_TYPES.has(s.type) && s.certificates.length > 0);
        for (const s of services) {
          const history = [{ status: s.status, from: s.statusFrom }, ...s.history].map((h) => ({ status: h.status, from: h.from.toISOString() }));
          await execute(db, `INSERT INTO trust_services (territory, service_type, provider, name, history, certificates) VALUES ($1, $2, $3, $4, $5, $6)`,
            [list.territory, s.type, s.provider, s.name, JSON.stringify(history), JSON.stringify(s.certificates.map(der64))], transaction);
        }
        return { result: 'imported' as const, services: services.length, replaced: kept?.sequence_number ?? null };
      });
    },

    /** Forgets a territory's list and its services; whether there was one. */
    async remove(territory: string): Promise<boolean> {
      return (await execute(db, 'DELETE FROM trusted_lists WHERE territory = $1', [territory])) > 0;
    },

    async lists(): Promise<ImportedList[]> {
      const rows = await select<{ territory: string; sequence_number: number; issued_at: Date; next_update: Date | null; imported_at: Date; services: number }>(db,
        `SELECT l.territory, l.sequence_number, l.issued_at, l.next_update, l.imported_at,
          (SELECT COUNT(*) FROM trust_services s WHERE s.territory = l.territory) AS services
        FROM trusted_lists l ORDER BY l.territory`, []);
      return rows.map((r) => ({
        territory: r.territory, sequenceNumber: r.sequence_number, issuedAt: r.issued_at, nextUpdate: r.next_update, importedAt: r.imported_at, services: Number(r.services),
      }));
    },

    /** What identifies the kept lists: it changes with every import and removal. */
    async version(): Promise<string> {
      const rows = await select<{ territory: string; sequence_number: number; sha256: Buffer }>(db, 'SELECT territory, sequence_number, sha256 FROM trusted_lists ORDER BY territory', []);
      return rows.map((r) => `${r.territory}:${r.sequence_number}:${r.sha256.toString('hex')}`).join(',');
    },

    async services(): Promise<ServiceRecord[]> {
      const rows = await select<{ territory: string; service_type: string; provider: string; name: string; history: string; certificates: string }>(db,
        'SELECT territory, service_type, provider, name, history, certificates FROM trust_services ORDER BY id', []);
      return rows.map((r) => ({
        territory: r.territory, type: r.service_type, provider: r.provider, name: r.name,
        history: JSON.parse(r.history) as ServiceRecord['history'], certificates: JSON.parse(r.certificates) as string[],
      }));
    },
  };
}

export type TrustRepository = ReturnType<typeof createTrustRepository>;

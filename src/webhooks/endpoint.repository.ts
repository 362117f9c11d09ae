// Webhook endpoints in MariaDB (table webhook_endpoints; secrets sealed): registration,
// rotation, enabling, removal, and the re-sealing of secrets after a key rotation.
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import { ENDPOINT_COLUMNS, toEndpoint, type EndpointRecord, type EndpointRow } from './webhook.records.js';

/** Thrown to roll back a change that found nothing to change (`changing`). */
const UNCHANGED = new Error('nothing to change');

export function createEndpointRepository(db: Sequelize) {
  /**
   * A change of one endpoint, which runs `also` (its audit row) first (see the audit
   * repository's append); when it finds nothing to change (false), everything rolls back.
   */
  const changing = (change: (t: Transaction) => Promise<boolean>): Promise<boolean> =>
    db
      .transaction(async (t) => {
        if (!(await change(t))) throw UNCHANGED;
        return true;
      })
      .catch((err: unknown) => {
        if (err === UNCHANGED) return false;
        throw err;
      });

  return {
    async countEndpoints(orgId: string, t?: Transaction): Promise<number> {
      const [row] = await select<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM webhook_endpoints WHERE org_id = $1', [orgId], t);
      return Number(row?.n ?? 0);
    },

    async endpointByUrl(orgId: string, urlHash: Buffer, t?: Transaction): Promise<EndpointRecord | undefined> {
      const [row] = await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 AND url_hash = $2`, [orgId, urlHash], t);
      return row && toEndpoint(row);
    },

    async endpoint(id: string, orgId?: string): Promise<EndpointRecord | undefined> {
      const [row] =
        orgId === undefined
          ? await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1`, [id])
          : await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND org_id = $2`, [id, orgId]);
      return row && toEndpoint(row);
    },

    async endpoints(orgId: string): Promise<EndpointRecord[]> {
      const rows = await select<EndpointRow>(db, `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 ORDER BY created_at, id`, [orgId]);
      return rows.map(toEndpoint);
    },

    async insertEndpoint(e: { id: string; orgId: string; url: string; urlHash: Buffer; secretEnc: Buffer; at: Date }, t: Transaction): Promise<void> {
      await execute(
        db,
        `INSERT INTO webhook_endpoints (id, org_id, url, url_hash, secret_enc, status, created_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, 'active', $6, $6)`,
        [e.id, e.orgId, e.url, e.urlHash, e.secretEnc, e.at],
        t,
      );
    },

    /**
     * Removes an endpoint with its deliveries and attempts; false when it is not this
     * organization's. `also`: more of the same change, in its transaction (its audit row).
     */
    async deleteEndpoint(orgId: string, id: string, also?: (t: Transaction) => Promise<unknown>): Promise<boolean> {
      return changing(async (t) => {
        await also?.(t);
        const n = await execute(db, 'DELETE FROM webhook_endpoints WHERE id = $1 AND org_id = $2', [id, orgId], t);
        if (n === 0) return false;
        await execute(db, 'DELETE FROM webhook_deliveries WHERE endpoint_id = $1', [id], t);
        await execute(db, 'DELETE FROM webhook_attempts WHERE endpoint_id = $1', [id], t);
        return true;
      });
    },

    async rotateSecret(
      orgId: string,
      id: string,
      secretEnc: Buffer,
      previousUntil: Date,
      at: Date,
      also?: (t: Transaction) => Promise<unknown>,
    ): Promise<boolean> {
      return changing(async (t) => {
        await also?.(t);
        const n = await execute(
          db,
          `UPDATE webhook_endpoints SET previous_secret_enc = secret_enc, previous_secret_until = $3, secret_enc = $4, updated_at = $5
          WHERE id = $1 AND org_id = $2`,
          [id, orgId, previousUntil, secretEnc, at],
          t,
        );
        return n === 1;
      });
    },

    async enable(orgId: string, id: string, at: Date, also?: (t: Transaction) => Promise<unknown>): Promise<boolean> {
      return changing(async (t) => {
        await also?.(t);
        const n = await execute(
          db,
          `UPDATE webhook_endpoints SET status = 'active', disabled_reason = NULL, failing_since = NULL, updated_at = $3
          WHERE id = $1 AND org_id = $2`,
          [id, orgId, at],
          t,
        );
        return n === 1;
      });
    },

    /** Every sealed secret, for re-encryption under a new ENCRYPTION_KEY. */
    async sealedSecrets(): Promise<Array<{ id: string; secretEnc: Buffer; previousSecretEnc: Buffer | null }>> {
      const rows = await select<{ id: string; secret_enc: Buffer; previous_secret_enc: Buffer | null }>(
        db,
        'SELECT id, secret_enc, previous_secret_enc FROM webhook_endpoints',
        [],
      );
      return rows.map((r) => ({ id: r.id, secretEnc: r.secret_enc, previousSecretEnc: r.previous_secret_enc }));
    },

    /** Replaces an endpoint's sealed secrets, only if they are still `was` (false when a rotation changed them meanwhile). */
    async resealSecrets(
      id: string,
      was: { secretEnc: Buffer; previousSecretEnc: Buffer | null },
      next: { secretEnc: Buffer; previousSecretEnc: Buffer | null },
    ): Promise<boolean> {
      return (
        1 ===
        (await execute(
          db,
          `UPDATE webhook_endpoints SET secret_enc = $2, previous_secret_enc = $3
        WHERE id = $1 AND secret_enc = $4 AND previous_secret_enc <=> $5`,
          [id, next.secretEnc, next.previousSecretEnc, was.secretEnc, was.previousSecretEnc],
        ))
      );
    },
  };
}

// Idempotency-Key: a client may send the same request again without creating twice. Keys are
// scoped to the organization and kept 24 hours. The same key with the same request replays
// the first response; with a different request it is a 409; while the first is still running
// it is a 409. The response is recorded in the same transaction as the work it describes, so
// a crash never leaves a record without its replay (or a replay without its record). Only
// successful responses are recorded: a request that failed may be retried with the same key.
import { createHash, randomUUID } from 'node:crypto';
import canonicalize from 'canonicalize';
import { ConflictError, ValidationError } from './errors.js';
import { ER_DUP_ENTRY, execute, mysqlErrno, select, type Sequelize, type Transaction } from './db/sequelize.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** A 'running' claim whose owner died (crash, timeout) may be taken over after this. */
export const CLAIM_TTL_MS = 30_000;

export interface StoredResponse {
  status: number;
  body: unknown;
}

/** SHA-256 of the RFC 8785 canonical JSON of `value`: equal for equal JSON, whatever the key order. */
export function requestHash(value: unknown): Buffer {
  return createHash('sha256')
    .update(canonicalize(value) ?? 'null')
    .digest();
}

/** Validates the header's value: 1 to 255 visible ASCII characters. */
/**
 * What an Idempotency-Key guards: the endpoint (`scope`, its method and path) and the
 * validated, normalized content, so that values of ignored fields, key order or an equivalent
 * date offset do not make a retry look different.
 */
export function idempotencyFingerprint(scope: string, content: Buffer): Buffer {
  return requestHash({ scope, content: content.toString('hex') });
}

export function parseIdempotencyKey(values: string[] | undefined): string | undefined {
  if (!values?.length) return undefined;
  if (values.length > 1)
    throw new ValidationError('Send one Idempotency-Key header, not several.', [{ pointer: '#/headers/idempotency-key', detail: 'is repeated' }]);
  const key = values[0] ?? '';
  if (!/^[\x21-\x7e]{1,255}$/.test(key)) {
    throw new ValidationError('Idempotency-Key must be 1 to 255 visible ASCII characters.', [
      { pointer: '#/headers/idempotency-key', detail: 'must be 1 to 255 visible ASCII characters' },
    ]);
  }
  return key;
}

/** `owner` identifies this request's claim: only it may record the response or release the key. */
export type Claim = { kind: 'proceed'; owner: string } | { kind: 'replay'; response: StoredResponse };

interface Row {
  request_hash: Buffer;
  state: 'running' | 'done';
  response_status: number | null;
  response_body: string | null;
  locked_until: Date;
  expires_at: Date;
}

export function createIdempotencyStore(db: Sequelize, now: () => Date = () => new Date()) {
  async function insertClaim(orgId: string, key: string, hash: Buffer, owner: string): Promise<boolean> {
    const t = now();
    try {
      await execute(
        db,
        `INSERT INTO idempotency_keys (org_id, idem_key, request_hash, state, owner, locked_until, created_at, expires_at)
        VALUES ($1, $2, $3, 'running', $4, $5, $6, $7)`,
        [orgId, key, hash, owner, new Date(t.getTime() + CLAIM_TTL_MS), t, new Date(t.getTime() + IDEMPOTENCY_TTL_MS)],
      );
      return true;
    } catch (err) {
      if (mysqlErrno(err) === ER_DUP_ENTRY) return false;
      throw err;
    }
  }

  return {
    /** Claims a key for a request, or says to replay what it answered before. */
    async claim(orgId: string, key: string, hash: Buffer): Promise<Claim> {
      const owner = randomUUID();
      for (let attempt = 0; attempt < 3; attempt++) {
        if (await insertClaim(orgId, key, hash, owner)) return { kind: 'proceed', owner };
        const [row] = await select<Row>(
          db,
          `SELECT request_hash, state, response_status, response_body, locked_until, expires_at
          FROM idempotency_keys WHERE org_id = $1 AND idem_key = $2`,
          [orgId, key],
        );
        if (!row) continue; // released meanwhile: claim again
        const t = now();
        if (row.expires_at <= t) {
          await execute(db, 'DELETE FROM idempotency_keys WHERE org_id = $1 AND idem_key = $2 AND expires_at <= $3', [orgId, key, t]);
          continue;
        }
        if (!row.request_hash.equals(hash)) {
          throw new ConflictError('This Idempotency-Key was already used with a different request.');
        }
        if (row.state === 'done') {
          return {
            kind: 'replay',
            response: { status: row.response_status ?? 200, body: row.response_body === null ? null : (JSON.parse(row.response_body) as unknown) },
          };
        }
        if (row.locked_until > t) throw new ConflictError('A request with this Idempotency-Key is still in progress.');
        // Its owner died: take the claim over, unless someone else just did.
        const took = await execute(
          db,
          `UPDATE idempotency_keys SET locked_until = $1, owner = $2
          WHERE org_id = $3 AND idem_key = $4 AND state = 'running' AND locked_until <= $5`,
          [new Date(t.getTime() + CLAIM_TTL_MS), owner, orgId, key, t],
        );
        if (took === 1) return { kind: 'proceed', owner };
        throw new ConflictError('A request with this Idempotency-Key is still in progress.');
      }
      throw new ConflictError('A request with this Idempotency-Key is still in progress.');
    },

    /**
     * Records the response; call inside the transaction that does the work. Throws a 409, and
     * so rolls that work back, when the claim is no longer this request's (it outlived its
     * claim and a retry took the key over).
     */
    async complete(orgId: string, key: string, owner: string, response: StoredResponse, transaction?: Transaction): Promise<void> {
      const done = await execute(
        db,
        `UPDATE idempotency_keys SET state = 'done', response_status = $1, response_body = $2
        WHERE org_id = $3 AND idem_key = $4 AND owner = $5 AND state = 'running'`,
        [response.status, JSON.stringify(response.body), orgId, key, owner],
        transaction,
      );
      if (done !== 1) throw new ConflictError('This request outlived its Idempotency-Key claim, which a retry took over; nothing was recorded.');
    },

    /**
     * Runs `work` under the key: the stored response when this is a retry of a finished request
     * (`replay`), else `work`'s result, `work` holding the claim (`mine`: it completes it with
     * its response, in its own transaction); the key is given back when `work` throws.
     */
    async guard<T>(
      orgId: string,
      key: string,
      fingerprint: Buffer,
      work: (mine: { key: string; owner: string }) => Promise<T>,
    ): Promise<{ replay: StoredResponse } | { result: T }> {
      const claimed = await this.claim(orgId, key, fingerprint);
      if (claimed.kind === 'replay') return { replay: claimed.response };
      const mine = { key, owner: claimed.owner };
      try {
        return { result: await work(mine) };
      } catch (err) {
        await this.release(orgId, key, mine.owner).catch(() => undefined);
        throw err;
      }
    },

    /** Gives the key back after a failed request, so that the client may retry with it. */
    async release(orgId: string, key: string, owner: string): Promise<void> {
      await execute(db, "DELETE FROM idempotency_keys WHERE org_id = $1 AND idem_key = $2 AND owner = $3 AND state = 'running'", [orgId, key, owner]);
    },

    /** Deletes expired records; returns how many. */
    async purgeExpired(batch = 10_000): Promise<number> {
      return execute(db, 'DELETE FROM idempotency_keys WHERE expires_at <= $1 LIMIT ' + Math.max(1, Math.floor(batch)), [now()]);
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;

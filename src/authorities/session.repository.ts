// authority_logins and authority_sessions: the sign-ins under way at the OpenID Provider, and
// the people signed in to /authority. A session is found by the SHA-256 of its cookie's value
// (a copy of the table gives no one a session), with the authority its person is bound to now
// (authority_users, read with it: an unbinding takes effect at the next request).
import { createHash } from 'node:crypto';
import { execute, select, type Sequelize } from '../shared/db/sequelize.js';

/** How long a sign-in may stay at the provider. */
export const LOGIN_TTL_MS = 10 * 60 * 1000;

export interface PendingLogin {
  state: string;
  codeVerifier: string;
  nonce: string;
  returnTo: string;
}

export interface Session {
  fiscalNumber: string;
  name: string;
  /** The authority the person is bound to, if any. */
  authorityId: string | null;
  csrf: string;
  idToken: string | null;
  seenAt: Date;
}

const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');

export function createSessionRepository(db: Sequelize) {
  return {
    async addLogin(login: PendingLogin, at: Date): Promise<void> {
      // The stale ones go with each new one: the table holds ten minutes of sign-ins at most.
      await execute(db, 'DELETE FROM authority_logins WHERE created_at < $1', [new Date(at.getTime() - LOGIN_TTL_MS)]);
      await execute(db, 'INSERT INTO authority_logins (state, code_verifier, nonce, return_to, created_at) VALUES ($1, $2, $3, $4, $5)', [
        login.state,
        login.codeVerifier,
        login.nonce,
        login.returnTo,
        at,
      ]);
    },

    /** The sign-in of `state`, taken (deleted: a state is used once); undefined when unknown or older than LOGIN_TTL_MS. */
    async takeLogin(state: string, at: Date): Promise<PendingLogin | undefined> {
      const [row] = await select<{ code_verifier: string; nonce: string; return_to: string; created_at: Date }>(
        db,
        'SELECT code_verifier, nonce, return_to, created_at FROM authority_logins WHERE state = $1',
        [state],
      );
      if (!row) return undefined;
      const taken = await execute(db, 'DELETE FROM authority_logins WHERE state = $1', [state]);
      if (taken === 0 || row.created_at.getTime() < at.getTime() - LOGIN_TTL_MS) return undefined;
      return { state, codeVerifier: row.code_verifier, nonce: row.nonce, returnTo: row.return_to };
    },

    async addSession(id: string, s: Omit<Session, 'authorityId' | 'seenAt'>, at: Date): Promise<void> {
      await execute(
        db,
        'INSERT INTO authority_sessions (id_hash, fiscal_number, name, csrf, id_token, created_at, seen_at) VALUES ($1, $2, $3, $4, $5, $6, $6)',
        [hashOf(id), s.fiscalNumber, s.name, s.csrf, s.idToken, at],
      );
    },

    /** The session of cookie value `id` if it was seen within `idleMs` of `at`; the one idle longer is deleted. */
    async session(id: string, at: Date, idleMs: number): Promise<Session | undefined> {
      const [row] = await select<{ fiscal_number: string; name: string; org_id: string | null; csrf: string; id_token: string | null; seen_at: Date }>(
        db,
        `SELECT s.fiscal_number, s.name, u.org_id, s.csrf, s.id_token, s.seen_at FROM authority_sessions s
        LEFT JOIN authority_users u ON u.fiscal_number = s.fiscal_number WHERE s.id_hash = $1`,
        [hashOf(id)],
      );
      if (!row) return undefined;
      if (row.seen_at.getTime() + idleMs <= at.getTime()) {
        await execute(db, 'DELETE FROM authority_sessions WHERE id_hash = $1', [hashOf(id)]);
        return undefined;
      }
      return { fiscalNumber: row.fiscal_number, name: row.name, authorityId: row.org_id, csrf: row.csrf, idToken: row.id_token, seenAt: row.seen_at };
    },

    /** Marks the session seen at `at` (its idle time starts again). */
    async touch(id: string, at: Date): Promise<void> {
      await execute(db, 'UPDATE authority_sessions SET seen_at = $2 WHERE id_hash = $1 AND seen_at < $2', [hashOf(id), at]);
    },

    async removeSession(id: string): Promise<void> {
      await execute(db, 'DELETE FROM authority_sessions WHERE id_hash = $1', [hashOf(id)]);
    },

    /** Deletes the sessions idle since before `before` (the maintenance job's), at most `limit`; how many. */
    async removeIdle(before: Date, limit: number): Promise<number> {
      return execute(db, 'DELETE FROM authority_sessions WHERE seen_at < $1 LIMIT $2', [before, limit]);
    },
  };
}

export type SessionRepository = ReturnType<typeof createSessionRepository>;

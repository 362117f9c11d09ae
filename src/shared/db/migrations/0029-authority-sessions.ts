// The sign-in of the contracting authorities' people at /authority (issue 29).
// - authority_logins: a sign-in under way, between the redirect to the OpenID Provider and its
//   return: the PKCE verifier and the nonce of one `state`, used once, for ten minutes.
// - authority_sessions: a signed-in person, by the SHA-256 of the session cookie's value (the
//   value itself is never stored), with the fiscal number the provider vouched for (the
//   authority is read from authority_users at each request: an unbinding takes effect at once),
//   the CSRF token of its forms, the ID token (the logout's hint) and when it was last seen
//   (idle for SESSION_IDLE_MINUTES: over).
// New tables: the previous release runs unchanged.
import type { Migration } from './index.js';

const TOKEN = 'CHAR(43) CHARACTER SET ascii COLLATE ascii_nopad_bin';

export const migration: Migration = {
  name: '0029-authority-sessions',
  async up({ context: q }) {
    await q(`CREATE TABLE authority_logins (
      state ${TOKEN} NOT NULL PRIMARY KEY,
      code_verifier ${TOKEN} NOT NULL,
      nonce ${TOKEN} NOT NULL,
      return_to VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      created_at DATETIME(3) NOT NULL,
      KEY idx_authority_logins_created (created_at)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`CREATE TABLE authority_sessions (
      id_hash CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      fiscal_number VARCHAR(32) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL,
      name VARCHAR(200) NOT NULL,
      csrf ${TOKEN} NOT NULL,
      id_token TEXT CHARACTER SET ascii COLLATE ascii_bin NULL,
      created_at DATETIME(3) NOT NULL,
      seen_at DATETIME(3) NOT NULL,
      KEY idx_authority_sessions_seen (seen_at),
      KEY idx_authority_sessions_person (fiscal_number)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE authority_sessions');
    await q('DROP TABLE authority_logins');
  },
};

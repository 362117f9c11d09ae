// The composition root's core (src/composition.ts builds the rest on it): what every process
// kind opens first, the database pool, the secret box and the repositories, and the operator's
// services the CLI uses. A module of its own so that a CLI command loads what it needs and not
// the web's and the workers' services (their HTTP clients, the EVM library, the antivirus, the
// trusted lists' XML signatures...): a command's imports went from 1.35 s of CPU to 0.56 s (Node 24).
// No other module opens a pool or a secret box.
import type { Config } from '../config/index.js';
import { createAuditRepository } from './audit/audit.repository.js';
import { createAuthorityRepository } from './authorities/authority.repository.js';
import { createAuthorityUsers } from './authorities/authority-users.js';
import { createTrustRepository } from './files/trust/trust.repository.js';
import { createGuaranteeRepository } from './guarantees/guarantee.repository.js';
import { createAnchorKeys } from './notarization/anchor-keys.js';
import { createOrgRepository } from './orgs/org.repository.js';
import { createOrgService } from './orgs/org.service.js';
import { createSequelize, type Sequelize } from './shared/db/sequelize.js';
import { createIdempotencyStore } from './shared/idempotency.js';
import type { Logger } from './shared/logger.js';
import { createSecretBox, type SecretBox } from './shared/secrets.js';
import { createSigningKeys } from './verification/signing-keys.js';
import { createVerificationRepository } from './verification/verification.repository.js';
import { createWebhookRepository } from './webhooks/webhook.repository.js';

/** One repository per owner of tables (docs/design.md, "Who writes which table"), over the core's pool. */
function repositoriesOver(db: Sequelize, secrets: SecretBox) {
  return {
    orgs: createOrgRepository(db),
    guarantees: createGuaranteeRepository(db),
    webhooks: createWebhookRepository(db),
    verification: createVerificationRepository(db),
    idempotency: createIdempotencyStore(db),
    trust: createTrustRepository(db),
    anchorKeys: createAnchorKeys(db, secrets),
    signingKeys: createSigningKeys(db, secrets),
  };
}

export type Repositories = ReturnType<typeof repositoriesOver>;

export interface Core {
  config: Config;
  logger: Logger;
  db: Sequelize;
  secrets: SecretBox;
  repos: Repositories;
  /** A pool of one connection of its own (the relay's, which opens a script lane of one more; the notarizers' lock), closed with the core. */
  ownPool(): Sequelize;
  close(): Promise<void>;
}

/**
 * The core of a process: its pool (`poolMax` connections, DATABASE_POOL_MAX by default; or
 * `db`, the caller's, which the core then does not close), the secret box and the repositories.
 * `statementTimeLimit: false` for the CLI.
 */
export function openCore(config: Config, logger: Logger, opts: { db?: Sequelize; poolMax?: number; statementTimeLimit?: boolean } = {}): Core {
  // The processes' statements stop at DATABASE_STATEMENT_TIMEOUT_MS; an operator's command (the CLI: a reseal, an import) is not cut short.
  const limit = opts.statementTimeLimit === false ? {} : { statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS };
  const pool = (poolMax: number) =>
    // Registrations run as one-round-trip scripts on the scripts' pool: as many at once as the requests' pool allows.
    createSequelize({ url: config.DATABASE_URL, poolMax, scriptPoolMax: poolMax, ...limit });
  const db = opts.db ?? pool(opts.poolMax ?? config.DATABASE_POOL_MAX);
  const owned: Sequelize[] = opts.db ? [] : [db];
  const secrets = createSecretBox(config.ENCRYPTION_KEY);
  return {
    config,
    logger,
    db,
    secrets,
    repos: repositoriesOver(db, secrets),
    ownPool() {
      const extra = pool(1);
      owned.push(extra);
      return extra;
    },
    async close() {
      for (const p of owned.splice(0).reverse()) await p.close();
    },
  };
}

export const cliServices = {
  organizations: (core: Core) => createOrgService(core.repos.orgs, { audit: createAuditRepository(core.db) }),
  authorityUsers: (core: Core) =>
    createAuthorityUsers({ repo: createAuthorityRepository(core.db), orgs: core.repos.orgs, audit: createAuditRepository(core.db) }),
};

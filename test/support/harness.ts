// The integration tests' world: the real app, in-process, over the real MariaDB that
// `npm test` started. Each test makes its own organizations and data.
import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import supertest from 'supertest';
import { v7 as uuidv7 } from 'uuid';
import { getConfig, parseConfig, type Config } from '../../config/index.js';
import { createApp } from '../../src/app.js';
import { createOrgRepository } from '../../src/orgs/org.repository.js';
import { createOrgService, type OrgService } from '../../src/orgs/org.service.js';
import { migrate } from '../../src/shared/db/migrator.js';
import { createSequelize, execute, type Sequelize } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';

export interface Harness {
  config: Config;
  db: Sequelize;
  app: Koa;
  http: ReturnType<typeof supertest>;
  orgs: OrgService;
}

let shared: Harness | undefined;
const extraDbs: Sequelize[] = [];

/** A configuration like the run's, with some variables changed. */
export function configWith(overrides: Record<string, string>): Config {
  return parseConfig({ ...process.env, ...overrides });
}

/** The shared app, migrated once per run. */
export async function harness(): Promise<Harness> {
  if (!shared) {
    const config = getConfig();
    await migrate(config.DATABASE_URL, createLogger('silent'));
    const db = createSequelize({ url: config.DATABASE_URL, poolMax: 20, statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS });
    const app = createApp({ config, logger: createLogger('silent'), db });
    shared = { config, db, app, http: supertest(app.callback()), orgs: createOrgService(createOrgRepository(db)) };
  }
  return shared;
}

/** Another app over the same database, with changed configuration (rate limits, tokens...). */
export async function appWith(overrides: Record<string, string>, db?: Sequelize): Promise<ReturnType<typeof supertest>> {
  const base = await harness();
  const config = configWith(overrides);
  const database = db ?? base.db;
  return supertest(createApp({ config, logger: createLogger('silent'), db: database }).callback());
}

/** A Sequelize of its own (closed after the run). */
export function extraDb(url: string, acquireTimeoutMs = 2000): Sequelize {
  const db = createSequelize({ url, poolMax: 2, acquireTimeoutMs });
  extraDbs.push(db);
  return db;
}

export interface TestOrg { orgId: string; key: string; prefix: string }

export async function newOrg(name = `org-${randomUUID().slice(0, 8)}`): Promise<TestOrg> {
  const { orgs } = await harness();
  const org = await orgs.createOrganization(name);
  const { key, prefix } = await orgs.createApiKey(org.id);
  return { orgId: org.id, key, prefix };
}

/**
 * A files row as the presigned-URL endpoints leave it (those endpoints arrive with the
 * uploads issue; until then the tests issue keys directly).
 */
export async function issueFile(orgId: string, opts: { status?: string; fileName?: string; ext?: string; checksum?: string } = {}): Promise<string> {
  const { db } = await harness();
  const uuid = uuidv7();
  const key = `${uuid}.${opts.ext ?? 'pdf'}`;
  const now = new Date();
  await execute(db, `INSERT INTO files (uuid, object_key, org_id, file_type, original_file_name, status, checksum, expires_at, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
  [uuid, key, orgId, opts.ext ?? 'pdf', opts.fileName ?? null, opts.status ?? 'In Progress', opts.checksum ?? null, new Date(now.getTime() + 900_000), now]);
  return key;
}

export async function closeHarness(): Promise<void> {
  await Promise.all(extraDbs.splice(0).map((db) => db.close()));
  await shared?.db.close();
  shared = undefined;
}

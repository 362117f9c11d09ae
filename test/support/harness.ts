// The integration tests' world: the real app, in-process, over the real MariaDB that
// `npm test` started. Each test makes its own organizations and data.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { Job, Queue } from 'bullmq';

import supertest from 'supertest';
import { v7 as uuidv7 } from 'uuid';
import { getConfig, parseConfig, type Config } from '../../config/index.js';
import { createApp, type RegistryApp } from '../../src/app.js';
import { createOrgRepository } from '../../src/orgs/org.repository.js';
import { createOrgService, type OrgService } from '../../src/orgs/org.service.js';
import { migrate } from '../../src/shared/db/migrator.js';
import { createSequelize, execute, select, type Sequelize } from '../../src/shared/db/sequelize.js';
import { createLogger, type Logger } from '../../src/shared/logger.js';
import { openQueues, type OpenQueues } from '../../src/queues.js';
import { producerConnection, type RedisConnection } from '../../src/shared/queues.js';
import { createEvents, type Events } from '../../src/webhooks/events.js';
import { createWebhookRepository, type WebhookRepository } from '../../src/webhooks/webhook.repository.js';
import { emittingWith, openCore, openEvents, webServices } from '../../src/composition.js';
import { createStorage, type Storage } from '../../src/shared/storage.js';
import type { Resolver } from '../../src/webhooks/ssrf.js';

export interface Harness {
  config: Config;
  db: Sequelize;
  app: RegistryApp;
  http: ReturnType<typeof supertest>;
  orgs: OrgService;
  /** The run's queues (a prefix of its own), as the API enqueues to them. */
  queues: OpenQueues;
  redis: RedisConnection;
  /** The outbox and the app's relay. */
  events: Events;
  /** The webhooks' repository, over `db`. */
  webhooks: WebhookRepository;
}

let shared: Harness | undefined;
const extraDbs: Sequelize[] = [];

/** What NODE_ENV=production needs on top of the run's settings (the receipts' and the log's keys, the public URL). */
export const PRODUCTION_EXTRAS = {
  VERIFICATION_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
  LOG_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
  PUBLIC_BASE_URL: 'https://registry.example.com',
};

/** A configuration like the run's, with some variables changed. */
export function configWith(overrides: Record<string, string | undefined>): Config {
  return parseConfig({ ...process.env, ...overrides });
}

/**
 * The app over `db`, composed as server.ts composes it (src/composition.ts): its events are
 * `events` when given (the harness's, or a test's over queues of its own), else events of its
 * own over `queues`, relayed on the same pool.
 */
export function appOver(o: {
  config: Config;
  logger?: Logger;
  db: Sequelize;
  queues: OpenQueues;
  events?: Events;
  storage?: Storage;
  resolver?: Resolver;
  objectLock?: () => string;
  /** Counts the public limits in Redis, as server.ts does (else per app, in memory). */
  redis?: RedisConnection;
  receiptKeyRecheckMs?: number;
}): RegistryApp {
  const logger = o.logger ?? createLogger('silent');
  const core = openCore(o.config, logger, { db: o.db });
  const emitting = o.events ? emittingWith(core, o.events) : openEvents(core, o.queues, { sharedRelayPool: true });
  const services = webServices(core, emitting, {
    queues: o.queues,
    storage: o.storage ?? createStorage(o.config),
    ...(o.resolver && { resolver: o.resolver }),
    ...(o.receiptKeyRecheckMs !== undefined && { receiptKeyRecheckMs: o.receiptKeyRecheckMs }),
  });
  return createApp({
    config: o.config,
    logger,
    db: o.db,
    queues: o.queues,
    services,
    ...(o.objectLock && { objectLock: o.objectLock }),
    ...(o.redis && { redis: o.redis }),
  });
}

/** Events over `db` for the webhook queue and first attempts' list of `queues`, as a process makes them (its relay on `db`). */
export function eventsOver(db: Sequelize, queues: Pick<OpenQueues, 'webhooks' | 'webhookFirstAttempts'>, config: Config, logger: Logger): Events {
  return createEvents({
    repo: createWebhookRepository(db),
    firstAttempts: queues.webhookFirstAttempts,
    queue: queues.webhooks,
    retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
    logger,
  });
}

/** The shared app, migrated once per run. */
export async function harness(): Promise<Harness> {
  if (!shared) {
    const config = getConfig();
    await migrate(config.DATABASE_URL, createLogger('silent'));
    const db = createSequelize({ url: config.DATABASE_URL, poolMax: 20, scriptPoolMax: 20, statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS });
    const redis = producerConnection(config.REDIS_URL, config.REDIS_CLUSTER);
    const queues = openQueues(redis, config.QUEUE_PREFIX, createLogger('silent'));
    const events = eventsOver(db, queues, config, createLogger('silent'));
    const app = appOver({ config, db, queues, events });
    shared = {
      config,
      db,
      app,
      http: supertest(app.callback()),
      orgs: createOrgService(createOrgRepository(db)),
      queues,
      redis,
      events,
      webhooks: createWebhookRepository(db),
    };
  }
  return shared;
}

/** Another app over the same database, with changed configuration (rate limits, tokens...). */
export async function appWith(
  overrides: Record<string, string>,
  db?: Sequelize,
  opts: { resolver?: Resolver; objectLock?: () => string; receiptKeyRecheckMs?: number } = {},
): Promise<ReturnType<typeof supertest>> {
  const base = await harness();
  const config = configWith(overrides);
  const database = db ?? base.db;
  const events = database === base.db ? base.events : undefined;
  return supertest(
    appOver({
      config,
      db: database,
      queues: base.queues,
      ...(events && { events }),
      ...(opts.resolver && { resolver: opts.resolver }),
      ...(opts.objectLock && { objectLock: opts.objectLock }),
      ...(opts.receiptKeyRecheckMs !== undefined && { receiptKeyRecheckMs: opts.receiptKeyRecheckMs }),
    }).callback(),
  );
}

/** A Sequelize of its own (closed after the run). */
export function extraDb(url: string, acquireTimeoutMs = 2000): Sequelize {
  const db = createSequelize({ url, poolMax: 2, acquireTimeoutMs });
  extraDbs.push(db);
  return db;
}

export interface TestOrg {
  orgId: string;
  key: string;
  prefix: string;
}

export async function newOrg(name = `org-${randomUUID().slice(0, 8)}`): Promise<TestOrg> {
  const { orgs } = await harness();
  const org = await orgs.createOrganization(name);
  const { key, prefix } = await orgs.createApiKey(org.id);
  return { orgId: org.id, key, prefix };
}

/** A valid fiscal code of a public body: ten random digits and their check digit (as a partita IVA's). */
export function fiscalCode(): string {
  const digits = Array.from({ length: 10 }, () => Math.floor(Math.random() * 10));
  const sum = digits.reduce((n, d, i) => n + (i % 2 === 0 ? d : d * 2 > 9 ? d * 2 - 9 : d * 2), 0);
  return `${digits.join('')}${(10 - (sum % 10)) % 10}`;
}

export interface TestAuthority extends TestOrg {
  fiscalCode: string;
}

/** A contracting authority (kind `authority`) and a key of its own. */
export async function newAuthority(name = `Comune di ${randomUUID().slice(0, 8)}`): Promise<TestAuthority> {
  const { orgs } = await harness();
  const code = fiscalCode();
  const org = await orgs.createOrganization(name, { kind: 'authority', fiscalCode: code });
  const { key, prefix } = await orgs.createApiKey(org.id);
  return { orgId: org.id, key, prefix, fiscalCode: code };
}

/**
 * A files row as the presigned-URL endpoints leave it, or in any status, without an upload or
 * a scan: for tests of what a file's status allows (presign() and uploadForm() go through the store).
 */
export async function issueFile(
  orgId: string,
  /** `public`: isDocumentPublic as uploaded ('v1': through v1, which has no such flag); false by default, as a v2 upload without it. */
  opts: { status?: string; fileName?: string; ext?: string; checksum?: string; public?: boolean | 'v1' } = {},
): Promise<string> {
  const { db } = await harness();
  const uuid = uuidv7();
  const key = `${uuid}.${opts.ext ?? 'pdf'}`;
  const now = new Date();
  await execute(
    db,
    `INSERT INTO files (uuid, object_key, org_id, file_type, original_file_name, status, checksum, expires_at, created_at, updated_at, is_document_public, upload_api)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11)`,
    [
      uuid,
      key,
      orgId,
      opts.ext ?? 'pdf',
      opts.fileName ?? null,
      opts.status ?? 'In Progress',
      opts.checksum ?? null,
      new Date(now.getTime() + 900_000),
      now,
      opts.public === true ? 1 : 0,
      opts.public === 'v1' ? 1 : 2,
    ],
  );
  return key;
}

export async function closeHarness(): Promise<void> {
  await shared?.events.relay.stop();
  await Promise.all(extraDbs.splice(0).map((db) => db.close()));
  await shared?.db.close();
  if (shared) {
    await shared.queues.close();
    shared.redis.disconnect();
  }
  shared = undefined;
}

/** Uploads as a browser form or `curl -F` does: every field first, the file last. */
export async function uploadForm(
  url: string,
  fields: Record<string, unknown>,
  content: Buffer | string,
  fileName = 'document.pdf',
): Promise<{ status: number; text: string }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, String(v));
  form.append('file', new Blob([content]), fileName);
  const res = await fetch(url, { method: 'POST', body: form });
  return { status: res.status, text: await res.text() };
}

export interface IssuedUpload {
  key: string;
  uuid: string;
  url: string;
  fields: Record<string, string>;
}

/** POST /api/v{1,2}/presigned-url for `org` (to the shared app, or `http`); fails the test on anything but 200. */
export async function presign(
  org: TestOrg,
  body: Record<string, unknown> = { fileType: 'pdf' },
  version: 1 | 2 = 2,
  http?: ReturnType<typeof supertest>,
): Promise<IssuedUpload> {
  const res = await (http ?? (await harness()).http).post(`/api/v${version}/presigned-url`).set('X-API-Key', org.key).send(body);
  if (res.status !== 200) throw new Error(`presigned-url answered ${res.status}`);
  const key = res.body.key as string;
  return { key, uuid: key.slice(0, key.indexOf('.')), url: res.body.presignedUrl as string, fields: res.body.fields as Record<string, string> };
}

export interface FileRowView {
  status: string;
  status_reason: string | null;
  checksum: string | null;
  size: number | null;
  threat: string | null;
  version_id: string | null;
  stored_key: string | null;
  scan_engine: string | null;
  signature: string | null;
}

export async function fileRow(uuid: string): Promise<FileRowView | undefined> {
  const { db } = await harness();
  const [row] = await select<FileRowView>(
    db,
    'SELECT status, status_reason, checksum, size, threat, version_id, stored_key, scan_engine, signature FROM files WHERE uuid = $1',
    [uuid],
  );
  return row;
}

/** The job that holds deduplication id `dedupId` in `queue` (one waiting, delayed or running), if any. */
export async function pendingJob<T>(queue: Queue<T>, dedupId: string): Promise<Job<T> | undefined> {
  const id = await queue.getDeduplicationJobId(dedupId);
  return id ? ((await queue.getJob(id)) ?? undefined) : undefined;
}

/**
 * Polls `probe` until it gives a truthy value, and returns it; fails naming `what` (and, when
 * given, what `describe` says of the last value) after `timeoutMs`.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 10_000,
  describe?: (last: T) => string,
): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as Exclude<T, false | null | undefined | 0 | ''>;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${describe ? `: ${describe(value)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until the file's status is one of `statuses`; fails with what it was after `timeoutMs`. */
export async function waitForStatus(uuid: string, statuses: readonly string[], timeoutMs = 15_000): Promise<FileRowView> {
  let row: FileRowView | undefined;
  await eventually(
    `file ${uuid} to be ${statuses.join('/')}`,
    async () => {
      row = await fileRow(uuid);
      return row !== undefined && statuses.includes(row.status);
    },
    timeoutMs,
    () => `it is ${row?.status ?? 'absent'} (${row?.status_reason ?? ''})`,
  );
  return row as FileRowView;
}

/** Settings that make the pipeline quick to observe; the test clamd has small limits (6 MB a file and in all, 8 MB a stream). */
export const FAST_PIPELINE = {
  WORKER_STALLED_INTERVAL_MS: '1000',
  WORKER_LOCK_DURATION_MS: '2000',
  SCAN_BACKOFF_MS: '200',
  SCAN_ATTEMPTS: '4',
  UPLOAD_POLL_MAX_INTERVAL_MS: '500',
  UPLOAD_GRACE_SECONDS: '30',
};

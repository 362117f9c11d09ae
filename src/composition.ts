// The composition root. One place builds, from the configuration, what the process kinds share:
// the database pools, the secret box and the repositories (one of each: its core, src/core.ts),
// the events (the outbox and this process's relay) and the services. The web process
// (server.ts), the workers (workers/index.ts) and the CLI (cli.ts, and scripts/dev.ts through
// it) each open one core and hand what it built to the parts that use them; no other module
// opens a pool or a secret box. The CLI loads the core alone. Tests open a core over their own
// pool (`db`).
import { readFileSync } from 'node:fs';
import { createAntivirus } from './files/antivirus.js';
import { createFileJobs } from './files/file.jobs.js';
import { createFileRepository, type FileRepository } from './files/file.repository.js';
import { createFileService } from './files/file.service.js';
import { createScanService } from './files/scan.service.js';
import { createVerifyPool } from './files/signature.pool.js';
import { createSignatureService } from './files/signature.service.js';
import { createTrustSource } from './files/trust/trust.source.js';
import { MAX_ENVELOPE_BYTES } from './files/p7m/p7m.limits.js';
import { createAuditRepository } from './audit/audit.repository.js';
import { createDocumentLock } from './files/document-lock.js';
import { createFileRetention } from './files/file.retention.js';
import { createAmendmentRepository } from './guarantees/amendment.repository.js';
import { createAttachments } from './guarantees/attachments.js';
import { createAmendmentService } from './guarantees/amendment.service.js';
import { createLifecycleCheck } from './guarantees/lifecycle-check.js';
import { createGuaranteeService } from './guarantees/guarantee.service.js';
import type { Anchor } from './notarization/anchor.js';
import { createWebhookLogRetention } from './webhooks/webhook-log.retention.js';
import { createEvmAnchor, evmProvider } from './notarization/evm.anchor.js';
import { createLedgerAnchor } from './notarization/ledger.anchor.js';
import { createNotarizationRepository } from './notarization/notarization.repository.js';
import { createNotarizationService, createProofService } from './notarization/notarization.service.js';
import { openLogKey, logOrigin } from './log/log-key.js';
import { createLogRepository } from './log/log.repository.js';
import { createLogService, type LogService } from './log/log.service.js';
import { parseVerifierKey } from './log/note.js';
import { createSequencer, type Sequencer } from './log/sequencer.js';
import { createTileStore, type TileStore } from './log/tile-store.js';
import { createOrgService } from './orgs/org.service.js';
import type { OpenQueues } from './queues.js';
import { redactingProxy, secretPartsOfUrl } from './shared/redact.js';
import type { Storage } from './shared/storage.js';
import { createVerificationService } from './verification/verification.service.js';
import { createAuthorityRepository } from './authorities/authority.repository.js';
import { createAuthorityService } from './authorities/authority.service.js';
import { createSessionRepository } from './authorities/session.repository.js';
import { createSignIn } from './authorities/sign-in.js';
import { createDeliveryService } from './webhooks/delivery.service.js';
import { createEvents, type Events } from './webhooks/events.js';
import { createSender } from './webhooks/sender.js';
import { createAddressPolicy, dnsResolver, type Resolver } from './webhooks/ssrf.js';
import { createWebhookRepository } from './webhooks/webhook.repository.js';
import { createWebhookService } from './webhooks/webhook.service.js';
import type { Core } from './core.js';

export { cliServices, openCore, type Core, type Repositories } from './core.js';

/** What emits events: the outbox and this process's relay, and the files' repository, which writes through it. */
export interface Emitting {
  events: Events;
  files: FileRepository;
}

/**
 * The events of a process that queues webhook deliveries to `queues.webhooks`. The relay runs on
 * a pool of its own unless `sharedRelayPool` (in a busy process its statements would otherwise
 * queue behind the requests' transactions for a connection).
 */
export function openEvents(core: Core, queues: Pick<OpenQueues, 'webhooks' | 'webhookFirstAttempts'>, opts: { sharedRelayPool?: boolean } = {}): Emitting {
  const { config, logger, repos } = core;
  const relayRepo = opts.sharedRelayPool ? repos.webhooks : createWebhookRepository(core.ownPool());
  return emittingWith(
    core,
    createEvents({
      repo: repos.webhooks,
      relayRepo,
      firstAttempts: queues.webhookFirstAttempts,
      queue: queues.webhooks,
      retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
      logger,
    }),
  );
}

/** What emits `events`, made elsewhere (tests give events over a queue of theirs). */
export function emittingWith(core: Core, events: Events): Emitting {
  return { events, files: createFileRepository(core.db, events.outbox) };
}

/** The API's services. */
export function webServices(
  core: Core,
  emitting: Emitting,
  deps: {
    queues: OpenQueues;
    storage: Storage;
    resolver?: Resolver;
    /** Tests: how often the receipt key's retirement is looked for. */ receiptKeyRecheckMs?: number;
  },
) {
  const { config, logger, repos, secrets } = core;
  const { events, files: fileRepo } = emitting;
  const proofs = createProofService(createNotarizationRepository(core.db), repos.guarantees.notary, transparencyLog(core).service);
  const audit = createAuditRepository(core.db);
  const amendments = createAmendmentService({
    repo: createAmendmentRepository(core.db),
    files: fileRepo,
    outbox: events.outbox,
    idempotency: repos.idempotency,
    audit,
  });
  const verifications = createVerificationService({
    guarantees: repos.guarantees,
    amendments: createAmendmentRepository(core.db),
    files: fileRepo,
    proofs,
    repo: repos.verification,
    outbox: events.outbox,
    keys: repos.signingKeys,
    configuredKey: config.VERIFICATION_SIGNING_KEY,
    publicBaseUrl: config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`,
    ...(deps.receiptKeyRecheckMs !== undefined && { keyRecheckMs: deps.receiptKeyRecheckMs }),
  });
  return {
    audit,
    orgs: createOrgService(repos.orgs),
    guarantees: createGuaranteeService({
      repo: repos.guarantees,
      registry: repos.orgs,
      files: fileRepo,
      idempotency: repos.idempotency,
      outbox: events.outbox,
      audit,
    }),
    amendments,
    proofs,
    verifications,
    authorities: createAuthorityService({
      repo: createAuthorityRepository(core.db),
      orgs: repos.orgs,
      guarantees: repos.guarantees,
      amendments,
      amendmentRepo: createAmendmentRepository(core.db),
      verifications,
      outbox: events.outbox,
    }),
    /** The transparency log's reads: checkpoints, tiles, proofs. */
    log: transparencyLog(core),
    /** The /authority pages' sessions and their sign-in with OpenID Connect. */
    sessions: createSessionRepository(core.db),
    signIn: createSignIn(config),
    webhooks: createWebhookService({
      repo: repos.webhooks,
      organizations: repos.orgs,
      secrets,
      resolver: deps.resolver ?? dnsResolver({ timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS, servers: config.WEBHOOK_DNS_SERVERS }),
      policy: createAddressPolicy(config.WEBHOOK_ALLOWED_NETWORKS),
      settings: { allowHttp: config.WEBHOOK_ALLOW_HTTP ?? config.NODE_ENV !== 'production', rotationGraceMs: config.WEBHOOK_SECRET_GRACE_SECONDS * 1000 },
      wake: events.relay.wake,
      audit,
    }),
    files: createFileService({
      repo: fileRepo,
      storage: deps.storage,
      policy: { allowedFileTypes: config.ALLOWED_FILE_TYPES, maxBytes: config.MAX_UPLOAD_BYTES, ttlSeconds: config.UPLOAD_URL_TTL_SECONDS },
      jobs: createFileJobs(deps.queues, { scanAttempts: config.SCAN_ATTEMPTS, scanBackoffMs: config.SCAN_BACKOFF_MS }),
      logger,
      audit,
    }),
  };
}

export type WebServices = ReturnType<typeof webServices>;

/** The workers' services, each built when its worker starts (a process runs some of them). */
export const workerServices = {
  /** The lifecycle check: guarantee.expired and guarantee.claim_overdue, once each. */
  lifecycle(core: Core, emitting: Emitting) {
    return createLifecycleCheck({ db: core.db, amendments: createAmendmentRepository(core.db), outbox: emitting.events.outbox, logger: core.logger });
  },
  /** The document lock: attached documents put under Object Lock for DOCUMENT_RETENTION_YEARS. */
  documentLock(core: Core, emitting: Emitting, storage: Storage) {
    const attachments = createAttachments(core.db);
    return createDocumentLock({
      repo: emitting.files,
      storage,
      unrecordedBetween: (from, to) => attachments.unrecordedBetween(from, to),
      years: core.config.DOCUMENT_RETENTION_YEARS,
      logger: core.logger,
    });
  },
  /**
   * The retention job (docs/operations.md "Records"): uploads never attached, Infected bytes, and the
   * webhooks' log, each deleted once older than its setting. What it returns is the job's result in Bull Board.
   */
  retention(core: Core, storage: Storage) {
    const { config, db, logger } = core;
    const files = createFileRetention({ db, storage, logger });
    const webhookLog = createWebhookLogRetention(db);
    const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000);
    return {
      /** Each kind on its own: one that fails (the store away) neither stops nor hides the others; the job fails after all ran. */
      async run() {
        const [unattachedUploads, infectedFiles, webhookLogPurged] = await Promise.allSettled([
          files.purgeUnattached(daysAgo(config.UNATTACHED_UPLOAD_DAYS)),
          files.purgeInfected(daysAgo(config.INFECTED_RETENTION_DAYS)),
          webhookLog.purge(daysAgo(config.WEBHOOK_LOG_DAYS)),
        ]);
        const failed = [unattachedUploads, infectedFiles, webhookLogPurged].filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed.length) throw new Error(`retention: ${failed.map((r) => String(r.reason)).join('; ')}`);
        const value = <T>(r: PromiseSettledResult<T>) => (r as PromiseFulfilledResult<T>).value;
        return { unattachedUploads: value(unattachedUploads), infectedFiles: value(infectedFiles), webhookLog: value(webhookLogPurged) };
      },
    };
  },
  scans(core: Core, emitting: Emitting, deps: { queues: OpenQueues; storage: Storage }) {
    const { config, logger } = core;
    return createScanService({
      repo: emitting.files,
      storage: deps.storage,
      jobs: createFileJobs(deps.queues, { scanAttempts: config.SCAN_ATTEMPTS, scanBackoffMs: config.SCAN_BACKOFF_MS }),
      logger,
      antivirus: createAntivirus({ socket: config.CLAMD_SOCKET, host: config.CLAMD_HOST, port: config.CLAMD_PORT }, { timeoutMs: config.SCAN_TIMEOUT_MS }),
      settings: {
        graceMs: config.UPLOAD_GRACE_SECONDS * 1000,
        pollMaxMs: config.UPLOAD_POLL_MAX_INTERVAL_MS,
        clamdStreams: config.SCAN_CONCURRENCY,
        scanAttempts: config.SCAN_ATTEMPTS,
      },
    });
  },

  /** The signature checks, with their pool of verifier threads (closed by `close`). */
  signatures(core: Core, emitting: Emitting, deps: { storage: Storage }) {
    const { config, logger, repos } = core;
    // Trusted lists are in use where they are configured (TRUSTED_LIST_SIGNERS): then chains are
    // checked against the lists imported, and with none imported no list trusts anything.
    const trustedLists = config.TRUSTED_LIST_SIGNERS ? createTrustSource(repos.trust, { refreshMs: config.TRUSTED_LISTS_REFRESH_SECONDS * 1000 }) : undefined;
    const pool = createVerifyPool({
      threads: config.SIGNATURE_CONCURRENCY,
      trustPem: config.SIGNATURE_TRUST_STORE ? readFileSync(config.SIGNATURE_TRUST_STORE, 'utf8') : undefined,
      ...(trustedLists && { trustServices: () => trustedLists.current() }),
    });
    // The verifier refuses larger envelopes anyway; nothing larger is read into memory.
    const service = createSignatureService({
      repo: emitting.files,
      storage: deps.storage,
      verify: pool.verify,
      maxBytes: Math.min(config.MAX_UPLOAD_BYTES, MAX_ENVELOPE_BYTES),
      logger,
    });
    return { service, close: () => pool.close() };
  },

  /** Webhook deliveries, with their sender (closed by `close`). */
  deliveries(core: Core, deps: { resolver?: Resolver }) {
    const { config, logger, repos, secrets } = core;
    const sender = createSender({
      resolver: deps.resolver ?? dnsResolver({ timeoutMs: config.WEBHOOK_DNS_TIMEOUT_MS, servers: config.WEBHOOK_DNS_SERVERS }),
      policy: createAddressPolicy(config.WEBHOOK_ALLOWED_NETWORKS),
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    });
    const service = createDeliveryService({
      repo: repos.webhooks,
      sender,
      secrets,
      logger,
      settings: {
        disableAfterMs: config.WEBHOOK_DISABLE_AFTER_SECONDS * 1000,
        endpointConcurrency: config.WEBHOOK_ENDPOINT_CONCURRENCY,
        // An endpoint answering within half a second on average may have up to half the worker's slots.
        endpointFast: { fastBound: Math.floor(config.WEBHOOK_CONCURRENCY / 2), fastMs: 500 },
        attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
        retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
      },
    });
    return { service, close: () => sender.close() };
  },

  /** The notarizer with its anchor (NOTARIZATION_ANCHOR: the embedded ledger, or an EVM chain) and its lock's own connection. */
  notarizer(core: Core, emitting: Emitting) {
    const { config, logger, db, repos } = core;
    // The RPC URL carries the provider's API key, and ethers puts it in its errors: they are
    // redacted before they reach the job's failure (Bull Board) or a log line.
    const anchor: Anchor =
      config.NOTARIZATION_ANCHOR === 'evm'
        ? redactingProxy(
            createEvmAnchor({
              db,
              provider: evmProvider(config.EVM_RPC_URL as string, config.EVM_CHAIN_ID as number),
              keys: repos.anchorKeys,
              settings: { chainId: config.EVM_CHAIN_ID as number, confirmations: config.EVM_CONFIRMATIONS },
              logger,
            }),
            secretPartsOfUrl(config.EVM_RPC_URL as string),
          )
        : createLedgerAnchor(db);
    // The notarizers' lock lives on a connection of its own, outside the pool the cycle works with.
    const service = createNotarizationService({
      repo: createNotarizationRepository(db, core.ownPool()),
      guarantees: repos.guarantees,
      amendments: createAmendmentRepository(db),
      outbox: emitting.events.outbox,
      anchor,
      sequencer: transparencyLog(core).sequencer,
      batchSize: config.NOTARIZATION_BATCH_SIZE,
      logger,
    });
    return { service, close: async () => anchor.close?.() };
  },
};

const logs = new WeakMap<Core, TransparencyLog>();

export interface TransparencyLog {
  service: LogService;
  sequencer: Sequencer;
  store: TileStore;
}

/**
 * The transparency log of a process (one per core: its notarizer and its log ticks share the
 * sequencer, taking turns), publishing to the log's bucket.
 */
export function transparencyLog(core: Core, opts: { store?: TileStore } = {}): TransparencyLog {
  const known = logs.get(core);
  if (known) return known;
  const { config, logger, db, repos, secrets } = core;
  const repo = createLogRepository(db);
  const sequencer = createSequencer({ repo, leaseMs: config.LOG_LEASE_MS });
  const notarization = createNotarizationRepository(db);
  const audit = createAuditRepository(db);
  const store = opts.store ?? createTileStore(config);
  const service = createLogService({
    repo,
    sequencer,
    store,
    key: () => openLogKey(config, repo, secrets),
    origin: logOrigin(config),
    witnesses: config.LOG_WITNESSES.map((w) => ({ ...w, verifier: parseVerifierKey(w.vkey) })),
    sources: {
      unloggedLeaves: (limit) => notarization.unloggedLeaves(limit),
      setLogIndexes: (leaves, t) => notarization.setLogIndexes(leaves, t),
      auditHeads: () => audit.heads(),
      auditHashes: (heads) => audit.hashesAt(heads),
      keys: () => repos.signingKeys.states(),
    },
    intervalMs: config.LOG_CHECKPOINT_INTERVAL_MS,
    witnessTimeoutMs: config.LOG_WITNESS_TIMEOUT_MS,
    logger,
  });
  const made = { service, sequencer, store };
  logs.set(core, made);
  return made;
}

/** The CLI's services (cli.ts). */

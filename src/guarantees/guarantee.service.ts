// Registering and reading guarantees. Creation needs the database only (no Redis): one
// transaction takes the organization's next sequence number, inserts the record and its docs,
// writes the `guarantee.created` event to the outbox, and records the Idempotency-Key
// response when there is one. Without an Idempotency-Key that transaction is one script, sent
// in one round trip (registerInOneRoundTrip).
import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { ER_DUP_ENTRY, ER_NO_REFERENCED_ROW, mysqlErrno, type Statement } from '../shared/db/sequelize.js';
import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import { idempotencyFingerprint, requestHash, type IdempotencyStore, type StoredResponse } from '../shared/idempotency.js';
import { isUuid } from '../shared/validation.js';
import type { Outbox } from '../shared/events/outbox.js';
import type { FileRepository } from '../files/file.repository.js';
import type { OrgRepository } from '../orgs/org.repository.js';
import { REGISTRATION, uuidAt, type GuaranteeRepository } from './guarantee.repository.js';
import type { CreateGuaranteeV1, CreateGuaranteeV2 } from './guarantee.schemas.js';
import { DOC_GONE, resolveDocs } from './docs.js';
import { AUDIT_SEQ_VAR } from '../audit/audit.sql.js';
import type { AuditRepository } from '../audit/audit.repository.js';
import type { ApiActor } from '../orgs/auth.middleware.js';
import { toV2 } from './guarantee.serializer.js';
import type { GuaranteeRecord, NewGuarantee } from './guarantee.types.js';

/**
 * What a registration's event carries for the values MariaDB fills in under the organization's
 * lock (its id and createdAt): random per process, so that no request can carry one.
 */
const LATE = { id: `late-id-${randomBytes(16).toString('hex')}`, createdAt: `late-at-${randomBytes(16).toString('hex')}` };

/** Files in these states can never be attached: their content is unsafe or unknown. */

/** Turns a validated v1 or v2 body into the domain's normalized form (absent and null alike). */
export function normalize(input: CreateGuaranteeV1 | CreateGuaranteeV2): NewGuarantee {
  const d = input.details ?? {};
  const e = input.economics ?? {};
  return {
    transactionId: (d as { transactionId?: string }).transactionId ?? null,
    details: {
      policyNumber: d.policyNumber ?? null,
      actType: d.actType ?? null,
      checkCode: d.checkCode ?? null,
      emittedAt: d.emittedAt ?? null,
      effectiveAt: d.effectiveAt ?? null,
      expiresAt: d.expiresAt ?? null,
      isFixedExpiry: d.isFixedExpiry ?? null,
      cig: d.cig ?? null,
      batchCode: d.batchCode ?? null,
      beneficiaryFiscalCode: (d as { beneficiaryFiscalCode?: string | null }).beneficiaryFiscalCode ?? null,
    },
    economics: {
      garantedAmount: e.garantedAmount ?? null,
      contractAmount: e.contractAmount ?? null,
      isAutomaticRenewal: e.isAutomaticRenewal ?? null,
    },
    noteShared: input.note?.shared ?? '',
    signEmissionAt: input.sign?.emissionAt ?? null,
    docs: (input.docs ?? []).map((doc) => ({
      type: doc.type ?? null,
      key: doc.key,
      originalFileName: (doc as { originalFileName?: string }).originalFileName ?? null,
    })),
  };
}

/** What a create is identified by: its normalized content (dates as ISO strings). */
function contentHash(g: NewGuarantee): Buffer {
  return requestHash(JSON.parse(JSON.stringify(g)));
}

export interface CreateOptions {
  /** The Idempotency-Key header, when sent, and the endpoint it was sent to. */
  idempotency?: { key: string; scope: string };
  /** Turns the record into the response body that a replay must repeat (v1 or v2 shape). */
  respond: (g: GuaranteeRecord) => unknown;
  /** Who registers it, for the audit trail (absent: no audit row; only a caller that is no API request, a test's, leaves it out). */
  by?: ApiActor;
}

export interface CreateResult {
  status: number;
  body: unknown;
  created: boolean;
}

export function createGuaranteeService(deps: {
  repo: GuaranteeRepository;
  /** The organizations' owner: each organization's registry (its place taken per registration, its size). */
  registry: Pick<OrgRepository, 'takeRegistryPlace' | 'registryPlaceStatements' | 'registrySize'>;
  /** The files' owner: what a document takes from the file its key names. */
  files: Pick<FileRepository, 'forDocs'>;
  idempotency: IdempotencyStore;
  outbox: Outbox;
  /** The audit trail: each registration is a row of its organization's chain, written with it. */
  audit: Pick<AuditRepository, 'append' | 'scriptStatements' | 'healChain'>;
  now?: () => Date;
}) {
  const { repo, registry, files: fileRepo, idempotency, outbox, audit } = deps;
  const now = deps.now ?? (() => new Date());

  /** The existing record for a transactionId when the request repeats it exactly; 409 when it differs. */
  async function existingForTransaction(orgId: string, transactionId: string, hash: Buffer): Promise<GuaranteeRecord | undefined> {
    const existing = await repo.findByTransactionId(orgId, transactionId);
    if (!existing) return undefined;
    if (!existing.requestHash.equals(hash)) {
      throw new ConflictError(`details.transactionId ${JSON.stringify(transactionId)} is already registered with different content.`);
    }
    return existing.record;
  }

  /**
   * A registration in one round trip (REGISTRATION in guarantee.repository.ts): the
   * organization's place, the record, its docs and its `guarantee.created` event in one script,
   * the event's id and createdAt filled in by MariaDB under the lock (LATE marks). The record
   * the response shows is the one written: same id, createdAt and sequence as on the
   * transaction's path, which registrations with an Idempotency-Key take (their stored
   * response is written under the same lock).
   */
  /** The record a registration writes, with the id and createdAt its organization's place gave (or stand-ins, in the script). */
  function newRecord(orgId: string, g: NewGuarantee, checksums: Map<string, string | null>, id: string, createdAt: Date): GuaranteeRecord {
    return {
      ...g,
      id,
      orgId,
      createdAt,
      txHash: null,
      notarizationStatus: 'PENDING',
      notarizationReason: null,
      docs: g.docs.map((d) => ({ ...d, checksum: checksums.get(d.key) ?? null, notarizedAt: null })),
    };
  }

  async function registerInOneRoundTrip(orgId: string, g: NewGuarantee, hash: Buffer, checksums: Map<string, string | null>, by: ApiActor | undefined) {
    const idTail = uuidv7().slice(13);
    const place = registry.registryPlaceStatements(orgId, now(), REGISTRATION.ms, by ? AUDIT_SEQ_VAR : undefined);
    const statements = repo.registrationStatements(place, { ...g, orgId, requestHash: hash, idTail, eventIdTail: uuidv7().slice(13) });
    // Its audit row, in the same script (its place took the organization's row lock and the row's seq).
    if (by)
      statements.push(
        ...audit.scriptStatements(
          {
            orgId,
            actor: by.actor,
            requestId: by.requestId,
            action: 'guarantee.create',
            target: { sql: `CONCAT('guarantee:', ${REGISTRATION.id})` },
            outcome: 'ok',
          },
          { atSql: REGISTRATION.at, isoSql: REGISTRATION.iso },
          REGISTRATION.placed,
        ),
      );
    // The event's id and createdAt are the marks MariaDB replaces: the record's are stand-ins until then.
    const record = newRecord(orgId, g, checksums, '', new Date(0));
    const event = outbox.inScript({
      orgId,
      type: 'guarantee.created',
      data: { ...toV2(record), id: LATE.id, createdAt: LATE.createdAt },
      idSql: REGISTRATION.eventId,
      at: { sql: REGISTRATION.at, iso: { mark: LATE.createdAt, sql: REGISTRATION.iso } },
      late: [{ mark: LATE.id, sql: REGISTRATION.id }],
      whenSql: REGISTRATION.placed,
    });
    statements.push(event.statement);
    const results = await repo.runRegistration(statements);
    // The result of place's first statement: the organization's row, and the createdAt taken.
    const taken = results[statements.indexOf(place[0] as Statement)] as { affectedRows: number; insertId: number };
    if (taken.affectedRows !== 1) throw new NotFoundError('The organization no longer exists.');
    event.committed(results[statements.indexOf(event.statement)]);
    const ms = Number(taken.insertId);
    return { ...record, id: uuidAt(ms, idTail), createdAt: new Date(ms) };
  }

  async function register(orgId: string, g: NewGuarantee, hash: Buffer, opts: CreateOptions, claim?: { key: string; owner: string }): Promise<CreateResult> {
    if (g.transactionId !== null) {
      const existing = await existingForTransaction(orgId, g.transactionId, hash);
      if (existing) return { status: 200, body: opts.respond(existing), created: false };
    }
    const checksums = await resolveDocs(fileRepo, orgId, g.docs);
    try {
      if (!claim) {
        const registered = await registerInOneRoundTrip(orgId, g, hash, checksums, opts.by).catch(async (err: unknown) => {
          // Its audit row collided with one the previous release appended during a rolling
          // release (the organization's head behind its chain): healed, the script runs again.
          if (opts.by && (await audit.healChain(err, orgId))) return registerInOneRoundTrip(orgId, g, hash, checksums, opts.by);
          throw err;
        });
        return { status: 200, body: opts.respond(registered), created: true };
      }
      return await repo.transaction(async (t) => {
        // Under the organization's lock: createdAt strictly follows registration order.
        const place = await registry.takeRegistryPlace(orgId, now(), t);
        if (place === undefined) throw new NotFoundError('The organization no longer exists.');
        const { createdAt } = place;
        const record = newRecord(orgId, g, checksums, uuidv7({ msecs: createdAt.getTime() }), createdAt);
        await repo.insert({ ...record, requestHash: hash }, t);
        if (opts.by) await audit.append({ orgId, ...opts.by, action: 'guarantee.create', target: `guarantee:${record.id}`, outcome: 'ok' }, createdAt, t);
        await outbox.add(t, orgId, 'guarantee.created', toV2(record), createdAt);
        const response: StoredResponse = { status: 200, body: opts.respond(record) };
        await idempotency.complete(orgId, claim.key, claim.owner, response, t);
        return { ...response, created: true };
      });
    } catch (err) {
      if (mysqlErrno(err) === ER_NO_REFERENCED_ROW) throw new ValidationError(DOC_GONE);
      // A concurrent create with the same transactionId won the unique index: answer as a retry.
      if (g.transactionId !== null && mysqlErrno(err) === ER_DUP_ENTRY) {
        const existing = await existingForTransaction(orgId, g.transactionId, hash);
        if (existing) return { status: 200, body: opts.respond(existing), created: false };
      }
      throw err;
    }
  }

  return {
    async create(orgId: string, input: CreateGuaranteeV1 | CreateGuaranteeV2, opts: CreateOptions): Promise<CreateResult> {
      const g = normalize(input);
      const hash = contentHash(g);
      const idem = opts.idempotency;
      if (!idem) return register(orgId, g, hash, opts);
      const guarded = await idempotency.guard(orgId, idem.key, idempotencyFingerprint(idem.scope, hash), async (mine) => {
        const result = await register(orgId, g, hash, opts, mine);
        if (!result.created) await idempotency.complete(orgId, mine.key, mine.owner, result);
        return result;
      });
      return 'replay' in guarded ? { ...guarded.replay, created: false } : guarded.result;
    },

    /** One guarantee of the organization; another organization's answers 404 like a missing one. */
    async get(orgId: string, id: string): Promise<GuaranteeRecord> {
      const record = isUuid(id) ? await repo.findById(orgId, id) : undefined;
      if (!record) throw new NotFoundError(`No guarantee ${id}.`);
      return record;
    },

    /**
     * Page `page` of the organization's guarantees, newest first. Registration numbers are
     * dense (1..total), so the page is the range (total - page*limit, total - (page-1)*limit].
     */
    async list(orgId: string, page: number, limit: number): Promise<{ totalItems: number; guarantees: GuaranteeRecord[] }> {
      const totalItems = await registry.registrySize(orgId);
      const top = totalItems - (page - 1) * limit;
      if (top <= 0) return { totalItems, guarantees: [] };
      return { totalItems, guarantees: await repo.listBySeq(orgId, Math.max(0, top - limit), top) };
    },
  };
}

export type GuaranteeService = ReturnType<typeof createGuaranteeService>;

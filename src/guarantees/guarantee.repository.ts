// Guarantees in MariaDB, through Sequelize's lean form (raw SQL, plain rows): the hot paths
// (create, get, list) are a handful of indexed statements and no per-row model work.
import { createHash, randomBytes } from 'node:crypto';
import { AUDIT_SEQ_VAR } from '../audit/audit.sql.js';
import { execute, script, select, type Sequelize, type Statement, type Transaction } from '../shared/db/sequelize.js';
import { FILE_SQL, attachStatement } from '../files/file.sql.js';
import { ISSUER_SQL, REGISTRY_SQL, type IssuerRow } from '../orgs/org.repository.js';
import { MAX_DOCS } from './guarantee.schemas.js';
import { createNotaryState } from './notary-state.js';
import type { ActType, DocRecord, GuaranteeRecord, NewGuarantee, NotarizationStatus } from './guarantee.types.js';

interface Row {
  id: string;
  org_id: string;
  transaction_id: string | null;
  policy_number: string | null;
  act_type: ActType | null;
  check_code: string | null;
  emitted_at: Date | null;
  effective_at: Date | null;
  expires_at: Date | null;
  is_fixed_expiry: number | null;
  cig: string | null;
  batch_code: string | null;
  beneficiary_fiscal_code: string | null;
  garanted_amount: string | null;
  contract_amount: string | null;
  is_automatic_renewal: number | null;
  note_shared: string;
  sign_emission_at: Date | null;
  tx_hash: string | null;
  notarization_status: NotarizationStatus | null;
  notarization_reason: string | null;
  created_at: Date;
  request_hash: Buffer;
  doc_position: number | null;
  doc_type: ActType | null;
  doc_key: string | null;
  doc_name: string | null;
  doc_notarized_at: Date | null;
  doc_checksum: string | null;
}

const COLUMNS = `g.id, g.org_id, g.transaction_id, g.policy_number, g.act_type, g.check_code, g.emitted_at,
  g.effective_at, g.expires_at, g.is_fixed_expiry, g.cig, g.batch_code, g.beneficiary_fiscal_code, g.garanted_amount, g.contract_amount,
  g.is_automatic_renewal, g.note_shared, g.sign_emission_at, g.tx_hash, g.notarization_status, g.notarization_reason, g.created_at,
  g.request_hash, d.position AS doc_position, d.type AS doc_type, d.file_key AS doc_key,
  d.original_file_name AS doc_name, d.notarized_at AS doc_notarized_at, f.checksum AS doc_checksum`;

/**
 * A guarantee beside another domain's rows (a contracting authority's list of those it took
 * charge of): the join on the guarantee id column `idColumn`, as `alias`, and what such a list
 * shows of it (its issuer's id as org_id, policy_number, cig).
 */
export const GUARANTEE_REF_SQL = {
  join: (alias: string, idColumn: string) => `JOIN guarantees ${alias} ON ${alias}.id = ${idColumn}`,
  columns: (alias: string) => `${alias}.org_id, ${alias}.policy_number, ${alias}.cig`,
  /** The condition that the guarantee carries this CIG (bound at `param`), compared exactly. */
  cigIs: (alias: string, param: string) => `BINARY ${alias}.cig = BINARY ${param}`,
  /** The guarantee's stored fold (guarantee_folds), as `alias`, beside guarantee `g` (none: no amendment yet). */
  foldJoin: (alias: string, g: string) => `LEFT JOIN guarantee_folds ${alias} ON ${alias}.guarantee_id = ${g}.id`,
  /**
   * The condition that guarantee `g`, its fold as `f`, has the status bound at `status` at the
   * instant bound at `at`, every amendment recorded applied (the state's rules in SQL: see
   * amendments.ts stateOf). A guarantee with an amendment dated after `at` is filtered by the
   * status it will have once it applies.
   */
  statusIs: (g: string, f: string, status: string, at: string) => `(CASE
    WHEN ${f}.ended = 'CANCELLED' THEN 'CANCELLED'
    WHEN ${f}.ended = 'RELEASED' THEN 'RELEASED'
    WHEN ${f}.claim_seq IS NOT NULL THEN 'CLAIMED'
    WHEN (CASE WHEN ${f}.guarantee_id IS NULL THEN ${g}.expires_at ELSE ${f}.expires_at END) <= ${at} AND NOT (${g}.is_automatic_renewal <=> 1) THEN 'EXPIRED'
    WHEN ${f}.partially_released = 1 THEN 'PARTIALLY_RELEASED'
    ELSE 'ACTIVE' END) = ${status}`,
} as const;

/** The most guarantees one public verification answers with (the oldest, by id). */
export const MAX_VERIFICATION_MATCHES = 10;

/**
 * The lookup key of a public verification, as MariaDB computes guarantees.verification_key
 * (migration 0011): SHA-256 of the policy number's length in UTF-8 bytes, ':', the policy
 * number and the check code. The column is NULL for a check code under 8 characters, so such
 * codes never match; a code too weak to verify (src/verification/check-code.ts) is sought with a
 * key that matches nothing, so that every miss is the same seek.
 */
export function verificationKey(policyNumber: string, checkCode: string): Buffer {
  return createHash('sha256')
    .update(`${Buffer.byteLength(policyNumber, 'utf8')}:${policyNumber}${checkCode}`, 'utf8')
    .digest();
}

/** A guarantee's rows: one per document (or one without), each with its file's checksum and verdict. */
const FROM = `FROM guarantees g
  LEFT JOIN guarantee_docs d ON d.guarantee_id = g.id
  ${FILE_SQL.ofKey('f', 'd.file_key', 'LEFT JOIN')}`;

const INSERT_COLUMNS = `id, org_id, seq, transaction_id, policy_number, act_type, check_code,
    emitted_at, effective_at, expires_at, is_fixed_expiry, cig, batch_code, garanted_amount, contract_amount,
    is_automatic_renewal, note_shared, sign_emission_at, tx_hash, notarization_status, request_hash, created_at, beneficiary_fiscal_code`;
/** A new row's values: the id and createdAt as given (parameters or session variables), the rest $2..$18 and the beneficiary at `beneficiary`. */
const insertValues = (id: string, createdAt: string, beneficiary: string) =>
  `${id}, $2, ${REGISTRY_SQL.seqOf('$2')}, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, NULL, 'PENDING', $18, ${createdAt}, ${beneficiary}`;

/**
 * A registration as one script (src/shared/db/sequelize.ts script()): START TRANSACTION, the
 * organization's registry place (orgs' registryPlaceStatements, which leave its createdAt in
 * epoch ms in `ms`), the values derived from it here (`at`, `iso`, `id`), the record, its docs,
 * its event, COMMIT, in one round trip. The organization's lock is then held only while
 * MariaDB runs these statements: never across a round trip, nor a turn of a busy event loop
 * (four of each under the lock before, which halved the creates' throughput: docs/benchmarks.md).
 */
export const REGISTRATION = {
  ms: '@reg_ms',
  at: '@reg_at',
  iso: '@reg_iso',
  id: '@reg_id',
  /** The id of its event: a uuidv7 of the same time, so that events follow registrations. */
  eventId: '@reg_event_id',
  /** The condition under which the script writes: the organization's place was taken. */
  placed: '@reg_ms IS NOT NULL',
} as const;

/** A uuidv7 whose 48-bit time is createdAt's milliseconds and whose other bits ('-7xxx-yxxx-xxxxxxxxxxxx', bound at $1) the process drew. */
const UUID_FROM_MS = `CONCAT(SUBSTR(LPAD(LOWER(HEX(@reg_ms)), 12, '0'), 1, 8), '-', SUBSTR(LPAD(LOWER(HEX(@reg_ms)), 12, '0'), 9, 4), $1)`;

/** The values a registration's script derives from @reg_ms, each a statement of its own (within one SET, MariaDB does not promise to read a variable after assigning it). */
const DERIVE_SQL = {
  // The audit row's seq too (AUDIT_SEQ_VAR): its INSERT needs one this script took.
  clear: `SET @reg_ms = NULL, ${AUDIT_SEQ_VAR} = NULL`,
  // Epoch milliseconds as a DATETIME(3) in UTC (the pool's time zone), whatever the session's.
  at: `SET @reg_at = TIMESTAMPADD(MICROSECOND, @reg_ms * 1000, TIMESTAMP'1970-01-01 00:00:00')`,
  iso: `SET @reg_iso = CONCAT(DATE_FORMAT(@reg_at, '%Y-%m-%dT%H:%i:%s.'), LPAD(@reg_ms MOD 1000, 3, '0'), 'Z')`,
  id: `SET @reg_id = ${UUID_FROM_MS}`,
  eventId: `SET @reg_event_id = ${UUID_FROM_MS}`,
} as const;

/** The uuidv7 the script makes of createdAt's milliseconds and the process's `tail` (as UUID_FROM_MS does). */
export function uuidAt(ms: number, tail: string): string {
  const h = ms.toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}${tail}`;
}

/**
 * The statements of the hot paths, with positional bind parameters. Exported so that the API
 * benchmark's raw baseline runs exactly the same SQL.
 */
export const GUARANTEE_SQL = {
  /** The sequence number is the organization's registry count, just advanced under its lock (orgs' takeRegistryPlace). */
  insert: `INSERT INTO guarantees (${INSERT_COLUMNS}) VALUES (${insertValues('$1', '$19', '$20')})`,
  /**
   * The same row in a registration's script (REGISTRATION): its id and createdAt from the
   * script's session variables, written only when the organization's place was taken.
   */
  register: `INSERT INTO guarantees (${INSERT_COLUMNS}) SELECT ${insertValues('@reg_id', '@reg_at', '$19')} FROM DUAL WHERE ${REGISTRATION.placed}`,
  findById: `SELECT ${COLUMNS} ${FROM} WHERE g.id = $1 AND g.org_id = $2 ORDER BY d.position`,
  findByTransactionId: `SELECT ${COLUMNS} ${FROM} WHERE g.org_id = $1 AND g.transaction_id = $2 ORDER BY d.position`,
  listBySeq: `SELECT ${COLUMNS} ${FROM} WHERE g.org_id = $1 AND g.seq > $2 AND g.seq <= $3 ORDER BY g.seq DESC, d.position`,
  /**
   * A public verification: one seek of ix_guarantees_verification_key, the SHA-256 of the
   * exact policy number and check code (migration 0011), NULL for codes under 8 characters;
   * cig and the amount only when given. Every kind of miss is the same seek and at most a row
   * read: the answer's time does not tell them apart. Ordered by id only, the index's own
   * order (the key, then the primary key), to bound the rows at the first MAX_VERIFICATION_MATCHES
   * guarantees' documents without a sort: ordering by other columns made MariaDB build a
   * temporary table and sort it for every lookup, three quarters of the statement's cost
   * (measured); the few rows are ordered in process.
   */
  findForVerification: `SELECT ${COLUMNS}, f.status AS doc_status, f.signature AS doc_signature, ${FILE_SQL.shownPublicly('f')} AS doc_public, ${ISSUER_SQL.columns('o')},
      (SELECT MAX(a.seq) FROM guarantee_amendments a WHERE a.guarantee_id = g.id) AS last_seq
    ${FROM} ${ISSUER_SQL.join('o', 'g.org_id')}
    WHERE g.verification_key = $1
      AND ($2 IS NULL OR BINARY g.cig = BINARY $2) AND ($3 IS NULL OR g.garanted_amount = CAST($3 AS DECIMAL(15,2)))
    ORDER BY g.id LIMIT ${MAX_VERIFICATION_MATCHES * MAX_DOCS}`,
  /** One guarantee as findForVerification reads them, by its id (whoever issued it): the contracting authority's view. */
  findHitById: `SELECT ${COLUMNS}, f.status AS doc_status, f.signature AS doc_signature, ${FILE_SQL.shownPublicly('f')} AS doc_public, ${ISSUER_SQL.columns('o')},
      (SELECT MAX(a.seq) FROM guarantee_amendments a WHERE a.guarantee_id = g.id) AS last_seq
    ${FROM} ${ISSUER_SQL.join('o', 'g.org_id')}
    WHERE g.id = $1 ORDER BY d.position`,
} as const;

/** $2..$18 of GUARANTEE_SQL.insert and .register: a new record's values but its id and createdAt. */
function rowValues(g: NewGuarantee & { orgId: string; requestHash: Buffer }): unknown[] {
  const d = g.details;
  const e = g.economics;
  return [
    g.orgId,
    g.transactionId,
    d.policyNumber,
    d.actType,
    d.checkCode,
    d.emittedAt,
    d.effectiveAt,
    d.expiresAt,
    d.isFixedExpiry,
    d.cig,
    d.batchCode,
    e.garantedAmount,
    e.contractAmount,
    e.isAutomaticRenewal,
    g.noteShared,
    g.signEmissionAt,
    g.requestHash,
  ];
}

/**
 * A registration's script but its event (see REGISTRATION), in order: @reg_ms cleared, the
 * organization's `place` statements (orgs' registryPlaceStatements, which set it), the values
 * derived from it (DERIVE_SQL), the record and its docs, written only when the place was taken. The caller appends the event's statement, which reads the derived values.
 * `idTail` and `eventIdTail` are the ids' parts after their time ('-7xxx-yxxx-xxxxxxxxxxxx').
 * Exported for the API benchmark's raw baseline.
 */
export function registrationStatements(
  place: readonly Statement[],
  g: NewGuarantee & { orgId: string; requestHash: Buffer; idTail: string; eventIdTail: string },
): Statement[] {
  const statements: Statement[] = [
    // Never a value a previous script left on this pooled connection.
    { sql: DERIVE_SQL.clear, bind: [] },
    ...place,
    { sql: DERIVE_SQL.at, bind: [] },
    { sql: DERIVE_SQL.iso, bind: [] },
    { sql: DERIVE_SQL.id, bind: [g.idTail] },
    { sql: DERIVE_SQL.eventId, bind: [g.eventIdTail] },
    { sql: GUARANTEE_SQL.register, bind: [null, ...rowValues(g), g.details.beneficiaryFiscalCode] },
  ];
  if (g.docs.length) {
    // Its documents are attached from now on (their keeping period starts: files' Object Lock).
    // First: the exclusive lock on each file's row is taken before the foreign key's shared one,
    // so two changes naming one file take turns instead of deadlocking on the upgrade.
    statements.push(
      attachStatement(
        g.docs.map((d) => d.key),
        REGISTRATION.at,
        REGISTRATION.placed,
      ),
    );
    const rows = g.docs.map((_, i) => `SELECT @reg_id, $${i * 3 + 1}, $${i * 3 + 2}, $${i * 3 + 3}, ${i} FROM DUAL WHERE ${REGISTRATION.placed}`);
    statements.push({
      sql: `INSERT INTO guarantee_docs (guarantee_id, type, file_key, original_file_name, position) ${rows.join(' UNION ALL ')}`,
      bind: g.docs.flatMap((doc) => [doc.type, doc.key, doc.originalFileName]),
    });
  }
  return statements;
}

const bool = (v: number | null): boolean | null => (v === null ? null : v !== 0);
const num = (v: string | null): number | null => (v === null ? null : Number(v));

function recordOf(r: Row): GuaranteeRecord {
  return {
    id: r.id,
    orgId: r.org_id,
    transactionId: r.transaction_id,
    details: {
      policyNumber: r.policy_number,
      actType: r.act_type,
      checkCode: r.check_code,
      emittedAt: r.emitted_at,
      effectiveAt: r.effective_at,
      expiresAt: r.expires_at,
      isFixedExpiry: bool(r.is_fixed_expiry),
      cig: r.cig,
      batchCode: r.batch_code,
      beneficiaryFiscalCode: r.beneficiary_fiscal_code,
    },
    economics: { garantedAmount: num(r.garanted_amount), contractAmount: num(r.contract_amount), isAutomaticRenewal: bool(r.is_automatic_renewal) },
    noteShared: r.note_shared,
    signEmissionAt: r.sign_emission_at,
    txHash: r.tx_hash,
    notarizationStatus: r.notarization_status,
    notarizationReason: r.notarization_reason,
    createdAt: r.created_at,
    docs: [],
  };
}

function docOf(r: Row): DocRecord {
  return { type: r.doc_type, key: r.doc_key ?? '', originalFileName: r.doc_name, checksum: r.doc_checksum, notarizedAt: r.doc_notarized_at };
}

/** Folds joined rows (one per doc) into records, keeping the rows' order. */
function fold(rows: Row[]): Array<{ record: GuaranteeRecord; requestHash: Buffer }> {
  const out: Array<{ record: GuaranteeRecord; requestHash: Buffer }> = [];
  let current: GuaranteeRecord | undefined;
  for (const r of rows) {
    if (current?.id !== r.id) {
      current = recordOf(r);
      out.push({ record: current, requestHash: r.request_hash });
    }
    if (r.doc_position !== null) current.docs.push(docOf(r));
  }
  return out;
}

/** A guarantee found by a public verification, with its issuer's public identity and its documents' verdicts. */
export interface VerificationHit {
  record: GuaranteeRecord;
  issuer: { orgId: string; name: string; vatNumber: string | null; register: string | null };
  /**
   * Per doc, in the record's order: the file's status, its signature verdict (JSON) when checked,
   * and whether it was uploaded as public (`isDocumentPublic: true`, or through v1, which has no such flag).
   */
  files: Array<{ key: string; status: string | null; signature: string | null; public: boolean }>;
  /** The seq of its last amendment (0 for none): its amendments are read only when it has some. */
  lastSeq: number;
}

interface VerificationRow extends Row, IssuerRow {
  last_seq: number | null;
  doc_status: string | null;
  doc_signature: string | null;
  /** 1 when the public may see it (FILE_SQL.shownPublicly); 0 or NULL (no file) when not. */
  doc_public: number | null;
}

/** Verification rows (one per doc, a record's rows together and in doc order) folded into hits. */
function hitsOf(rows: VerificationRow[]): VerificationHit[] {
  const hits = new Map<string, VerificationHit>();
  for (const { record } of fold(rows))
    hits.set(record.id, { record, issuer: { orgId: record.orgId, name: '', vatNumber: null, register: null }, files: [], lastSeq: 0 });
  // One row per doc (or one without a doc), in the record's doc order: the issuer from any, the verdicts from each.
  for (const r of rows) {
    const hit = hits.get(r.id) as VerificationHit;
    hit.issuer = { orgId: r.org_id, name: r.org_name, vatNumber: r.org_vat, register: r.org_register };
    hit.lastSeq = Number(r.last_seq ?? 0);
    if (r.doc_position !== null) hit.files.push({ key: r.doc_key ?? '', status: r.doc_status, signature: r.doc_signature, public: Number(r.doc_public) === 1 });
  }
  return [...hits.values()];
}

export function createGuaranteeRepository(db: Sequelize) {
  return {
    /** Where each guarantee stands in notarization: notarization moves it through these. */
    notary: createNotaryState(db),

    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction(work);
    },

    /** A registration's statements after its place is taken (see the function). */
    registrationStatements,

    /** Runs a registration's script (see REGISTRATION); each statement's result. */
    async runRegistration(statements: readonly Statement[]): Promise<unknown[]> {
      return script(db, statements, 'registrations');
    },

    /** Inserts under the registry place taken by orgs' takeRegistryPlace, in the same transaction. */
    async insert(g: NewGuarantee & { id: string; orgId: string; createdAt: Date; requestHash: Buffer }, t: Transaction): Promise<void> {
      await execute(db, GUARANTEE_SQL.insert, [g.id, ...rowValues(g), g.createdAt, g.details.beneficiaryFiscalCode], t);
      if (g.docs.length) {
        // The files' rows first (see registrationStatements).
        const attach = attachStatement(
          g.docs.map((d) => d.key),
          g.createdAt,
        );
        await execute(db, attach.sql, attach.bind, t, { prepared: false });
        const values = g.docs.map((_, i) => `($1, $${i * 3 + 2}, $${i * 3 + 3}, $${i * 3 + 4}, ${i})`).join(', ');
        await execute(
          db,
          `INSERT INTO guarantee_docs (guarantee_id, type, file_key, original_file_name, position) VALUES ${values}`,
          [g.id, ...g.docs.flatMap((doc) => [doc.type, doc.key, doc.originalFileName])],
          t,
          { prepared: false },
        );
      }
    },

    async findById(orgId: string, id: string): Promise<GuaranteeRecord | undefined> {
      const rows = await select<Row>(db, GUARANTEE_SQL.findById, [id, orgId]);
      return fold(rows)[0]?.record;
    },

    async findByTransactionId(orgId: string, transactionId: string): Promise<{ record: GuaranteeRecord; requestHash: Buffer } | undefined> {
      const rows = await select<Row>(db, GUARANTEE_SQL.findByTransactionId, [orgId, transactionId]);
      return fold(rows)[0];
    },

    /** The guarantees `ids` (of any organization: for the workers), in id order. */
    async findByIds(ids: readonly string[]): Promise<GuaranteeRecord[]> {
      if (!ids.length) return [];
      const rows = await select<Row>(db, `SELECT ${COLUMNS} ${FROM} WHERE g.id IN ($1) ORDER BY g.id, d.position`, [ids], undefined, {
        prepared: false,
      });
      return fold(rows).map((r) => r.record);
    },

    /**
     * The guarantees, of any organization, that a public verification with these codes finds (at
     * most MAX_VERIFICATION_MATCHES, the oldest). `unmatchable`: the same seek, with a key that
     * finds nothing (a code that may not match, looked up at the same cost as any other).
     */
    async findForVerification(q: {
      policyNumber: string;
      checkCode: string;
      cig: string | null;
      garantedAmount: string | null;
      unmatchable?: boolean;
    }): Promise<VerificationHit[]> {
      const rows = await select<VerificationRow>(db, GUARANTEE_SQL.findForVerification, [
        q.unmatchable ? randomBytes(32) : verificationKey(q.policyNumber, q.checkCode),
        q.cig,
        q.garantedAmount,
      ]);
      // Oldest guarantee first, each one's docs in order (what fold expects: a record's rows together).
      rows.sort(
        (a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0) || (a.doc_position ?? 0) - (b.doc_position ?? 0),
      );
      return hitsOf(rows).slice(0, MAX_VERIFICATION_MATCHES);
    },

    /** The guarantee as a verification finds it, by id, whoever issued it (the authority that took charge of it asks; its caller checks that). */
    async findHitById(id: string): Promise<VerificationHit | undefined> {
      return hitsOf(await select<VerificationRow>(db, GUARANTEE_SQL.findHitById, [id]))[0];
    },

    /**
     * The guarantees whose sequence numbers fall in (fromSeq, toSeq], newest first: a range
     * seek on (org_id, seq), as cheap for the millionth row as for the first.
     */
    async listBySeq(orgId: string, fromSeqExclusive: number, toSeqInclusive: number): Promise<GuaranteeRecord[]> {
      const rows = await select<Row>(db, GUARANTEE_SQL.listBySeq, [orgId, fromSeqExclusive, toSeqInclusive]);
      return fold(rows).map((r) => r.record);
    },
  };
}

export type GuaranteeRepository = ReturnType<typeof createGuaranteeRepository>;

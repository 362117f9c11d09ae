// guarantee_amendments and guarantee_amendment_docs: a guarantee's amendments, appended under
// the guarantee's row lock (so that seq is dense however many race), and read in seq order
// with their documents (each doc's checksum is its file's: files lend the join, FILE_SQL).
// guarantee_folds: the state they fold to, written with each amendment, read instead of them.
import { Transaction as SequelizeTransaction } from 'sequelize';
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import { FILE_SQL, attachStatement } from '../files/file.sql.js';
import {
  foldFrom,
  foldStart,
  stateAfter,
  stateOfFold,
  type Amendment,
  type AmendmentActor,
  type Consent,
  type Decision,
  type Pending,
  type AmendmentDoc,
  type AmendmentType,
  type Folded,
  type FoldedAmendment,
  type GuaranteeState,
  type Issued,
} from './amendments.js';

interface Row {
  id: string;
  guarantee_id: string;
  org_id: string;
  seq: number;
  type: AmendmentType;
  actor: AmendmentActor;
  actor_org_id: string | null;
  amendment_seq: number | null;
  decision: Decision | null;
  consent: Consent | null;
  effective_at: Date;
  expires_at: Date | null;
  garanted_amount: string | null;
  claimed_amount: string | null;
  paid_amount: string | null;
  reason: string | null;
  created_at: Date;
  notarization_status: 'PENDING' | 'COMPLETE';
  tx_hash: string | null;
  notarization_reason: string | null;
  notary_state: string;
}

interface DocRow {
  amendment_id: string;
  type: AmendmentDoc['type'];
  file_key: string;
  original_file_name: string | null;
  checksum: string | null;
}

const COLUMNS = [
  'id',
  'guarantee_id',
  'org_id',
  'seq',
  'type',
  'actor',
  'actor_org_id',
  'amendment_seq',
  'decision',
  'consent',
  'effective_at',
  'expires_at',
  'garanted_amount',
  'claimed_amount',
  'paid_amount',
  'reason',
  'created_at',
  'notarization_status',
  'tx_hash',
  'notarization_reason',
  'notary_state',
]
  .map((c) => `a.${c}`)
  .join(', ');

const num = (v: string | null) => (v === null ? null : Number(v));

/** The fold's pending amendment, as stored (JSON; MariaDB hands it back as text). */
function pendingOf(stored: string | null): Pending | null {
  if (stored === null) return null;
  const p = (typeof stored === 'string' ? JSON.parse(stored) : stored) as Omit<Pending, 'effectiveAt'> & { effectiveAt: string };
  return { ...p, effectiveAt: new Date(p.effectiveAt) };
}

function toAmendment(r: Row, docs: AmendmentDoc[]): Amendment & { orgId: string } {
  return {
    id: r.id,
    orgId: r.org_id,
    guaranteeId: r.guarantee_id,
    seq: Number(r.seq),
    type: r.type,
    actor: r.actor,
    actorOrgId: r.actor_org_id,
    amendmentSeq: r.amendment_seq === null ? null : Number(r.amendment_seq),
    decision: r.decision,
    consent: r.consent,
    effectiveAt: r.effective_at,
    expiresAt: r.expires_at,
    garantedAmount: num(r.garanted_amount),
    claimedAmount: num(r.claimed_amount),
    paidAmount: num(r.paid_amount),
    reason: r.reason,
    docs,
    createdAt: r.created_at,
    notarizationStatus: r.notarization_status,
    txHash: r.tx_hash,
    notarizationReason: r.notary_state === 'blocked' ? r.notarization_reason : null,
  };
}

/** An amendment's row as the fold reads it. */
const toFolded = (
  r: Pick<
    Row,
    | 'seq'
    | 'type'
    | 'actor'
    | 'actor_org_id'
    | 'amendment_seq'
    | 'decision'
    | 'consent'
    | 'effective_at'
    | 'expires_at'
    | 'garanted_amount'
    | 'claimed_amount'
    | 'paid_amount'
  >,
): FoldedAmendment => ({
  seq: Number(r.seq),
  type: r.type,
  effectiveAt: r.effective_at,
  expiresAt: r.expires_at,
  garantedAmount: num(r.garanted_amount),
  claimedAmount: num(r.claimed_amount),
  paidAmount: num(r.paid_amount),
  actor: r.actor,
  actorOrgId: r.actor_org_id,
  amendmentSeq: r.amendment_seq === null ? null : Number(r.amendment_seq),
  decision: r.decision,
  consent: r.consent,
});

interface IssuedRow {
  garanted_amount: string | null;
  expires_at: Date | null;
  is_automatic_renewal: number | null;
}

const toIssued = (r: IssuedRow): Issued => ({
  garantedAmount: num(r.garanted_amount),
  expiresAt: r.expires_at,
  isAutomaticRenewal: r.is_automatic_renewal === null ? null : r.is_automatic_renewal === 1,
});

const ISSUED_SQL = 'SELECT garanted_amount, expires_at, is_automatic_renewal FROM guarantees WHERE id = $1 AND org_id = $2';

const TEXT = { prepared: false } as const;

/** Amendments read per statement when a fold is brought up to date (see `current`). */
const HEAL_BATCH = 1000;

interface FoldRow {
  garanted_amount: string | null;
  expires_at: Date | null;
  claim_seq: number | null;
  claimed_amount: string | null;
  claim_effective_at: Date | null;
  ended: 'RELEASED' | 'CANCELLED' | null;
  partially_released: number;
  beneficiary_id: string | null;
  pending: string | null;
  last_seq: number;
}

/** A guarantee's registration, its stored fold if any (fold_seq null: none) and its last amendment's seq (null: none). */
type CurrentRow = IssuedRow & { [K in keyof FoldRow as `fold_${K}`]: FoldRow[K] | null } & { last_seq: number | null; latest_effective_at: Date | null };

// The last seq by the unique key (guarantee_id, seq), the latest effectiveAt by (guarantee_id,
// effective_at): one index entry read each, as many amendments as it has.
const CURRENT_SQL = `SELECT g.garanted_amount, g.expires_at, g.is_automatic_renewal,
  f.garanted_amount AS fold_garanted_amount, f.expires_at AS fold_expires_at, f.claim_seq AS fold_claim_seq, f.claimed_amount AS fold_claimed_amount,
  f.claim_effective_at AS fold_claim_effective_at, f.ended AS fold_ended, f.partially_released AS fold_partially_released, f.beneficiary_id AS fold_beneficiary_id, f.pending AS fold_pending, f.last_seq AS fold_last_seq,
  (SELECT MAX(a.seq) FROM guarantee_amendments a WHERE a.guarantee_id = g.id) AS last_seq,
  (SELECT MAX(a.effective_at) FROM guarantee_amendments a WHERE a.guarantee_id = g.id) AS latest_effective_at
  FROM guarantees g LEFT JOIN guarantee_folds f ON f.guarantee_id = g.id`;
const CURRENT_OF_ONE = `${CURRENT_SQL} WHERE g.id = $1`;

function storedFold(r: CurrentRow): Folded | undefined {
  if (r.fold_last_seq === null) return undefined;
  return {
    garantedAmount: num(r.fold_garanted_amount),
    expiresAt: r.fold_expires_at,
    openClaim:
      r.fold_claim_seq === null
        ? null
        : { seq: Number(r.fold_claim_seq), claimedAmount: Number(r.fold_claimed_amount), effectiveAt: r.fold_claim_effective_at as Date },
    ended: r.fold_ended,
    partiallyReleased: r.fold_partially_released === 1,
    beneficiary: r.fold_beneficiary_id,
    pending: pendingOf(r.fold_pending),
    lastSeq: Number(r.fold_last_seq),
  };
}

/** What a guarantee covers, folded: its registration, and the fold after its last amendment. */
export interface Current {
  issued: Issued;
  fold: Folded;
  /** The latest effectiveAt of its amendments (null: none): from then on the fold is its state (stateOfFold). */
  latestEffectiveAt: Date | null;
}

const FOLDED_COLUMNS =
  'seq, type, actor, actor_org_id, amendment_seq, decision, consent, effective_at, expires_at, garanted_amount, claimed_amount, paid_amount';

export function createAmendmentRepository(db: Sequelize) {
  /** Amendments matching `where` (on alias a), by guarantee and seq, each with its documents. */
  async function read(where: string, params: unknown[], t?: Transaction, opts?: typeof TEXT): Promise<(Amendment & { orgId: string })[]> {
    const rows = await select<Row>(db, `SELECT ${COLUMNS} FROM guarantee_amendments a WHERE ${where} ORDER BY a.guarantee_id, a.seq`, params, t, opts);
    return withDocs(rows, where, params, t, opts);
  }

  /** `rows` with their documents, read by `where` (which must match the amendments of `rows`, and may match more). */
  async function withDocs(rows: Row[], where: string, params: unknown[], t?: Transaction, opts?: typeof TEXT): Promise<(Amendment & { orgId: string })[]> {
    if (!rows.length) return [];
    const docs = await select<DocRow>(
      db,
      // A hashed amendment shows the checksums it was hashed with (pinned by the notarizer); a waiting one, its files'.
      `SELECT d.amendment_id, d.type, d.file_key, d.original_file_name, CASE WHEN a.notary_state = 'waiting' THEN f.checksum ELSE d.checksum END AS checksum
      FROM guarantee_amendments a
      JOIN guarantee_amendment_docs d ON d.amendment_id = a.id ${FILE_SQL.ofKey('f', 'd.file_key', 'LEFT JOIN')}
      WHERE ${where} ORDER BY d.amendment_id, d.position`,
      params,
      t,
      opts,
    );
    const byAmendment = new Map<string, AmendmentDoc[]>();
    for (const d of docs) {
      const list = byAmendment.get(d.amendment_id) ?? [];
      list.push({ type: d.type, key: d.file_key, originalFileName: d.original_file_name, checksum: d.checksum });
      byAmendment.set(d.amendment_id, list);
    }
    return rows.map((r) => toAmendment(r, byAmendment.get(r.id) ?? []));
  }

  /**
   * The guarantee's registration and its fold now (`orgId`: only the organization's; undefined
   * if there is no such guarantee): the stored fold when it is current, one statement. One
   * behind the last amendment (the previous release recorded those during a rolling release,
   * or none is stored yet) is folded on with the amendments it lacks, read in batches; the
   * caller that holds the guarantee's lock writes it back (`saveFold`).
   */
  async function current(guaranteeId: string, opts: { orgId?: string; t?: Transaction } = {}): Promise<Current | undefined> {
    const [row] = await select<CurrentRow>(
      db,
      opts.orgId === undefined ? CURRENT_OF_ONE : `${CURRENT_OF_ONE} AND g.org_id = $2`,
      opts.orgId === undefined ? [guaranteeId] : [guaranteeId, opts.orgId],
      opts.t,
    );
    if (!row) return undefined;
    const issued = toIssued(row);
    let fold = storedFold(row) ?? foldStart(issued);
    const lastSeq = Number(row.last_seq ?? 0);
    while (fold.lastSeq < lastSeq) fold = foldFrom(fold, await foldedBatch(guaranteeId, fold.lastSeq, lastSeq, opts.t));
    return { issued, fold, latestEffectiveAt: row.latest_effective_at };
  }

  /** At most HEAL_BATCH of the guarantee's amendments after seq `after` and up to `last`, as the fold reads them. */
  async function foldedBatch(guaranteeId: string, after: number, last: number, t?: Transaction): Promise<FoldedAmendment[]> {
    const rows = await select<Row>(
      db,
      `SELECT ${FOLDED_COLUMNS} FROM guarantee_amendments WHERE guarantee_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`,
      [guaranteeId, after, Math.min(last, after + HEAL_BATCH)],
      t,
    );
    return rows.map(toFolded);
  }

  /**
   * What the guarantee `c` is the current fold of covers at `at`: its stored fold once every
   * amendment applies (one row read before); while one is dated later, its amendments are
   * read and folded as of `at` (stateAfter), the later ones listed as scheduled.
   */
  async function stateAt(guaranteeId: string, c: Current, at: Date, t?: Transaction): Promise<GuaranteeState> {
    if (c.latestEffectiveAt === null || c.latestEffectiveAt <= at) return stateOfFold(c.fold, c.issued, at);
    const amendments: FoldedAmendment[] = [];
    while (amendments.length < c.fold.lastSeq) amendments.push(...(await foldedBatch(guaranteeId, amendments.length, c.fold.lastSeq, t)));
    return stateAfter(c.issued, amendments, at);
  }

  return {
    /**
     * At READ COMMITTED: the lock on the guarantee's row serializes its amendments, and every
     * read after it sees the amendment committed just before (under REPEATABLE READ that held
     * only while no plain read came before the lock); no gap locks on the guarantees' index.
     */
    transaction<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
      return db.transaction({ isolationLevel: SequelizeTransaction.ISOLATION_LEVELS.READ_COMMITTED }, work);
    },

    /** What the organization's guarantee was registered with, its row locked until `t` ends; undefined if it has no such guarantee. */
    async lockIssued(orgId: string, guaranteeId: string, t: Transaction): Promise<Issued | undefined> {
      const [row] = await select<IssuedRow>(db, `${ISSUED_SQL} FOR UPDATE`, [guaranteeId, orgId], t);
      return row && toIssued(row);
    },

    /** The same, unlocked. */
    async issued(orgId: string, guaranteeId: string): Promise<Issued | undefined> {
      const [row] = await select<IssuedRow>(db, ISSUED_SQL, [guaranteeId, orgId]);
      return row && toIssued(row);
    },

    /** The guarantee's amendments, oldest first (all of them: a page of them is `page`). */
    async list(guaranteeId: string, t?: Transaction): Promise<Amendment[]> {
      return read('a.guarantee_id = $1', [guaranteeId], t);
    },

    /** At most `limit` of the guarantee's amendments after seq `after`, oldest first; `more` when others follow them. */
    async page(guaranteeId: string, after: number, limit: number): Promise<{ amendments: Amendment[]; more: boolean }> {
      // A range of the unique key (seq is dense: no LIMIT needed), one more than asked to tell the end
      // without another statement (its documents are not read).
      const rows = await select<Row>(
        db,
        `SELECT ${COLUMNS} FROM guarantee_amendments a WHERE a.guarantee_id = $1 AND a.seq > $2 AND a.seq <= $3 ORDER BY a.seq`,
        [guaranteeId, after, after + limit + 1],
      );
      const page = rows.slice(0, limit);
      const last = Number(page.at(-1)?.seq ?? after);
      return { amendments: await withDocs(page, 'a.guarantee_id = $1 AND a.seq > $2 AND a.seq <= $3', [guaranteeId, after, last]), more: rows.length > limit };
    },

    current,
    stateAt,

    /**
     * What the guarantee covers at `at`, from its fold (undefined if there is no such
     * guarantee): as stateAfter over all its amendments, reading one row when the fold is
     * current and every amendment applies.
     */
    async stateOf(guaranteeId: string, at: Date): Promise<GuaranteeState | undefined> {
      const c = await current(guaranteeId);
      return c && stateAt(guaranteeId, c, at);
    },

    /**
     * What each of these guarantees covers at `at` (a list's page): their folds in one
     * statement; one behind its last amendment (a rolling release) is brought up to date as
     * `current` does, and one with an amendment dated after `at` is folded as of `at` as
     * `stateAt` does. Absent ids have no entry.
     */
    async statesOf(guaranteeIds: readonly string[], at: Date): Promise<Map<string, GuaranteeState>> {
      const states = new Map<string, GuaranteeState>();
      if (!guaranteeIds.length) return states;
      const rows = await select<CurrentRow & { id: string }>(
        db,
        `SELECT g.id, ${CURRENT_SQL.slice('SELECT '.length)} WHERE g.id IN ($1)`,
        [guaranteeIds],
        undefined,
        {
          prepared: false,
        },
      );
      for (const row of rows) {
        const stored = storedFold(row);
        const fold = row.last_seq === null ? foldStart(toIssued(row)) : stored?.lastSeq === Number(row.last_seq) ? stored : undefined;
        const c = fold ? { issued: toIssued(row), fold, latestEffectiveAt: row.latest_effective_at } : await current(row.id);
        if (c) states.set(row.id, await stateAt(row.id, c, at));
      }
      return states;
    },

    /** Stores the guarantee's fold, in `t`, which holds the guarantee's row lock (as every writer of its amendments does). */
    async saveFold(guaranteeId: string, f: Folded, t: Transaction): Promise<void> {
      const amount = (n: number | null) => (n === null ? null : n.toFixed(2));
      await execute(
        db,
        `INSERT INTO guarantee_folds (guarantee_id, garanted_amount, expires_at, claim_seq, claimed_amount, claim_effective_at, ended, partially_released, last_seq, beneficiary_id, pending)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON DUPLICATE KEY UPDATE garanted_amount = VALUES(garanted_amount), expires_at = VALUES(expires_at), claim_seq = VALUES(claim_seq),
          claimed_amount = VALUES(claimed_amount), claim_effective_at = VALUES(claim_effective_at), ended = VALUES(ended),
          partially_released = VALUES(partially_released), last_seq = VALUES(last_seq), beneficiary_id = VALUES(beneficiary_id), pending = VALUES(pending)`,
        [
          guaranteeId,
          amount(f.garantedAmount),
          f.expiresAt,
          f.openClaim?.seq ?? null,
          amount(f.openClaim?.claimedAmount ?? null),
          f.openClaim?.effectiveAt ?? null,
          f.ended,
          f.partiallyReleased ? 1 : 0,
          f.lastSeq,
          f.beneficiary,
          f.pending && JSON.stringify({ ...f.pending, effectiveAt: f.pending.effectiveAt.toISOString() }),
        ],
        t,
      );
    },

    /** Records the authority's answer on the amendment that waited for it, in `t` (which holds the guarantee's row lock). */
    async setConsent(guaranteeId: string, seq: number, consent: 'ACCEPTED' | 'REFUSED', t: Transaction): Promise<void> {
      await execute(
        db,
        `UPDATE guarantee_amendments SET consent = $3 WHERE guarantee_id = $1 AND seq = $2 AND consent = 'PENDING'`,
        [guaranteeId, seq, consent],
        t,
      );
    },

    /** The guarantee's amendment `seq`, if it has one. */
    async bySeq(guaranteeId: string, seq: number): Promise<Amendment | undefined> {
      return (await read('a.guarantee_id = $1 AND a.seq = $2', [guaranteeId, seq]))[0];
    },

    /** The amendments of these ids, by guarantee and seq (the notarizer's). */
    async findByIds(ids: readonly string[]): Promise<(Amendment & { orgId: string })[]> {
      return ids.length ? read('a.id IN ($1)', [ids], undefined, TEXT) : [];
    },

    async insert(orgId: string, a: Amendment, t: Transaction): Promise<void> {
      await execute(
        db,
        `INSERT INTO guarantee_amendments (id, guarantee_id, org_id, seq, type, effective_at, expires_at, garanted_amount, claimed_amount, paid_amount, reason, created_at,
          actor, actor_org_id, amendment_seq, decision, consent)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
        [
          a.id,
          a.guaranteeId,
          orgId,
          a.seq,
          a.type,
          a.effectiveAt,
          a.expiresAt,
          a.garantedAmount,
          a.claimedAmount,
          a.paidAmount,
          a.reason,
          a.createdAt,
          a.actor,
          a.actorOrgId,
          a.amendmentSeq ?? null,
          a.decision ?? null,
          a.consent ?? null,
        ],
        t,
      );
      if (a.docs.length) {
        // The files' rows first: the exclusive lock before the foreign key's shared one (see guarantee.repository.ts).
        const attach = attachStatement(
          a.docs.map((d) => d.key),
          a.createdAt,
        );
        await execute(db, attach.sql, attach.bind, t, { prepared: false });
        await execute(
          db,
          'INSERT INTO guarantee_amendment_docs (amendment_id, position, type, file_key, original_file_name) VALUES $1',
          [a.docs.map((d, i) => [a.id, i, d.type, d.key, d.originalFileName])],
          t,
          { prepared: false },
        );
      }
    },
  };
}

export type AmendmentRepository = ReturnType<typeof createAmendmentRepository>;

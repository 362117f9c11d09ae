// The notarization worker's logic. One cycle, run by one process at a time: the transparency
// log's sequencer lease (src/log/sequencer.ts, a replicated row), and the database lock that the
// previous release's workers take (during a rolling release the two kinds of workers exclude
// each other through it):
//   1. finish what a previous cycle left: sealed batches are submitted to the anchor (which is
//      idempotent per batch, so a batch anchored but not recorded is found, not anchored again),
//      submitted ones are recorded once the anchor says they are final;
//   2. block, for ever, the waiting records whose doc ended Infected or Error
//      (`guarantee.notarization_blocked`);
//   3. batch the waiting records whose docs are all Clean or Signed: digests (canonical.ts),
//      a Merkle tree, the batch and every proof sealed in one transaction with the leaves
//      appended to the transparency log (fenced by the lease's token), the root anchored,
//      then every record COMPLETE with the txHash, its docs notarizedAt, and
//      `guarantee.notarized`, in one transaction. Repeated while full batches remain.
//      The room a batch has left takes amendments, each a link of its guarantee's chain: its
//      digest covers its canonical form, its guarantee's sealed digest and the previous
//      amendment's digest (docs/api.md "A guarantee's life"). An amendment follows its guarantee (it
//      waits until the guarantee is sealed) and the one before it (in the same batch or an
//      earlier one); one whose doc ended Infected or Error, or whose guarantee is blocked,
//      is blocked for ever, the first keeping its digest as the next one's link.
import type { AmendmentRepository } from '../guarantees/amendment.repository.js';
import { toAmendmentView } from '../guarantees/amendment.serializer.js';
import type { Amendment } from '../guarantees/amendments.js';
import type { GuaranteeRepository } from '../guarantees/guarantee.repository.js';
import { toV2 } from '../guarantees/guarantee.serializer.js';
import type { GuaranteeRecord } from '../guarantees/guarantee.types.js';
import { retryDeadlock } from '../shared/db/sequelize.js';
import type { Logger } from '../shared/logger.js';
import type { Outbox } from '../shared/events/outbox.js';
import { entryBytes } from '../log/entries.js';
import type { Fence, Sequencer } from '../log/sequencer.js';
import type { Anchor, BatchToAnchor, Submission } from './anchor.js';
import { AMENDMENT_CANONICAL_SCHEMA, CANONICAL_SCHEMA, amendmentDigest, guaranteeDigest } from './canonical.js';
import { buildTree } from './merkle.js';
import type { AmendmentProofRow, BatchRow, NotarizationRepository, SealedAmendmentProof } from './notarization.repository.js';
import {
  amendmentProof,
  notarizationProof,
  type AmendmentProof,
  type LogInclusion,
  type NotarizationProof,
  type PendingAmendmentProof,
  type PendingProof,
} from './proof.js';

/** The database lock that makes one notarizer at a time (anchors and ledgers append in order). */
export const NOTARY_LOCK = 'guarantee_registry_notary';

/** Batches sealed per cycle at most: a backlog is worked off over several cycles, none of them endless. */
export const MAX_BATCHES_PER_CYCLE = 50;

/** Why an amendment of a blocked guarantee is blocked. */
export const GUARANTEE_BLOCKED_REASON = 'The guarantee it amends will never be notarized: neither will its amendments.';

/** An amendment ready to be sealed as a leaf, with the links its digest covers. */
interface AmendmentLeaf {
  amendment: Amendment & { orgId: string };
  digest: string;
  guaranteeDigest: string;
  previousDigest: string | null;
}

/** A batch's members: its records, then its amendments (leaf order). */
interface Members {
  records: GuaranteeRecord[];
  amendments: (Amendment & { orgId: string })[];
}

/** A record of the batch being sealed was no longer waiting: the seal rolls back. */
const NOT_WAITING = new Error('a guarantee of the batch is no longer waiting');

export interface CycleResult {
  blocked: number;
  batches: number;
  notarized: number;
  pending: number;
}

export function createNotarizationService(deps: {
  repo: NotarizationRepository;
  /** The guarantees' owner: their records, and where each stands in notarization (which only it writes). */
  guarantees: Pick<GuaranteeRepository, 'findByIds' | 'notary'>;
  /** The amendments' reads (their rows' notary state is moved through `guarantees.notary`). */
  amendments: Pick<AmendmentRepository, 'findByIds'>;
  outbox: Outbox;
  anchor: Anchor;
  /** The transparency log's sequencer: a cycle runs holding its lease, and appends its leaves fenced by it. */
  sequencer: Sequencer;
  batchSize: number;
  logger: Logger;
  now?: () => Date;
}) {
  const { repo, guarantees, amendments, outbox, anchor, sequencer, batchSize, logger } = deps;
  const { notary } = guarantees;
  const now = deps.now ?? (() => new Date());

  /** Throws unless this process still holds the notarizers' lock (its connection may have been killed). */
  async function stillExclusive(held: () => Promise<boolean>): Promise<void> {
    if (!(await held()))
      throw new Error("lost the notarization lock or the log's lease mid-cycle (its database connection was closed, or another process took over): stopping");
  }

  /**
   * Submits a batch and records it final when the anchor says so; how many leaves it
   * completed (0 while not final). `members`: the batch's records and amendments when the
   * caller has them (a batch just sealed); otherwise they are read back.
   */
  async function anchorBatch(batch: BatchToAnchor, held: () => Promise<boolean>, submitted?: Submission, members?: Members): Promise<number> {
    let submission = submitted;
    if (!submission) {
      await stillExclusive(held);
      submission = await anchor.submit(batch);
      await repo.markSubmitted(batch.id, submission);
    }
    const receipt = await anchor.confirm(batch, submission);
    if (!receipt) return 0;
    const { records, amendments: changes } = members ?? {
      records: await guarantees.findByIds(await repo.members(batch.id)),
      amendments: await amendments.findByIds(await repo.amendmentMembers(batch.id)),
    };
    // The batch's members marked done in one transaction, retried when InnoDB breaks a deadlock
    // with it (it touches every member's rows; a registration or an amendment writing beside
    // them can be the other side): each step is conditional on the state it leaves.
    const completed = await retryDeadlock(() =>
      repo.transaction(async (t) => {
        if (!(await repo.complete(batch.id, receipt, t))) return false;
        await notary.markDone(
          records.map((g) => g.id),
          receipt.txHash,
          receipt.anchoredAt,
          t,
        );
        await outbox.addMany(
          t,
          'guarantee.notarized',
          records.map((g) => ({
            orgId: g.orgId,
            data: toV2({ ...g, txHash: receipt.txHash, notarizationStatus: 'COMPLETE', docs: g.docs.map((d) => ({ ...d, notarizedAt: receipt.anchoredAt })) }),
          })),
          receipt.anchoredAt,
        );
        if (changes.length) {
          await notary.markAmendmentsDone(
            changes.map((a) => a.id),
            receipt.txHash,
            t,
          );
          await outbox.addMany(
            t,
            'guarantee.amendment_notarized',
            changes.map((a) => ({ orgId: a.orgId, data: toAmendmentView({ ...a, notarizationStatus: 'COMPLETE', txHash: receipt.txHash }) })),
            receipt.anchoredAt,
          );
        }
        return true;
      }),
    );
    if (!completed) return 0;
    logger.info({ batch: batch.id, records: records.length, amendments: changes.length, anchor: anchor.kind, txHash: receipt.txHash }, 'batch notarized');
    return records.length + changes.length;
  }

  /**
   * The next links of the chains, up to `room`: amendments to seal, their digests computed;
   * the ones to block are blocked on the way (each before the next link needs its digest).
   */
  async function chainAmendments(room: number, result: CycleResult): Promise<AmendmentLeaf[]> {
    if (room <= 0) return [];
    const candidates = await notary.amendmentCandidates(room);
    if (!candidates.length) return [];
    const byId = new Map((await amendments.findByIds(candidates.map((c) => c.id))).map((a) => [a.id, a]));
    const sealed = await repo.guaranteeDigests([...new Set(candidates.filter((c) => c.guaranteeState !== 'blocked').map((c) => c.guaranteeId))]);
    const leaves: AmendmentLeaf[] = [];
    /** The last link computed in this pass, per guarantee. */
    const heads = new Map<string, { seq: number; digest: string }>();
    /** Guarantees whose chain cannot go on in this pass. */
    const stopped = new Set<string>();
    const block = async (id: string, reason: string, hashed: { digest: string; checksums: (string | null)[] } | null) => {
      if (await notary.blockAmendment(id, reason, hashed)) {
        result.blocked++;
        logger.info({ amendment: id, reason }, 'amendment notarization blocked');
      }
    };
    for (const c of candidates) {
      const amendment = byId.get(c.id);
      if (stopped.has(c.guaranteeId) || !amendment) {
        stopped.add(c.guaranteeId);
        continue;
      }
      if (c.guaranteeState === 'blocked') {
        await block(c.id, GUARANTEE_BLOCKED_REASON, null);
        continue;
      }
      const guaranteeDigest = sealed.get(c.guaranteeId);
      const head = heads.get(c.guaranteeId);
      const previousDigest =
        c.seq === 1 ? null : head?.seq === c.seq - 1 ? head.digest : c.previous && c.previous.state !== 'waiting' ? c.previous.digest : undefined;
      if (guaranteeDigest === undefined || previousDigest === undefined || (c.seq > 1 && previousDigest === null)) {
        stopped.add(c.guaranteeId);
        continue;
      }
      const digest = amendmentDigest(toAmendmentView(amendment), { guaranteeDigest, previousDigest });
      heads.set(c.guaranteeId, { seq: c.seq, digest });
      // The checksums hashed are pinned with the digest: a file judged again later changes nothing of a hashed amendment.
      const checksums = amendment.docs.map((d) => d.checksum);
      if (c.rejectedDoc) await block(c.id, `Doc ${c.rejectedDoc.key} is ${c.rejectedDoc.status}: the amendment will not be notarized.`, { digest, checksums });
      else leaves.push({ amendment, digest, guaranteeDigest, previousDigest });
    }
    return leaves;
  }

  /**
   * Finishes the batches earlier cycles left. A batch that fails (the anchor refuses it, the
   * node is away) does not stop the others; its error is returned, for the cycle to report
   * once the rest of its work is done.
   */
  async function resume(result: CycleResult, held: () => Promise<boolean>): Promise<Error[]> {
    const errors: Error[] = [];
    for (const b of await repo.unfinished()) {
      const batch = { id: b.id, root: b.root, size: b.size };
      if (b.anchorKind !== anchor.kind) {
        logger.warn({ batch: b.id, kind: b.anchorKind, anchor: anchor.kind }, 'a batch of another anchor kind waits for a worker with that anchor');
        continue;
      }
      const submitted = b.state === 'submitted' && b.txHash && b.receipt ? { txHash: b.txHash, receipt: b.receipt } : undefined;
      try {
        const n = await anchorBatch(batch, held, submitted);
        if (n) result.notarized += n;
        else result.pending++;
      } catch (err) {
        logger.error({ batch: b.id, err: (err as Error).message }, 'a notarization batch could not be finished');
        errors.push(new Error(`batch ${b.id}: ${(err as Error).message}`));
      }
    }
    return errors;
  }

  /**
   * Amendments still batched in a batch already anchored: what a worker of the release before
   * amendments were notarized leaves when it finishes a batch sealed by this one (it marks only
   * the records done). Each is marked done with its batch's txHash and announced, as if its
   * batch had just been recorded; normally there are none.
   */
  async function healAmendments(result: CycleResult): Promise<void> {
    const anchored = await repo.anchoredAmendments(await notary.batchedAmendments(1000));
    if (!anchored.size) return;
    for (const a of await amendments.findByIds([...anchored.keys()])) {
      const batch = anchored.get(a.id);
      if (!batch) continue;
      const done = await repo.transaction(async (t) => {
        if ((await notary.markAmendmentsDone([a.id], batch.txHash, t)) !== 1) return false;
        await outbox.add(
          t,
          a.orgId,
          'guarantee.amendment_notarized',
          toAmendmentView({ ...a, notarizationStatus: 'COMPLETE', txHash: batch.txHash }),
          batch.anchoredAt,
        );
        return true;
      });
      if (done) result.notarized++;
    }
    logger.warn({ amendments: anchored.size }, 'amendments of batches anchored by another release marked done');
  }

  async function blockSettled(result: CycleResult): Promise<void> {
    for (;;) {
      const { found, full } = await notary.blocked(500);
      const before = result.blocked;
      for (const b of found) {
        const reason = `Doc ${b.key} is ${b.status}: the record will not be notarized.`;
        const [record] = await guarantees.findByIds([b.id]);
        if (!record) continue;
        const blocked = await repo.transaction(async (t) => {
          if (!(await notary.block(b.id, reason, t))) return false;
          await outbox.add(t, b.orgId, 'guarantee.notarization_blocked', toV2({ ...record, notarizationReason: reason }), now());
          return true;
        });
        if (blocked) {
          result.blocked++;
          logger.info({ guarantee: b.id, reason }, 'notarization blocked');
        }
      }
      // A full page blocked nothing (each was blocked meanwhile by someone else): no progress to make.
      if (!full || result.blocked === before) return;
    }
  }

  /** Seals and anchors one batch of eligible records and amendments; how many leaves it took. */
  async function batchOnce(result: CycleResult, held: () => Promise<boolean>, fence: Fence): Promise<number> {
    const ids = await notary.eligible(batchSize);
    const records = ids.length ? await guarantees.findByIds(ids) : [];
    const links = await chainAmendments(batchSize - records.length, result);
    if (!records.length && !links.length) return 0;
    const digests = [...records.map((g) => guaranteeDigest(toV2(g))), ...links.map((l) => l.digest)];
    const { root, paths } = buildTree(digests);
    await stillExclusive(held);
    const entries = digests.map((digest, i) => entryBytes({ kind: i < records.length ? 'record' : 'amendment', digest }));
    // One transaction: the records and amendments move from waiting to batched, their leaves are
    // appended to the log (or, the lease lost, nothing is) and the batch is written, or (one of
    // them blocked meanwhile) none of it.
    const batchId = await repo
      .transaction(async (t) => {
        const first = await fence.append(entries, t);
        const proofs = records.map((g, i) => ({ guaranteeId: g.id, leafIndex: i, digest: digests[i] as string, path: paths[i] ?? [], logIndex: first + i }));
        const amendmentProofs: SealedAmendmentProof[] = links.map((l, j) => ({
          amendmentId: l.amendment.id,
          leafIndex: records.length + j,
          digest: l.digest,
          guaranteeDigest: l.guaranteeDigest,
          previousDigest: l.previousDigest,
          path: paths[records.length + j] ?? [],
          logIndex: first + records.length + j,
        }));
        if (
          (await notary.markBatched(
            records.map((g) => g.id),
            t,
          )) !== records.length
        )
          throw NOT_WAITING;
        if (
          (await notary.markAmendmentsBatched(
            links.map((l) => ({ id: l.amendment.id, digest: l.digest, checksums: l.amendment.docs.map((d) => d.checksum) })),
            t,
          )) !== links.length
        )
          throw NOT_WAITING;
        return repo.insertBatch(anchor.kind, root, proofs, now(), t, amendmentProofs);
      })
      .catch((err: unknown) => {
        if (err === NOT_WAITING) return undefined;
        throw err;
      });
    if (batchId === undefined) return 0;
    result.batches++;
    const size = records.length + links.length;
    const n = await anchorBatch({ id: batchId, root, size }, held, undefined, { records, amendments: links.map((l) => l.amendment) });
    if (n) result.notarized += n;
    else result.pending++;
    return size;
  }

  return {
    /**
     * One cycle, or undefined when another process is running one. Throws (after blocking what
     * is to be blocked) when an earlier batch could not be finished: no new batch is sealed
     * behind it (on a chain its transaction would wait behind the stuck nonce), and the failed
     * job says why in Bull Board.
     */
    async cycle(): Promise<CycleResult | undefined> {
      const run = await repo.exclusive(NOTARY_LOCK, (lockHeld) =>
        sequencer.exclusive((fence) => cycleHolding(async () => (await lockHeld()) && (await fence.held()), fence)),
      );
      return run ?? undefined;
    },
  };

  /** One cycle, holding the lock and the lease (`held` asks after both; `fence` appends the leaves). */
  async function cycleHolding(held: () => Promise<boolean>, fence: Fence): Promise<CycleResult> {
    const result: CycleResult = { blocked: 0, batches: 0, notarized: 0, pending: 0 };
    const stuck = await resume(result, held);
    await healAmendments(result);
    await blockSettled(result);
    if (stuck.length) throw new Error(`notarization waits for ${stuck.length} batch(es): ${stuck.map((e) => e.message).join('; ')}`);
    for (let n = 0; n < MAX_BATCHES_PER_CYCLE && (await batchOnce(result, held, fence)) === batchSize; n++) {
      /* full batches while they last */
    }
    return result;
  }
}

/** What the proof shows of a batch's receipt (the ledger entry; the chain, block, sender and signed transaction). */
function anchorFacts(batch: BatchRow): Record<string, unknown> {
  const r = batch.receipt ?? {};
  const out: Record<string, unknown> = {};
  for (const k of ['entry', 'chainId', 'blockNumber', 'from', 'rawTransaction']) if (r[k] !== undefined) out[k] = r[k];
  return out;
}

export type NotarizationService = ReturnType<typeof createNotarizationService>;

/** The proof's view of a batch: its root and what anchored it. */
function anchoredLeaf(batch: BatchRow & { txHash: string; anchoredAt: Date }) {
  return {
    batchSize: batch.size,
    root: batch.root,
    anchor: { kind: batch.anchorKind, txHash: batch.txHash, anchoredAt: batch.anchoredAt.toISOString(), ...anchorFacts(batch) },
  };
}

const isAnchored = (b: BatchRow): b is BatchRow & { txHash: string; anchoredAt: Date } => b.state === 'anchored' && b.txHash !== null && b.anchoredAt !== null;

function completeAmendmentProof(
  a: Amendment,
  row: AmendmentProofRow & { batch: BatchRow & { txHash: string; anchoredAt: Date } },
  log: LogInclusion | undefined,
): AmendmentProof {
  return amendmentProof.parse({
    guaranteeId: a.guaranteeId,
    amendmentId: a.id,
    seq: a.seq,
    notarizationStatus: 'COMPLETE',
    canonicalization: AMENDMENT_CANONICAL_SCHEMA,
    digest: row.digest,
    guaranteeDigest: row.guaranteeDigest,
    previousDigest: row.previousDigest,
    leafIndex: row.leafIndex,
    path: row.path,
    ...anchoredLeaf(row.batch),
    ...(log && { log }),
  });
}

/**
 * Reads proofs for the API (which never anchors anything); with `log`, each carries its leaf's
 * inclusion in the transparency log's latest checkpoint, once one holds it.
 */
export function createProofService(
  repo: Pick<NotarizationRepository, 'proofOf' | 'amendmentProofsOf'>,
  notary: Pick<GuaranteeRepository['notary'], 'amendmentBlock'>,
  log?: { proof(index: number): Promise<LogInclusion | undefined> },
) {
  const inLog = async (index: number | null): Promise<LogInclusion | undefined> => (index === null || !log ? undefined : log.proof(index));

  /** Each amendment's COMPLETE proof, or null while its batch is not anchored (or it has none). */
  async function amendmentProofs(amendments: readonly Amendment[]): Promise<(AmendmentProof | null)[]> {
    const rows = await repo.amendmentProofsOf(amendments.map((a) => a.id));
    return Promise.all(
      amendments.map(async (a) => {
        const row = rows.get(a.id);
        return row && isAnchored(row.batch)
          ? completeAmendmentProof(a, row as AmendmentProofRow & { batch: BatchRow & { txHash: string; anchoredAt: Date } }, await inLog(row.logIndex))
          : null;
      }),
    );
  }

  return {
    /** The proofs of a guarantee's amendments (the caller read them as the organization's), in their order: each COMPLETE proof, or null. */
    amendmentProofs,

    /** The proof of one of the organization's amendments (the caller read it as the organization's), or where it stands without one. */
    async amendmentProof(amendment: Amendment): Promise<AmendmentProof | PendingAmendmentProof> {
      const [complete] = await amendmentProofs([amendment]);
      if (complete) return complete;
      const blocked = await notary.amendmentBlock(amendment.id);
      return {
        guaranteeId: amendment.guaranteeId,
        amendmentId: amendment.id,
        seq: amendment.seq,
        notarizationStatus: 'PENDING',
        ...(blocked && { reason: blocked.reason }),
        ...(blocked?.digest && { digest: blocked.digest }),
      };
    },

    /** The proof of one of the organization's guarantees, or where it stands without one. */
    async proof(orgId: string, record: GuaranteeRecord): Promise<NotarizationProof | PendingProof> {
      if (record.orgId !== orgId) throw new Error('proof asked for a record of another organization');
      const row = await repo.proofOf(record.id);
      if (!row || !isAnchored(row.batch)) {
        return { guaranteeId: record.id, notarizationStatus: 'PENDING', ...(record.notarizationReason !== null && { reason: record.notarizationReason }) };
      }
      const logged = await inLog(row.logIndex);
      return notarizationProof.parse({
        guaranteeId: record.id,
        notarizationStatus: 'COMPLETE',
        canonicalization: CANONICAL_SCHEMA,
        digest: row.digest,
        leafIndex: row.leafIndex,
        path: row.path,
        ...anchoredLeaf(row.batch),
        ...(logged && { log: logged }),
      });
    },
  };
}

export type ProofService = ReturnType<typeof createProofService>;

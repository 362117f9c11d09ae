// The notarization worker's logic. One cycle, run by one process at a time (a database lock):
//   1. finish what a previous cycle left: sealed batches are submitted to the anchor (which is
//      idempotent per batch, so a batch anchored but not recorded is found, not anchored again),
//      submitted ones are recorded once the anchor says they are final;
//   2. block, for ever, the waiting records whose doc ended Infected or Error
//      (`guarantee.notarization_blocked`);
//   3. batch the waiting records whose docs are all Clean or Signed: digests (canonical.ts),
//      a Merkle tree, the batch and every proof sealed in one transaction, the root anchored,
//      then every record COMPLETE with the txHash, its docs notarizedAt, and
//      `guarantee.notarized`, in one transaction. Repeated while full batches remain.
import type { GuaranteeRepository } from '../guarantees/guarantee.repository.js';
import { toV2 } from '../guarantees/guarantee.serializer.js';
import type { GuaranteeRecord } from '../guarantees/guarantee.types.js';
import type { Logger } from '../shared/logger.js';
import type { Outbox } from '../shared/events/outbox.js';
import type { Anchor, BatchToAnchor, Submission } from './anchor.js';
import { CANONICAL_SCHEMA, guaranteeDigest } from './canonical.js';
import { buildTree } from './merkle.js';
import type { BatchRow, NotarizationRepository } from './notarization.repository.js';
import { notarizationProof, type NotarizationProof, type PendingProof } from './proof.js';

/** The database lock that makes one notarizer at a time (anchors and ledgers append in order). */
export const NOTARY_LOCK = 'guarantee_registry_notary';

/** Batches sealed per cycle at most: a backlog is worked off over several cycles, none of them endless. */
export const MAX_BATCHES_PER_CYCLE = 50;

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
  outbox: Outbox;
  anchor: Anchor;
  batchSize: number;
  logger: Logger;
  now?: () => Date;
}) {
  const { repo, guarantees, outbox, anchor, batchSize, logger } = deps;
  const { notary } = guarantees;
  const now = deps.now ?? (() => new Date());

  /** Throws unless this process still holds the notarizers' lock (its connection may have been killed). */
  async function stillExclusive(held: () => Promise<boolean>): Promise<void> {
    if (!(await held())) throw new Error('lost the notarization lock mid-cycle (its database connection was closed): stopping before anchoring anything');
  }

  /**
   * Submits a batch and records it final when the anchor says so; how many records it
   * completed (0 while not final). `members`: the batch's records when the caller has them
   * (a batch just sealed); otherwise they are read back.
   */
  async function anchorBatch(batch: BatchToAnchor, held: () => Promise<boolean>, submitted?: Submission, members?: GuaranteeRecord[]): Promise<number> {
    let submission = submitted;
    if (!submission) {
      await stillExclusive(held);
      submission = await anchor.submit(batch);
      await repo.markSubmitted(batch.id, submission);
    }
    const receipt = await anchor.confirm(batch, submission);
    if (!receipt) return 0;
    const records = members ?? (await guarantees.findByIds(await repo.members(batch.id)));
    const completed = await repo.transaction(async (t) => {
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
      return true;
    });
    if (!completed) return 0;
    logger.info({ batch: batch.id, records: records.length, anchor: anchor.kind, txHash: receipt.txHash }, 'batch notarized');
    return records.length;
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

  /** Seals and anchors one batch of eligible records; how many it took. */
  async function batchOnce(result: CycleResult, held: () => Promise<boolean>): Promise<number> {
    const ids = await notary.eligible(batchSize);
    if (!ids.length) return 0;
    const records = await guarantees.findByIds(ids);
    const digests = records.map((g) => guaranteeDigest(toV2(g)));
    const { root, paths } = buildTree(digests);
    await stillExclusive(held);
    const proofs = records.map((g, i) => ({ guaranteeId: g.id, leafIndex: i, digest: digests[i] as string, path: paths[i] ?? [] }));
    // One transaction: the records move from waiting to batched and the batch is written, or
    // (one of them blocked meanwhile) neither.
    const batchId = await repo
      .transaction(async (t) => {
        if (
          (await notary.markBatched(
            records.map((g) => g.id),
            t,
          )) !== records.length
        )
          throw NOT_WAITING;
        return repo.insertBatch(anchor.kind, root, proofs, now(), t);
      })
      .catch((err: unknown) => {
        if (err === NOT_WAITING) return undefined;
        throw err;
      });
    if (batchId === undefined) return 0;
    result.batches++;
    const n = await anchorBatch({ id: batchId, root, size: records.length }, held, undefined, records);
    if (n) result.notarized += n;
    else result.pending++;
    return records.length;
  }

  return {
    /**
     * One cycle, or undefined when another process is running one. Throws (after blocking what
     * is to be blocked) when an earlier batch could not be finished: no new batch is sealed
     * behind it (on a chain its transaction would wait behind the stuck nonce), and the failed
     * job says why in Bull Board.
     */
    async cycle(): Promise<CycleResult | undefined> {
      return repo.exclusive(NOTARY_LOCK, async (held) => {
        const result: CycleResult = { blocked: 0, batches: 0, notarized: 0, pending: 0 };
        const stuck = await resume(result, held);
        await blockSettled(result);
        if (stuck.length) throw new Error(`notarization waits for ${stuck.length} batch(es): ${stuck.map((e) => e.message).join('; ')}`);
        for (let n = 0; n < MAX_BATCHES_PER_CYCLE && (await batchOnce(result, held)) === batchSize; n++) {
          /* full batches while they last */
        }
        return result;
      });
    },
  };
}

/** What the proof shows of a batch's receipt (the ledger entry; the chain, block, sender and signed transaction). */
function anchorFacts(batch: BatchRow): Record<string, unknown> {
  const r = batch.receipt ?? {};
  const out: Record<string, unknown> = {};
  for (const k of ['entry', 'chainId', 'blockNumber', 'from', 'rawTransaction']) if (r[k] !== undefined) out[k] = r[k];
  return out;
}

export type NotarizationService = ReturnType<typeof createNotarizationService>;

/** Reads proofs for the API (which never anchors anything). */
export function createProofService(repo: Pick<NotarizationRepository, 'proofOf'>) {
  return {
    /** The proof of one of the organization's guarantees, or where it stands without one. */
    async proof(orgId: string, record: GuaranteeRecord): Promise<NotarizationProof | PendingProof> {
      if (record.orgId !== orgId) throw new Error('proof asked for a record of another organization');
      const row = await repo.proofOf(record.id);
      if (!row || row.batch.state !== 'anchored' || !row.batch.txHash || !row.batch.anchoredAt) {
        return { guaranteeId: record.id, notarizationStatus: 'PENDING', ...(record.notarizationReason !== null && { reason: record.notarizationReason }) };
      }
      return notarizationProof.parse({
        guaranteeId: record.id,
        notarizationStatus: 'COMPLETE',
        canonicalization: CANONICAL_SCHEMA,
        digest: row.digest,
        leafIndex: row.leafIndex,
        batchSize: row.batch.size,
        path: row.path,
        root: row.batch.root,
        anchor: { kind: row.batch.anchorKind, txHash: row.batch.txHash, anchoredAt: row.batch.anchoredAt.toISOString(), ...anchorFacts(row.batch) },
      });
    },
  };
}

export type ProofService = ReturnType<typeof createProofService>;

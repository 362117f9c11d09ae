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
import type { Outbox } from '../webhooks/outbox.js';
import type { Anchor, BatchToAnchor, Submission } from './anchor.js';
import { CANONICAL_SCHEMA, guaranteeDigest } from './canonical.js';
import { buildTree } from './merkle.js';
import type { BatchRow, NotarizationRepository } from './notarization.repository.js';
import { notarizationProof, type NotarizationProof, type PendingProof } from './proof.js';

/** The database lock that makes one notarizer at a time (anchors and ledgers append in order). */
export const NOTARY_LOCK = 'guarantee_registry_notary';

export interface CycleResult { blocked: number; batches: number; notarized: number; pending: number }

export function createNotarizationService(deps: {
  repo: NotarizationRepository;
  guarantees: Pick<GuaranteeRepository, 'findByIds'>;
  outbox: Outbox;
  anchor: Anchor;
  batchSize: number;
  logger: Logger;
  now?: () => Date;
}) {
  const { repo, guarantees, outbox, anchor, batchSize, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /** Submits a batch and records it final when the anchor says so; false while it is not final. */
  async function anchorBatch(batch: BatchToAnchor, submitted?: Submission): Promise<number> {
    let submission = submitted;
    if (!submission) {
      submission = await anchor.submit(batch);
      await repo.markSubmitted(batch.id, submission);
    }
    const receipt = await anchor.confirm(batch, submission);
    if (!receipt) return 0;
    const records = await guarantees.findByIds(await repo.members(batch.id));
    const completed = await repo.transaction(async (t) => {
      if (!(await repo.complete(batch.id, receipt, t))) return false;
      await outbox.addMany(t, 'guarantee.notarized', records.map((g) => ({
        orgId: g.orgId,
        data: toV2({ ...g, txHash: receipt.txHash, notarizationStatus: 'COMPLETE', docs: g.docs.map((d) => ({ ...d, notarizedAt: receipt.anchoredAt })) }),
      })), receipt.anchoredAt);
      return true;
    });
    if (!completed) return 0;
    logger.info({ batch: batch.id, records: records.length, anchor: anchor.kind, txHash: receipt.txHash }, 'batch notarized');
    return records.length;
  }

  async function resume(result: CycleResult): Promise<void> {
    for (const b of await repo.unfinished()) {
      const batch = { id: b.id, root: b.root, size: b.size };
      if (b.anchorKind !== anchor.kind) {
        logger.warn({ batch: b.id, kind: b.anchorKind, anchor: anchor.kind }, 'a batch of another anchor kind waits for a worker with that anchor');
        continue;
      }
      const submitted = b.state === 'submitted' && b.txHash && b.receipt ? { txHash: b.txHash, receipt: b.receipt } : undefined;
      const n = await anchorBatch(batch, submitted);
      if (n) result.notarized += n;
      else result.pending++;
    }
  }

  async function blockSettled(result: CycleResult): Promise<void> {
    for (;;) {
      const found = await repo.blocked(500);
      const before = result.blocked;
      for (const b of found) {
        const reason = `Doc ${b.key} is ${b.status}: the record will not be notarized.`;
        const [record] = await guarantees.findByIds([b.id]);
        if (!record) continue;
        const blocked = await repo.transaction(async (t) => {
          if (!(await repo.block(b.id, reason, t))) return false;
          await outbox.add(t, b.orgId, 'guarantee.notarization_blocked', toV2({ ...record, notarizationReason: reason }), now());
          return true;
        });
        if (blocked) {
          result.blocked++;
          logger.info({ guarantee: b.id, reason }, 'notarization blocked');
        }
      }
      // A full page blocked nothing (each was blocked meanwhile by someone else): no progress to make.
      if (found.length < 500 || result.blocked === before) return;
    }
  }

  /** Seals and anchors one batch of eligible records; how many it took. */
  async function batchOnce(result: CycleResult): Promise<number> {
    const ids = await repo.eligible(batchSize);
    if (!ids.length) return 0;
    const records = await guarantees.findByIds(ids);
    const digests = records.map((g) => guaranteeDigest(toV2(g)));
    const { root, paths } = buildTree(digests);
    const batchId = await repo.seal(anchor.kind, root, records.map((g, i) => ({
      guaranteeId: g.id, leafIndex: i, digest: digests[i] as string, path: paths[i] ?? [],
    })), now());
    if (batchId === undefined) return 0;
    result.batches++;
    const n = await anchorBatch({ id: batchId, root, size: records.length });
    if (n) result.notarized += n;
    else result.pending++;
    return records.length;
  }

  return {
    /** One cycle, or undefined when another process is running one. */
    async cycle(): Promise<CycleResult | undefined> {
      return repo.exclusive(NOTARY_LOCK, async () => {
        const result: CycleResult = { blocked: 0, batches: 0, notarized: 0, pending: 0 };
        await resume(result);
        await blockSettled(result);
        while ((await batchOnce(result)) === batchSize) { /* full batches while they last */ }
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
      const row = await repo.proofOf(orgId, record.id);
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

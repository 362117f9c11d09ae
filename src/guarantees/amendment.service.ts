// Recording a guarantee's amendments and answering what it covers now. An amendment is written
// in one transaction holding the guarantee's row lock: the amendments so far are read, the
// client's expectedSeq and the type's rules checked against the state they fold to (a 409
// otherwise, nothing written), and the amendment appended as seq + 1 with its
// `guarantee.amended` event in the outbox. Two racing amendments are serialized by the lock:
// the second sees the first (its expectedSeq, if stale, is a 409; without one it gets the next seq).
import { v7 as uuidv7 } from 'uuid';
import { ConflictError, NotFoundError } from '../shared/errors.js';
import type { Outbox } from '../shared/events/outbox.js';
import { UUID_PATTERN } from '../shared/validation.js';
import type { FileRepository } from '../files/file.repository.js';
import type { AmendmentRepository } from './amendment.repository.js';
import type { CreateAmendment } from './amendment.schemas.js';
import { toAmendmentView, toStateView } from './amendment.serializer.js';
import { refusalOf, stateAfter, type Amendment, type GuaranteeState, type NewAmendment } from './amendments.js';
import { resolveDocs } from './docs.js';

const UUID = new RegExp(`^${UUID_PATTERN}$`);

/** The request, normalized: the type's own fields set, the others null. */
export function toNewAmendment(input: CreateAmendment): NewAmendment & { expectedSeq: number | undefined } {
  return {
    type: input.type,
    effectiveAt: input.effectiveAt,
    expiresAt: 'expiresAt' in input ? input.expiresAt : null,
    garantedAmount: 'garantedAmount' in input ? input.garantedAmount : null,
    claimedAmount: 'claimedAmount' in input ? input.claimedAmount : null,
    paidAmount: 'paidAmount' in input ? input.paidAmount : null,
    reason: input.reason ?? null,
    docs: (input.docs ?? []).map((d) => ({ type: d.type ?? null, key: d.key, originalFileName: d.originalFileName ?? null })),
    expectedSeq: input.expectedSeq,
  };
}

export function createAmendmentService(deps: { repo: AmendmentRepository; files: Pick<FileRepository, 'forDocs'>; outbox: Outbox; now?: () => Date }) {
  const { repo, files, outbox } = deps;
  const now = deps.now ?? (() => new Date());
  const noSuch = (id: string) => new NotFoundError(`No guarantee ${id}.`);

  return {
    async add(orgId: string, guaranteeId: string, input: NewAmendment & { expectedSeq?: number }): Promise<{ amendment: Amendment; state: GuaranteeState }> {
      if (!UUID.test(guaranteeId)) throw noSuch(guaranteeId);
      const checksums = await resolveDocs(files, orgId, input.docs);
      return repo.transaction(async (t) => {
        const issued = await repo.lockIssued(orgId, guaranteeId, t);
        if (!issued) throw noSuch(guaranteeId);
        const before = await repo.list(guaranteeId, t);
        const lastSeq = before.at(-1)?.seq ?? 0;
        if (input.expectedSeq !== undefined && input.expectedSeq !== lastSeq) {
          throw new ConflictError(`expectedSeq is ${input.expectedSeq}, but the last amendment is ${lastSeq}: read the amendments again.`);
        }
        const refusal = refusalOf(issued, before, input);
        if (refusal) throw new ConflictError(refusal);
        const createdAt = now();
        const { expectedSeq: _seen, ...fields } = input;
        const amendment: Amendment = {
          ...fields,
          id: uuidv7({ msecs: createdAt.getTime() }),
          guaranteeId,
          seq: lastSeq + 1,
          docs: input.docs.map((d) => ({ ...d, checksum: checksums.get(d.key) ?? null })),
          createdAt,
          notarizationStatus: 'PENDING',
          txHash: null,
        };
        await repo.insert(orgId, amendment, t);
        const state = stateAfter(issued, [...before, amendment], createdAt);
        await outbox.add(t, orgId, 'guarantee.amended', { amendment: toAmendmentView(amendment), state: toStateView(state) }, createdAt);
        return { amendment, state };
      });
    },

    /** The guarantee's amendments, oldest first (404 for another organization's). */
    async list(orgId: string, guaranteeId: string): Promise<Amendment[]> {
      if (!UUID.test(guaranteeId) || !(await repo.issued(orgId, guaranteeId))) throw noSuch(guaranteeId);
      return repo.list(guaranteeId);
    },

    /** What the guarantee covers now. */
    async state(orgId: string, guaranteeId: string): Promise<GuaranteeState> {
      const issued = UUID.test(guaranteeId) ? await repo.issued(orgId, guaranteeId) : undefined;
      if (!issued) throw noSuch(guaranteeId);
      return stateAfter(issued, await repo.list(guaranteeId), now());
    },
  };
}

export type AmendmentService = ReturnType<typeof createAmendmentService>;

// Recording a guarantee's amendments and answering what it covers now. An amendment is written
// in one transaction holding the guarantee's row lock: the guarantee's fold is read (the state
// its amendments so far fold to, kept in guarantee_folds: one row, however long its history),
// the client's expectedSeq and the type's rules checked against it (a 409 otherwise, nothing
// written), and the amendment appended as seq + 1 with the fold after it and its
// `guarantee.amended` event in the outbox. Two racing amendments are serialized by the lock:
// the second sees the first (its expectedSeq, if stale, is a 409; without one it gets the next seq).
import { v7 as uuidv7 } from 'uuid';
import { ER_DUP_ENTRY, ER_NO_REFERENCED_ROW, mysqlErrno } from '../shared/db/sequelize.js';
import { ConflictError, NotFoundError, ValidationError } from '../shared/errors.js';
import type { Outbox } from '../shared/events/outbox.js';
import { idempotencyFingerprint, requestHash, type IdempotencyStore, type StoredResponse } from '../shared/idempotency.js';
import { isUuid, MAX_MS } from '../shared/validation.js';
import type { FileRepository } from '../files/file.repository.js';
import type { AmendmentRepository } from './amendment.repository.js';
import type { CreateAmendment } from './amendment.schemas.js';
import { toAmendmentView, toStateView } from './amendment.serializer.js';
import {
  CLAIM_TERM_MS,
  foldFrom,
  needsConsent,
  refusalAfter,
  type Amendment,
  type AmendmentActor,
  type Folded,
  type GuaranteeState,
  type Issued,
  type NewAmendment,
} from './amendments.js';
import { DOC_GONE, resolveDocs } from './docs.js';
import type { AuditRepository } from '../audit/audit.repository.js';
import type { ApiActor } from '../orgs/auth.middleware.js';
import type { Transaction } from '../shared/db/sequelize.js';

/**
 * Who records an amendment, and what else its transaction writes. The issuer's own amendments
 * are `issuerAct`s; a contracting authority's acts (src/authorities) name the authority, which
 * the issuer's audit chain records as `authority:<orgId>` and the authority's own chain by the
 * key or person that acted.
 */
export interface Act {
  /** The guarantee's issuer: its chain, its events. */
  issuerOrgId: string;
  actor: AmendmentActor;
  /** The authority's organization, when it acts. */
  actorOrgId: string | null;
  /** The audit trail's actor (the issuer's key), or the authority's and the issuer's rows, each in its chain. */
  audit: ApiActor | undefined | { authority: ApiActor };
  /** Dated by the server: effectiveAt is the time of receipt (the client's is ignored). */
  serverDated?: boolean;
  /** Nothing to record when this holds of the fold (the act was done already): the answer is the state as it is. */
  doneAlready?: (fold: Folded) => boolean;
  /** More of the same change, in its transaction, once the amendment is known (not called when doneAlready). */
  also?: (t: Transaction, amendment: Amendment, state: GuaranteeState) => Promise<unknown>;
}

/** An issuer's act on its own guarantee. */
const issuerAct = (orgId: string, by: ApiActor | undefined): Act => ({ issuerOrgId: orgId, actor: 'issuer', actorOrgId: null, audit: by });

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

export function createAmendmentService(deps: {
  repo: AmendmentRepository;
  files: Pick<FileRepository, 'forDocs'>;
  outbox: Outbox;
  idempotency: IdempotencyStore;
  /** The audit trail: each amendment is a row of its organization's chain, written with it. */
  audit: Pick<AuditRepository, 'append'>;
  now?: () => Date;
}) {
  const { repo, files, outbox, idempotency, audit } = deps;
  const now = deps.now ?? (() => new Date());
  const noSuch = (id: string) => new NotFoundError(`No guarantee ${id}.`);
  /** What the organization's guarantee was registered with; a 404 for another's, or none (an id that is no UUID is never looked up). */
  async function issuedOr404(orgId: string, guaranteeId: string): Promise<Issued> {
    const issued = isUuid(guaranteeId) ? await repo.issued(orgId, guaranteeId) : undefined;
    if (!issued) throw noSuch(guaranteeId);
    return issued;
  }

  async function add(
    orgId: string,
    guaranteeId: string,
    input: NewAmendment & { expectedSeq?: number },
    by: ApiActor | undefined,
    claim?: { key: string; owner: string },
  ): Promise<{ amendment: Amendment; state: GuaranteeState }> {
    // Another organization's guarantee, or none, is a 404 before anything is locked.
    await issuedOr404(orgId, guaranteeId);
    if (input.type === 'CLAIM' && input.effectiveAt.getTime() + CLAIM_TERM_MS > MAX_MS) {
      throw new ValidationError('Invalid amendment: effectiveAt is too late for a claim (its due date would pass the year 9999).', [
        { pointer: '#/effectiveAt', detail: 'is too late for a claim: its due date would pass the year 9999' },
      ]);
    }
    const checksums = await resolveDocs(files, orgId, input.docs);
    return (await recordAct(issuerAct(orgId, by), guaranteeId, input, checksums, claim)) as { amendment: Amendment; state: GuaranteeState };
  }

  /** recordLocked, its races said as 409s and a document gone meanwhile as a 400. */
  async function recordAct(
    act: Act,
    guaranteeId: string,
    input: NewAmendment & { expectedSeq?: number },
    checksums: Map<string, string | null>,
    claim?: { key: string; owner: string; orgId?: string },
  ): Promise<{ amendment: Amendment | undefined; state: GuaranteeState }> {
    try {
      return await recordLocked(act, guaranteeId, input, checksums, claim);
    } catch (err) {
      // The unique (guarantee, seq) is the backstop of the lock: say so rather than fail.
      if (mysqlErrno(err) === ER_NO_REFERENCED_ROW) throw new ValidationError(DOC_GONE);
      if (mysqlErrno(err) === ER_DUP_ENTRY)
        throw new ConflictError('Another amendment of this guarantee was recorded at the same moment: read the amendments and send it again.');
      throw err;
    }
  }

  function recordLocked(
    act: Act,
    guaranteeId: string,
    input: NewAmendment & { expectedSeq?: number },
    checksums: Map<string, string | null>,
    claim?: { key: string; owner: string; orgId?: string },
  ): Promise<{ amendment: Amendment | undefined; state: GuaranteeState }> {
    const orgId = act.issuerOrgId;
    return repo.transaction(async (t) => {
      if (!(await repo.lockIssued(orgId, guaranteeId, t))) throw noSuch(guaranteeId);
      // Read after the lock: every writer of the guarantee's amendments holds it, so the fold (with what it lacks folded on) is current.
      const current = await repo.current(guaranteeId, { t });
      if (!current) throw noSuch(guaranteeId);
      const lastSeq = current.fold.lastSeq;
      if (input.expectedSeq !== undefined && input.expectedSeq !== lastSeq) {
        throw new ConflictError(`expectedSeq is ${input.expectedSeq}, but the last amendment is ${lastSeq}: read the amendments again.`);
      }
      if (act.doneAlready?.(current.fold)) return { amendment: undefined, state: await repo.stateAt(guaranteeId, current, now(), t) };
      const refusal = refusalAfter(current.fold, input, act);
      if (refusal) throw new ConflictError(refusal);
      const createdAt = now();
      const open = current.fold.openClaim;
      if ((input.type === 'CLAIM_SETTLED' || input.type === 'CLAIM_REJECTED') && open && input.effectiveAt < open.effectiveAt) {
        throw new ValidationError(`Invalid amendment: effectiveAt is before the demand it answers (${open.effectiveAt.toISOString()}).`, [
          { pointer: '#/effectiveAt', detail: `must not be before the demand's, ${open.effectiveAt.toISOString()}` },
        ]);
      }
      // A settlement or a rejection is a fact already happened: never dated ahead (the rules,
      // which count every amendment recorded, would see the demand closed while it is open).
      if ((input.type === 'CLAIM_SETTLED' || input.type === 'CLAIM_REJECTED') && input.effectiveAt > createdAt) {
        throw new ValidationError(`Invalid amendment: a ${input.type} cannot be dated after it is recorded (${createdAt.toISOString()}).`, [
          { pointer: '#/effectiveAt', detail: 'must not be in the future' },
        ]);
      }
      // An issuer's amendment that would reduce the linked authority's cover waits for its consent:
      // a reduction of what every amendment recorded leaves, or of what applies at its own date
      // (an amount lowered by an amendment dated later does not make today's lower one a widening).
      const at = act.serverDated ? createdAt : input.effectiveAt;
      const applying = current.latestEffectiveAt && current.latestEffectiveAt > at ? await repo.stateAt(guaranteeId, current, at, t) : undefined;
      const consent =
        needsConsent(current.fold, input, act) ||
        (applying !== undefined && needsConsent({ ...current.fold, garantedAmount: applying.garantedAmount }, input, act))
          ? ('PENDING' as const)
          : null;
      if (consent && current.fold.pending) {
        throw new ConflictError(
          `Amendment ${current.fold.pending.seq} waits for the contracting authority's answer: one change that reduces its cover at a time.`,
        );
      }
      const authority = current.fold.beneficiary;
      const { expectedSeq: _seen, ...fields } = input;
      const amendment: Amendment = {
        ...fields,
        ...(act.serverDated && { effectiveAt: createdAt }),
        id: uuidv7({ msecs: createdAt.getTime() }),
        guaranteeId,
        seq: lastSeq + 1,
        actor: act.actor,
        actorOrgId: act.actorOrgId,
        consent,
        docs: input.docs.map((d) => ({ ...d, checksum: checksums.get(d.key) ?? null })),
        createdAt,
        notarizationStatus: 'PENDING',
        txHash: null,
      };
      // Its audit rows before its rows (see the audit repository's append): the issuer's chain first, then the authority's (always in this order: no deadlock).
      const row = { action: 'amendment.record', target: `amendment:${amendment.id}`, outcome: 'ok' };
      if (act.audit && 'authority' in act.audit) {
        const { authority } = act.audit;
        await audit.append({ orgId, actor: `authority:${act.actorOrgId}`, requestId: authority.requestId, ...row }, createdAt, t);
        await audit.append({ orgId: act.actorOrgId, ...authority, ...row }, createdAt, t);
      } else if (act.audit) await audit.append({ orgId, ...act.audit, ...row }, createdAt, t);
      await repo.insert(orgId, amendment, t);
      const answered = input.type === 'AMENDMENT_RESPONSE' ? current.fold.pending?.seq : undefined;
      if (answered !== undefined) await repo.setConsent(guaranteeId, answered, input.decision === 'ACCEPT' ? 'ACCEPTED' : 'REFUSED', t);
      const fold = foldFrom(current.fold, [amendment]);
      await repo.saveFold(guaranteeId, fold, t);
      const latest = current.latestEffectiveAt;
      const latestEffectiveAt = latest && latest > amendment.effectiveAt ? latest : amendment.effectiveAt;
      const state = await repo.stateAt(guaranteeId, { issued: current.issued, fold, latestEffectiveAt }, createdAt, t);
      // Both parties hear of every change once an authority took charge; the authority's acts and the consents, by name.
      const parties = [orgId, ...(authority && authority !== orgId ? [authority] : [])];
      const amended = { amendment: toAmendmentView(amendment), state: toStateView(state) };
      for (const party of parties) await outbox.add(t, party, 'guarantee.amended', amended, createdAt);
      if (input.type === 'DEMAND') {
        const demanded = { ...amended, claimDueAt: state.claimDueAt?.toISOString() ?? null };
        for (const party of parties) await outbox.add(t, party, 'guarantee.demanded', demanded, createdAt);
      }
      if (consent && authority) await outbox.add(t, authority, 'guarantee.amendment_pending', amended, createdAt);
      if (answered !== undefined) {
        const data = { ...amended, answered: { seq: answered, decision: input.decision } };
        for (const party of parties) await outbox.add(t, party, 'guarantee.amendment_answered', data, createdAt);
      }
      await act.also?.(t, amendment, state);
      // The response a retry with the same Idempotency-Key gets, written with the amendment.
      if (claim) await idempotency.complete(claim.orgId ?? orgId, claim.key, claim.owner, { status: 200, body: toAmendmentView(amendment) }, t);
      return { amendment, state };
    });
  }

  return {
    /**
     * Records an act on a guarantee (a contracting authority's: src/authorities), after its
     * caller has checked who may; `amendment` undefined when `act.doneAlready` (nothing recorded).
     * Its documents, if any, must be the actor's own (resolveDocs with the actor's organization).
     */
    async recordAct(
      act: Act,
      guaranteeId: string,
      input: NewAmendment & { expectedSeq?: number },
    ): Promise<{ amendment: Amendment | undefined; state: GuaranteeState }> {
      const checksums = await resolveDocs(files, act.actorOrgId ?? act.issuerOrgId, input.docs);
      return recordAct(act, guaranteeId, input, checksums);
    },

    /**
     * recordAct for a request (the authority's acts through its API): the response (200 and the
     * amendment's view), with an Idempotency-Key as `record`'s, kept in the actor's name.
     */
    async recordActRequest(
      act: Act,
      guaranteeId: string,
      input: NewAmendment & { expectedSeq?: number },
      idem?: { key: string; scope: string },
    ): Promise<StoredResponse> {
      const owner = act.actorOrgId ?? act.issuerOrgId;
      const run = async (claim?: { key: string; owner: string }) => {
        const checksums = await resolveDocs(files, owner, input.docs);
        const { amendment } = await recordAct(act, guaranteeId, input, checksums, claim && { ...claim, orgId: owner });
        return { status: 200, body: toAmendmentView(amendment as Amendment) };
      };
      if (!idem) return run();
      const fingerprint = idempotencyFingerprint(idem.scope, requestHash(JSON.parse(JSON.stringify(input))));
      const guarded = await idempotency.guard(owner, idem.key, fingerprint, run);
      return 'replay' in guarded ? guarded.replay : guarded.result;
    },

    /**
     * Records an amendment; the response (200 and the amendment's view). With an
     * Idempotency-Key (`scope`: the request's method and path), a retry of the same request
     * within 24 h gets the first response again, and nothing more is recorded; the same key
     * with another request, or while the first runs, is a 409 (src/shared/idempotency.ts).
     */
    async record(
      orgId: string,
      guaranteeId: string,
      input: NewAmendment & { expectedSeq?: number },
      idem?: { key: string; scope: string },
      by?: ApiActor,
    ): Promise<StoredResponse> {
      if (!idem) return { status: 200, body: toAmendmentView((await add(orgId, guaranteeId, input, by)).amendment) };
      const fingerprint = idempotencyFingerprint(idem.scope, requestHash(JSON.parse(JSON.stringify(input))));
      const guarded = await idempotency.guard(orgId, idem.key, fingerprint, async (mine) => ({
        status: 200,
        body: toAmendmentView((await add(orgId, guaranteeId, input, by, mine)).amendment),
      }));
      return 'replay' in guarded ? guarded.replay : guarded.result;
    },

    /**
     * At most `limit` of the guarantee's amendments after seq `after`, oldest first, and `next`:
     * the last one's seq when more follow, else null (404 for another organization's guarantee).
     */
    async page(orgId: string, guaranteeId: string, after: number, limit: number): Promise<{ amendments: Amendment[]; next: number | null }> {
      await issuedOr404(orgId, guaranteeId);
      const { amendments, more } = await repo.page(guaranteeId, after, limit);
      return { amendments, next: more ? (amendments.at(-1)?.seq ?? null) : null };
    },

    /** The guarantee's amendment `seq` (404 for another organization's guarantee, or no such seq: one that is not a positive integer included). */
    async one(orgId: string, guaranteeId: string, seq: string): Promise<Amendment> {
      await issuedOr404(orgId, guaranteeId);
      const n = /^[1-9][0-9]{0,8}$/.test(seq) ? Number(seq) : undefined;
      const amendment = n === undefined ? undefined : await repo.bySeq(guaranteeId, n);
      if (!amendment) throw new NotFoundError(`Guarantee ${guaranteeId} has no amendment ${seq}.`);
      return amendment;
    },

    /** What the guarantee covers now, from its fold (its amendments, while one is dated later) (404 for another organization's guarantee, or none). */
    async state(orgId: string, guaranteeId: string): Promise<GuaranteeState> {
      const current = isUuid(guaranteeId) ? await repo.current(guaranteeId, { orgId }) : undefined;
      if (!current) throw noSuch(guaranteeId);
      return repo.stateAt(guaranteeId, current, now());
    },
  };
}

export type AmendmentService = ReturnType<typeof createAmendmentService>;

// A guarantee's life after its registration (docs/api.md "A guarantee's life": amendments, releases,
// claims"): the amendments, what each may do given the state before it, and the state folded
// from them. Pure: the service reads and writes, this decides.
import type { NewDoc } from './guarantee.types.js';

/** What an issuer records through POST /api/v2/guarantees/{ID}/amendments. */
export const ISSUER_AMENDMENT_TYPES = [
  'EXTENSION',
  'AMOUNT_CHANGE',
  'PARTIAL_RELEASE',
  'RELEASE',
  'CLAIM',
  'CLAIM_SETTLED',
  'CLAIM_REJECTED',
  'CANCELLATION',
] as const;
/**
 * The contracting authority's acts: taking charge of the guarantee (BENEFICIARY_LINKED), a
 * demand (escussione) and its withdrawal, and its answer to an issuer's amendment that would
 * reduce its cover (it may also record PARTIAL_RELEASE and RELEASE).
 */
export const AUTHORITY_AMENDMENT_TYPES = ['BENEFICIARY_LINKED', 'DEMAND', 'DEMAND_WITHDRAWN', 'AMENDMENT_RESPONSE'] as const;
/** The authority's answer to an amendment that waits for its consent. */
export type Decision = 'ACCEPT' | 'REFUSE';
/** Where an amendment that needed the authority's consent stands. */
export type Consent = 'PENDING' | 'ACCEPTED' | 'REFUSED';
export const AMENDMENT_TYPES = [...ISSUER_AMENDMENT_TYPES, ...AUTHORITY_AMENDMENT_TYPES] as const;
export type AmendmentType = (typeof AMENDMENT_TYPES)[number];

/** Who recorded an amendment: the guarantee's issuer, or the contracting authority linked to it (its organization in actorOrgId). */
export type AmendmentActor = 'issuer' | 'authority';

export const GUARANTEE_STATUSES = ['ACTIVE', 'PARTIALLY_RELEASED', 'EXPIRED', 'CLAIMED', 'RELEASED', 'CANCELLED'] as const;
export type GuaranteeStatus = (typeof GUARANTEE_STATUSES)[number];

/** The payment term of a claim (art. 117 c.7 D.Lgs. 36/2023): 15 days of 24 h from its effectiveAt. */
export const CLAIM_TERM_MS = 15 * 24 * 3600 * 1000;

/** What a client asks to record; only its type's own fields are set. */
export interface NewAmendment {
  type: AmendmentType;
  effectiveAt: Date;
  /** EXTENSION: the new expiry. */
  expiresAt: Date | null;
  /** AMOUNT_CHANGE and PARTIAL_RELEASE: the new amount. */
  garantedAmount: number | null;
  /** CLAIM. */
  claimedAmount: number | null;
  /** CLAIM_SETTLED. */
  paidAmount: number | null;
  /** AMENDMENT_RESPONSE: the amendment it answers, and how. */
  amendmentSeq?: number | null;
  decision?: Decision | null;
  reason: string | null;
  docs: NewDoc[];
}

export interface AmendmentDoc extends NewDoc {
  checksum: string | null;
}

export interface Amendment extends NewAmendment {
  id: string;
  guaranteeId: string;
  seq: number;
  actor: AmendmentActor;
  /** The authority's organization, when the actor is one. */
  actorOrgId: string | null;
  /** An issuer's amendment that would reduce a linked authority's cover: where its consent stands (undefined or null: it needed none). */
  consent?: Consent | null;
  docs: AmendmentDoc[];
  createdAt: Date;
  notarizationStatus: 'PENDING' | 'COMPLETE';
  txHash: string | null;
  /** Why it will never be notarized, once that is known. */
  notarizationReason?: string | null;
}

/** What the registration says, the start of the fold. */
export interface Issued {
  garantedAmount: number | null;
  expiresAt: Date | null;
  isAutomaticRenewal: boolean | null;
}

/** What a registered record says, the start of its fold. */
export function issuedOf(g: { details: { expiresAt: Date | null }; economics: { garantedAmount: number | null; isAutomaticRenewal: boolean | null } }): Issued {
  return { garantedAmount: g.economics.garantedAmount, expiresAt: g.details.expiresAt, isAutomaticRenewal: g.economics.isAutomaticRenewal };
}

export interface OpenClaim {
  seq: number;
  claimedAmount: number;
  effectiveAt: Date;
}

/** What a guarantee covers after its amendments (GET .../state). */
export interface GuaranteeState {
  status: GuaranteeStatus;
  garantedAmount: number | null;
  expiresAt: Date | null;
  openClaim: OpenClaim | null;
  claimDueAt: Date | null;
  lastSeq: number;
  /** The contracting authority that took charge of the guarantee, if one did. */
  beneficiary: string | null;
  /** The issuer's amendment waiting for the authority's consent, if one is. */
  pendingConsent: { seq: number; type: Pending['type'] } | null;
  /** Amendments recorded that apply later (their effectiveAt is after the state's instant), in seq order. */
  scheduled: Scheduled[];
}

/** An amendment recorded to apply from a later instant: until then the state is as if it were not there. */
export interface Scheduled {
  seq: number;
  type: AmendmentType;
  effectiveAt: Date;
}

/** The fold's running state: the state's inputs, without the clock (kept per guarantee in guarantee_folds). */
export interface Folded {
  garantedAmount: number | null;
  expiresAt: Date | null;
  openClaim: OpenClaim | null;
  ended: 'RELEASED' | 'CANCELLED' | null;
  partiallyReleased: boolean;
  /** The contracting authority that took charge of the guarantee (its organization), if one did. */
  beneficiary: string | null;
  /** The issuer's amendment that waits for the authority's consent (one at a time), with what it would change. */
  pending: Pending | null;
  lastSeq: number;
}

/** An issuer's amendment that would reduce the authority's cover, waiting for its answer. */
export interface Pending {
  seq: number;
  type: 'AMOUNT_CHANGE' | 'PARTIAL_RELEASE' | 'RELEASE' | 'CANCELLATION';
  effectiveAt: Date;
  garantedAmount: number | null;
}

const start = (issued: Issued): Folded => ({
  garantedAmount: issued.garantedAmount,
  expiresAt: issued.expiresAt,
  openClaim: null,
  ended: null,
  partiallyReleased: false,
  beneficiary: null,
  pending: null,
  lastSeq: 0,
});

/** What the fold reads of an amendment besides its type's fields: who recorded it, and whether it waited for consent. */
export type Recorded = Pick<Amendment, 'actorOrgId'> & { actor?: AmendmentActor; consent?: Consent | null };

/** Cents, so that amounts of two decimals compare and subtract exactly. */
const cents = (n: number) => Math.round(n * 100);

/**
 * Whether `a`, an issuer's amendment, would reduce the cover of the authority that took charge
 * of the guarantee: then it waits for the authority's consent (docs/authorities.md "Consent"). A
 * guarantee no authority took charge of keeps the issuer's word alone.
 */
export function needsConsent(f: Folded, a: Pick<NewAmendment, 'type' | 'garantedAmount'>, by: Pick<Recorded, 'actor'>): boolean {
  if ((by.actor ?? 'issuer') !== 'issuer' || f.beneficiary === null) return false;
  if (a.type === 'PARTIAL_RELEASE' || a.type === 'RELEASE' || a.type === 'CANCELLATION') return true;
  return a.type === 'AMOUNT_CHANGE' && f.garantedAmount !== null && a.garantedAmount !== null && cents(a.garantedAmount) < cents(f.garantedAmount);
}

/** The pending amendment as the amendment it is, to check and apply it on consent. */
const asAmendment = (p: Pending): NewAmendment => ({
  type: p.type,
  effectiveAt: p.effectiveAt,
  expiresAt: null,
  garantedAmount: p.garantedAmount,
  claimedAmount: null,
  paidAmount: null,
  reason: null,
  docs: [],
});

/** Why `a`, to be recorded by `by`, may not follow `f` (a 409), or undefined. */
function refusal(f: Folded, a: NewAmendment, by: Recorded): string | undefined {
  if (f.ended === 'RELEASED') return 'The guarantee was released: nothing may follow a RELEASE.';
  if (f.ended === 'CANCELLED') return 'The guarantee was cancelled: nothing may follow a CANCELLATION.';
  if (needsConsent(f, a, by) && f.pending) {
    return `Amendment ${f.pending.seq} waits for the contracting authority's answer: one change that reduces its cover at a time.`;
  }
  return typeRefusal(f, a, by);
}

/** The rules of `a`'s type after `f`. */
function typeRefusal(f: Folded, a: NewAmendment, by: Recorded): string | undefined {
  switch (a.type) {
    case 'EXTENSION':
      if (f.expiresAt && a.expiresAt && a.expiresAt <= f.expiresAt) return `expiresAt must be later than the current expiry, ${f.expiresAt.toISOString()}.`;
      return undefined;
    case 'PARTIAL_RELEASE':
      if (f.garantedAmount === null) return 'The guarantee has no amount to release part of.';
      if (a.garantedAmount !== null && cents(a.garantedAmount) >= cents(f.garantedAmount))
        return `garantedAmount must be lower than the current amount, ${f.garantedAmount}.`;
      return undefined;
    case 'CLAIM':
      if (f.beneficiary) return "A contracting authority has taken charge of the guarantee: a demand is its act (DEMAND), not the issuer's.";
      if (f.openClaim) return `A claim is open already (amendment ${f.openClaim.seq}): one at a time.`;
      if (f.garantedAmount === null) return 'The guarantee has no amount to claim against.';
      if (a.claimedAmount !== null && cents(a.claimedAmount) > cents(f.garantedAmount))
        return `claimedAmount must be at most the current amount, ${f.garantedAmount}.`;
      return undefined;
    case 'CLAIM_SETTLED':
    case 'CLAIM_REJECTED':
      if (!f.openClaim) return `${a.type} needs an open claim, and there is none.`;
      return undefined;
    case 'AMOUNT_CHANGE':
    case 'RELEASE':
    case 'CANCELLATION':
      return undefined;
    case 'BENEFICIARY_LINKED':
      if (f.beneficiary && f.beneficiary !== by.actorOrgId) return 'Another contracting authority has taken charge of the guarantee.';
      if (f.beneficiary) return 'The authority has taken charge of the guarantee already.';
      return undefined;
    case 'DEMAND':
      if (f.beneficiary === null || f.beneficiary !== by.actorOrgId)
        return 'Only the contracting authority that took charge of the guarantee may demand payment.';
      if (f.openClaim) return `A demand is open already (amendment ${f.openClaim.seq}): one at a time.`;
      if (f.garantedAmount === null) return 'The guarantee has no amount to demand against.';
      if (a.claimedAmount !== null && cents(a.claimedAmount) > cents(f.garantedAmount))
        return `claimedAmount must be at most the current amount, ${f.garantedAmount}.`;
      return undefined;
    case 'DEMAND_WITHDRAWN':
      if (!f.openClaim) return 'No demand is open to withdraw.';
      return undefined;
    case 'AMENDMENT_RESPONSE': {
      if (!f.pending || f.pending.seq !== a.amendmentSeq) {
        return `Amendment ${a.amendmentSeq} does not wait for an answer${f.pending ? ` (amendment ${f.pending.seq} does)` : ''}.`;
      }
      if (a.decision !== 'ACCEPT') return undefined;
      const later = typeRefusal({ ...f, pending: null }, asAmendment(f.pending), { actorOrgId: null, actor: 'issuer' });
      return later && `Amendment ${f.pending.seq} can no longer apply: ${later}`;
    }
  }
}

/** `f` after `a` (which must have been accepted), as amendment `seq`. */
function apply(f: Folded, a: Omit<FoldedAmendment, 'seq'>, seq: number): Folded {
  // Waiting for the authority's consent: recorded, and nothing changes until it accepts.
  if (a.consent) {
    const type = a.type as Pending['type'];
    return { ...f, lastSeq: seq, pending: { seq, type, effectiveAt: a.effectiveAt, garantedAmount: a.garantedAmount } };
  }
  return effect({ ...f, lastSeq: seq }, a, seq);
}

/** What `a` (amendment `seq`) changes in `next` (f with its lastSeq already set). */
function effect(next: Folded, a: Omit<FoldedAmendment, 'seq'>, seq: number): Folded {
  const f = next;
  switch (a.type) {
    case 'EXTENSION':
      return { ...next, expiresAt: a.expiresAt };
    case 'AMOUNT_CHANGE':
      return { ...next, garantedAmount: a.garantedAmount };
    case 'PARTIAL_RELEASE':
      return { ...next, garantedAmount: a.garantedAmount, partiallyReleased: true };
    // An ended guarantee has no claim open any more, nor an amendment waiting: nothing can settle it, nor fall due.
    case 'RELEASE':
      return { ...next, ended: 'RELEASED', openClaim: null, pending: null };
    case 'CANCELLATION':
      return { ...next, ended: 'CANCELLED', openClaim: null, pending: null };
    case 'CLAIM':
    case 'DEMAND':
      return { ...next, openClaim: { seq, claimedAmount: a.claimedAmount ?? 0, effectiveAt: a.effectiveAt } };
    case 'DEMAND_WITHDRAWN':
      return { ...next, openClaim: null };
    case 'AMENDMENT_RESPONSE': {
      const pending = f.pending;
      const answered = { ...next, pending: null };
      // Accepted: the amendment applies now, as its own seq (a RELEASE it was is the guarantee's end).
      return pending && a.decision === 'ACCEPT' ? effect(answered, { ...asAmendment(pending), actorOrgId: null }, pending.seq) : answered;
    }
    case 'CLAIM_SETTLED': {
      const amount = f.garantedAmount === null ? null : Math.max(0, cents(f.garantedAmount) - cents(a.paidAmount ?? 0)) / 100;
      return { ...next, garantedAmount: amount, openClaim: null };
    }
    case 'CLAIM_REJECTED':
      return { ...next, openClaim: null };
    case 'BENEFICIARY_LINKED':
      return { ...next, beneficiary: a.actorOrgId };
  }
}

/** Every amendment folded, whatever its effectiveAt: what the rules check a new amendment against. */
function fold(issued: Issued, amendments: readonly FoldedAmendment[]): Folded {
  return amendments.reduce((f, a) => apply(f, a, a.seq), start(issued));
}

/**
 * The fold at `at`: each amendment applies from its effectiveAt on, in seq order; until then
 * it is listed in `scheduled` and changes nothing. Three things apply when recorded, whatever
 * they say: the authority's server-dated acts (their effectiveAt is the time of receipt), an
 * amendment waiting for consent (it waits from then on, and its effect comes with the answer),
 * and the answer itself; an accepted amendment's effect applies from its own effectiveAt (an
 * earlier one, at once). Once every amendment's instant has passed this is `fold`: the state
 * the rules were checked against.
 */
function foldAt(issued: Issued, amendments: readonly FoldedAmendment[], at: Date): { fold: Folded; scheduled: Scheduled[] } {
  const scheduled: Scheduled[] = [];
  let f = start(issued);
  for (const a of amendments) {
    const pending = f.pending;
    if (a.type === 'AMENDMENT_RESPONSE' && a.decision === 'ACCEPT' && pending && pending.effectiveAt > at) {
      f = { ...f, lastSeq: a.seq, pending: null };
      scheduled.push({ seq: pending.seq, type: pending.type, effectiveAt: pending.effectiveAt });
    } else if (!a.consent && a.type !== 'AMENDMENT_RESPONSE' && a.effectiveAt > at) {
      f = { ...f, lastSeq: a.seq };
      scheduled.push({ seq: a.seq, type: a.type, effectiveAt: a.effectiveAt });
    } else {
      f = apply(f, a, a.seq);
    }
  }
  // In seq order (an accepted amendment's effect comes under its own seq, before its answer's).
  return { fold: f, scheduled: scheduled.sort((a, b) => a.seq - b.seq) };
}

function stateOf(f: Folded, issued: Issued, now: Date, scheduled: Scheduled[] = []): GuaranteeState {
  const expired = f.expiresAt !== null && f.expiresAt <= now && issued.isAutomaticRenewal !== true;
  const status: GuaranteeStatus =
    f.ended === 'CANCELLED'
      ? 'CANCELLED'
      : f.ended === 'RELEASED'
        ? 'RELEASED'
        : f.openClaim
          ? 'CLAIMED'
          : expired
            ? 'EXPIRED'
            : f.partiallyReleased
              ? 'PARTIALLY_RELEASED'
              : 'ACTIVE';
  return {
    status,
    garantedAmount: f.garantedAmount,
    expiresAt: f.expiresAt,
    openClaim: f.openClaim,
    claimDueAt: f.openClaim ? new Date(f.openClaim.effectiveAt.getTime() + CLAIM_TERM_MS) : null,
    lastSeq: f.lastSeq,
    beneficiary: f.beneficiary,
    pendingConsent: f.pending && { seq: f.pending.seq, type: f.pending.type },
    scheduled,
  };
}

/** The state of a guarantee registered as `issued`, after `amendments` (in seq order), at `now`: each applied from its effectiveAt (foldAt). */
export function stateAfter(issued: Issued, amendments: readonly FoldedAmendment[], now: Date): GuaranteeState {
  const { fold: f, scheduled } = foldAt(issued, amendments, now);
  return stateOf(f, issued, now, scheduled);
}

/** Why `a` may not be recorded after `amendments` (a 409's detail), or undefined. */
export function refusalOf(issued: Issued, amendments: readonly Amendment[], a: NewAmendment, by: Recorded = { actorOrgId: null }): string | undefined {
  return refusal(fold(issued, amendments), a, by);
}

// Folding on from a stored fold (guarantee_folds, issue 27): recording an amendment reads its
// guarantee's fold, not every amendment before it, and folds the one it adds.

/** The fold of a guarantee registered as `issued`, before any amendment (lastSeq 0). */
export function foldStart(issued: Issued): Folded {
  return start(issued);
}

/** An amendment as the fold reads it: its type's fields and its seq. */
export type FoldedAmendment = Pick<
  NewAmendment,
  'type' | 'effectiveAt' | 'expiresAt' | 'garantedAmount' | 'claimedAmount' | 'paidAmount' | 'amendmentSeq' | 'decision'
> &
  Recorded & { seq: number };

/**
 * `f` after `amendments`, which must follow it without a gap (seq f.lastSeq + 1, + 2...): an
 * error otherwise, so that a fold never skips an amendment nor counts one twice.
 */
export function foldFrom(f: Folded, amendments: readonly FoldedAmendment[]): Folded {
  return amendments.reduce((g, a) => {
    if (a.seq !== g.lastSeq + 1) throw new Error(`amendment ${a.seq} does not follow a fold at ${g.lastSeq}`);
    return apply(g, a, a.seq);
  }, f);
}

/** Why `a` may not follow the fold `f` (a 409's detail), or undefined: refusalOf from a stored fold. */
export function refusalAfter(f: Folded, a: NewAmendment, by: Recorded = { actorOrgId: null }): string | undefined {
  return refusal(f, a, by);
}

/**
 * The state of the fold `f` of a guarantee registered as `issued`, at `now`: stateAfter from a
 * stored fold. Only once no amendment of it is dated after `now`, so that every one has
 * applied (an accepted amendment's effect waits for that amendment's own effectiveAt, so the
 * latest effectiveAt bounds every instant foldAt waits for); before that, stateAfter over its
 * amendments.
 */
export function stateOfFold(f: Folded, issued: Issued, now: Date): GuaranteeState {
  return stateOf(f, issued, now);
}

/**
 * The amendments recorded (createdAt) by `at`: the longest prefix, in seq order, of those
 * recorded by then. A prefix, as seq is the order they were recorded in: a clock set back
 * between two recordings must not fold an amendment without the one before it.
 */
export function recordedBy(amendments: readonly Amendment[], at: Date): Amendment[] {
  const later = amendments.findIndex((a) => a.createdAt > at);
  return later < 0 ? [...amendments] : amendments.slice(0, later);
}

/**
 * The state a guarantee showed at `at` (what GET .../state answered then): only the amendments
 * recorded by `at` folded. (stateAfter folds every amendment it is given, whenever recorded.)
 */
export function stateRecordedBy(issued: Issued, amendments: readonly Amendment[], at: Date): GuaranteeState {
  return stateAfter(issued, recordedBy(amendments, at), at);
}

/** A state a guarantee showed, from the instant `at`. */
export interface Shown {
  at: Date;
  state: GuaranteeState;
}

/**
 * When a guarantee registered at `registeredAt` lapsed and had a claim overdue, up to `until`,
 * judging by what was recorded at each instant (stateRecordedBy), each with the state shown then:
 * - `expired`: each instant its cover lapsed, the state turning EXPIRED from covered (ACTIVE,
 *   PARTIALLY_RELEASED, or not yet registered: registered already expired). A claim open in
 *   between keeps what came before it: an expiry that passes while a claim is open lapses when
 *   the claim is closed; a guarantee expired, claimed, the claim closed, lapsed once. An
 *   extension to an expiry already passed is no lapse (it was lapsed). At most one per expiry.
 * - `claimOverdue`: each claim, the first instant it showed open past its due date.
 * A later amendment changes none of them: what was shown then stays shown.
 */
export function lapsesOf(issued: Issued, registeredAt: Date, amendments: readonly Amendment[], until: Date): { expired: Shown[]; claimOverdue: Shown[] } {
  // The state changes only at these instants: the registration, an amendment recorded, an expiry or a claim's due date passing.
  const instants = [
    registeredAt,
    issued.expiresAt,
    ...amendments.flatMap((a) => [
      a.createdAt,
      a.effectiveAt,
      a.type === 'EXTENSION' ? a.expiresAt : null,
      a.type === 'CLAIM' || a.type === 'DEMAND' ? new Date(a.effectiveAt.getTime() + CLAIM_TERM_MS) : null,
    ]),
  ].filter((t): t is Date => t !== null && t >= registeredAt && t <= until);
  const times = [...new Set(instants.map((t) => t.getTime()))].sort((a, b) => a - b);
  const expired: Shown[] = [];
  const claimOverdue: Shown[] = [];
  const overdue = new Set<number>();
  let lapsed = false;
  for (const time of times) {
    const at = new Date(time);
    const state = stateRecordedBy(issued, amendments, at);
    if (state.status === 'EXPIRED') {
      if (!lapsed) expired.push({ at, state });
      lapsed = true;
    } else if (state.status === 'ACTIVE' || state.status === 'PARTIALLY_RELEASED') {
      lapsed = false;
    }
    if (state.openClaim && state.claimDueAt && state.claimDueAt <= at && !overdue.has(state.openClaim.seq)) {
      overdue.add(state.openClaim.seq);
      claimOverdue.push({ at, state });
    }
  }
  return { expired, claimOverdue };
}

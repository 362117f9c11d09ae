// A guarantee's life after its registration (CONTRACT "Lifecycle: amendments, releases,
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
/** The contracting authority's acts: taking charge of the guarantee (BENEFICIARY_LINKED). */
export const AUTHORITY_AMENDMENT_TYPES = ['BENEFICIARY_LINKED'] as const;
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
  lastSeq: number;
}

const start = (issued: Issued): Folded => ({
  garantedAmount: issued.garantedAmount,
  expiresAt: issued.expiresAt,
  openClaim: null,
  ended: null,
  partiallyReleased: false,
  beneficiary: null,
  lastSeq: 0,
});

/** What the fold reads of an amendment besides its type's fields: who recorded it. */
export type Recorded = Pick<Amendment, 'actorOrgId'>;

/** Cents, so that amounts of two decimals compare and subtract exactly. */
const cents = (n: number) => Math.round(n * 100);

/** Why `a`, to be recorded by `by`, may not follow `f` (a 409), or undefined. */
function refusal(f: Folded, a: NewAmendment, by: Recorded): string | undefined {
  if (f.ended === 'RELEASED') return 'The guarantee was released: nothing may follow a RELEASE.';
  if (f.ended === 'CANCELLED') return 'The guarantee was cancelled: nothing may follow a CANCELLATION.';
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
  }
}

/** `f` after `a` (which must have been accepted), as amendment `seq`. */
function apply(f: Folded, a: NewAmendment & Recorded, seq: number): Folded {
  const next = { ...f, lastSeq: seq };
  switch (a.type) {
    case 'EXTENSION':
      return { ...next, expiresAt: a.expiresAt };
    case 'AMOUNT_CHANGE':
      return { ...next, garantedAmount: a.garantedAmount };
    case 'PARTIAL_RELEASE':
      return { ...next, garantedAmount: a.garantedAmount, partiallyReleased: true };
    // An ended guarantee has no claim open any more: nothing can settle it, nor fall due.
    case 'RELEASE':
      return { ...next, ended: 'RELEASED', openClaim: null };
    case 'CANCELLATION':
      return { ...next, ended: 'CANCELLED', openClaim: null };
    case 'CLAIM':
      return { ...next, openClaim: { seq, claimedAmount: a.claimedAmount ?? 0, effectiveAt: a.effectiveAt } };
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

function fold(issued: Issued, amendments: readonly Amendment[]): Folded {
  return amendments.reduce((f, a) => apply(f, a, a.seq), start(issued));
}

function stateOf(f: Folded, issued: Issued, now: Date): GuaranteeState {
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
  };
}

/** The state of a guarantee registered as `issued`, after `amendments` (in seq order), at `now`. */
export function stateAfter(issued: Issued, amendments: readonly Amendment[], now: Date): GuaranteeState {
  return stateOf(fold(issued, amendments), issued, now);
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
export type FoldedAmendment = Pick<NewAmendment, 'type' | 'effectiveAt' | 'expiresAt' | 'garantedAmount' | 'claimedAmount' | 'paidAmount'> &
  Recorded & { seq: number };

/**
 * `f` after `amendments`, which must follow it without a gap (seq f.lastSeq + 1, + 2...): an
 * error otherwise, so that a fold never skips an amendment nor counts one twice.
 */
export function foldFrom(f: Folded, amendments: readonly FoldedAmendment[]): Folded {
  return amendments.reduce((g, a) => {
    if (a.seq !== g.lastSeq + 1) throw new Error(`amendment ${a.seq} does not follow a fold at ${g.lastSeq}`);
    return apply(g, { ...a, reason: null, docs: [] }, a.seq);
  }, f);
}

/** Why `a` may not follow the fold `f` (a 409's detail), or undefined: refusalOf from a stored fold. */
export function refusalAfter(f: Folded, a: NewAmendment, by: Recorded = { actorOrgId: null }): string | undefined {
  return refusal(f, a, by);
}

/** The state of the fold `f` of a guarantee registered as `issued`, at `now`: stateAfter from a stored fold. */
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
      a.type === 'EXTENSION' ? a.expiresAt : null,
      a.type === 'CLAIM' ? new Date(a.effectiveAt.getTime() + CLAIM_TERM_MS) : null,
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

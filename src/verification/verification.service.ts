// Public verification: a contracting authority's codes find the guarantees they identify, each
// with its issuer, what it covers now (the state), its record as registered, its proof, its
// amendments with theirs, and its documents' verdicts, and a signed receipt. A miss is one answer whatever its kind (404, NotFoundError). Each match is
// counted for its issuer and announced (`guarantee.verified`), in a transaction shared with the
// verifications of the same moment (src/shared/batch.ts), before the answer leaves.
import type { KeyObject } from 'node:crypto';
import type { SignatureVerdict } from '../files/p7m/p7m.verifier.js';
import type { AmendmentRepository } from '../guarantees/amendment.repository.js';
import { toAmendmentView, toStateView } from '../guarantees/amendment.serializer.js';
import { issuedOf, stateAfter } from '../guarantees/amendments.js';
import type { GuaranteeRepository, VerificationHit } from '../guarantees/guarantee.repository.js';
import { toV2 } from '../guarantees/guarantee.serializer.js';
import type { GuaranteeV2 } from '../guarantees/guarantee.schemas.js';
import type { GuaranteeRecord } from '../guarantees/guarantee.types.js';
import { guaranteeDigest } from '../notarization/canonical.js';
import type { ProofService } from '../notarization/notarization.service.js';
import { createBatcher } from '../shared/batch.js';
import { NotFoundError, UnavailableError } from '../shared/errors.js';
import type { Outbox } from '../shared/events/outbox.js';
import type { FileRepository } from '../files/file.repository.js';
import { createCheckCodeJudge, type CheckCodeJudge } from './check-code.js';
import { signReceipt, type ReceiptPayload } from './receipt.js';
import { RetiredKeyError, type PublicJwk, type SigningKey, type SigningKeys } from './signing-keys.js';
import type { VerificationRepository } from './verification.repository.js';
import type { IssuerVerificationView, VerificationMatch, VerificationRequest, VerificationResult } from './verification.schemas.js';

export const NO_MATCH = 'No guarantee matches these codes.';

/**
 * The most amendments one match lists (the latest): a guarantee's history is unbounded, a
 * verification's work is not. Those before are counted (earlierAmendments); the first listed
 * one's proof links them (its previous digest), and the issuer's API pages the whole history.
 */
export const MAX_PUBLIC_AMENDMENTS = 100;

/** Under load, the verifications' group commits start at most this often (a verification waits at most this much more). */
export const GROUP_COMMIT_INTERVAL_MS = 6;

/** The URL a contracting authority opens (the QR code's): the codes travel in the fragment, which no server logs. */
export function verificationUrl(publicBaseUrl: string, g: Pick<GuaranteeRecord, 'details'>): string {
  const fragment = new URLSearchParams({ policyNumber: g.details.policyNumber ?? '', checkCode: g.details.checkCode ?? '' });
  return `${publicBaseUrl}/verify#${fragment.toString()}`;
}

/** The judge of the process's public verifications and issuer views (its estimates remembered). */
const defaultJudge = createCheckCodeJudge();

/** Why a guarantee cannot be verified publicly; undefined when it can. */
export function notVerifiableReason(g: Pick<GuaranteeRecord, 'details'>, judge: CheckCodeJudge = defaultJudge): string | undefined {
  if (!g.details.policyNumber) return 'The guarantee has no policyNumber: a contracting authority needs it to verify the guarantee.';
  if (!g.details.checkCode) return 'The guarantee has no checkCode: a contracting authority needs it to verify the guarantee.';
  const weakness = judge(g.details.checkCode, { policyNumber: g.details.policyNumber, cig: g.details.cig });
  return weakness && `${weakness} It never matches a public verification: register the guarantee again with a stronger checkCode.`;
}

/** The record's canonical digest (from its v2 shape): it exists once every document has its checksum. */
const digestOf = (g: GuaranteeV2): string | null => (g.docs.every((d) => d.checksum !== null) ? guaranteeDigest(g) : null);

/** An Italian fiscal code (16 characters, or a company's 11 digits), with the prefixes certificates give it. */
const FISCAL_CODE = /(?:TINIT-|IT:)?\b(?:[A-Z]{6}[0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z]|[0-9]{11})\b/gi;

/** One attribute of a distinguished name as the verdict prints it (Node's lines joined with ', '), cut at a multi-valued RDN's ' + '. */
function attributeOf(name: string, type: string): string | null {
  const m = new RegExp(`(?:^|,\\s*)${type}=(.*?)(?=,\\s*[A-Za-z][\\w.]*=|$)`).exec(name);
  return m?.[1]?.split(' + ')[0] ?? null;
}

/**
 * What the public may read of a name: never a fiscal code. A CNS card's CN is the holder's fiscal
 * code, '/', and the card's serial and hash: what is left is one token of digits, no name at all.
 */
const withoutFiscalCodes = (s: string | null): string | null => {
  const cleaned = s
    ?.replace(FISCAL_CODE, '')
    .replace(/[/\s,;:-]+$/, '')
    .replace(/^[/\s,;:-]+/, '')
    .trim();
  if (!cleaned || (cleaned !== s?.trim() && /^\S*\d\S*$/.test(cleaned))) return null;
  return cleaned;
};

/** A certificate subject's common name (`CN=...`), the only thing of a signer's identity the public sees. */
export function commonNameOf(subject: string | null): string | null {
  return subject ? withoutFiscalCodes(attributeOf(subject, 'CN')) : null;
}

/** Who issued a signer's certificate, as the public sees it: its common name and organization only (a self-signed certificate's issuer is its subject). */
export function issuerNameOf(issuer: string | null): string | null {
  if (!issuer) return null;
  const parts = [attributeOf(issuer, 'CN'), attributeOf(issuer, 'O')].map(withoutFiscalCodes).filter((p): p is string => p !== null);
  return parts.length ? [...new Set(parts)].join(', ') : null;
}

function documentsOf(hit: VerificationHit, all: boolean): VerificationMatch['documents'] {
  return hit.record.docs.flatMap((doc, i) => {
    const file = hit.files[i];
    // Shown only when its file says it is public (a document without its file is not), but to the authority that took charge.
    if (!all && !file?.public) return [];
    const verdict = file?.signature ? (JSON.parse(file.signature) as SignatureVerdict) : null;
    return [
      {
        type: doc.type,
        key: doc.key,
        originalFileName: doc.originalFileName,
        checksum: doc.checksum,
        status: file?.status ?? null,
        signature: verdict && {
          outcome: verdict.outcome,
          signers: verdict.signers.map((s) => ({
            // Never the fiscal code, nor the rest of the subject: a signer is a person.
            commonName: commonNameOf(s.subject),
            issuer: issuerNameOf(s.issuer),
            signingTime: s.signingTime,
            timestampedAt: s.timestamp?.valid ? s.timestamp.time : null,
            qualified: s.qualified ?? false,
            trustedList: s.trustService
              ? { territory: s.trustService.territory, provider: s.trustService.provider, qualified: s.trustService.qualified }
              : null,
            counterSignature: s.counterSignatureOf !== undefined,
            // Valid: every check but the chain's, which is shown beside it.
            chain: s.chain,
            valid: s.problems.every((problem) => problem.startsWith('chain not trusted')),
          })),
        },
      },
    ];
  });
}

export function createVerificationService(deps: {
  guarantees: Pick<GuaranteeRepository, 'findForVerification'>;
  amendments: Pick<AmendmentRepository, 'page' | 'stateOf'>;
  /** Which documents may be shown (registrations' and amendments'). */
  files: Pick<FileRepository, 'publicAmong'>;
  proofs: ProofService;
  repo: VerificationRepository;
  outbox: Outbox;
  keys: Pick<SigningKeys, 'current' | 'publicKeys'>;
  /** VERIFICATION_SIGNING_KEY; without it, the generated development key signs. */
  configuredKey: KeyObject | undefined;
  publicBaseUrl: string;
  /** How often the signing key's state is read again (a retirement seen within it). */
  keyRecheckMs?: number;
  now?: () => Date;
}) {
  const { guarantees, amendments, files, proofs, repo, outbox, publicBaseUrl } = deps;
  const judge = createCheckCodeJudge();
  const now = deps.now ?? (() => new Date());
  // Resolved on first use (its public key is then recorded for the JWKS), and again every
  // keyRecheckMs and after a failure: a key retired while this process runs (cli
  // verification-key retire) stops signing within that time. The development key is then
  // replaced by a new one; a configured one refuses (503) until the next is configured.
  // A check that fails otherwise (the database away a moment) keeps the key it had.
  const keyRecheckMs = deps.keyRecheckMs ?? 30_000;
  let key: { at: number; value: Promise<SigningKey> } | undefined;
  let lastGood: SigningKey | undefined;
  const signingKey = (): Promise<SigningKey> => {
    if (!key || Date.now() - key.at >= keyRecheckMs) {
      const value: Promise<SigningKey> = deps.keys.current(deps.configuredKey).then(
        (k) => (lastGood = k),
        (err: unknown) => {
          // A retirement is remembered for keyRecheckMs, as a key is (each verification need not ask again).
          if (err instanceof RetiredKeyError) {
            lastGood = undefined;
            throw new UnavailableError("The registry's receipt signing key was retired; its operator must configure the next one.", err);
          }
          if (key?.value === value) key = undefined;
          if (lastGood) return lastGood;
          throw err;
        },
      );
      key = { at: Date.now(), value };
    }
    return key.value;
  };

  // The verifications that arrive while the previous ones are written share the next transaction
  // (group commit): their counts in one statement, their events and deliveries in others, all
  // sent in one round trip (a script). Under load the transactions start at least 6 ms apart, so
  // that more verifications share each one's fixed cost (parsing, commit): about 19 a
  // transaction instead of 14 in the bench, and 0.75 of get-by-id against 0.69 when each started
  // as soon as the previous one ended (8 rounds each, docs/benchmarks.md).
  const record = createBatcher(
    async (items: Array<{ records: GuaranteeRecord[]; at: Date }>) => {
      const counts = new Map<string, number>();
      const events: Array<{ orgId: string; data: unknown }> = [];
      for (const { records, at } of items) {
        for (const g of records) {
          counts.set(g.id, (counts.get(g.id) ?? 0) + 1);
          events.push({ orgId: g.orgId, data: { guaranteeId: g.id, verifiedAt: at.toISOString() } });
        }
      }
      const at = items.reduce((latest, i) => (i.at > latest ? i.at : latest), items[0]?.at ?? now());
      const fannedOut = outbox.fannedOut('guarantee.verified', events, at);
      const results = await repo.script([repo.addStatement(counts, at), ...fannedOut.statements]);
      fannedOut.dispatched(results.slice(1));
      return items.map(() => undefined);
    },
    { maxItems: 500, serial: true, minIntervalMs: GROUP_COMMIT_INTERVAL_MS },
  );

  /**
   * One match as the public sees it: its documents that are public only, the others counted;
   * `all`: as the contracting authority that took charge of it sees it, every document.
   */
  async function matchOf(hit: VerificationHit, verifiedAt: Date, all = false): Promise<VerificationMatch> {
    const { record } = hit;
    // The state kept folded (one row, however long the history), then the amendments up to its
    // lastSeq only: one recorded between the two reads would otherwise be listed without being
    // in the state, and the page's fold of the list would disagree with it.
    const readHistory = async () => {
      // Most guarantees have no amendment: the lookup said how many there are, so none costs a round trip.
      if (hit.lastSeq === 0) return { folded: undefined, history: [] };
      const state = await amendments.stateOf(record.id, verifiedAt);
      const last = state?.lastSeq ?? 0;
      const page = last > 0 ? await amendments.page(record.id, Math.max(0, last - MAX_PUBLIC_AMENDMENTS), MAX_PUBLIC_AMENDMENTS) : { amendments: [] };
      return { folded: state, history: page.amendments.filter((a) => a.seq <= last) };
    };
    const [proof, { folded, history: listed }] = await Promise.all([
      record.notarizationStatus === 'COMPLETE' ? proofs.proof(record.orgId, record) : null,
      readHistory(),
    ]);
    const history = listed;
    const amendmentKeys = history.flatMap((a) => a.docs.map((d) => d.key));
    const [amendmentProofs, shown] = await Promise.all([
      history.length ? proofs.amendmentProofs(history) : [],
      all ? new Set(amendmentKeys) : files.publicAmong(amendmentKeys),
    ]);
    const documents = documentsOf(hit, all);
    const shownKeys = new Set(documents.map((d) => d.key));
    const registered = toV2(record);
    return {
      issuer: hit.issuer,
      state: toStateView(folded ?? stateAfter(issuedOf(record), [], verifiedAt)),
      guarantee: { ...registered, docs: registered.docs.filter((d) => shownKeys.has(d.key)) },
      proof: proof?.notarizationStatus === 'COMPLETE' ? proof : null,
      amendments: history.map((a, i) => {
        const view = toAmendmentView(a);
        const docs = view.docs.filter((d) => shown.has(d.key));
        return { ...view, docs, privateDocuments: view.docs.length - docs.length, proof: amendmentProofs[i] ?? null };
      }),
      earlierAmendments: history[0] ? history[0].seq - 1 : 0,
      documents,
      privateDocuments: registered.docs.length - documents.length,
    };
  }

  /**
   * The guarantees the codes identify (none when they identify none). A code too weak to open a
   * guarantee is sought with a key that finds nothing: its miss costs what any miss costs, found
   * or not (the estimate is the request's, paid by all).
   */
  async function find(q: VerificationRequest): Promise<VerificationHit[]> {
    const weak = judge(q.checkCode, { policyNumber: q.policyNumber, cig: q.cig ?? null }) !== undefined;
    const found = await guarantees.findForVerification({
      policyNumber: q.policyNumber,
      checkCode: q.checkCode,
      cig: q.cig ?? null,
      garantedAmount: q.garantedAmount === undefined ? null : q.garantedAmount.toFixed(2),
      unmatchable: weak,
    });
    // The query compares exactly already; this says so once more, in the language of the
    // contract, and judges each record's code with its own CIG (the request may not name it).
    return found.filter(
      (h) =>
        h.record.details.policyNumber === q.policyNumber && h.record.details.checkCode === q.checkCode && notVerifiableReason(h.record, judge) === undefined,
    );
  }

  return {
    async verify(q: VerificationRequest): Promise<VerificationResult> {
      const hits = await find(q);
      if (!hits.length) throw new NotFoundError(NO_MATCH);

      const verifiedAt = now();
      const matches = await Promise.all(hits.map((hit) => matchOf(hit, verifiedAt)));
      const payload: ReceiptPayload = {
        verifiedAt: verifiedAt.toISOString(),
        query: {
          policyNumber: q.policyNumber,
          ...(q.cig !== undefined && { cig: q.cig }),
          ...(q.garantedAmount !== undefined && { garantedAmount: q.garantedAmount }),
        },
        matches: matches.map((m, i) => ({
          guaranteeId: m.guarantee.id,
          // Of the record as registered, its private documents included.
          digest: m.proof?.digest ?? digestOf(toV2((hits[i] as VerificationHit).record)),
          notarizationStatus: m.guarantee.notarizationStatus,
          txHash: m.guarantee.txHash,
          status: m.state.status,
          lastSeq: m.state.lastSeq,
          // Where the record's leaf is in the transparency log, and the checkpoint (cosigned) that holds it.
          ...(m.proof?.log && { log: m.proof.log }),
        })),
      };
      // The key first: a verification whose receipt could not be signed is not counted.
      const signer = await signingKey();
      await record({ records: hits.map((h) => h.record), at: verifiedAt });
      // Signed once recorded (src/verification/receipt.ts: in this thread, the cheapest on the whole).
      const receipt = signReceipt(signer, payload);
      return { verifiedAt: payload.verifiedAt, matches, receipt };
    },

    /** Every public key that has signed receipts, the current one included. */
    async publicKeys(): Promise<PublicJwk[]> {
      // The current key is recorded first; a retired one signs nothing, but the set still says it is retired.
      await signingKey().catch((err: unknown) => {
        if (!(err instanceof UnavailableError)) throw err;
      });
      return deps.keys.publicKeys();
    },

    urlOf: (record: GuaranteeRecord): string => verificationUrl(publicBaseUrl, record),

    /** The guarantee as the contracting authority that took charge of it sees it: a verification's match, every document shown. */
    partyView: (hit: VerificationHit, at: Date): Promise<VerificationMatch> => matchOf(hit, at, true),

    /** The guarantees the codes identify, as a verification finds them (a contracting authority taking charge). */
    find,

    /** What the issuer sees of its guarantee's public verification. */
    async issuerView(record: GuaranteeRecord): Promise<IssuerVerificationView> {
      const reason = notVerifiableReason(record, judge);
      const { count, lastAt } = await repo.countOf(record.id);
      return {
        verifiable: reason === undefined,
        ...(reason !== undefined && { reason }),
        url: verificationUrl(publicBaseUrl, record),
        verifications: { count, lastAt: lastAt?.toISOString() ?? null },
      };
    },
  };
}

export type VerificationService = ReturnType<typeof createVerificationService>;

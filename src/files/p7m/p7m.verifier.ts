// The .p7m check: a CMS SignedData (CAdES) envelope, possibly nested, in DER, PEM or bare
// Base64, judged signer by signer. node-forge reads the ASN.1 structure only; node:crypto does
// the hashing, the certificates and the signature arithmetic (forge loads only RSA keys).
// Pure and synchronous: run it off the event loop (p7m.task.ts) for large inputs.
import { type X509Certificate } from 'node:crypto';
import { SchemeProblem, hashOf, newHash, sameSignatureAlgorithm, schemeOf, verifySignature, type HashName, type Scheme } from './p7m.algorithms.js';
import {
  CONTEXT,
  LimitError,
  MalformedError,
  T,
  UNIVERSAL,
  algorithm,
  bytes,
  derOf,
  is,
  kids,
  malformed,
  octets,
  oid,
  parseExact,
  prim,
  seq,
  smallInt,
  timeOf,
  walkTlv,
  type NodeBudget,
  type Node,
} from './p7m.asn1.js';
import { byIssuerSerial, bySubjectKeyId, canonicalName, chainEnds, fiscalCodeOf, hex, oneLine, validAt, type EnvelopeCert } from './p7m.certs.js';
import { ID_DATA, contentOf, decode, readEnvelope, type Content, type Envelope } from './p7m.envelope.js';
import { isPdf, pdfSignatures, type PdfSignature } from './pades.js';
import { modificationsAfter, type AfterSignature } from './pdf/pdf.changes.js';
import { revisionEnds } from './pdf/pdf.revision.js';
import { MAX_ENVELOPE_BYTES } from './p7m.limits.js';
import { readTimestamped } from './p7m.timestamped.js';
import {
  anchorsOf,
  checksChains,
  judgeAnchors,
  qualifiedPerList,
  qualifiedTsa,
  statusName,
  storeAnchorsOf,
  trustOf,
  type ListedService,
  type Trust,
} from './p7m.trust.js';

export { loadTrustAnchors } from './p7m.certs.js';

/** Bounds and context of one verification. */
export interface VerifyOptions {
  /** Trust anchors (roots); intermediates come from the envelope. Undefined or empty: chains are not checked. */
  trustAnchors?: readonly X509Certificate[];
  /** Services of imported EU trusted lists: a chain may end at one while its status allowed it. */
  trustServices?: readonly ListedService[];
  /** The instant certificates are checked at when a signer has no signingTime attribute; default: now. */
  now?: Date;
  /** Inputs above this many bytes are refused (a verdict, not an error); default MAX_ENVELOPE_BYTES. */
  maxBytes?: number;
  /** ASN.1 nodes allowed over all levels, counted before parsing; default 200,000. */
  maxNodes?: number;
  /** Nested envelope levels allowed; default 4. */
  maxNesting?: number;
  /** Bytes a PDF's signatures may hash together; default MAX_PDF_HASHED_BYTES. */
  maxPdfHashedBytes?: number;
  /** Time a PDF's signatures may take together; default PDF_TIME_BUDGET_MS. */
  pdfTimeBudgetMs?: number;
}

/** The options as the checks below receive them: the time of the check fixed once. */
type CheckOptions = VerifyOptions & { now: Date };

/** The outcome of a .p7m check, as stored with the file and shown to API clients (JSON-safe). */
export interface SignatureVerdict {
  /** 'signed': every signer at every level passed and, when trust anchors were given, every chain is trusted. */
  outcome: 'signed' | 'not-signed';
  /** Why not signed, one sentence. */
  reason?: string;
  /** How the outermost envelope was encoded; absent when the input is not an envelope. */
  encoding?: 'der' | 'pem' | 'base64';
  /** Nested envelope levels found (0 when not an envelope). */
  levels: number;
  chain: 'checked' | 'not-checked';
  /** Signers of all levels, outermost first. */
  signers: SignerVerdict[];
  /** The container the signatures came in: `.tsd` (RFC 5544), `.m7m` (S/MIME bundle) or a signed PDF (then `level` is the signature's number). */
  container?: 'tsd' | 'm7m' | 'pdf';
  /** A signed PDF's signatures in file order, what changed after each, and whether anything was written after the last one. */
  pdf?: { signatures: PdfSignatureVerdict[]; modifiedAfterLastSignature: boolean };
  /**
   * The container's timestamps over the envelope, outermost first (a PDF's document
   * timestamps in file order). One that fails is reported here and in `notes`, and decides
   * nothing: the signatures are then judged without it.
   */
  timestamps?: TimestampVerdict[];
  /** What was found and decided nothing, e.g. a broken timestamp, ignored. */
  notes?: string[];
}

/** One SignerInfo, judged. A signer passes when `problems` is empty. */
export interface SignerVerdict {
  /** 1 = outermost envelope. */
  level: number;
  subject: string | null;
  /** The Italian fiscal code in the certificate's subject (serialNumber TINIT-...), when it carries one. */
  fiscalCode?: string | null;
  /** The certificate says it is EU qualified (QcCompliance; its issuer's right to say so is the trusted list's to tell). */
  qualified?: boolean;
  /** The certificate says its key is in a qualified signature creation device (QcSSCD). */
  qualifiedDevice?: boolean;
  issuer: string | null;
  serialNumber: string | null;
  /**
   * ISO 8601: the time the signer claims (the signingTime signed attribute, or a PDF signature
   * dictionary's /M). Shown as claimed; it never decides (see `judgedAt`).
   */
  signingTime: string | null;
  /** e.g. 'sha256' (the OID when unknown). */
  digestAlgorithm: string | null;
  /** 'rsa' (PKCS#1 v1.5), 'rsa-pss' or 'ecdsa' (the OID when unknown). */
  signatureAlgorithm: string | null;
  /** The messageDigest attribute equals the content's digest (without signed attributes: same as signatureValid). */
  digestMatches: boolean;
  signatureValid: boolean;
  /** The certificate was valid at `judgedAt`. */
  certificateValid: boolean;
  /**
   * The time the certificate and its chain were judged at, and why that one: the earliest time
   * a verified RFC 3161 timestamp proves the signature existed by (its own signature
   * timestamp, the timestamp of a .tsd or .m7m around it, a PDF's document timestamp after it),
   * or else the time of the check. A claimed signing time never moves it: whoever holds the key
   * of an expired certificate can claim any time.
   */
  judgedAt?: JudgedAt;
  /** What was found and decided nothing, e.g. a broken signature timestamp, ignored. */
  notes?: string[];
  chain: 'trusted' | 'untrusted' | 'not-checked';
  /**
   * The imported trusted list's service the chain ends at, when it ends at one: its status at
   * the signing time, and whether the list makes the certificate qualified (issued by a CA/QC
   * service, and the certificate claims QcCompliance).
   */
  trustService?: { territory: string; provider: string; name: string; status: string; qualified: boolean };
  /**
   * For a counter-signature (RFC 5652 §11.4): the index in `signers` of the signer whose
   * signature it signs. Absent for a signer of the content.
   */
  counterSignatureOf?: number;
  /**
   * The RFC 3161 signature timestamp (unsigned attribute) the signer was judged with: the
   * earliest that verifies. When none verifies, the first, with `valid` false: a broken
   * timestamp is reported (in `notes` too) and ignored, the signer then judged without it.
   */
  timestamp?: TimestampVerdict;
  problems: string[];
}

/** One signature (or document timestamp) of a PDF: what it covers and what changed after it. */
export interface PdfSignatureVerdict {
  subFilter: string | null;
  /** Its signed bytes reach the end of the file (white space aside): nothing was written after it. */
  coversWholeFile: boolean;
  /** The revision it signed (1: the file's first), and how many bytes its ByteRange covers. */
  revision: number;
  coveredBytes: number;
  /** What the updates after it changed, in words ("a signature", "validation data (a Document Security Store)", ...). */
  changesAfter: string[];
  /** Every update after it is one PAdES allows (within the certification's DocMDP level and FieldMDP locks). */
  intact: boolean;
  /** Why not, when not: the first change no rule allows. */
  notIntactBecause?: string;
}

/** The time a signer was judged at (see {@link SignerVerdict.judgedAt}). */
export interface JudgedAt {
  /** ISO 8601. */
  time: string;
  by: 'signature-timestamp' | 'container-timestamp' | 'document-timestamp' | 'check';
  /** One sentence, e.g. "judged at 2026-11-27T10:00:00.000Z: no timestamp proves an earlier time". */
  why: string;
}

/** A time a timestamp around a signature proves it existed by, and which timestamp. */
interface Proof {
  at: Date;
  by: 'container-timestamp' | 'document-timestamp';
  /** e.g. "the .tsd's timestamp", "document timestamp 3 (PDF signature 4)". */
  what: string;
}

/** An RFC 3161 timestamp token, judged. */
export interface TimestampVerdict {
  /** ISO 8601: the TSA's genTime. */
  time: string | null;
  /** The TSA certificate's subject. */
  tsa: string | null;
  /** 'trusted' when the TSA's chain reaches a trust anchor. */
  chain: 'trusted' | 'untrusted' | 'not-checked';
  /** The trusted list's service the TSA's chain ends at, when it ends at one (qualified: a TSA/QTST service). */
  trustService?: SignerVerdict['trustService'];
  /** The token's signature verifies, its imprint is the signature's, the TSA certificate may timestamp. */
  valid: boolean;
  problems: string[];
}

const ATTR = {
  counterSignature: '1.2.840.113549.1.9.6',
  signatureTimestamp: '1.2.840.113549.1.9.16.2.14',
  contentType: '1.2.840.113549.1.9.3',
  messageDigest: '1.2.840.113549.1.9.4',
  signingTime: '1.2.840.113549.1.9.5',
  signingCertificate: '1.2.840.113549.1.9.16.2.12',
  signingCertificateV2: '1.2.840.113549.1.9.16.2.47',
  algorithmProtection: '1.2.840.113549.1.9.52',
};

/**
 * Verifies a .p7m. Never throws and never runs unbounded: whatever the bytes, the answer is a
 * verdict, 'signed' only when every signer at every level verifies.
 */
export function verifyP7m(input: Uint8Array, options: VerifyOptions = {}): SignatureVerdict {
  const trust = trustOf(options.trustAnchors, options.trustServices);
  const found: Found = { levels: 0, signers: [] };
  const maxNodes = options.maxNodes ?? 200_000;
  const budget: NodeBudget = { remaining: maxNodes };
  let reason: string | undefined;
  try {
    // One time of the check for the whole verification (signers, timestamps, lists' freshness).
    reason = checkContainer(input, { ...options, now: options.now ?? new Date() }, trust, found, budget);
  } catch (err) {
    reason = err instanceof LimitError ? `envelope too complex (more than ${maxNodes} ASN.1 nodes)` : `malformed envelope: ${short(err)}`;
  }
  return {
    outcome: reason === undefined ? 'signed' : 'not-signed',
    ...(reason === undefined ? {} : { reason }),
    ...(found.encoding ? { encoding: found.encoding } : {}),
    levels: found.levels,
    chain: checksChains(trust) ? 'checked' : 'not-checked',
    signers: found.signers,
    ...(found.container && { container: found.container }),
    ...(found.timestamps && { timestamps: found.timestamps }),
    ...(found.pdf && { pdf: found.pdf }),
    ...(found.notes && { notes: found.notes }),
  };
}

interface Found {
  notes?: string[];
  encoding?: 'der' | 'pem' | 'base64';
  levels: number;
  signers: SignerVerdict[];
  container?: 'tsd' | 'm7m' | 'pdf';
  timestamps?: TimestampVerdict[];
  pdf?: SignatureVerdict['pdf'];
}

/** SubFilters whose /Contents is a detached CMS over the ByteRange (adbe.pkcs7.sha1 signs a digest instead: not accepted). */
const DETACHED_SUBFILTERS = new Set(['adbe.pkcs7.detached', 'ETSI.CAdES.detached']);
/** A document timestamp's SubFilter (ETSI EN 319 142-1, PAdES-LTA). */
const DOCUMENT_TIMESTAMP = 'ETSI.RFC3161';
/**
 * The bytes a PDF's signatures may hash together: each hashes (nearly) the whole file, so a
 * file of n signatures costs n times its size. 1 GiB is a 100 MB file signed ten times, about
 * 3 s of SHA-256 here; the count of signatures is not what is bounded (real documents carry
 * more than any small number).
 */
export const MAX_PDF_HASHED_BYTES = 1024 * 1024 * 1024;
/** The time a PDF's signatures may take together, checked before each. */
export const PDF_TIME_BUDGET_MS = 30_000;

/**
 * A signed PDF. Each signature has one SignerInfo (ISO 32000, PAdES), verified over its
 * ByteRange as a .p7m is; its signers' `level` is its number. Document timestamps are verified
 * first: one that verifies proves every signature before it existed by its time (PAdES-LTA),
 * one that fails is reported and decides nothing. A signature vouches for the revision it
 * signed: every update after it must be one PAdES allows (pdf/pdf.changes.ts), or it is not
 * intact and the file is not Signed, whoever signed the update (the incremental-saving attack).
 */
function checkPdf(pdf: Buffer, options: CheckOptions, trust: Trust, found: Found, budget: NodeBudget): string | undefined {
  found.container = 'pdf';
  let signatures: PdfSignature[];
  try {
    signatures = pdfSignatures(pdf);
  } catch (err) {
    return `malformed PDF signature: ${short(err)}`;
  }
  if (signatures.length === 0) {
    found.pdf = { signatures: [], modifiedAfterLastSignature: false };
    return 'the PDF has no signature';
  }
  // What changed after each signature, and whether PAdES allows it (pdf/pdf.changes.ts). A
  // single signature over the whole file has nothing after it.
  const analysed: AfterSignature[] =
    signatures.length === 1 && signatures[0]!.coversWholeFile
      ? [{ revision: revisionEnds(pdf).length || 1, changesAfter: [] }]
      : modificationsAfter(
          pdf,
          signatures.map((sig) => sig.byteRange),
          { deadline: Date.now() + (options.pdfTimeBudgetMs ?? PDF_TIME_BUDGET_MS) },
        );
  found.pdf = {
    signatures: signatures.map((s, i) => ({
      subFilter: s.subFilter,
      coversWholeFile: s.coversWholeFile,
      revision: analysed[i]!.revision,
      coveredBytes: s.byteRange[1] + s.byteRange[3],
      changesAfter: analysed[i]!.changesAfter,
      intact: analysed[i]!.violation === undefined,
      ...(analysed[i]!.violation !== undefined && { notIntactBecause: analysed[i]!.violation }),
    })),
    modifiedAfterLastSignature: !signatures[signatures.length - 1]!.coversWholeFile,
  };
  const hashed = signatures.reduce((n, sig) => n + sig.byteRange[1] + sig.byteRange[3], 0);
  const maxHashed = options.maxPdfHashedBytes ?? MAX_PDF_HASHED_BYTES;
  if (hashed > maxHashed) return `the PDF's ${signatures.length} signatures cover ${hashed} bytes together, more than ${maxHashed}`;
  const deadline = Date.now() + (options.pdfTimeBudgetMs ?? PDF_TIME_BUDGET_MS);
  const late = (): string => `the PDF's signatures took more than ${(options.pdfTimeBudgetMs ?? PDF_TIME_BUDGET_MS) / 1000} s to check`;

  // Document timestamps first, in file order: each that verifies is a proof for the signatures before it.
  // From the last back: a later document timestamp covers an earlier one (PAdES-LTA), which
  // then proves its time while its own TSA's certificate held at the later one's.
  const stamps = new Map<number, TimestampVerdict>();
  for (let i = signatures.length - 1; i >= 0; i--) {
    const sig = signatures[i]!;
    if (sig.subFilter !== DOCUMENT_TIMESTAMP) continue;
    if (Date.now() > deadline) return late();
    const later = [...stamps.values()].filter((t) => t.valid && t.time).map((t) => new Date(t.time!));
    stamps.set(i, checkDocumentTimestamp(sig, options, trust, budget, later));
  }
  const stampNumbers = [...stamps.keys()].sort((a, b) => a - b);
  for (const [k, i] of stampNumbers.entries()) {
    const t = stamps.get(i)!;
    (found.timestamps ??= []).push(t);
    if (!t.valid) (found.notes ??= []).push(`document timestamp ${k + 1} (PDF signature ${i + 1}) ignored: ${t.problems[0] ?? 'not verified'}`);
  }
  let failure: string | undefined;
  for (const [i, sig] of signatures.entries()) {
    if (sig.subFilter === DOCUMENT_TIMESTAMP) continue;
    if (Date.now() > deadline) return late();
    // The earliest document timestamp after this signature that verifies.
    let proof: Proof | undefined;
    for (const j of stampNumbers) {
      const t = stamps.get(j)!;
      if (j < i || !t.valid || !t.time) continue;
      const at = new Date(t.time);
      if (!proof || at.getTime() < proof.at.getTime()) {
        proof = { at, by: 'document-timestamp', what: `document timestamp ${stampNumbers.indexOf(j) + 1} (PDF signature ${j + 1})` };
      }
    }
    const first = found.signers.length;
    const reason = checkPdfSignature(sig, options, trust, found, budget, proof);
    for (const s of found.signers.slice(first)) s.level = i + 1;
    if (reason !== undefined) failure ??= `PDF signature ${i + 1}: ${reason}`;
  }
  found.levels = signatures.length;
  if (failure) return failure;
  if (signatures.every((sig) => sig.subFilter === DOCUMENT_TIMESTAMP)) return 'the PDF has document timestamps but no signature';
  const broken = found.pdf.signatures.findIndex((sig) => !sig.intact);
  if (broken < 0) return undefined;
  return `the PDF was changed after its signature ${broken + 1} in a way PAdES does not allow: ${found.pdf.signatures[broken]!.notIntactBecause}`;
}

/** The CMS in a signature's /Contents, its zero padding checked and cut. */
function contentsOf(sig: PdfSignature): Buffer | string {
  const cms = sig.cms();
  const end = walkTlv(cms, { remaining: cms.length });
  if (!allZero(cms.subarray(end))) return 'bytes after the CMS in /Contents';
  return cms.subarray(0, end);
}

const ZEROS = Buffer.alloc(64 * 1024);

/** Every byte zero: compared 64 KiB at a time (memcmp), not byte by byte in JavaScript. */
function allZero(bytes: Buffer): boolean {
  for (let at = 0; at < bytes.length; at += ZEROS.length) {
    const chunk = bytes.subarray(at, at + ZEROS.length);
    if (!chunk.equals(ZEROS.subarray(0, chunk.length))) return false;
  }
  return true;
}

/** A document timestamp (PAdES-LTA): an RFC 3161 token whose imprint is of the ByteRange. */
function checkDocumentTimestamp(sig: PdfSignature, options: CheckOptions, trust: Trust, budget: NodeBudget, later: readonly Date[]): TimestampVerdict {
  const failed = (problem: string): TimestampVerdict => ({
    time: null,
    tsa: null,
    chain: checksChains(trust) ? 'untrusted' : 'not-checked',
    valid: false,
    problems: [problem],
  });
  try {
    const cms = contentsOf(sig);
    if (typeof cms === 'string') return failed(cms);
    return checkTimestamp(parseExact(cms, budget, 'the document timestamp'), sig.signed, { trust, budget, checkedAt: options.now }, 'the document', later);
  } catch (err) {
    return failed(`malformed document timestamp: ${short(err)}`);
  }
}

function checkPdfSignature(
  sig: PdfSignature,
  options: CheckOptions,
  trust: Trust,
  found: Found,
  budget: NodeBudget,
  proof: Proof | undefined,
): string | undefined {
  if (sig.subFilter !== null && !DETACHED_SUBFILTERS.has(sig.subFilter)) return `unsupported SubFilter ${sig.subFilter}`;
  try {
    const cms = contentsOf(sig);
    if (typeof cms === 'string') return cms;
    return check(decode(cms), options, trust, found, budget, { content: contentOf(sig.signed), claimedTime: sig.claimedTime }, proof);
  } catch (err) {
    return `malformed signature: ${short(err)}`;
  }
}

/**
 * A `.tsd` or `.m7m`: its timestamps over what they cover, then the envelope inside; any
 * other input: the envelope itself.
 */
function checkContainer(input: Uint8Array, options: CheckOptions, trust: Trust, found: Found, budget: NodeBudget): string | undefined {
  if (!(input instanceof Uint8Array)) return 'not a CMS SignedData envelope';
  if (input.length > (options.maxBytes ?? MAX_ENVELOPE_BYTES)) return 'envelope too large';
  if (isPdf(input)) return checkPdf(Buffer.from(input.buffer, input.byteOffset, input.byteLength), options, trust, found, budget);
  // An envelope first: whatever it carries (a MIME message, say) is its content, not a container around it.
  const envelope = decode(input);
  const stamped = envelope ? undefined : readTimestamped(input, budget);
  if (!stamped) return check(envelope, options, trust, found, budget);
  found.container = stamped.kind;
  // From the last renewal back: each covers the one before it while its own TSA's certificate holds.
  const verdicts: TimestampVerdict[] = [];
  for (let i = stamped.stamps.length - 1; i >= 0; i--) {
    const s = stamped.stamps[i]!;
    const later = verdicts.filter((t) => t.valid && t.time).map((t) => new Date(t.time!));
    verdicts.unshift(
      checkTimestamp(s.token, s.imprintOver, { trust, budget, checkedAt: options.now }, i === 0 ? 'the document' : 'the timestamp it renews', later),
    );
  }
  found.timestamps = verdicts;
  if (!stamped.content) return `the ${stamped.kind} does not carry the timestamped document`;
  // A timestamp is anyone's to add or break: one that fails is reported and decides nothing.
  found.timestamps.forEach((t, i) => {
    if (!t.valid) (found.notes ??= []).push(`timestamp ${i + 1} of the ${stamped.kind} ignored: ${t.problems[0] ?? 'not verified'}`);
  });
  // The first timestamp is over the document (each renewal over the timestamp before it): when
  // it verifies, the document's signatures existed by its time, the earliest of them all.
  const first = found.timestamps[0];
  const proof: Proof | undefined =
    first?.valid && first.time ? { at: new Date(first.time), by: 'container-timestamp', what: `the ${stamped.kind}'s timestamp` } : undefined;
  return check(decode(stamped.content), options, trust, found, budget, undefined, proof);
}

/** What a PDF's signature signs (its ByteRange) and the time its dictionary claims. */
interface Detached {
  content: Content;
  claimedTime: Date | null;
}

/** Fills `found` level by level from a decoded envelope; returns why it is not signed, if it is not. */
function check(
  top: ReturnType<typeof decode>,
  options: CheckOptions,
  trust: Trust,
  found: Found,
  budget: NodeBudget,
  detached?: Detached,
  proof?: Proof,
): string | undefined {
  if (!top) return 'not a CMS SignedData envelope';
  found.encoding = top.encoding;
  const maxNodes = options.maxNodes ?? 200_000;
  const maxNesting = options.maxNesting ?? 4;
  const { now } = options;
  let firstFailure: string | undefined;
  let der = top.der;
  for (let level = 1; ; level++) {
    if (level > maxNesting) return firstFailure ?? `envelope nesting exceeds ${maxNesting} levels`;
    const at = level === 1 ? '' : `level ${level}: `;
    let envelope: Envelope;
    try {
      envelope = readEnvelope(der, budget);
    } catch (err) {
      if (err instanceof LimitError) return `${at}envelope too complex (more than ${maxNodes} ASN.1 nodes)`;
      return `${at}malformed envelope: ${short(err)}`;
    }
    found.levels = level;
    // A detached signature (a PDF's) signs the content given beside it, with one signer.
    if (detached && level === 1) {
      if (envelope.content !== undefined) return 'the PDF signature carries content of its own';
      if (envelope.signerInfos.length !== 1) return 'a PDF signature has one signer';
      envelope = { ...envelope, content: detached.content };
    }
    const ctx: SignerContext = {
      ...envelope,
      trust,
      now,
      checkedAt: now,
      digests: new Map(),
      budget,
      ...(level === 1 && detached?.claimedTime && { claimedTime: detached.claimedTime }),
      ...(proof && { proof }),
    };
    const first = found.signers.length;
    for (const node of envelope.signerInfos) collectSigner(node, level, ctx, { kind: 'content' }, undefined, found.signers);
    const signers = found.signers.slice(first);
    if (envelope.signerInfos.length === 0) return `${at}the envelope has no signers`;
    if (envelope.content === undefined) return `${at}detached signature: the envelope carries no content`;
    // A counter-signature is an unsigned attribute, anyone's to add: one that fails is reported
    // (its verdict, and a note) and decides nothing.
    signers.forEach((s, k) => {
      if (s.counterSignatureOf !== undefined && s.problems.length > 0) {
        (found.notes ??= []).push(`${level === 1 ? '' : `level ${level} `}${signerName(signers, k, first)} ignored: ${s.problems[0]}`);
      }
    });
    const failing = signers.findIndex((s) => s.problems.length > 0 && s.counterSignatureOf === undefined);
    if (failing >= 0) firstFailure ??= `${level === 1 ? '' : `level ${level} `}${signerName(signers, failing, first)}: ${signers[failing]!.problems[0]}`;
    if (detached) return firstFailure;
    const inner = decode(envelope.content.whole());
    if (!inner) return firstFailure;
    der = inner.der;
  }
}

interface SignerContext extends Envelope {
  trust: Trust;
  now: Date;
  digests: Map<HashName, Buffer>;
  budget: NodeBudget;
  /** Set while checking a timestamp token's own signer: its certificate must be a TSA's. */
  tsa?: true;
  /** For a TSA: the times later timestamps protect its token at (its certificate must be valid at the check or at one of them). */
  protectedAt?: readonly Date[];
  /** The time of the check (for a TSA's token, `now` is its genTime). */
  checkedAt: Date;
  /** A signed PDF's /M: the time its signer claims, for a signer without a signingTime attribute. */
  claimedTime?: Date;
  /** The earliest valid timestamp around the envelope (a .tsd's or .m7m's, a PDF's document timestamp after the signature): its signatures existed by then. */
  proof?: Proof;
}

/** What a SignerInfo signs: the envelope's content, or (a counter-signature) another signer's signature value. */
type Target = { kind: 'content' } | { kind: 'signature'; value: Buffer };

/** Counter-signatures of counter-signatures, at most this deep. */
const MAX_COUNTER_DEPTH = 4;
/** Signers and counter-signatures of one envelope level, together. */
const MAX_SIGNER_INFOS = 32;
/** How far ahead of the check a claimed signing time may be (clocks differ). */
const FUTURE_SKEW_MS = 5 * 60_000;
/** Signature timestamps of one signer. */
const MAX_TIMESTAMPS = 4;

/** "signer 2", or for a counter-signature "signer 2 counter-signature 1" (`signers` starts at index `offset` of the verdict's). */
function signerName(signers: readonly SignerVerdict[], index: number, offset: number): string {
  const s = signers[index]!;
  const of = s.counterSignatureOf;
  const own = `${of === undefined ? 'signer' : 'counter-signature'} ${signers.filter((x) => x.counterSignatureOf === of).indexOf(s) + 1}`;
  return of === undefined ? own : `${signerName(signers, of - offset, offset)} ${own}`;
}

/**
 * Judges a SignerInfo and, after it, its counter-signatures (every one must pass, as every
 * signer must), appending them all to `out`.
 */
function collectSigner(node: Node, level: number, ctx: SignerContext, target: Target, parent: number | undefined, out: SignerVerdict[], depth = 0): void {
  const v: SignerVerdict = {
    level,
    subject: null,
    issuer: null,
    serialNumber: null,
    signingTime: null,
    digestAlgorithm: null,
    signatureAlgorithm: null,
    digestMatches: false,
    signatureValid: false,
    certificateValid: false,
    chain: checksChains(ctx.trust) ? 'untrusted' : 'not-checked',
    ...(parent !== undefined && { counterSignatureOf: parent }),
    problems: [],
  };
  let found: Examined | undefined;
  try {
    found = examine(node, ctx, v, target);
  } catch (err) {
    v.problems.push(err instanceof SchemeProblem ? err.message : `malformed signer info: ${short(err)}`);
  }
  // Belt and braces: a failed flag always comes with a problem, so "no problems" means "passed".
  if (v.problems.length === 0 && !(v.digestMatches && v.signatureValid && v.certificateValid && v.chain !== 'untrusted')) v.problems.push('not verified');
  const index = out.push(v) - 1;
  if (!found?.counterSignatures.length) return;
  // Counter-signatures are unsigned attributes: past the bounds they are noted and not read,
  // never a reason to refuse the signature they sign.
  if (depth >= MAX_COUNTER_DEPTH) {
    (v.notes ??= []).push(`counter-signatures nested more than ${MAX_COUNTER_DEPTH} deep: not read`);
    return;
  }
  // Each costs a signature check and a place in the stored verdict: as many as real envelopes carry.
  if (out.length + found.counterSignatures.length > MAX_SIGNER_INFOS) {
    (v.notes ??= []).push(`more than ${MAX_SIGNER_INFOS} signers and counter-signatures: these ${found.counterSignatures.length} not read`);
    return;
  }
  for (const counter of found.counterSignatures) collectSigner(counter, level, ctx, { kind: 'signature', value: found.signature }, index, out, depth + 1);
}

interface Examined {
  signature: Buffer;
  counterSignatures: Node[];
}

function examine(node: Node, ctx: SignerContext, v: SignerVerdict, target: Target): Examined {
  const parts = seq(node, 'SignerInfo');
  let i = 0;
  const version = smallInt(parts[i++], 'SignerInfo version');
  const sid = parts[i++];
  const digestAlg = algorithm(parts[i++], 'digest algorithm');
  const signedAttrs = is(parts[i], CONTEXT, 0) ? parts[i++] : undefined;
  const sigAlg = algorithm(parts[i++], 'signature algorithm');
  const signature = octets(parts[i++], 'signature');
  const counterSignatures: Node[] = [];
  const timestamps: Node[] = [];
  if (is(parts[i], CONTEXT, 1)) {
    // Unsigned attributes are anyone's to add: one that cannot be read is noted and ignored,
    // never a reason to refuse the signature.
    for (const attr of kids(parts[i++], CONTEXT, 1, 'unsigned attributes')) {
      try {
        const [type, values] = seq(attr, 'attribute');
        const attrType = oid(type, 'attribute type');
        if (attrType === ATTR.counterSignature) counterSignatures.push(...kids(values, UNIVERSAL, T.SET, 'counter-signatures'));
        // A value that is not a ContentInfo (a German signer's wraps the token's DER in an OCTET
        // STRING) is not read as a timestamp, as DSS does not: the signer goes without one.
        if (attrType === ATTR.signatureTimestamp)
          timestamps.push(...kids(values, UNIVERSAL, T.SET, 'signature timestamps').filter((t) => is(t, UNIVERSAL, T.SEQUENCE)));
      } catch (err) {
        if (!(err instanceof MalformedError)) throw err;
        (v.notes ??= []).push(`an unsigned attribute that cannot be read was ignored (${short(err)})`);
      }
    }
  }
  if (i !== parts.length) malformed('unexpected elements in SignerInfo');
  const examined = { signature, counterSignatures };

  // The signer identifier is read as the CHOICE it holds: version 1 announces issuerAndSerialNumber
  // and 3 subjectKeyIdentifier, but real envelopes mix them up, and no signature covers either.
  if (version !== 1 && version !== 3) throw new SchemeProblem(`unsupported SignerInfo version ${version}`);
  let cert: EnvelopeCert | undefined;
  if (is(sid, CONTEXT, 0)) {
    cert = bySubjectKeyId(ctx.certs, prim(sid, CONTEXT, 0, 'subjectKeyIdentifier'));
  } else {
    const ias = seq(sid, 'issuerAndSerialNumber');
    if (ias.length !== 2) malformed('issuerAndSerialNumber is not the expected structure');
    const serial = prim(ias[1], UNIVERSAL, T.INTEGER, 'serial number');
    v.serialNumber = hex(serial);
    cert = byIssuerSerial(ctx.certs, canonicalName(ias[0]), serial);
  }

  const hash = hashOf(digestAlg);
  v.digestAlgorithm = hash ?? digestAlg.oid;
  let scheme: Scheme | undefined;
  try {
    scheme = schemeOf(sigAlg);
    v.signatureAlgorithm = scheme.name;
  } catch (err) {
    if (!(err instanceof SchemeProblem)) throw err;
    v.signatureAlgorithm = sigAlg.oid;
    v.problems.push(err.message);
  }
  if (!hash) v.problems.push(`unsupported digest algorithm ${digestAlg.oid}`);
  // Italian rules (and every current profile) have required SHA-256 or better since 2011.
  else if (hash === 'sha1') v.problems.push('weak digest algorithm sha1');
  // A counter-signer's digest algorithm need not be among the envelope's (those are the content's).
  if (target.kind === 'content' && !ctx.digestOids.has(digestAlg.oid)) v.problems.push('digest algorithm not listed in the envelope');
  // RSASSA-PSS names its own hash, which signs the signed attributes and may differ from the
  // content's digest algorithm (RFC 4056 §3); over the content itself they must be the same.
  // PKCS#1 v1.5 and ECDSA identifiers that name another hash than the digest algorithm are
  // refused, as DSS refuses them (its dss-1419 tests), though OpenSSL verifies them with the
  // digest algorithm's hash.
  const pssOverAttributes = scheme?.name === 'rsa-pss' && signedAttrs !== undefined;
  if (scheme?.hash && hash && scheme.hash !== hash && !pssOverAttributes) v.problems.push("the signature algorithm's hash does not match the digest algorithm");
  if (scheme?.hash === 'sha1' && hash !== 'sha1') v.problems.push('weak signature hash sha1');
  // RFC 8419 §3: with signed attributes, Ed25519 takes SHA-512 and Ed448 SHAKE256 (512 bits) as the digest.
  if (scheme?.name === 'ed25519' && hash !== 'sha512') v.problems.push('Ed25519 requires SHA-512 as the digest algorithm');
  if (scheme?.name === 'ed448' && hash !== 'shake256') v.problems.push('Ed448 requires SHAKE256 as the digest algorithm');

  const x509 = cert?.x509();
  if (!cert) v.problems.push('signer certificate not found in the envelope');
  else if (!x509) v.problems.push('signer certificate cannot be read');
  else {
    v.subject = oneLine(x509.subject);
    v.issuer = oneLine(x509.issuer);
    v.fiscalCode = fiscalCodeOf(x509);
    v.qualified = cert.qc.compliance;
    v.qualifiedDevice = cert.qc.sscd;
    v.serialNumber = hex(cert.serial);
  }

  if (target.kind === 'content' && ctx.content === undefined) v.problems.push('detached signature: no content to check');
  // A counter-signature's "content" is the contents octets of the signature it signs (RFC 5652 §11.4).
  // Joined only when the signature covers it directly (no signed attributes): joining copies.
  const signedContent = (): Buffer | undefined => (target.kind === 'signature' ? target.value : ctx.content?.whole());
  const digest = !hash
    ? undefined
    : target.kind === 'signature'
      ? newHash(hash).update(target.value).digest()
      : ctx.content !== undefined
        ? digestOf(ctx, hash)
        : undefined;
  let signed: Buffer[] = [];
  let signingTime: Date | undefined;
  if (signedAttrs) {
    const attrs = attributes(signedAttrs);
    const contentType = single(attrs, ATTR.contentType);
    if (target.kind === 'signature') {
      if (attrs.has(ATTR.contentType)) v.problems.push('a counter-signature carries a contentType attribute');
    } else if (!contentType) v.problems.push('missing contentType attribute');
    else if (oid(contentType, 'contentType attribute') !== ctx.eContentType) v.problems.push('the contentType attribute does not match the content');
    const messageDigest = single(attrs, ATTR.messageDigest);
    if (!messageDigest) v.problems.push('missing messageDigest attribute');
    else if (digest) {
      v.digestMatches = bytes(prim(messageDigest, UNIVERSAL, T.OCTETSTRING, 'messageDigest attribute')).equals(digest);
      if (!v.digestMatches) {
        v.problems.push(
          target.kind === 'content'
            ? 'the content digest does not match the messageDigest attribute'
            : 'the messageDigest attribute is not the digest of the counter-signed signature',
        );
      }
    }
    if (attrs.has(ATTR.signingTime)) {
      const time = single(attrs, ATTR.signingTime);
      signingTime = time && timeOf(time);
      if (signingTime) v.signingTime = signingTime.toISOString();
      else v.problems.push('invalid signing time');
    }
    if (x509) {
      const mismatch = signingCertificateMismatch(attrs, x509);
      if (mismatch) v.problems.push(mismatch);
    }
    // RFC 3161 §2.4.1 (RFC 5816): a token names its TSA's certificate, so that it cannot be swapped.
    if (ctx.tsa && !attrs.has(ATTR.signingCertificateV2) && !attrs.has(ATTR.signingCertificate))
      v.problems.push('the token does not name its TSA certificate (ESS signing certificate)');
    // RFC 6211: the algorithms the signer says it used, under its signature: an envelope whose
    // SignerInfo names others (a downgrade, or PSS parameters swapped) is refused.
    if (attrs.has(ATTR.algorithmProtection)) {
      const mismatch = algorithmProtectionMismatch(single(attrs, ATTR.algorithmProtection), digestAlg, sigAlg);
      if (mismatch) v.problems.push(mismatch);
    }
    signed = [signedAttributesDer(signedAttrs)];
  } else {
    if (target.kind === 'content' && ctx.eContentType !== ID_DATA) v.problems.push('signed attributes are missing');
    const whole = signedContent();
    if (whole) signed = [whole];
  }

  const signatureHash = pssOverAttributes ? scheme!.hash : hash;
  if (scheme && signatureHash && x509 && signed.length > 0) {
    try {
      v.signatureValid = signed.some((bytes) => verifySignature(scheme, signatureHash, bytes, signature, x509.publicKey));
      if (!v.signatureValid) v.problems.push('the signature does not verify');
    } catch (err) {
      v.problems.push(err instanceof SchemeProblem ? err.message : `the signature does not verify (${short(err)})`);
    }
  }
  // Without signed attributes the content's digest is inside the signature.
  if (!signedAttrs) v.digestMatches = v.signatureValid;

  // The timestamp's time is a third party's word for when the signature existed; signingTime
  // is only the signer's claim. Timestamps are unsigned attributes, which anyone may add or
  // strip: one that fails is reported and ignored (never a reason to refuse), one that
  // verifies proves the signature existed by its time. Several may come from several TSAs
  // (ETSI EN 319 122-1): the earliest that verifies is the one used.
  if (timestamps.length > MAX_TIMESTAMPS) (v.notes ??= []).push(`${timestamps.length} signature timestamps, more than ${MAX_TIMESTAMPS}: none read`);
  else if (timestamps.length > 0) {
    const verdicts = timestamps.map((stamp) => checkTimestamp(stamp, signature, ctx, 'the signature', ctx.proof ? [ctx.proof.at] : []));
    verdicts.forEach((t, n) => {
      if (!t.valid) (v.notes ??= []).push(`signature timestamp ${n + 1} ignored: ${t.problems[0] ?? 'not verified'}`);
    });
    const valid = verdicts.filter((t) => t.valid && t.time);
    v.timestamp = valid.length > 0 ? valid.reduce((a, b) => (Date.parse(b.time!) < Date.parse(a.time!) ? b : a)) : verdicts[0];
  }
  const stampedAt = v.timestamp?.valid && v.timestamp.time ? new Date(v.timestamp.time) : undefined;

  if (x509 && cert) {
    // A PDF signer's claimed time is its dictionary's /M (PAdES leaves signingTime out of the
    // CMS). It is shown, as claimed, and never decides anything but this:
    const claimed = signingTime ?? (target.kind === 'content' ? ctx.claimedTime : undefined);
    if (!signingTime && claimed) v.signingTime = claimed.toISOString();
    // A claim of a time to come is no claim (a few minutes of clock skew aside).
    if (!ctx.tsa && claimed && claimed.getTime() > ctx.checkedAt.getTime() + FUTURE_SKEW_MS) v.problems.push('the claimed signing time is in the future');
    // A TSA's certificate is judged at the genTime of the token it signed (ctx.now), whatever
    // else the token says; a signer's at the earliest time a timestamp proves, or else now.
    const judged = ctx.tsa ? undefined : judgedTime(ctx, stampedAt);
    if (judged) v.judgedAt = { time: judged.at.toISOString(), by: judged.by, why: `judged at ${judged.at.toISOString()}: ${judged.why}` };
    const at = judged?.at ?? ctx.now;
    v.certificateValid = validAt(x509, at);
    // A TSA that says it signed the token after its certificate ended (or before it began) is
    // not believed either (DSS refuses such a token too).
    if (ctx.tsa && v.certificateValid && signingTime && !validAt(x509, signingTime)) {
      v.certificateValid = false;
      v.problems.push("the TSA's certificate was not valid at the token's own signing time");
    } else if (ctx.tsa && v.certificateValid && !validAt(x509, ctx.checkedAt) && !(ctx.protectedAt ?? []).some((t) => validAt(x509, t))) {
      // Whoever holds an expired TSA key can mint tokens of any time within its old validity:
      // a token proves its time only while its TSA's certificate is valid, now or when a later
      // timestamp covered the token (a renewal, a later document timestamp).
      v.certificateValid = false;
      v.problems.push("the TSA's certificate is no longer valid and no later timestamp covers the token while it was");
    } else if (!v.certificateValid) {
      v.problems.push(
        !judged
          ? "the TSA's certificate was not valid at the token's time"
          : judged.by === 'check'
            ? `the certificate is not valid at the time of the check, and no timestamp proves an earlier time${claimed ? ` (the signing time it claims, ${claimed.toISOString()}, is the signer's word only)` : ''}`
            : `the certificate was not valid at ${judged.what}'s time`,
      );
    }
    if (cert.signingUsage === false) v.problems.push("the certificate's key usage does not allow signing");
    // RFC 3161 §2.3: a TSA's certificate has one extended key usage, timeStamping, marked critical.
    if (ctx.tsa && !(cert.eku?.critical && cert.eku.purposes.length === 1 && cert.eku.purposes[0] === TIME_STAMPING)) {
      v.problems.push("the certificate is not a time-stamping authority's (extended key usage)");
    }
    if (checksChains(ctx.trust)) {
      // The service must have allowed the chain at the same time the certificate is judged at.
      const when = !judged
        ? "at the token's time"
        : judged.by === 'check'
          ? 'at the time of the check (no timestamp proves an earlier time)'
          : `at ${judged.what}'s time`;
      const judge = { role: ctx.tsa ? ('tsa' as const) : ('signer' as const), now: ctx.checkedAt, when };
      const path = chainEnds(x509, ctx.certs, anchorsOf(ctx.trust), at);
      let verdict = 'ends' in path ? judgeAnchors(path.ends, ctx.trust, at, judge) : { trusted: false as const, why: path.why };
      // A chain that goes on to a trust store certificate is trusted whatever the lists say of a CA on the way.
      if (!verdict.trusted && 'ends' in path && ctx.trust.anchors.length > 0) {
        const stored = chainEnds(x509, ctx.certs, storeAnchorsOf(ctx.trust), at);
        if ('ends' in stored) verdict = { trusted: true };
      }
      v.chain = verdict.trusted ? 'trusted' : 'untrusted';
      if (!verdict.trusted) v.problems.push(`chain not trusted: ${verdict.why}`);
      else if (verdict.service) {
        const s = verdict.service;
        v.trustService = {
          territory: s.territory,
          provider: s.provider,
          name: s.name,
          status: statusName(verdict.status ?? ''),
          qualified: ctx.tsa ? qualifiedTsa(s, at) : qualifiedPerList(s, { certificate: x509, compliance: cert.qc.compliance, types: cert.qc.types }, at),
        };
      }
    }
  }
  return examined;
}

/**
 * The time a signer is judged at: the earliest of its own verified signature timestamp and a
 * verified timestamp around it, or else the time of the check.
 */
function judgedTime(ctx: SignerContext, stampedAt: Date | undefined): { at: Date; by: JudgedAt['by']; what: string; why: string } {
  const own = stampedAt && { at: stampedAt, by: 'signature-timestamp' as const, what: 'the signature timestamp' };
  const around = ctx.proof;
  const proven = own && around ? (around.at.getTime() < own.at.getTime() ? around : own) : (own ?? around);
  if (!proven) return { at: ctx.checkedAt, by: 'check', what: 'the time of the check', why: 'no timestamp proves an earlier time' };
  return { ...proven, why: `the time of ${proven.what}, which proves the signature existed by then` };
}

const TIME_STAMPING = '1.3.6.1.5.5.7.3.8';
const ID_CT_TSTINFO = '1.2.840.113549.1.9.16.1.4';
const ID_SIGNED_DATA = '1.2.840.113549.1.7.2';

/**
 * An RFC 3161 TimeStampToken over `signatureValue` (or the bytes a container's timestamp
 * covers): a SignedData of a TSTInfo, whose one signer
 * must verify (its certificate a TSA's, valid at genTime, chained to the anchors when there
 * are any) and whose messageImprint must be the digest of the signature value.
 */
function checkTimestamp(
  token: Node,
  covered: Buffer | readonly Buffer[],
  outer: Pick<SignerContext, 'trust' | 'budget' | 'checkedAt'>,
  covers = 'the signature',
  /** Times later verified timestamps prove the token existed by (they cover it). */
  protectedAt: readonly Date[] = [],
): TimestampVerdict {
  const t: TimestampVerdict = { time: null, tsa: null, chain: checksChains(outer.trust) ? 'untrusted' : 'not-checked', valid: false, problems: [] };
  try {
    if (oid(seq(token, 'TimeStampToken')[0], 'TimeStampToken content type') !== ID_SIGNED_DATA) malformed('the timestamp token is not a SignedData');
    const envelope = readEnvelope(derOf(token), outer.budget);
    if (envelope.eContentType !== ID_CT_TSTINFO || !envelope.content) malformed('the token does not carry a TSTInfo');
    const info = seq(parseExact(envelope.content.whole(), outer.budget, 'the TSTInfo'), 'TSTInfo');
    if (smallInt(info[0], 'TSTInfo version') !== 1) malformed('unsupported TSTInfo version');
    const imprint = seq(info[2], 'messageImprint');
    const imprintHash = hashOf(algorithm(imprint[0], 'messageImprint hash algorithm'));
    const genTime = is(info[4], UNIVERSAL, T.GENERALIZEDTIME) ? timeOf(info[4]) : undefined;
    if (!genTime) malformed('invalid genTime');
    t.time = genTime.toISOString();
    if (!imprintHash) t.problems.push('unsupported messageImprint hash algorithm');
    else if (imprintHash === 'sha1') t.problems.push('weak messageImprint hash sha1');
    else if (!imprintOf(imprintHash, covered).equals(bytes(prim(imprint[1], UNIVERSAL, T.OCTETSTRING, 'hashedMessage')))) {
      t.problems.push(`the timestamp is of other bytes than ${covers} (messageImprint)`);
    }
    if (envelope.signerInfos.length !== 1) t.problems.push('a timestamp token has one signer');
    const ctx: SignerContext = {
      ...envelope,
      trust: outer.trust,
      now: genTime,
      checkedAt: outer.checkedAt,
      digests: new Map(),
      budget: outer.budget,
      tsa: true,
      protectedAt,
    };
    const signers: SignerVerdict[] = [];
    for (const node of envelope.signerInfos) collectSigner(node, 0, ctx, { kind: 'content' }, undefined, signers, MAX_COUNTER_DEPTH);
    const tsa = signers[0];
    if (tsa) {
      t.tsa = tsa.subject;
      t.chain = tsa.chain;
      if (tsa.trustService) t.trustService = tsa.trustService;
      t.problems.push(...tsa.problems);
    }
  } catch (err) {
    t.problems.push(err instanceof LimitError ? 'the timestamp token is too complex' : `malformed timestamp token: ${short(err)}`);
  }
  t.valid = t.problems.length === 0;
  return t;
}

function imprintOf(hash: HashName, covered: Buffer | readonly Buffer[]): Buffer {
  const h = newHash(hash);
  for (const part of Buffer.isBuffer(covered) ? [covered] : covered) h.update(part);
  return h.digest();
}

function digestOf(ctx: SignerContext, hash: HashName): Buffer {
  let digest = ctx.digests.get(hash);
  if (!digest) {
    // Chunk by chunk, straight from the input's bytes: no copy of the content is ever made.
    const h = newHash(hash);
    for (const part of ctx.content!.parts) h.update(part);
    ctx.digests.set(hash, (digest = h.digest()));
  }
  return digest;
}

/**
 * What a signature over signed attributes covers: their DER encoding, a SET OF sorted by
 * encoding (RFC 5652 §5.4), whatever order the envelope sends them in. A signature that
 * verifies only over the order sent is not a signature over the attributes as RFC 5652 defines
 * them (OpenSSL refuses it too).
 */
function signedAttributesDer(signedAttrs: Node): Buffer {
  const sorted = kids(signedAttrs, CONTEXT, 0, 'signed attributes').map(derOf).sort(compareSetMembers);
  const body = Buffer.concat(sorted);
  const length = body.length < 0x80 ? [body.length] : [0x80 | byteLength(body.length), ...toBytes(body.length)];
  return Buffer.concat([Buffer.from([0x31, ...length]), body]);
}

/**
 * CMSAlgorithmProtection (RFC 6211) ::= SEQUENCE { digestAlgorithm, signatureAlgorithm [1]
 * IMPLICIT OPTIONAL, macAlgorithm [2] IMPLICIT OPTIONAL }: for a signature, the digest and
 * signature algorithms of the SignerInfo, parameters included (RSASSA-PSS: hash, MGF1 hash,
 * salt length and trailer field).
 */
function algorithmProtectionMismatch(
  value: Node | undefined,
  digestAlg: { oid: string; params: Node | undefined },
  sigAlg: { oid: string; params: Node | undefined },
): string | undefined {
  if (!value) return 'the CMSAlgorithmProtection attribute is not single';
  const parts = seq(value, 'CMSAlgorithmProtection');
  const digest = algorithm(parts[0], 'CMSAlgorithmProtection digest algorithm');
  const signature = parts.slice(1).find((p) => is(p, CONTEXT, 1));
  if (parts.some((p) => is(p, CONTEXT, 2))) return 'the CMSAlgorithmProtection attribute names a MAC algorithm';
  if (!signature) return 'the CMSAlgorithmProtection attribute names no signature algorithm';
  const inner = kids(signature, CONTEXT, 1, 'CMSAlgorithmProtection signature algorithm');
  if (inner.length < 1 || inner.length > 2) malformed('CMSAlgorithmProtection signature algorithm is not an AlgorithmIdentifier');
  const named = { oid: oid(inner[0], 'CMSAlgorithmProtection signature algorithm'), params: inner[1] };
  if (!sameSignatureAlgorithm(digest, digestAlg)) return 'the CMSAlgorithmProtection attribute names another digest algorithm';
  if (!sameSignatureAlgorithm(named, sigAlg)) return 'the CMSAlgorithmProtection attribute names another signature algorithm or other parameters';
  return undefined;
}

const byteLength = (n: number): number => (n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1);
const toBytes = (n: number): number[] => Array.from({ length: byteLength(n) }, (_, i) => (n >>> (8 * (byteLength(n) - 1 - i))) & 0xff);

/** X.690 §11.6: SET OF members ordered as octet strings, the shorter padded with zeros. */
function compareSetMembers(a: Buffer, b: Buffer): number {
  const n = Math.min(a.length, b.length);
  const c = Buffer.compare(a.subarray(0, n), b.subarray(0, n));
  if (c !== 0) return c;
  const rest = (a.length > n ? a : b).subarray(n);
  return rest.some((x) => x !== 0) ? (a.length > n ? 1 : -1) : 0;
}

/** Attributes that must appear once with one value (RFC 5652 §11; CAdES): any other may repeat. */
const SINGLE = new Set([ATTR.contentType, ATTR.messageDigest, ATTR.signingTime, ATTR.algorithmProtection]);

/** The signed attributes' values by type, every occurrence of a type together. */
function attributes(signedAttrs: Node): Map<string, Node[][]> {
  const map = new Map<string, Node[][]>();
  for (const attr of kids(signedAttrs, CONTEXT, 0, 'signed attributes')) {
    const parts = seq(attr, 'attribute');
    if (parts.length !== 2) malformed('attribute is not the expected structure');
    const type = oid(parts[0], 'attribute type');
    const values = kids(parts[1], UNIVERSAL, T.SET, 'attribute values');
    if (SINGLE.has(type) && (map.has(type) || values.length !== 1)) malformed('a signed attribute that must be single appears twice');
    map.set(type, [...(map.get(type) ?? []), values]);
  }
  return map;
}

/** The value of a single-valued attribute (its first occurrence); undefined when absent or not single. */
function single(attrs: Map<string, Node[][]>, type: string): Node | undefined {
  const values = attrs.get(type)?.[0];
  return values?.length === 1 ? values[0] : undefined;
}

/** CAdES signing-certificate(-v2): the first ESSCertID must hash to the signer certificate. */
function signingCertificateMismatch(attrs: Map<string, Node[][]>, x509: X509Certificate): string | undefined {
  for (const [type, v2] of [
    [ATTR.signingCertificateV2, true],
    [ATTR.signingCertificate, false],
  ] as const) {
    if (!attrs.has(type)) continue;
    const id = seq(seq(seq(single(attrs, type), 'signing certificate')[0], 'ESSCertIDs')[0], 'ESSCertID');
    let hash: HashName | undefined = v2 ? 'sha256' : 'sha1';
    let k = 0;
    if (v2 && is(id[0], UNIVERSAL, T.SEQUENCE)) hash = hashOf(algorithm(id[k++], 'ESSCertIDv2 hash algorithm'));
    if (!hash) return 'unsupported hash in the signing-certificate attribute';
    const certHash = bytes(prim(id[k], UNIVERSAL, T.OCTETSTRING, 'ESSCertID hash'));
    if (!newHash(hash).update(x509.raw).digest().equals(certHash)) return 'the signing-certificate attribute names another certificate';
  }
  return undefined;
}

function short(err: unknown): string {
  const message = err instanceof MalformedError ? err.message : err instanceof Error ? err.message : 'unexpected value thrown';
  return (message.split('\n')[0] ?? '').slice(0, 120);
}

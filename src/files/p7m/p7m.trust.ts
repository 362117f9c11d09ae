// What a chain may end at: the certificates of the configured trust store (SIGNATURE_TRUST_STORE),
// trusted as they are, and the services of imported EU trusted lists (ETSI TS 119 612), trusted
// while the list says their status allowed it: a service withdrawn before a signature was made
// vouches for nothing after that date. Without a timestamp to prove when a signature was made,
// the signer's claimed time proves nothing either: the service must also allow it at the time
// of the check (as the EU's DSS judges at validation time), so backdating a signature under a
// withdrawn CA does not help. A list past its NextUpdate decides nothing.
import { X509Certificate } from 'node:crypto';
import { anchorIndex, type AnchorIndex } from './p7m.certs.js';

/** A trust service from an imported trusted list, as the verifier needs it. */
export interface ListedService {
  /** The list's territory (IT, FR, ...). */
  territory: string;
  provider: string;
  name: string;
  /** e.g. http://uri.etsi.org/TrstSvc/Svctype/CA/QC */
  type: string;
  /** Every status the list gives the service with its starting time, the current one included, newest first. */
  history: ReadonlyArray<{ status: string; from: Date }>;
  certificates: readonly X509Certificate[];
  /** AdditionalServiceInformation URIs (ForeSignatures, ForeSeals, ForWebSiteAuthentication, ...). */
  uses: readonly string[];
  /** The list's NextUpdate: past it, the list is out of date. */
  listNextUpdate: Date | null;
}

/** A service as stored and passed to the verifier's threads (JSON). */
export interface ServiceRecord {
  territory: string;
  provider: string;
  name: string;
  type: string;
  /** ISO 8601 times. */
  history: Array<{ status: string; from: string }>;
  /** Base64 DER. */
  certificates: string[];
  uses: string[];
  listNextUpdate: string | null;
}

export function servicesOf(records: readonly ServiceRecord[]): ListedService[] {
  return records.map((r) => ({
    territory: r.territory,
    provider: r.provider,
    name: r.name,
    type: r.type,
    // Newest first, whatever order the list gave: statusAt takes the first not after a time.
    history: r.history.map((h) => ({ status: h.status, from: new Date(h.from) })).sort((a, b) => b.from.getTime() - a.from.getTime()),
    certificates: r.certificates.map((c) => new X509Certificate(Buffer.from(c, 'base64'))),
    uses: r.uses,
    listNextUpdate: r.listNextUpdate === null ? null : new Date(r.listNextUpdate),
  }));
}

/** What chains are checked against. */
export interface Trust {
  anchors: readonly X509Certificate[];
  services: readonly ListedService[];
  /** Trusted lists are in use: chains are checked even while no list is imported (none then trusts). */
  lists: boolean;
}

const NONE: readonly never[] = [];

/**
 * Trust from what was configured; the same empty arrays for what was not (the index cache's
 * keys). `services` given, even empty, means trusted lists are in use.
 */
export const trustOf = (anchors?: readonly X509Certificate[], services?: readonly ListedService[]): Trust => ({
  anchors: anchors ?? NONE,
  services: services ?? NONE,
  lists: services !== undefined,
});

export const checksChains = (trust: Trust): boolean => trust.anchors.length > 0 || trust.lists;

export const CA_QC = 'http://uri.etsi.org/TrstSvc/Svctype/CA/QC';
export const TSA_QTST = 'http://uri.etsi.org/TrstSvc/Svctype/TSA/QTST';
const CA_TYPES = 'http://uri.etsi.org/TrstSvc/Svctype/CA/';
const STATUS = 'http://uri.etsi.org/TrstSvc/TrustedList/Svcstatus/';
const SVC_INFO = 'http://uri.etsi.org/TrstSvc/TrustedList/SvcInfoExt/';
/** eIDAS applies from this instant; the statuses of the Directive 1999/93 lists held until then. */
const EIDAS = Date.parse('2016-07-01T00:00:00Z');
/** Statuses under which a service vouched for what it issued (ETSI TS 119 615, as the EU's DSS reads them). */
const TRUSTED_SINCE_EIDAS = new Set(['granted', 'recognisedatnationallevel'].map((s) => STATUS + s));
const TRUSTED_BEFORE_EIDAS = new Set(['undersupervision', 'supervisionincessation', 'accredited', 'setbynationallaw'].map((s) => STATUS + s));
/** Of those, the ones under which it was a qualified service (recognised at national level, or set by national law, it was not). */
const QUALIFIED_SINCE_EIDAS = new Set([`${STATUS}granted`]);
const QUALIFIED_BEFORE_EIDAS = new Set(['undersupervision', 'supervisionincessation', 'accredited'].map((s) => STATUS + s));

/** The status the list gave `service` at `at`; undefined before its first. */
export function statusAt(service: ListedService, at: Date): { status: string; from: Date } | undefined {
  return service.history.find((h) => h.from.getTime() <= at.getTime());
}

const trustedUnder = (status: string | undefined, at: Date): boolean =>
  status !== undefined && (at.getTime() < EIDAS ? TRUSTED_BEFORE_EIDAS : TRUSTED_SINCE_EIDAS).has(status);
const qualifiedUnder = (status: string | undefined, at: Date): boolean =>
  status !== undefined && (at.getTime() < EIDAS ? QUALIFIED_BEFORE_EIDAS : QUALIFIED_SINCE_EIDAS).has(status);

/** The last path segment of a status URI (granted, withdrawn, ...), for people. */
export const statusName = (uri: string): string => uri.slice(uri.lastIndexOf('/') + 1);

/** How a chain that reached `ends` (anchors it reached at the same step) is judged. */
export type AnchorVerdict = { trusted: true; service?: ListedService; status?: string } | { trusted: false; why: string };

export interface JudgeOptions {
  /** A signer's chain may end at a CA service only; a TSA's at any listed service. */
  role: 'signer' | 'tsa';
  /** The time of the check: the list must not be out of date then. */
  now: Date;
  /**
   * What the time `at` is, for the reasons given: "at the timestamp's time", "at the time of the
   * check (no timestamp proves an earlier time)"; default "at the signing time".
   */
  when?: string;
}

/** Judges the anchors a chain reached at `at` (the time its signature is proven to have existed, or the time of the check). */
export function judgeAnchors(ends: readonly X509Certificate[], trust: Trust, at: Date, o: JudgeOptions): AnchorVerdict {
  if (ends.some((e) => trust.anchors.some((a) => a.raw.equals(e.raw)))) return { trusted: true };
  const listed = trust.services.filter((s) => s.certificates.some((c) => ends.some((e) => c.raw.equals(e.raw))));
  let why = 'no path to a trust anchor';
  for (const service of listed) {
    const name = `the ${service.territory} trusted list's service "${service.name}"`;
    const status = statusAt(service, at);
    const when = o.when ?? 'at the signing time';
    if (o.role === 'signer' && !service.type.startsWith(CA_TYPES)) why = `${name} is not a certification authority's`;
    else if (service.listNextUpdate && service.listNextUpdate.getTime() < o.now.getTime()) {
      why = `the ${service.territory} trusted list is out of date (its next update was due ${service.listNextUpdate.toISOString()})`;
    } else if (!status) why = `${name} had no status yet ${when}`;
    else if (!trustedUnder(status.status, at)) why = `${name} was ${statusName(status.status)} ${when} (since ${status.from.toISOString()})`;
    else return { trusted: true, service, status: status.status };
  }
  return { trusted: false, why };
}

/** What a signer's certificate says of itself (its QC statements), for {@link qualifiedPerList}. */
export interface CertificateClaims {
  certificate: X509Certificate;
  compliance: boolean;
  /** QcType statement's types (0.4.0.1862.1.6.x); empty without one. */
  types: readonly string[];
}

const QC_TYPE_ESIGN = '0.4.0.1862.1.6.1';
const QC_TYPE_ESEAL = '0.4.0.1862.1.6.2';
const USES = ['ForeSignatures', 'ForeSeals', 'ForWebSiteAuthentication'].map((u) => SVC_INFO + u);

/**
 * Whether the list makes a signer's certificate qualified for signatures or seals (ETSI TS
 * 119 615, in part): issued under a CA/QC service that was qualified (granted; before eIDAS its
 * equivalents) both when the certificate was issued and at the signing time; the certificate
 * says QcCompliance and, when it names its types, esign or eseal; and the service, when it names
 * what it issues for, issues for signatures or seals (not only websites). The lists'
 * Qualifications extensions, which can overrule a certificate's statements, are not read.
 */
export function qualifiedPerList(service: ListedService, claims: CertificateClaims, at: Date): boolean {
  if (service.type !== CA_QC || !claims.compliance) return false;
  if (claims.types.length > 0 && !claims.types.some((t) => t === QC_TYPE_ESIGN || t === QC_TYPE_ESEAL)) return false;
  const named = service.uses.filter((u) => USES.includes(u));
  if (named.length > 0 && !named.some((u) => u === USES[0] || u === USES[1])) return false;
  const issued = new Date(claims.certificate.validFrom);
  return qualifiedUnder(statusAt(service, issued)?.status, issued) && qualifiedUnder(statusAt(service, at)?.status, at);
}

/** A TSA qualified per the list: a TSA/QTST service granted at genTime. */
export const qualifiedTsa = (service: ListedService, at: Date): boolean => service.type === TSA_QTST && qualifiedUnder(statusAt(service, at)?.status, at);

// Keyed by the arrays, which the worker's threads keep while their versions last: the index of
// thousands of listed certificates is built once, not for every verification.
const indexes = new WeakMap<readonly ListedService[], WeakMap<readonly X509Certificate[], AnchorIndex>>();
const pemIndexes = new WeakMap<readonly X509Certificate[], AnchorIndex>();

/** Every certificate a chain may end at, indexed (once per pair of arrays). */
export function anchorsOf(trust: Trust): AnchorIndex {
  let byAnchors = indexes.get(trust.services);
  if (!byAnchors) indexes.set(trust.services, (byAnchors = new WeakMap()));
  let index = byAnchors.get(trust.anchors);
  if (!index) byAnchors.set(trust.anchors, (index = anchorIndex([...trust.anchors, ...trust.services.flatMap((s) => s.certificates)])));
  return index;
}

/** The trust store's certificates alone: a chain that reaches one is trusted whatever the lists say of a CA on the way. */
export function storeAnchorsOf(trust: Trust): AnchorIndex {
  let index = pemIndexes.get(trust.anchors);
  if (!index) pemIndexes.set(trust.anchors, (index = anchorIndex(trust.anchors)));
  return index;
}

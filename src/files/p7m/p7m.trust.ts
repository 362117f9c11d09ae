// What a chain may end at: the certificates of the configured trust store (SIGNATURE_TRUST_STORE),
// trusted as they are, and the services of imported EU trusted lists (ETSI TS 119 612), trusted
// while the list says their status allowed it: a service withdrawn before a signature was made
// vouches for nothing after that date, and vouched for everything before it.
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
}

/** A service as stored and passed to the verifier's threads (JSON). */
export interface ServiceRecord {
  territory: string;
  provider: string;
  name: string;
  type: string;
  /** Newest first, ISO 8601 times. */
  history: Array<{ status: string; from: string }>;
  /** Base64 DER. */
  certificates: string[];
}

export function servicesOf(records: readonly ServiceRecord[]): ListedService[] {
  return records.map((r) => ({
    territory: r.territory, provider: r.provider, name: r.name, type: r.type,
    history: r.history.map((h) => ({ status: h.status, from: new Date(h.from) })),
    certificates: r.certificates.map((c) => new X509Certificate(Buffer.from(c, 'base64'))),
  }));
}

/** What chains are checked against. Both empty: chains are not checked. */
export interface Trust {
  anchors: readonly X509Certificate[];
  services: readonly ListedService[];
}

const NONE: readonly never[] = [];

/** Trust from what was configured; the same empty arrays for what was not (the index cache's keys). */
export const trustOf = (anchors?: readonly X509Certificate[], services?: readonly ListedService[]): Trust => ({ anchors: anchors ?? NONE, services: services ?? NONE });

export const CA_QC = 'http://uri.etsi.org/TrstSvc/Svctype/CA/QC';
export const TSA_QTST = 'http://uri.etsi.org/TrstSvc/Svctype/TSA/QTST';
const STATUS = 'http://uri.etsi.org/TrstSvc/TrustedList/Svcstatus/';
/** eIDAS applies from this instant; the statuses of the Directive 1999/93 lists held until then. */
const EIDAS = Date.parse('2016-07-01T00:00:00Z');
/** Statuses under which a service vouched for what it issued (ETSI TS 119 615, as the EU's DSS reads them). */
const ACCEPTED_SINCE_EIDAS = new Set(['granted', 'recognisedatnationallevel'].map((s) => STATUS + s));
const ACCEPTED_BEFORE_EIDAS = new Set(['undersupervision', 'supervisionincessation', 'accredited', 'setbynationallaw'].map((s) => STATUS + s));

export const checksChains = (trust: Trust): boolean => trust.anchors.length > 0 || trust.services.length > 0;

/** The status the list gave `service` at `at`; undefined before its first. */
export function statusAt(service: ListedService, at: Date): { status: string; from: Date } | undefined {
  return service.history.find((h) => h.from.getTime() <= at.getTime());
}

function accepted(status: string, at: Date): boolean {
  return (at.getTime() < EIDAS ? ACCEPTED_BEFORE_EIDAS : ACCEPTED_SINCE_EIDAS).has(status);
}

/** The last path segment of a status URI (granted, withdrawn, ...), for people. */
export const statusName = (uri: string): string => uri.slice(uri.lastIndexOf('/') + 1);

/** How a chain that reached `ends` (anchors it reached at the same step) is judged at `at`. */
export type AnchorVerdict =
  | { trusted: true; service?: ListedService; status?: string }
  | { trusted: false; why: string };

export function judgeAnchors(ends: readonly X509Certificate[], trust: Trust, at: Date): AnchorVerdict {
  if (ends.some((e) => trust.anchors.some((a) => a.raw.equals(e.raw)))) return { trusted: true };
  const listed = trust.services.filter((s) => s.certificates.some((c) => ends.some((e) => c.raw.equals(e.raw))));
  let why = 'no path to a trust anchor';
  for (const service of listed) {
    const status = statusAt(service, at);
    if (status && accepted(status.status, at)) return { trusted: true, service, status: status.status };
    why = status
      ? `the ${service.territory} trusted list's service "${service.name}" was ${statusName(status.status)} at the signing time (since ${status.from.toISOString()})`
      : `the ${service.territory} trusted list's service "${service.name}" had no status yet at the signing time`;
  }
  return { trusted: false, why };
}

// Keyed by the arrays, which the worker's threads keep while their versions last: the index of
// thousands of listed certificates is built once, not for every verification.
const indexes = new WeakMap<readonly ListedService[], WeakMap<readonly X509Certificate[], AnchorIndex>>();

/** Every certificate a chain may end at, indexed (once per pair of arrays). */
export function anchorsOf(trust: Trust): AnchorIndex {
  let byAnchors = indexes.get(trust.services);
  if (!byAnchors) indexes.set(trust.services, (byAnchors = new WeakMap()));
  let index = byAnchors.get(trust.anchors);
  if (!index) byAnchors.set(trust.anchors, (index = anchorIndex([...trust.anchors, ...trust.services.flatMap((s) => s.certificates)])));
  return index;
}

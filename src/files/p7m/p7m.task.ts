// The worker-thread entry (piscina) of the .p7m check: verification is CPU-bound and must not
// hold the event loop of the process that runs the jobs.
import type { X509Certificate } from 'node:crypto';
import { loadTrustAnchors, verifyP7m, type SignatureVerdict } from './p7m.verifier.js';
import { servicesOf, type ListedService, type ServiceRecord } from './p7m.trust.js';

/** What the pool passes: the envelope, the trust store's PEM, the trusted lists' services, the check instant (epoch ms). */
export interface VerifyTaskInput {
  bytes: Uint8Array;
  trustPem?: string;
  /** UTF-8 JSON of ServiceRecord[] (trust.source.ts), decoded once per key. */
  services?: { key: string; data: SharedArrayBuffer };
  now?: number;
}

// One trust store per deployment in practice; a few kept in case the configuration changes.
const anchorsByPem = new Map<string, X509Certificate[]>();
let servicesCache: { key: string; services: ListedService[] } | undefined;

/** Verifies one envelope; throws only when the trust store PEM itself is bad. */
export default function verifyTask(input: VerifyTaskInput): SignatureVerdict {
  let trustAnchors: X509Certificate[] | undefined;
  if (input.trustPem) {
    trustAnchors = anchorsByPem.get(input.trustPem);
    if (!trustAnchors) {
      trustAnchors = loadTrustAnchors(input.trustPem);
      if (anchorsByPem.size >= 4) anchorsByPem.clear();
      anchorsByPem.set(input.trustPem, trustAnchors);
    }
  }
  let trustServices: ListedService[] | undefined;
  if (input.services) {
    if (servicesCache?.key !== input.services.key) {
      const records = JSON.parse(Buffer.from(input.services.data).toString('utf8')) as ServiceRecord[];
      servicesCache = { key: input.services.key, services: servicesOf(records) };
    }
    trustServices = servicesCache.services;
  }
  return verifyP7m(input.bytes, { trustAnchors, trustServices, now: input.now === undefined ? undefined : new Date(input.now) });
}

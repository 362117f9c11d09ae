// The worker-thread entry (piscina) of the .p7m check: verification is CPU-bound and must not
// hold the event loop of the process that runs the jobs.
import type { X509Certificate } from 'node:crypto';
import { loadTrustAnchors, verifyP7m, type SignatureVerdict } from './p7m.verifier.js';

/** What the pool passes: the envelope, the trust store's PEM, the check instant (epoch ms). */
export interface VerifyTaskInput {
  bytes: Uint8Array;
  trustPem?: string;
  now?: number;
}

// One trust store per deployment in practice; a few kept in case the configuration changes.
const anchorsByPem = new Map<string, X509Certificate[]>();

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
  return verifyP7m(input.bytes, { trustAnchors, now: input.now === undefined ? undefined : new Date(input.now) });
}

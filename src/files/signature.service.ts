// The .p7m check of a public v2 document, after its scan found it clean. The judged copy is
// read (bounded), verified off the event loop (see workers/), and the file becomes Signed or
// Clean with the verdict kept. A check that cannot complete after its retries leaves the file
// Clean with the reason, never In Progress and never Signed.
import type { Readable } from 'node:stream';
import type { Logger } from '../shared/logger.js';
import type { Storage } from '../shared/storage.js';
import type { FileRepository } from './file.repository.js';
import type { SignatureVerdict } from './p7m/p7m.verifier.js';

/** Verifies an envelope; in production a worker-thread pool runs it. */
export type Verify = (bytes: Uint8Array) => Promise<SignatureVerdict>;

export type SignatureOutcome = 'unknown' | 'not-pending' | 'Signed' | 'Clean';

/** Reads a whole stream, refusing (undefined) past `maxBytes`. */
export async function readBounded(stream: Readable, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxBytes) {
      stream.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

/** The verdict of an envelope that could not be checked at all. */
const notChecked = (reason: string): SignatureVerdict => ({ outcome: 'not-signed', reason, levels: 0, chain: 'not-checked', signers: [] });

export function createSignatureService(deps: { repo: FileRepository; storage: Storage; verify: Verify; maxBytes: number; logger: Logger; now?: () => Date }) {
  const { repo, storage, verify, maxBytes, logger } = deps;
  const now = deps.now ?? (() => new Date());

  async function record(uuid: string, verdict: SignatureVerdict): Promise<'Signed' | 'Clean' | 'not-pending'> {
    const status = verdict.outcome === 'signed' ? 'Signed' : 'Clean';
    const done = await repo.recordSignature(uuid, status, JSON.stringify(verdict), now());
    if (done) logger.info({ file: uuid, status, reason: verdict.reason }, 'signature checked');
    return done ? status : 'not-pending';
  }

  return {
    async check(uuid: string, lastAttempt: boolean): Promise<SignatureOutcome> {
      const file = await repo.get(uuid);
      if (!file) return 'unknown';
      if (file.status !== 'In Progress' || !file.scannedAt || !file.storedKey) return 'not-pending';
      try {
        // Exactly the version the scan judged (or, for a file judged before versions were pinned, its copy).
        const bytes = (file.size ?? 0) > maxBytes ? undefined : await readBounded(await storage.read(file.storedKey, file.versionId ?? undefined), maxBytes);
        const verdict: SignatureVerdict = bytes ? await verify(bytes) : notChecked(`Too large for a signature check (over ${maxBytes} bytes).`);
        return await record(uuid, verdict);
      } catch (err) {
        logger.warn({ file: uuid, err: (err as Error).message, lastAttempt }, 'signature check attempt failed');
        // The reason a client sees names no host and no internal error; the log has the detail.
        if (lastAttempt) await record(uuid, notChecked('The signature check could not complete after its retries.'));
        throw err;
      }
    },
  };
}

export type SignatureService = ReturnType<typeof createSignatureService>;

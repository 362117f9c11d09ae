// Signature verification off the event loop: parsing and hashing a large or hostile envelope
// is CPU work that would otherwise stall the worker's job-lock renewals. A piscina pool of
// worker threads runs p7m.task; a task that runs too long is aborted (its thread replaced).
import { Piscina } from 'piscina';
import type { SignatureVerdict } from './p7m/p7m.verifier.js';
import type { Verify } from './signature.service.js';
import type { SharedServices } from './trust/trust.source.js';

export interface VerifyPool {
  /** Verifies on a worker thread; a Uint8Array that owns its whole ArrayBuffer is moved there (unusable afterwards). */
  verify: Verify;
  close(): Promise<void>;
}

export function createVerifyPool(opts: {
  threads: number;
  trustPem?: string | undefined;
  timeoutMs?: number;
  /** The imported trusted lists' services (the database's), when there are any. */
  trustServices?: () => Promise<SharedServices | undefined>;
}): VerifyPool {
  // Under tsx (npm start, npm test) the task is TypeScript, and its thread needs tsx too.
  const fromSource = import.meta.url.endsWith('.ts');
  const pool = new Piscina({
    filename: new URL(`./p7m/p7m.task.${fromSource ? 'ts' : 'js'}`, import.meta.url).href,
    minThreads: 1,
    maxThreads: opts.threads,
    idleTimeout: 60_000,
    ...(fromSource && !process.execArgv.some((a) => a.includes('tsx')) && { execArgv: [...process.execArgv, '--import', 'tsx'] }),
  });
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return {
    async verify(bytes) {
      // Moved, not copied, to the thread when the bytes own their whole ArrayBuffer (the caller
      // gives them up); a small Buffer may share a pooled ArrayBuffer with others, so it is copied.
      const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && !(bytes.buffer instanceof SharedArrayBuffer);
      const services = await opts.trustServices?.();
      return (await pool.run(
        { bytes, trustPem: opts.trustPem, ...(services && { services }) },
        {
          signal: AbortSignal.timeout(timeoutMs),
          ...(owned && { transferList: [bytes.buffer] }),
        },
      )) as SignatureVerdict;
    },
    async close() {
      await pool.destroy();
    },
  };
}

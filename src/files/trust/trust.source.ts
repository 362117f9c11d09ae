// The imported trusted lists as the signature worker's threads receive them: read from the
// database when they change (looked at most every `refreshMs`), encoded once as JSON in a
// SharedArrayBuffer, which a task passes to its thread without a copy; each thread decodes a
// version once (p7m.task.ts). With no list imported the value is an empty list, not nothing:
// lists are in use (TRUSTED_LIST_SIGNERS), so chains are checked and none is trusted by them.
import { createHash } from 'node:crypto';
import type { TrustRepository } from './trust.repository.js';

export interface SharedServices {
  /** Identifies the version: a thread decodes each version once. */
  key: string;
  /** UTF-8 JSON of ServiceRecord[]. */
  data: SharedArrayBuffer;
}

export function createTrustSource(repo: Pick<TrustRepository, 'version' | 'snapshot'>, opts: { refreshMs: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  let shared: SharedServices | undefined;
  let checkedAt = -Infinity;
  let pending: Promise<SharedServices> | undefined;

  async function refresh(): Promise<SharedServices> {
    const version = await repo.version();
    const key = createHash('sha256').update(version).digest('base64url');
    if (shared?.key !== key) {
      // The services and their version read together; the cheap version read above only said something changed.
      const snapshot = await repo.snapshot();
      const json = Buffer.from(JSON.stringify(snapshot.services), 'utf8');
      const data = new SharedArrayBuffer(json.length);
      json.copy(Buffer.from(data));
      shared = { key: createHash('sha256').update(snapshot.version).digest('base64url'), data };
    }
    checkedAt = now();
    return shared;
  }

  return {
    /** The services to verify with (an empty list when none is imported). Concurrent callers share one read. */
    async current(): Promise<SharedServices> {
      if (shared && now() - checkedAt < opts.refreshMs) return shared;
      pending ??= refresh().finally(() => {
        pending = undefined;
      });
      return pending;
    },
  };
}

export type TrustSource = ReturnType<typeof createTrustSource>;

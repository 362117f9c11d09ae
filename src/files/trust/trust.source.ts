// The imported trusted lists as the signature worker's threads receive them: read from the
// database when they change (looked at most every `refreshMs`), encoded once as JSON in a
// SharedArrayBuffer, which a task passes to its thread without a copy; each thread decodes a
// version once (p7m.task.ts).
import { createHash } from 'node:crypto';
import type { TrustRepository } from './trust.repository.js';

export interface SharedServices {
  /** Identifies the version: a thread decodes each version once. */
  key: string;
  /** UTF-8 JSON of ServiceRecord[]. */
  data: SharedArrayBuffer;
}

export function createTrustSource(repo: Pick<TrustRepository, 'version' | 'services'>, opts: { refreshMs: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  let shared: SharedServices | undefined;
  let version: string | undefined;
  let checkedAt = -Infinity;
  let pending: Promise<SharedServices | undefined> | undefined;

  async function refresh(): Promise<SharedServices | undefined> {
    const current = await repo.version();
    if (current !== version) {
      const json = Buffer.from(JSON.stringify(await repo.services()), 'utf8');
      const data = new SharedArrayBuffer(json.length);
      json.copy(Buffer.from(data));
      shared = current === '' ? undefined : { key: createHash('sha256').update(current).digest('base64url'), data };
      version = current;
    }
    checkedAt = now();
    return shared;
  }

  return {
    /** The services to verify with; undefined when no list is imported. Concurrent callers share one read. */
    async current(): Promise<SharedServices | undefined> {
      if (now() - checkedAt < opts.refreshMs) return shared;
      pending ??= refresh().finally(() => { pending = undefined; });
      return pending;
    },
  };
}

export type TrustSource = ReturnType<typeof createTrustSource>;

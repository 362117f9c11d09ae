// The log's one sequencer at a time: a lease in a replicated row (log_sequencer), taken when
// free or run out, renewed while its holder works, fenced by a token that every append carries
// (log.repository.ts append). MariaDB's GET_LOCK, which the notarizer held before, is not
// replicated by a Galera cluster: each node would grant it, two leaders, two logs. A row is: two
// nodes' takings of it cannot both commit, and an append of a holder whose lease was taken over
// finds another token and writes nothing.
//
// In one process the notarization cycle and the log's ticks take turns (a queue), so that the
// lease is never taken twice by the same holder.
//
// Publishing (tiles, the checkpoint, the witnesses) appends nothing: it holds a lease of its own,
// the table's second row, so that one process at a time publishes (the bucket's checkpoint object
// is read then written, and witnesses answer one submission at a time) while appends go on.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Transaction } from '../shared/db/sequelize.js';
import { PUBLISHER, type LogRepository } from './log.repository.js';
import { leafHashOf } from './tree.js';

/** What the holder of the lease does with it. */
export interface Fence {
  token: number;
  /** Renews the lease; false when it is lost (stop before the next step that must not run twice). */
  held(): Promise<boolean>;
  /** Appends entries in `t` (the transaction that writes what they record): the index of the first; FencedError when the lease is lost. */
  append(entries: readonly Uint8Array[], t: Transaction): Promise<number>;
}

export interface Sequencer {
  /** Runs `work` holding the lease, or returns undefined at once when another process holds it. */
  exclusive<T>(work: (fence: Fence) => Promise<T>): Promise<T | undefined>;
  /**
   * Runs `work` holding the publisher's lease (another row: the appends go on meanwhile), or
   * returns undefined at once when another process publishes; `held` renews it.
   */
  publishing<T>(work: (held: () => Promise<boolean>) => Promise<T>): Promise<T | undefined>;
  holder: string;
}

export function createSequencer(deps: { repo: LogRepository; leaseMs: number; holder?: string; now?: () => Date }): Sequencer {
  const { repo, leaseMs } = deps;
  const holder = deps.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const now = deps.now ?? (() => new Date());
  let queue: Promise<unknown> = Promise.resolve();

  async function once<T>(work: (fence: Fence) => Promise<T>): Promise<T | undefined> {
    const token = await repo.acquire(holder, leaseMs);
    if (token === undefined) return undefined;
    const fence: Fence = {
      token,
      held: () => repo.renew(token, leaseMs),
      append: (entries, t) =>
        repo.append(
          entries.map((bytes) => ({ bytes, leafHash: leafHashOf(bytes) })),
          token,
          now(),
          t,
        ),
    };
    try {
      return await work(fence);
    } finally {
      await repo.release(token).catch(() => undefined);
    }
  }

  return {
    holder,
    async publishing<T>(work: (held: () => Promise<boolean>) => Promise<T>): Promise<T | undefined> {
      const token = await repo.acquire(holder, leaseMs, PUBLISHER);
      if (token === undefined) return undefined;
      try {
        return await work(() => repo.renew(token, leaseMs, PUBLISHER));
      } finally {
        await repo.release(token, PUBLISHER).catch(() => undefined);
      }
    },
    exclusive<T>(work: (fence: Fence) => Promise<T>): Promise<T | undefined> {
      const run = queue.then(() => once(work));
      queue = run.catch(() => undefined);
      return run;
    },
  };
}

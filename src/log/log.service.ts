// The transparency log's service (issue 30). Appends, under the sequencer's lease:
//   - the notarization leaves the notarizer's seal did not append itself (those sealed before
//     this release, or by a worker of the previous one during a rolling release);
//   - each audit chain's head whenever it moved, and each receipt-key change;
// then, the lease given back, publishes: the new tiles (level 0 and the entries, the levels above
// as tiles fill) to the log's bucket, the hashes above level 0 to log_hashes, and a checkpoint
// signed by the log's key, at most every LOG_CHECKPOINT_INTERVAL_MS. Each new checkpoint goes to the witnesses with its
// consistency proof from the size each last cosigned; their cosignatures are kept and published.
// A witness that is down or refuses is recorded (readyz, the metric) and retried at the next
// checkpoint: the log goes on without it.
import type { Logger } from '../shared/logger.js';
import type { Transaction } from '../shared/db/sequelize.js';
import { formatCheckpoint, parseCheckpoint } from './checkpoint.js';
import { entryBytes, type LogEntry } from './entries.js';
import type { LogRepository, StoredCheckpoint } from './log.repository.js';
import { openNote, signNote, type Signer, type Verifier } from './note.js';
import type { Fence, Sequencer } from './sequencer.js';
import { encodeBundle, tilePath, type TileRef } from './tiles.js';
import type { TileStore } from './tile-store.js';
import { TILE_WIDTH, tileRoot, treeHashes } from './tree.js';

/** A notarization leaf not yet in the log. */
export interface UnloggedLeaf {
  kind: 'record' | 'amendment';
  /** The guarantee's or the amendment's id. */
  id: string;
  digest: string;
}

/** A receipt-signing key as the log records it. */
export interface ObservedKey {
  kid: string;
  x: string;
  retiredAt: Date | null;
  compromisedSince: Date | null;
}

/** What the log observes in other domains' rows (src/composition.ts wires them). */
export interface LogSources {
  /** Up to `limit` notarization leaves without a log index, oldest batch first. */
  unloggedLeaves(limit: number): Promise<UnloggedLeaf[]>;
  /** Records where these leaves are in the log, in `t`. */
  setLogIndexes(leaves: ReadonlyArray<{ kind: UnloggedLeaf['kind']; id: string; index: number }>, t: Transaction): Promise<void>;
  /** Every audit chain's head (seq), cheap: the hashes are asked for the moved ones only. */
  auditHeads(): Promise<Array<{ chain: string; seq: number }>>;
  auditHashes(heads: ReadonlyArray<{ chain: string; seq: number }>): Promise<Map<string, string>>;
  keys(): Promise<ObservedKey[]>;
}

export interface Witness {
  url: string;
  vkey: string;
  verifier: Verifier;
}

/** The largest step one publication integrates (a backlog is published over several, each ending on a full tile). */
const STEP = 64 * TILE_WIDTH;
/** Tiles written at once. */
const PUT_CONCURRENCY = 8;

export interface TickResult {
  appended: number;
  published?: number;
}

export interface LogProof {
  index: number;
  /** The checkpoint with every cosignature it has. */
  checkpoint: string;
  /** The inclusion proof (RFC 9162), leaf first, hex. */
  inclusion: string[];
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const utf8 = (s: string) => new TextEncoder().encode(s);

async function inParallel<T>(items: readonly T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

export function createLogService(deps: {
  repo: LogRepository;
  sequencer: Sequencer;
  store: TileStore;
  /** The log's key, read (or made, in development) at first use. */
  key: () => Promise<{ signer: Signer; verifierKey: string }>;
  origin: string;
  witnesses: readonly Witness[];
  sources: LogSources;
  intervalMs: number;
  witnessTimeoutMs: number;
  logger: Logger;
  now?: () => Date;
  fetch?: typeof fetch;
}) {
  const { repo, sequencer, store, origin, witnesses, sources, logger } = deps;
  let key: Promise<{ signer: Signer; verifierKey: string }> | undefined;
  const keyOnce = () => {
    key ??= deps.key().catch((err: unknown) => {
      key = undefined;
      throw err;
    });
    return key;
  };
  const now = deps.now ?? (() => new Date());
  const send = deps.fetch ?? fetch;
  const tree = treeHashes((level, from, to) => repo.hashes(level, from, to));

  /** Appends the leaves the seals did not, and the moved audit heads and key changes; how many entries. */
  async function sequence(fence: Fence): Promise<number> {
    let appended = 0;
    for (;;) {
      // A backlog (the leaves of a release before the log) is appended 1,000 at a time, the lease renewed before each.
      if (appended && !(await fence.held())) return appended;
      const leaves = await sources.unloggedLeaves(1000);
      if (!leaves.length) break;
      await repo.transaction(async (t) => {
        const first = await fence.append(
          leaves.map((l) => entryBytes({ kind: l.kind, digest: l.digest })),
          t,
        );
        await sources.setLogIndexes(
          leaves.map((l, i) => ({ kind: l.kind, id: l.id, index: first + i })),
          t,
        );
      });
      appended += leaves.length;
      if (leaves.length < 1000) break;
    }
    const observed = await repo.observed();
    const entries: LogEntry[] = [];
    const subjects: Array<[string, string]> = [];
    const moved = (await sources.auditHeads()).filter((h) => h.seq > 0 && observed.get(`audit:${h.chain}`) !== String(h.seq));
    if (moved.length) {
      const hashes = await sources.auditHashes(moved);
      for (const h of moved) {
        const hash = hashes.get(h.chain);
        if (!hash) continue;
        entries.push({ kind: 'audit', chain: h.chain, seq: h.seq, hash });
        subjects.push([`audit:${h.chain}`, String(h.seq)]);
      }
    }
    for (const k of await sources.keys()) {
      const seen = observed.get(`key:${k.kid}`);
      if (seen === undefined) {
        entries.push({ kind: 'key-added', kid: k.kid, x: k.x });
        subjects.push([`key:${k.kid}`, 'added']);
      }
      if (k.retiredAt) {
        const state = `retired ${k.retiredAt.toISOString()}${k.compromisedSince ? ` ${k.compromisedSince.toISOString()}` : ''}`;
        if (seen !== state) {
          entries.push({
            kind: 'key-retired',
            kid: k.kid,
            at: k.retiredAt.toISOString(),
            ...(k.compromisedSince && { compromisedSince: k.compromisedSince.toISOString() }),
          });
          subjects.push([`key:${k.kid}`, state]);
        }
      }
    }
    if (entries.length) {
      await repo.transaction(async (t) => {
        await fence.append(entries.map(entryBytes), t);
        await repo.setObserved(subjects, t);
      });
      appended += entries.length;
    }
    return appended;
  }

  /** Writes the tiles the tree grows by from `from` to `to` leaves, and stores the hashes of the tiles that filled. */
  async function integrate(from: number, to: number): Promise<void> {
    for (let level = 0; ; level++) {
      const before = Math.floor(from / TILE_WIDTH ** level);
      const after = Math.floor(to / TILE_WIDTH ** level);
      if (after === 0 || after === before) break;
      const tiles: number[] = [];
      for (let t = Math.floor(before / TILE_WIDTH); t * TILE_WIDTH < after; t++) tiles.push(t);
      const filled: Array<{ index: number; hash: Uint8Array }> = [];
      await inParallel(tiles, PUT_CONCURRENCY, async (t) => {
        const start = t * TILE_WIDTH;
        const hashes = await repo.hashes(level, start, Math.min(start + TILE_WIDTH, after));
        const width = hashes.length;
        if (width !== Math.min(TILE_WIDTH, after - start)) throw new Error(`the log's level ${level} misses hashes from ${start}`);
        const bytes = new Uint8Array(width * 32);
        hashes.forEach((h, i) => bytes.set(h, i * 32));
        await store.put(tilePath({ level, index: t, width }), bytes, 'immutable');
        if (level === 0) {
          const entries = await repo.entries(start, start + width);
          if (entries.length !== width) throw new Error(`the log misses entries from ${start}`);
          await store.put(tilePath({ level: 'entries', index: t, width }), encodeBundle(entries), 'immutable');
        }
        if (width === TILE_WIDTH) filled.push({ index: t, hash: tileRoot(hashes) });
      });
      await repo.putHashes(level + 1, filled);
    }
  }

  /**
   * Writes `c`, with its cosignatures, as the bucket's `checkpoint`, unless the bucket already
   * holds a larger one (another process published further meanwhile): the object never goes back.
   */
  async function putCheckpointObject(c: StoredCheckpoint): Promise<void> {
    const held = await store.get('checkpoint');
    const size = held ? Number(new TextDecoder().decode(held).split('\n')[1]) : -1;
    if (size > c.size) return;
    await store.put('checkpoint', utf8(await cosigned(c)), 'checkpoint');
  }

  /** The note of `c` with every cosignature kept for it. */
  async function cosigned(c: StoredCheckpoint): Promise<string> {
    const lines = await repo.cosignatures(c.size);
    return c.note + lines.join('');
  }

  /** Publishes a checkpoint of the log as it is now, if it grew and the interval passed; its size. */
  async function publish(force: boolean, held: () => Promise<boolean>): Promise<number | undefined> {
    const size = await repo.size();
    const latest = await repo.latestCheckpoint();
    const published = latest?.size ?? 0;
    if (latest && size <= published) return undefined;
    // About every interval: the ticks come at a fixed rate, and a checkpoint is dated when its
    // publication starts, so that one whose tiles took a while is not skipped at the next tick.
    const startedAt = now();
    if (!force && latest && startedAt.getTime() - latest.createdAt.getTime() < deps.intervalMs * 0.9) return undefined;
    for (let at = published; at < size;) {
      // A backlog is integrated a step at a time, the publisher's lease renewed before each.
      if (at > published && !(await held())) return undefined;
      const next = at + STEP >= size ? size : Math.floor((at + STEP) / TILE_WIDTH) * TILE_WIDTH;
      await integrate(at, next);
      at = next;
    }
    const root = await tree.root(size);
    const text = formatCheckpoint({ origin, size, root, extensions: [] });
    const note = signNote(text, [(await keyOnce()).signer]);
    const c = { size, root, note, createdAt: startedAt };
    await repo.putCheckpoint(c);
    await putCheckpointObject(c);
    logger.info({ size, root: hex(root) }, 'log checkpoint published');
    return size;
  }

  /** One witness's answer to a checkpoint: its cosignature line(s), or why not. */
  async function submit(w: Witness, c: StoredCheckpoint, oldSize: number): Promise<{ lines: string } | { conflict: number } | { error: string }> {
    const proof = oldSize > 0 && oldSize < c.size ? await tree.consistency(oldSize, c.size) : [];
    const body = `old ${oldSize}\n${proof.map((h) => `${Buffer.from(h).toString('base64')}\n`).join('')}\n${c.note}`;
    let res: Response;
    try {
      res = await send(`${w.url}/add-checkpoint`, { method: 'POST', body, signal: AbortSignal.timeout(deps.witnessTimeoutMs), redirect: 'error' });
    } catch (err) {
      return { error: `unreachable: ${(err as Error).message}` };
    }
    const text = (await res.text().catch(() => '')).slice(0, 4096);
    if (res.status === 409 && /^(0|[1-9][0-9]{0,15})\n$/.test(text)) return { conflict: Number(text.trim()) };
    if (res.status !== 200) return { error: `answered ${res.status}: ${text.trim().slice(0, 200)}` };
    try {
      // Only a line its key verifies is kept, each checked on its own.
      const kept = text.split('\n').filter((l) => {
        try {
          return l !== '' && openNote(`${parseCheckpointText(c.note)}\n${l}\n`, [w.verifier]).verified.length === 1;
        } catch {
          return false;
        }
      });
      if (!kept.length) throw new Error('no line of its answer verifies with its key');
      return { lines: `${kept[0] as string}\n` };
    } catch (err) {
      return { error: `its cosignature does not verify with its key: ${(err as Error).message}` };
    }
  }

  /** The text of a stored note (without its signatures). */
  function parseCheckpointText(note: string): string {
    return note.slice(0, note.lastIndexOf('\n\n') + 1);
  }

  /** Sends the latest checkpoint to every witness not yet holding it. */
  async function witness(): Promise<void> {
    if (!witnesses.length) return;
    const c = await repo.latestCheckpoint();
    if (!c) return;
    const states = new Map((await repo.witnesses()).map((s) => [s.vkey, s]));
    let added = false;
    await Promise.all(
      witnesses.map(async (w) => {
        let old = states.get(w.vkey)?.size ?? 0;
        if (old === c.size && (await repo.cosignatures(c.size)).some((l) => l.startsWith(`\u2014 ${w.verifier.name} `))) return;
        for (let attempt = 0; attempt < 2; attempt++) {
          const answer = await submit(w, c, old);
          if ('lines' in answer) {
            await repo.putCosignature(c.size, w.verifier.name, answer.lines, now());
            await repo.witnessAnswered(w.vkey, now(), { size: c.size });
            added = true;
            return;
          }
          if ('conflict' in answer && answer.conflict <= c.size && attempt === 0) {
            old = answer.conflict;
            continue;
          }
          // A larger size the witness holds may be this log's own newer checkpoint (published since this one was read).
          if ('conflict' in answer && answer.conflict > c.size && ((await repo.latestCheckpoint())?.size ?? 0) >= answer.conflict) return;
          const error =
            'conflict' in answer
              ? answer.conflict > c.size
                ? `holds a checkpoint of size ${answer.conflict}, larger than the log's ${c.size}: the log lost entries it had published`
                : `refuses the checkpoint of size ${c.size}, of which it holds another (a fork, or this log's state restored from an older copy)`
              : answer.error;
          await repo.witnessAnswered(w.vkey, now(), { error });
          logger.warn({ witness: w.url, error }, 'a witness did not cosign the log checkpoint');
          return;
        }
      }),
    );
    if (added) await putCheckpointObject(c);
  }

  return {
    origin,
    /** The log's verifier key string (GET /log/key). */
    verifierKey: async () => (await keyOnce()).verifierKey,
    tree,

    /**
     * One round: appends what waits (holding the sequencer's lease), then, that lease given back
     * and the publisher's taken, publishes a checkpoint when due and asks the witnesses to cosign
     * it. Publishing appends nothing, so the notarizer's cycles need not wait for it: a long one
     * (a backlog) does not hold the leaves of new batches back.
     */
    async tick(opts: { force?: boolean } = {}): Promise<TickResult | undefined> {
      const appended = await sequencer.exclusive((fence) => sequence(fence));
      if (appended === undefined) return undefined;
      // Under the publisher's lease: one process publishes at a time (another publishing now: its turn).
      const published = await sequencer.publishing(async (held) => {
        const size = await publish(opts.force ?? false, held);
        if (await held()) await witness();
        return size;
      });
      return { appended, ...(published !== undefined && { published }) };
    },

    /** The latest checkpoint with its cosignatures, or undefined before the first. */
    async checkpoint(): Promise<string | undefined> {
      const c = await repo.latestCheckpoint();
      return c && cosigned(c);
    },

    /** The inclusion of entry `index` in the latest checkpoint, or undefined while no checkpoint holds it. */
    async proof(index: number): Promise<LogProof | undefined> {
      // The newest checkpoint every configured witness has cosigned (among the recent ones holding
      // the leaf), so that a proof or a receipt is not handed a checkpoint between its
      // publication and its cosignatures; the newest one while a witness is down.
      const c = witnesses.length ? await repo.bestCheckpoint(index, witnesses.length) : await repo.latestCheckpoint();
      if (!c || index >= c.size) return undefined;
      const inclusion = await tree.inclusion(index, c.size);
      return { index, checkpoint: await cosigned(c), inclusion: inclusion.map(hex) };
    },

    /** A consistency proof between two published sizes (the mirrors' and the witnesses' question). */
    async consistency(oldSize: number, newSize: number): Promise<string[]> {
      return (await tree.consistency(oldSize, newSize)).map(hex);
    },

    /** How each witness stands: for /readyz and the metrics. */
    async witnessStates(): Promise<Array<{ url: string; name: string; up: boolean; size: number | null; lastError: string | null }>> {
      const states = new Map((await repo.witnesses()).map((s) => [s.vkey, s]));
      return witnesses.map((w) => {
        const s = states.get(w.vkey);
        const up = !!s?.lastOkAt && (!s.lastTryAt || s.lastOkAt >= s.lastTryAt);
        return { url: w.url, name: w.verifier.name, up, size: s?.size ?? null, lastError: s?.lastError ?? null };
      });
    },

    /**
     * A tile's bytes, from the log's own rows (the same bytes as the object in the log's
     * bucket): undefined when the log does not hold it whole (yet).
     */
    async tile(ref: TileRef): Promise<Uint8Array | undefined> {
      const start = ref.index * TILE_WIDTH;
      if (ref.level === 'entries') {
        const entries = await repo.entries(start, start + ref.width);
        return entries.length === ref.width ? encodeBundle(entries) : undefined;
      }
      const hashes = await repo.hashes(ref.level, start, start + ref.width);
      if (hashes.length !== ref.width) return undefined;
      const bytes = new Uint8Array(ref.width * 32);
      hashes.forEach((h, i) => bytes.set(h, i * 32));
      return bytes;
    },

    /** Reads a published checkpoint back (tests, the CLI). */
    parse: (note: string) => parseCheckpoint(parseCheckpointText(note)),
  };
}

export type LogService = ReturnType<typeof createLogService>;

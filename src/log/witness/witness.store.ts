// The witness's own small database: one JSON file (state.json in its directory) with each
// watched log's last cosigned size and root, replaced atomically (written aside, flushed to
// disk, renamed over) before the witness answers. One process at a time over a directory: two
// would each hold the state in memory and could cosign two forks of one size. The lock is a
// Linux abstract socket named after the directory (its device and inode): binding it is atomic,
// and the kernel lets it go when its process ends however it ends (a lock file left by a killed
// witness, removed by the next, could be removed by two at once). An abstract socket is seen
// within one host's network namespace: run one witness per directory on one host (two
// containers sharing a volume, or an NFS directory, do not see each other's). Elsewhere than
// Linux, a pid file taken with O_EXCL.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';

export interface HeldCheckpoint {
  size: number;
  root: Uint8Array;
}

export interface WitnessStore {
  get(origin: string): Promise<HeldCheckpoint | undefined>;
  put(origin: string, c: HeldCheckpoint): Promise<void>;
  close(): void;
}

/** Holds the directory's lock until `release`; throws when another witness holds it. */
async function lockDirectory(dir: string): Promise<() => void> {
  const taken = () => new Error(`another witness runs over ${dir}`);
  if (process.platform === 'linux') {
    // Named after the directory itself (its device and inode), however it is reached (a symlink, a bind mount).
    const { dev, ino } = statSync(dir, { bigint: true });
    const name = `\0guarantee-registry-witness:${createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 40)}`;
    const server: Server = createServer((socket) => socket.destroy());
    await new Promise<void>((ok, fail) => {
      server.once('error', (err: NodeJS.ErrnoException) => fail(err.code === 'EADDRINUSE' ? taken() : err));
      server.listen(name, ok);
    });
    server.unref();
    return () => server.close();
  }
  const lock = join(dir, 'witness.lock');
  let fd: number;
  try {
    fd = openSync(lock, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new Error(`${lock} exists: another witness runs over ${dir}, or one ended without removing it`, { cause: err });
    throw err;
  }
  writeSync(fd, String(process.pid));
  closeSync(fd);
  return () => rmSync(lock, { force: true });
}

export async function openWitnessStore(dir: string): Promise<WitnessStore> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const release = await lockDirectory(dir);
  const file = join(dir, 'state.json');
  const state = new Map<string, { size: number; root: string }>(
    existsSync(file) ? Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, { size: number; root: string }>) : [],
  );
  return {
    get(origin) {
      const s = state.get(origin);
      return Promise.resolve(s && { size: s.size, root: Buffer.from(s.root, 'base64') });
    },
    put(origin, c) {
      const next = new Map(state);
      next.set(origin, { size: c.size, root: Buffer.from(c.root).toString('base64') });
      const aside = `${file}.${process.pid}.tmp`;
      const out = openSync(aside, 'w', 0o600);
      try {
        writeSync(out, JSON.stringify(Object.fromEntries(next), null, 1));
        fsyncSync(out);
      } finally {
        closeSync(out);
      }
      renameSync(aside, file);
      const d = openSync(dir, 'r');
      try {
        fsyncSync(d);
      } finally {
        closeSync(d);
      }
      state.set(origin, next.get(origin) as { size: number; root: string });
      return Promise.resolve();
    },
    close() {
      release();
    },
  };
}

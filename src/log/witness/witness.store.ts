// The witness's own small database: one JSON file (state.json in its directory) with each
// watched log's last cosigned size and root, replaced atomically (written aside, flushed to
// disk, renamed over) before the witness answers. One process at a time: a lock file holds the
// running witness's pid, and a second one refuses to start.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function openWitnessStore(dir: string): WitnessStore {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = join(dir, 'witness.lock');
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8'));
    if (pid && pid !== process.pid && alive(pid)) throw new Error(`another witness (pid ${pid}) runs over ${dir}`);
    rmSync(lock, { force: true });
  }
  const fd = openSync(lock, 'wx', 0o600);
  writeSync(fd, String(process.pid));
  closeSync(fd);
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
      rmSync(lock, { force: true });
    },
  };
}

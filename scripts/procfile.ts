// The Procfile's node flags, for what starts its processes outside a platform: the benchmarks,
// and the tests that run the API or the workers as production runs them.
import { readFileSync } from 'node:fs';

export type ProcessKind = 'web' | 'worker';

/** The node flags of one process of a Procfile's text: `web: node --a --b dist/x.js` gives ['--a', '--b']. */
export function flagsOf(procfile: string, kind: ProcessKind): string[] {
  const line = procfile.split('\n').find((l) => l.startsWith(`${kind}:`));
  const command = /^\w+:\s*node\s+(.*)$/.exec(line ?? '')?.[1];
  if (command === undefined) throw new Error(`the Procfile has no "${kind}: node ..." line`);
  return command
    .trim()
    .split(/\s+/)
    .filter((a) => a.startsWith('--'));
}

/** The node flags of a process of ./Procfile. */
export function procfileFlags(kind: ProcessKind): string[] {
  return flagsOf(readFileSync('Procfile', 'utf8'), kind);
}

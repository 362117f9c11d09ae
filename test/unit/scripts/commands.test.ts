import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCommands } from '../../../scripts/commands.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !check();) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A wrapper as mocha's bin is one: it starts a child (a node process that writes its pid to
 * `pidFile` and lives on; with `stubborn`, it ignores SIGTERM) and dies of SIGTERM itself,
 * passing it on to nobody.
 */
const wrapper = (pidFile: string, stubborn: boolean) => `
const { spawn } = require('node:child_process');
const inner = ${JSON.stringify(`${stubborn ? "process.on('SIGTERM', () => {});" : ''} require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000);`)};
spawn(process.execPath, ['-e', inner], { stdio: 'ignore' });
setInterval(() => {}, 1000);
`;

describe('scripts/commands.ts: the commands npm test runs, stopped whole', function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'commands-'));
  });
  afterEach(() => {
    for (const f of ['inner-1', 'inner-2'])
      if (existsSync(join(dir, f))) {
        const pid = Number(readFileSync(join(dir, f), 'utf8'));
        if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    rmSync(dir, { recursive: true, force: true });
  });

  it("ends a command's whole process group: the child of a wrapper that dies of SIGTERM without passing it on, and one that ignores SIGTERM (SIGKILL after the grace)", async () => {
    const commands = createCommands();
    const files = [join(dir, 'inner-1'), join(dir, 'inner-2')];
    const results = [
      commands.run(process.execPath, ['-e', wrapper(files[0] as string, false)]),
      commands.run(process.execPath, ['-e', wrapper(files[1] as string, true)]),
    ];
    await until('both inner processes started', () => files.every((f) => existsSync(f) && readFileSync(f, 'utf8') !== ''));
    const pids = files.map((f) => Number(readFileSync(f, 'utf8')));
    expect(pids.every(alive)).to.equal(true);
    const t0 = Date.now();
    await commands.end(1000);
    expect(await Promise.all(results)).to.deep.equal([false, false]);
    await until('the inner processes gone', () => !pids.some(alive));
    expect(Date.now() - t0).to.be.below(4000);
  });

  it('starts nothing once refused, and tells the outcome of what it ran', async () => {
    const commands = createCommands();
    expect(await commands.run(process.execPath, ['-e', 'process.exit(0)'])).to.equal(true);
    expect(await commands.run(process.execPath, ['-e', 'process.exit(3)'], { quiet: true })).to.equal(false);
    commands.refuse();
    const marker = join(dir, 'ran');
    expect(await commands.run(process.execPath, ['-e', `require('node:fs').writeFileSync(${JSON.stringify(marker)}, '1')`])).to.equal(false);
    expect(existsSync(marker)).to.equal(false);
  });
});

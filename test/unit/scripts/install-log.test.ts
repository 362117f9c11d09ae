import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * ensurePackages (scripts/services/process.ts) with a stand-in for apt-get that talks as much as
 * dpkg does and, on install, makes the binary asked for (or fails): what reaches the terminal.
 */
function install(dir: string, fail: boolean) {
  const apt = join(dir, 'apt-get');
  writeFileSync(
    apt,
    [
      '#!/bin/sh',
      'i=0; while [ $i -lt 600 ]; do echo "Setting up package-$i ..."; i=$((i+1)); done',
      'if [ "$1" = install ]; then',
      fail ? '  echo "E: Unable to locate package demo-package" >&2; exit 100' : `  printf '#!/bin/sh\\n' > ${dir}/demo-binary; chmod +x ${dir}/demo-binary`,
      'fi',
    ].join('\n'),
  );
  chmodSync(apt, 0o755);
  const script = "import { ensurePackages } from './scripts/services/process.ts'; ensurePackages(['demo-binary'], ['demo-package'], [], 'demo');";
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, APT_GET: apt, INSTALL_LOG: join(dir, 'install.log'), PATH: `${dir}:${process.env.PATH}` },
  });
}

describe('installing packages (npm start and npm test on a bare machine)', function () {
  this.timeout(30_000);
  if (process.getuid?.() !== 0) throw new Error('these tests run as root, as npm test on CI does');

  it("prints one line when installing and one when done, keeping the installers' output in the log", () => {
    const dir = mkdtempSync(join(tmpdir(), 'install-'));
    try {
      const run = install(dir, false);
      expect(run.status, run.stderr).to.equal(0);
      const lines = run.stderr.trim().split('\n');
      expect(lines).to.have.length(2);
      expect(lines[0]).to.match(/^\[services\] demo: installing demo-package \(output in .*install\.log\)$/);
      expect(lines[1]).to.match(/^\[services\] demo: installed in \d+\.\d s$/);
      const log = readFileSync(join(dir, 'install.log'), 'utf8');
      expect(log).to.include('Setting up package-599');
      expect(log).to.include('install -y -qq demo-package');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails with the log's tail when the installation fails", () => {
    const dir = mkdtempSync(join(tmpdir(), 'install-'));
    try {
      const run = install(dir, true);
      expect(run.status).to.not.equal(0);
      expect(run.stderr).to.include('could not install demo-package (apt-get exited with 100)');
      expect(run.stderr).to.include('E: Unable to locate package demo-package');
      // The tail only: the first lines of the installer's output stay in the log.
      expect(run.stderr).to.not.include('Setting up package-0 ');
      expect(run.stderr.split('\n').length).to.be.lessThan(60);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

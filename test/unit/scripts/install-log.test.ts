import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * ensurePackages (scripts/services/process.ts) with a stand-in for apt-get that talks as much as
 * dpkg does and, on install, makes the binary asked for (or fails): what reaches the terminal.
 */
function install(dir: string, fail: boolean, write = true) {
  const apt = join(dir, 'apt-get');
  if (write)
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
  if (write) chmodSync(apt, 0o755);
  const script =
    "import { ensurePackages } from './scripts/services/process.ts'; const s = ensurePackages(['demo-binary'], ['demo-package'], [], 'demo'); if (s !== undefined) console.log(s.toFixed(1));";
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, APT_GET: apt, INSTALL_LOG: join(dir, 'install.log'), PATH: `${dir}:${process.env.PATH}` },
  });
}

describe('installing packages (npm start and npm test on a bare machine)', function () {
  this.timeout(30_000);
  // ensurePackages installs as root only (otherwise it prints the command): npm test runs as root.
  beforeEach(() => expect(process.getuid?.(), 'run as root, as npm test on a fresh machine is').to.equal(0));

  it("prints one line when installing, keeping the installers' output in the log, and says how long it took", () => {
    const dir = mkdtempSync(join(tmpdir(), 'install-'));
    try {
      const run = install(dir, false);
      expect(run.status, run.stderr).to.equal(0);
      expect(run.stdout.trim()).to.match(/^\d+\.\d$/); // the seconds it took, for the service's ready line
      expect(run.stderr.trim().split('\n')).to.have.length(1);
      expect(run.stderr.trim()).to.match(/^\[services\] demo: installing demo-package \(output in .*install\.log\)$/);
      const log = readFileSync(join(dir, 'install.log'), 'utf8');
      expect(log).to.include('Setting up package-599');
      expect(log).to.include('install -y -qq demo-package');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails with the log's tail when the installation fails, or why the installer did not start", () => {
    const dir = mkdtempSync(join(tmpdir(), 'install-'));
    try {
      const run = install(dir, true);
      expect(run.status).to.not.equal(0);
      expect(run.stderr).to.include('could not install demo-package (apt-get exited with 100)');
      expect(run.stderr).to.include('E: Unable to locate package demo-package');
      // The tail only: the first lines of the installer's output stay in the log.
      expect(run.stderr).to.not.include('Setting up package-0 ');
      expect(run.stderr.split('\n').length).to.be.lessThan(60);
      rmSync(join(dir, 'apt-get'));
      const missing = install(dir, true, false);
      expect(missing.stderr).to.match(/could not install demo-package \(.*apt-get.*ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

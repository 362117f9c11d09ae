import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs the lint on `dir` (default: this project). */
const check = (dir?: string) => spawnSync(process.execPath, ['--import', 'tsx', 'scripts/table-owners.ts', ...(dir ? [dir] : [])], { encoding: 'utf8' });

describe('the table owners lint (scripts/table-owners.ts)', function () {
  this.timeout(30_000);

  it('passes on this project: every table named in SQL by its owner, or by an explained exception still in use', () => {
    const run = check();
    expect(run.stderr.split('\n').filter((l) => l.startsWith('table owners:'))).to.deep.equal([]);
    expect(run.status).to.equal(0);
  });

  it("fails on SQL naming another domain's table, not on prose; and on an exception no longer needed", () => {
    const dir = mkdtempSync(join(tmpdir(), 'owners-'));
    try {
      mkdirSync(join(dir, 'src', 'verification'), { recursive: true });
      writeFileSync(
        join(dir, 'src', 'verification', 'x.repository.ts'),
        "// reads what comes FROM files, in prose\nexport const q = 'SELECT id FROM files WHERE 1';\n",
      );
      const run = check(dir);
      expect(run.status).to.equal(1);
      const lines = run.stderr.split('\n').filter((l) => l.startsWith('table owners:'));
      expect(lines).to.include("table owners: src/verification/x.repository.ts names files in SQL, which src/files/ owns: call the owner's functions");
      // The project's exceptions name files this small tree does not have: each is reported as not needed.
      expect(lines.filter((l) => l.includes('is no longer needed'))).to.have.length.greaterThan(0);
      expect(lines.filter((l) => l.includes('names files')).length).to.equal(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Runs the lint on `dir` (default: this project). */
const check = (dir?: string) => spawnSync(process.execPath, ['--import', 'tsx', 'scripts/table-owners.ts', ...(dir ? [dir] : [])], { encoding: 'utf8' });

describe('the table owners lint (scripts/table-owners.ts)', function () {
  this.timeout(30_000);

  it('passes on this project: every table named in SQL by its owner only', () => {
    const run = check();
    expect(run.stderr.split('\n').filter((l) => l.startsWith('table owners:'))).to.deep.equal([]);
    expect(run.status).to.equal(0);
  });

  it("fails on SQL naming another domain's table (read, join or write), not on prose nor on the owner's own SQL", () => {
    const dir = mkdtempSync(join(tmpdir(), 'owners-'));
    try {
      mkdirSync(join(dir, 'src', 'verification'), { recursive: true });
      writeFileSync(
        join(dir, 'src', 'verification', 'x.repository.ts'),
        [
          '// reads what comes FROM files, in prose',
          "export const q = 'SELECT id FROM files WHERE 1';",
          "export const j = 'SELECT v.x FROM verification_counts v JOIN `organizations` o ON o.id = v.org_id';",
          "export const u = 'UPDATE guarantees g SET g.tx_hash = NULL';",
          "export const l = 'select 1 from api_keys k where 1';",
          "export const s = 'SELECT 1 FROM verification_keys v STRAIGHT_JOIN webhook_events e ON e.id = v.id';",
          "export const c = 'SELECT 1 FROM verification_counts c, guarantee_docs d';",
          "export const t = 'TRUNCATE TABLE trusted_lists';",
          ' * a continuation of a SQL string: FROM anchor_keys',
        ].join('\n'),
      );
      mkdirSync(join(dir, 'src', 'shared', 'db', 'migrations'), { recursive: true });
      writeFileSync(
        join(dir, 'src', 'shared', 'db', 'migrations', '0001.ts'),
        "export const m = ['CREATE TABLE files (x INT)', 'CREATE TABLE mystery (x INT)'];\n",
      );
      mkdirSync(join(dir, 'src', 'files'), { recursive: true });
      writeFileSync(join(dir, 'src', 'files', 'file.sql.ts'), "export const join = 'LEFT JOIN files f ON f.object_key = d.file_key';\n");
      const run = check(dir);
      expect(run.status).to.equal(1);
      const lines = run.stderr.split('\n').filter((l) => l.startsWith('table owners:'));
      const blame = (table: string, owner: string) =>
        `table owners: src/verification/x.repository.ts names ${table} in SQL, which ${owner} owns: call the owner's functions or use its fragments`;
      expect(lines.filter((l) => l.includes('src/verification/'))).to.deep.equal([
        blame('files', 'src/files/'),
        blame('organizations', 'src/orgs/'),
        blame('guarantees', 'src/guarantees/'),
        blame('api_keys', 'src/orgs/'),
        blame('webhook_events', 'src/webhooks/'),
        blame('guarantee_docs', 'src/guarantees/'),
        blame('trusted_lists', 'src/files/trust/'),
        blame('anchor_keys', 'src/notarization/'),
      ]);
      // A table no owner claims fails too, and so does an owner's table no migration creates.
      expect(lines).to.include('table owners: table mystery has no owner: add it to OWNERS in scripts/table-owners.ts');
      expect(lines).to.include('table owners: OWNERS names guarantees, which no migration creates');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

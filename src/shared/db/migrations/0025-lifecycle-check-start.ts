// The lifecycle check tells what lapsed since it first ran (issue 27), so it records when that
// was: lifecycle_checks.started_at, set by a check's first run and never moved.
// Its default is the row's own checked_until: a row that exists now starts from its watermark
// (what lapsed before this release is not told again, nor told late), and a row that the
// previous release's code makes during a rolling release (it names no started_at) starts at
// its first run, as the new code would have it. The previous release runs unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0025-lifecycle-check-start',
  async up({ context: q }) {
    await q('ALTER TABLE lifecycle_checks ADD COLUMN started_at DATETIME(3) NOT NULL DEFAULT (checked_until)');
  },
  async down({ context: q }) {
    await q('ALTER TABLE lifecycle_checks DROP COLUMN started_at');
  },
};

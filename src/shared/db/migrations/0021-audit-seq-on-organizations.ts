// An organization's audit chain counts its rows on the organization's own row (issue 17, part 4:
// the create path's cost). A registration already holds that row's lock for its registry place:
// the same UPDATE now also takes the chain's next seq, and the audit row reads the previous
// row's hash by primary key, so the chain costs a registration two statements under the lock
// instead of four (bench/README.md, "The audit row on the create path").
// - organizations.audit_seq: the organization's chain's last seq (0: no row yet).
// - The organizations' heads move from audit_heads, which keeps the 'system' chain's only.
// During a rolling release, a change the previous release records on an organization's chain
// takes its seq from audit_heads, which no longer moves: its audit row collides with the
// primary key of one this release wrote, and the change fails whole (nothing is lost or
// forked; the client retries it on this release).
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0021-audit-seq-on-organizations',
  async up({ context: q }) {
    await q('ALTER TABLE organizations ADD COLUMN audit_seq BIGINT UNSIGNED NOT NULL DEFAULT 0');
    // One statement: organizations are few (one row per issuer), unlike files or guarantees.
    await q(`UPDATE organizations o JOIN audit_heads h ON h.chain = o.id SET o.audit_seq = h.seq`);
    await q(`DELETE FROM audit_heads WHERE chain <> 'system'`);
  },
  async down({ context: q }) {
    // The heads back where the previous release reads them: the seq, and the hash of that row.
    await q(`INSERT INTO audit_heads (chain, seq, hash)
      SELECT o.id, o.audit_seq, l.hash FROM organizations o JOIN audit_log l ON l.chain = o.id AND l.seq = o.audit_seq WHERE o.audit_seq > 0`);
    await q('ALTER TABLE organizations DROP COLUMN audit_seq');
  },
};

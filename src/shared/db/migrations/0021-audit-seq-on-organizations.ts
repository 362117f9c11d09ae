// An organization's audit chain counts its rows on the organization's own row (issue 17, part 4:
// the create path's cost). A registration already holds that row's lock for its registry place:
// the same UPDATE now also takes the chain's next seq, and the audit row reads the previous
// row's hash by primary key, so the chain costs a registration two statements under the lock
// instead of four (docs/benchmarks.md, "The audit row on the create path").
// - organizations.audit_seq: the organization's chain's last seq (0: no row yet).
// - The organizations' heads are copied from audit_heads, where they stay for the previous
//   release (this one reads only the system chain's head there).
// During a rolling release the previous release appends to an organization's chain with its
// head in audit_heads, which this release does not move. When this release's row then collides
// with one of the previous release's (its head behind the chain), it brings the head up to the
// chain's last row and appends after it (orgs' healAuditSeq: in the same transaction, or the
// registration's script run again). The other way round, once this release has appended to an
// organization's chain, a change the previous release records on it collides with the primary
// key and fails whole (a 500; nothing is lost or forked, and its client's retry lands on this
// release once the old processes are gone). docs/api.md, "Audit".
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0021-audit-seq-on-organizations',
  async up({ context: q }) {
    await q('ALTER TABLE organizations ADD COLUMN audit_seq BIGINT UNSIGNED NOT NULL DEFAULT 0');
    // One statement: organizations are few (one row per issuer), unlike files or guarantees.
    await q(`UPDATE organizations o JOIN audit_heads h ON h.chain = o.id SET o.audit_seq = h.seq`);
  },
  async down({ context: q }) {
    // The heads back where the previous release reads them: each organization chain's last row,
    // its seq and hash (a head the previous release made meanwhile is brought up to it).
    await q(`INSERT INTO audit_heads (chain, seq, hash)
      SELECT l.chain, l.seq, l.hash FROM audit_log l
        JOIN (SELECT chain, MAX(seq) AS seq FROM audit_log WHERE chain <> 'system' GROUP BY chain) last ON last.chain = l.chain AND last.seq = l.seq
      ON DUPLICATE KEY UPDATE seq = VALUES(seq), hash = VALUES(hash)`);
    await q('ALTER TABLE organizations DROP COLUMN audit_seq');
  },
};

// Cheaper writes for public verifications (issue 13), each of which counts for its guarantee
// and writes a guarantee.verified event:
// - verification_counts loses its foreign key: the counts are written only for guarantees
//   just read, and guarantees are never deleted; the key's check read and share-locked the
//   guarantee's row for every count (a notarization updating it waited for the verifications).
// - webhook_events loses ix_webhook_events_org (org_id, created_at), which no statement of the
//   service uses: one index entry less for every event.
// Neither is used by the previous release's statements.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0012-verification-writes',
  async up({ context: q }) {
    await q('ALTER TABLE verification_counts DROP FOREIGN KEY fk_verification_counts_guarantee');
    await q('ALTER TABLE webhook_events DROP KEY ix_webhook_events_org, ALGORITHM=INPLACE, LOCK=NONE');
  },
  async down({ context: q }) {
    await q('ALTER TABLE webhook_events ADD KEY ix_webhook_events_org (org_id, created_at), ALGORITHM=INPLACE, LOCK=NONE');
    await q('ALTER TABLE verification_counts ADD CONSTRAINT fk_verification_counts_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id)');
  },
};

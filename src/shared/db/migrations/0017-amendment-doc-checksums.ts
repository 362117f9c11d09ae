// An amendment's documents keep the checksums its digest was computed over (issue 16 review).
// The checksum shown with a document is read from its file, and a file in Error can still be
// judged later (a retry): an amendment hashed (sealed, or blocked with its digest kept as the
// next one's link) must keep showing what was hashed, or its chain would stop verifying. So the
// notarizer pins each document's checksum when it computes the digest, and a read takes the
// pinned one once the amendment has left 'waiting'.
// Also the index the notarizer's candidates are read by (waiting, by guarantee and seq: the
// page comes off the index in order, without a sort). A new column and an index: the previous
// release runs unchanged; amendments already hashed get their files' checksums now.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0017-amendment-doc-checksums',
  async up({ context: q }) {
    await q(`ALTER TABLE guarantee_amendment_docs ADD COLUMN checksum CHAR(64) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL`);
    await q(`ALTER TABLE guarantee_amendments ADD KEY ix_guarantee_amendments_candidates (notary_state, guarantee_id, seq)`);
    await q(`UPDATE guarantee_amendment_docs d JOIN guarantee_amendments a ON a.id = d.amendment_id JOIN files f ON f.object_key = d.file_key
      SET d.checksum = f.checksum WHERE a.notary_state <> 'waiting'`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE guarantee_amendments DROP KEY ix_guarantee_amendments_candidates');
    await q('ALTER TABLE guarantee_amendment_docs DROP COLUMN checksum');
  },
};

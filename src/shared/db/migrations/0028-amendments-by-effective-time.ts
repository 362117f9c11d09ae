// An amendment applies from its effectiveAt (issue 29): a guarantee's stored fold answers for
// an instant only once every one of its amendments applies, so reading a state asks for its
// latest effectiveAt. This index makes that one entry read (MAX over a prefix of the key),
// however many amendments the guarantee has. An index only: the previous release runs unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0028-amendments-by-effective-time',
  async up({ context: q }) {
    await q('ALTER TABLE guarantee_amendments ADD KEY idx_guarantee_amendments_effective (guarantee_id, effective_at)');
  },
  async down({ context: q }) {
    await q('ALTER TABLE guarantee_amendments DROP KEY idx_guarantee_amendments_effective');
  },
};

// Organizations' public identity (issue 13): the VAT number and the register entry the operator
// records for each issuer, shown to contracting authorities that verify a guarantee, so that a
// clerk sees who stands behind it. Set by the operator's CLI only, never by an organization's
// own key. Added nullable columns only: the previous release's code runs unchanged.
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0009-organization-identity',
  async up({ context: q }) {
    await q(`ALTER TABLE organizations
      ADD COLUMN vat_number VARCHAR(16) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL AFTER name,
      ADD COLUMN register_entry VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NULL AFTER vat_number`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE organizations DROP COLUMN register_entry, DROP COLUMN vat_number');
  },
};

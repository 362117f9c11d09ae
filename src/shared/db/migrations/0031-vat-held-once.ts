// A VAT number is one organization's unless the operator says it is shared (a group of companies
// may have one: `cli org create|set ... --allow-shared-vat`).
// - organizations.vat_shared: the VAT number was given with --allow-shared-vat.
// - organizations.vat_held: the VAT number when not shared (generated), unique: two organizations
//   that both hold one as their own cannot both commit, however they race (two `org create` at
//   once, or on two nodes of a Galera cluster, which certifies unique keys and not locking reads).
//   The organizations service refuses, before writing, a VAT number any other organization has,
//   shared or not (naming it), unless it is given as shared.
// - organizations.vat_number gets an index: that check's lookup.
// VAT numbers that several organizations already have (accepted without a word before) are
// marked shared, each keeping its own. A column with a default and indexes: the previous
// release's statements run unchanged; its `org create` or `org set` of a VAT number another
// organization holds as its own is refused by the unique key (with a message about the fiscal
// code, the only unique key it knew).
import type { Migration } from './index.js';

export const migration: Migration = {
  name: '0031-vat-held-once',
  async up({ context: q }) {
    await q('ALTER TABLE organizations ADD COLUMN vat_shared BOOLEAN NOT NULL DEFAULT FALSE AFTER vat_number');
    // One statement: organizations are few (one row per issuer or authority).
    await q(`UPDATE organizations o
      JOIN (SELECT vat_number FROM organizations WHERE vat_number IS NOT NULL GROUP BY vat_number HAVING COUNT(*) > 1) d ON d.vat_number = o.vat_number
      SET o.vat_shared = TRUE`);
    await q(`ALTER TABLE organizations
      ADD COLUMN vat_held VARCHAR(16) CHARACTER SET ascii COLLATE ascii_nopad_bin AS (IF(vat_shared, NULL, vat_number)) VIRTUAL AFTER vat_shared,
      ADD UNIQUE KEY uq_organizations_vat_held (vat_held),
      ADD KEY ix_organizations_vat_number (vat_number)`);
  },
  async down({ context: q }) {
    await q('ALTER TABLE organizations DROP KEY ix_organizations_vat_number, DROP KEY uq_organizations_vat_held, DROP COLUMN vat_held, DROP COLUMN vat_shared');
  },
};

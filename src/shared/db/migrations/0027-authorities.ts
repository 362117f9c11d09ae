// Contracting authorities as a party (issue 29).
// - organizations.kind: `issuer` (every organization before) or `authority`; an authority has
//   its fiscal code (11 digits, unique: one organization per authority), its codice AUSA and
//   its IPA code, as the operator records them.
// - guarantees.beneficiary_fiscal_code: the beneficiary the issuer named on registration
//   (optional): only the authority with that fiscal code may take charge of the guarantee.
// - guarantee_beneficiaries: which authority took charge of a guarantee (at most one), and
//   when, numbered per authority (its list pages by that number); its BENEFICIARY_LINKED
//   amendment is in the guarantee's chain.
// - guarantee_amendments: who recorded each amendment (`actor`, and the authority's id), the
//   authority's types, and an AMENDMENT_RESPONSE's answer (the amendment it answers, ACCEPT or
//   REFUSE), and where the consent of an issuer's amendment that would reduce the authority's
//   cover stands (consent: NULL when it needed none; the one column of an amendment that changes,
//   outside its canonical form as notarization's are); guarantee_folds.beneficiary_id, the
//   authority its BENEFICIARY_LINKED names, and .pending, the amendment waiting for consent.
// - authority_users: the people (by the fiscal number their identity provider vouches for)
//   the operator bound to an authority.
// Added columns have defaults or are nullable, new enum values are appended and new tables are
// new: the previous release's statements run unchanged.
import type { Migration, Query } from './index.js';

const ID = 'CHAR(36) CHARACTER SET ascii COLLATE ascii_nopad_bin';
const TYPES = `'EXTENSION','AMOUNT_CHANGE','PARTIAL_RELEASE','RELEASE','CLAIM','CLAIM_SETTLED','CLAIM_REJECTED','CANCELLATION'`;
const AUTHORITY_TYPES = `'BENEFICIARY_LINKED','DEMAND','DEMAND_WITHDRAWN','AMENDMENT_RESPONSE'`;

/** What this migration adds to guarantee_folds (a test that takes migration 0023 down and up again adds it back). */
export async function foldColumnsOfAuthorities(q: Query): Promise<void> {
  await q(`ALTER TABLE guarantee_folds ADD COLUMN beneficiary_id ${ID} NULL, ADD COLUMN pending JSON NULL`);
}

export const migration: Migration = {
  name: '0027-authorities',
  async up({ context: q }) {
    await q(`ALTER TABLE organizations
      ADD COLUMN kind ENUM('issuer','authority') NOT NULL DEFAULT 'issuer',
      ADD COLUMN fiscal_code CHAR(11) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      ADD COLUMN ausa_code VARCHAR(16) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      ADD COLUMN ipa_code VARCHAR(32) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL,
      ADD UNIQUE KEY uq_organizations_fiscal_code (fiscal_code)`);
    await q(`ALTER TABLE guarantees ADD COLUMN beneficiary_fiscal_code CHAR(11) CHARACTER SET ascii COLLATE ascii_nopad_bin NULL`);
    await q(`CREATE TABLE guarantee_beneficiaries (
      guarantee_id ${ID} NOT NULL PRIMARY KEY,
      authority_id ${ID} NOT NULL,
      -- 1, 2, 3... per authority, in the order it took charge: its list's pages are ranges of this key, however deep.
      seq INT UNSIGNED NOT NULL,
      linked_at DATETIME(3) NOT NULL,
      UNIQUE KEY uq_guarantee_beneficiaries_seq (authority_id, seq),
      CONSTRAINT fk_guarantee_beneficiaries_guarantee FOREIGN KEY (guarantee_id) REFERENCES guarantees (id),
      CONSTRAINT fk_guarantee_beneficiaries_authority FOREIGN KEY (authority_id) REFERENCES organizations (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
    await q(`ALTER TABLE guarantee_amendments
      MODIFY COLUMN type ENUM(${TYPES},${AUTHORITY_TYPES}) NOT NULL,
      ADD COLUMN actor ENUM('issuer','authority') NOT NULL DEFAULT 'issuer',
      ADD COLUMN actor_org_id ${ID} NULL,
      ADD COLUMN amendment_seq INT UNSIGNED NULL,
      ADD COLUMN decision ENUM('ACCEPT','REFUSE') NULL,
      ADD COLUMN consent ENUM('PENDING','ACCEPTED','REFUSED') NULL`);
    await foldColumnsOfAuthorities(q);
    await q(`CREATE TABLE authority_users (
      fiscal_number VARCHAR(32) CHARACTER SET ascii COLLATE ascii_nopad_bin NOT NULL PRIMARY KEY,
      org_id ${ID} NOT NULL,
      created_at DATETIME(3) NOT NULL,
      KEY ix_authority_users_org (org_id),
      CONSTRAINT fk_authority_users_org FOREIGN KEY (org_id) REFERENCES organizations (id)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
  },
  async down({ context: q }) {
    await q('DROP TABLE authority_users');
    await q('ALTER TABLE guarantee_folds DROP COLUMN pending, DROP COLUMN beneficiary_id');
    await q(`ALTER TABLE guarantee_amendments DROP COLUMN consent, DROP COLUMN decision, DROP COLUMN amendment_seq, DROP COLUMN actor_org_id, DROP COLUMN actor,
      MODIFY COLUMN type ENUM(${TYPES}) NOT NULL`);
    await q('DROP TABLE guarantee_beneficiaries');
    await q('ALTER TABLE guarantees DROP COLUMN beneficiary_fiscal_code');
    await q(
      'ALTER TABLE organizations DROP KEY uq_organizations_fiscal_code, DROP COLUMN ipa_code, DROP COLUMN ausa_code, DROP COLUMN fiscal_code, DROP COLUMN kind',
    );
  },
};

import { expect } from 'chai';
import { isPartitaIva, normalizeRegister, normalizeVat } from '../../../src/orgs/org-identity.js';
import { ValidationError } from '../../../src/shared/errors.js';

describe("organizations' public identifiers", () => {
  it('checks an Italian partita IVA by its check digit', () => {
    // Two numbers whose check digit is right, and the same with a digit changed.
    for (const valid of ['00743110157', '12345678903']) expect(isPartitaIva(valid), valid).to.equal(true);
    for (const wrong of ['00743110158', '12345678901', '1234567890', '1234567890a']) expect(isPartitaIva(wrong), wrong).to.equal(false);
  });

  it('normalizes a VAT number (case, spaces, dots) and refuses a malformed or mistyped one', () => {
    expect(normalizeVat(' it 00743110157 ')).to.equal('IT00743110157');
    expect(normalizeVat('DE123456789')).to.equal('DE123456789');
    for (const bad of ['IT00743110158', '00743110157', 'I', 'IT', 'ITXYZ!']) expect(() => normalizeVat(bad), bad).to.throw(ValidationError);
  });

  it('takes a register entry of 1 to 255 characters, trimmed', () => {
    expect(normalizeRegister('  Albo IVASS n. 1.00123 ')).to.equal('Albo IVASS n. 1.00123');
    expect(() => normalizeRegister('   ')).to.throw(ValidationError);
    expect(() => normalizeRegister('x'.repeat(256))).to.throw(ValidationError);
  });
});

import { expect } from 'chai';
import { personFiscalCode } from '../../../src/authorities/fiscal-number.js';

describe("a person's fiscal code, as identity providers vouch for it", () => {
  it('reads it bare or as SPID and CIE write it (TINIT-), in any case, and checks its check character', () => {
    expect(personFiscalCode('RSSMRA80A01H501U')).to.equal('RSSMRA80A01H501U');
    expect(personFiscalCode('TINIT-RSSMRA80A01H501U')).to.equal('RSSMRA80A01H501U');
    expect(personFiscalCode(' tinit-rssmra80a01h501u ')).to.equal('RSSMRA80A01H501U');
    // Omocodia (a digit written as a letter, M for 1), the check character computed on the letters.
    expect(personFiscalCode('RSSMRA80A01H50MM')).to.equal('RSSMRA80A01H50MM');
    expect(personFiscalCode('RSSMRA80A01H50MU')).to.equal(undefined);
    for (const wrong of ['RSSMRA80A01H501A', 'RSSMRA80A01H501', 'RSSMRA80Z01H501U', '12345678901', '', 'TINIT-', 'RSSMRA80A01H501UX']) {
      expect(personFiscalCode(wrong), wrong).to.equal(undefined);
    }
  });
});

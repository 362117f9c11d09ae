// What makes a checkCode strong enough to open a guarantee to the public (src/verification/check-code.ts).
import { expect } from 'chai';
import { checkCodeWeakness, createCheckCodeJudge, MAX_ESTIMATED } from '../../../src/verification/check-code.js';

const related = { policyNumber: 'POL-2026-0042', cig: 'Z1B2C3D4E5' };

describe('checkCode strength', () => {
  it('takes random codes of 10 or more letters and digits, of any case, with or without separators', () => {
    for (const code of ['k7qm2xpz9r', 'K4JD9LQ2Mx', 'A7F3-K9P2-XQ4M', 'Kx9#mP2$vL', 'clé-😀-€€€-ñandú-ß'])
      expect(checkCodeWeakness(code, related), code).to.equal(undefined);
  });

  it('refuses, saying why: under 10 characters, repetitions, sequences, keyboard walks, common passwords, the policy number or the CIG inside', () => {
    const cases: Array<[string, RegExp]> = [
      ['12345678', /fewer than 10 characters/],
      ['Ab3$5z7xY', /fewer than 10 characters/],
      ['aaaaaaaaaaaa', /one character or block repeated/],
      ['abcabcabcabc', /one character or block repeated/],
      ['abcdefghijkl', /sequence/],
      ['qwertyuiop12', /could be guessed/],
      ['password2024!', /common word or password/],
      ['1234567890', /could be guessed/],
      ['POL-2026-0042-x7', /contains \(part of\) the policy number/],
      ['pol-2026-0042-x7', /contains \(part of\) the policy number/],
      ['x-z1b2c3d4e5-q', /contains \(part of\) the CIG/],
      // The identifiers however they are written, and the next policy number.
      ['POL/2026/0042/x7Q', /the policy number/],
      ['pol_2026_0042_x7Q', /the policy number/],
      ['POL-2026-0043-x7Q', /the policy number/],
      ['Z1B2-C3D4-E5x9Kq', /the CIG/],
      // Words of the trade.
      ['FIDEIUSSIONE01', /could be guessed/],
      // 16 digits are only about 53 bits by their characters, and patterns in them bring it under 50.
      ['4929017735218830', /estimated at \d+ bits, where at least 50 are needed/],
    ];
    for (const [code, why] of cases) expect(checkCodeWeakness(code, related), code).to.match(why);
  });

  it('estimates only the first 32 characters, whatever a client sends: a long code is judged by them', () => {
    expect(checkCodeWeakness(`${'a'.repeat(MAX_ESTIMATED)}K4JD9LQ2Mxab7Tq0`, related)).to.match(/one character or block repeated/);
    expect(checkCodeWeakness(`K4JD9LQ2Mxab7Tq0${'a'.repeat(300)}`, related)).to.equal(undefined);
  });

  it('judges as checkCodeWeakness does, remembering the codes found strong but never the CIG (another request may name another)', () => {
    const judge = createCheckCodeJudge(2);
    expect(judge('K4JD9LQ2Mx', related)).to.equal(undefined);
    expect(judge('x-Z1B2C3D4E5-q7Lm', related)).to.match(/the CIG/);
    expect(judge('x-Z1B2C3D4E5-q7Lm', { policyNumber: related.policyNumber })).to.equal(undefined);
    // Beyond its size it forgets the oldest, and still answers the same.
    for (const code of ['aaaaaaaaaaaa', 'k7qm2xpz9r', 'abcdefghijkl', 'K4JD9LQ2Mx']) expect(judge(code, related)).to.equal(checkCodeWeakness(code, related));
  });
});

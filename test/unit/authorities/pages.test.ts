// The /authority pages' pure helpers: amounts as people type them, a date's midnight in Italy
// (clock changes included), and the HTML escaping.
import { expect } from 'chai';
import { amountOf, romeMidnight } from '../../../src/authorities/pages/pages.routes.js';
import { html } from '../../../src/authorities/pages/html.js';

describe('/authority pages: what a form carries', () => {
  it('reads an amount as people type it, Italian or English; anything else is left for the validation to refuse', () => {
    expect(amountOf('15.000,50')).to.equal(15000.5);
    expect(amountOf('15000.50')).to.equal(15000.5);
    expect(amountOf('15,000.50')).to.equal(15000.5);
    expect(amountOf(' 1.234 € ')).to.equal(1234);
    expect(amountOf('')).to.equal(undefined);
    expect(amountOf('dieci')).to.equal('dieci');
    expect(amountOf('1,2,3')).to.equal('1,2,3');
  });

  it("takes a date's midnight in Italy, on the days the clock changes too; a date that is none is left for the validation", () => {
    expect(romeMidnight('2026-01-15')).to.equal('2026-01-15T00:00:00+01:00');
    expect(romeMidnight('2026-07-15')).to.equal('2026-07-15T00:00:00+02:00');
    // 29 March 2026: the clock goes forward at 02:00, so midnight is still at +01:00; 25 October: back at 03:00, midnight at +02:00.
    expect(romeMidnight('2026-03-29')).to.equal('2026-03-29T00:00:00+01:00');
    expect(romeMidnight('2026-10-25')).to.equal('2026-10-25T00:00:00+02:00');
    expect(romeMidnight('2024-13-01')).to.equal('2024-13-01');
    expect(romeMidnight('2024-02-30')).to.equal('2024-02-30');
    expect(romeMidnight('ieri')).to.equal('ieri');
  });

  it('escapes every value it is given, in text and in attributes', () => {
    const evil = `"><script>alert(1)</script>'&`;
    const out = html`<p title="${evil}">${evil}${[evil, 1]}${false}${null}</p>`.html;
    expect(out).not.to.include('<script>');
    expect(out).not.to.include('"><');
    expect(out).to.equal(
      '<p title="&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#39;&#38;">&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#39;&#38;&#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62;&#39;&#38;1</p>',
    );
  });
});

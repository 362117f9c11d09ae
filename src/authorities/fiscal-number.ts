// A person's Italian fiscal code (codice fiscale), as identity providers vouch for it: SPID's
// `fiscalNumber` and CIE's `fiscal_number` claims write it `TINIT-<16 characters>`. Stored and
// compared bare: 16 characters, upper case, the last one its check character.

/** The values of the characters in odd positions (1st, 3rd...) for the check character (DM 12/03/1974). */
const ODD = new Map<string, number>([
  ...[...'0123456789'].map((c, i): [string, number] => [c, [1, 0, 5, 7, 9, 13, 15, 17, 19, 21][i]!]),
  ...[...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'].map((c, i): [string, number] => [
    c,
    [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23][i]!,
  ]),
]);
const even = (c: string): number => (c >= '0' && c <= '9' ? Number(c) : c.charCodeAt(0) - 65);

/** Surname, name, year, month, day and sex, place, check: digits may be letters (omocodia). */
const SHAPE = /^[A-Z]{6}[0-9LMNPQRSTUV]{2}[ABCDEHLMPRST][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z]$/;

/** The bare fiscal code, or undefined when `input` is not one (a wrong check character included). */
export function personFiscalCode(input: string): string | undefined {
  const code = input
    .trim()
    .replace(/^TINIT-/i, '')
    .toUpperCase();
  if (!SHAPE.test(code)) return undefined;
  const sum = [...code.slice(0, 15)].reduce((n, c, i) => n + (i % 2 === 0 ? (ODD.get(c) ?? 0) : even(c)), 0);
  return String.fromCharCode(65 + (sum % 26)) === code[15] ? code : undefined;
}

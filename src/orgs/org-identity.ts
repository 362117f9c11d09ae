// An issuer's public identifiers, as the operator records them: a VAT number in the EU's
// format (country code and number; an Italian partita IVA is checked with its check digit) and
// the entry of a public register (IVASS, Banca d'Italia's albo, the Registro delle Imprese...).
import { ValidationError } from '../shared/errors.js';

export interface PublicIdentity {
  vatNumber: string | null;
  register: string | null;
}

/** Whether the 11 digits are a valid Italian partita IVA (its last digit checks the first ten). */
export function isPartitaIva(digits: string): boolean {
  if (!/^\d{11}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < 10; i++) {
    const d = Number(digits[i]);
    if (i % 2 === 0) sum += d;
    else sum += d * 2 > 9 ? d * 2 - 9 : d * 2;
  }
  return (10 - (sum % 10)) % 10 === Number(digits[10]);
}

/** A VAT number as stored: upper case, no spaces; throws ValidationError naming what is wrong. */
export function normalizeVat(input: string): string {
  const vat = input.replace(/[\s.-]/g, '').toUpperCase();
  if (!/^[A-Z]{2}[0-9A-Z+*]{2,12}$/.test(vat))
    throw new ValidationError(`"${input}" is not a VAT number (two letters of the country, then the number, e.g. IT12345678903).`);
  if (vat.startsWith('IT') && !isPartitaIva(vat.slice(2)))
    throw new ValidationError(`"${input}" is not a valid Italian partita IVA (11 digits, the last one a check digit).`);
  return vat;
}

/** A register entry as stored: trimmed, 1 to 255 characters. */
export function normalizeRegister(input: string): string {
  const entry = input.trim();
  if (!entry || entry.length > 255) throw new ValidationError('A register entry has 1 to 255 characters.');
  return entry;
}

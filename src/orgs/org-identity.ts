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

/**
 * A public body's fiscal code as stored (its codice fiscale numerico: 11 digits, the last a check
 * digit computed as a partita IVA's); throws ValidationError naming what is wrong.
 */
export function normalizeFiscalCode(input: string): string {
  const code = input.replace(/\s/g, '');
  if (!isPartitaIva(code)) throw new ValidationError(`"${input}" is not a valid fiscal code of a public body (11 digits, the last one a check digit).`);
  return code;
}

/** A codice AUSA (the authority's entry in ANAC's Anagrafe Unica delle Stazioni Appaltanti): 10 digits. */
export function normalizeAusa(input: string): string {
  const code = input.trim();
  if (!/^\d{10}$/.test(code)) throw new ValidationError(`"${input}" is not a codice AUSA (10 digits).`);
  return code;
}

/** An IPA code (the body's entry in the Indice dei domicili digitali della PA, e.g. c_h501): letters, digits and _, as written there. */
export function normalizeIpa(input: string): string {
  const code = input.trim();
  if (!/^[A-Za-z0-9_]{1,32}$/.test(code)) throw new ValidationError(`"${input}" is not an IPA code (1 to 32 letters, digits or _, e.g. c_h501).`);
  return code;
}

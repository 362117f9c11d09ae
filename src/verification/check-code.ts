// Whether a checkCode is strong enough to open a guarantee to the public. Anyone may try codes
// against the public verification, so a code that can be guessed is no key: one of at least 10
// characters, not one repeated character or block, not a sequence, not the policy number or the
// CIG, and estimated at 50 bits or more. The estimate is zxcvbn's (@zxcvbn-ts, the maintained
// TypeScript port of Dropbox's estimator): it finds the patterns people and systems use
// (dictionary words and common passwords, keyboard walks, repeats, sequences, dates) and prices
// each. For what it cannot explain it counts 10 guesses a character (it was built for
// passwords people choose); here such runs are priced by the characters they use (26 for
// lowercase letters, 36 with digits, 62 with both cases, 95 with symbols), so that a random code
// of letters and digits, the kind an issuer's system prints, counts as the bits it has: 12 such
// characters (62 bits) pass with room to spare; 10 (51 bits) are refused about one time in ten,
// when they happen to hold a pattern.
// Its cost grows with the code's length and with look-alike substitutions: only the first
// MAX_ESTIMATED characters are estimated (a longer code is judged by them, which can only refuse
// it, never open it), with at most 4 substitutions, so that one estimate stays within a few
// milliseconds whatever a client sends.
import { ZxcvbnFactory, type ZxcvbnResult } from '@zxcvbn-ts/core';
import * as common from '@zxcvbn-ts/language-common';

export const MIN_CHECK_CODE_LENGTH = 10;
export const MIN_CHECK_CODE_BITS = 50;

/** The characters of a code the estimate reads. */
export const MAX_ESTIMATED = 32;

/** Words of the trade, which an issuer's code may well be made of. */
const TRADE_WORDS = [
  'garanzia',
  'fideiussione',
  'polizza',
  'cauzione',
  'cauzionale',
  'appalto',
  'assicurazione',
  'assicurazioni',
  'contratto',
  'codice',
  'verifica',
  'emissione',
  'banca',
  'gara',
];

// Up to 4 look-alike substitutions (4 for A, 0 for o...): beyond, zxcvbn's cost grows steeply
// (18 ms a code with its default, 1-2 ms with this), for codes that are strong anyway. Made at
// the first estimate: ranking its dictionaries takes some 100 ms of CPU, which every process
// that loads this module (each CLI command among them) paid at its start, most never estimating.
let estimator: ZxcvbnFactory | undefined;
const estimatorOnce = (): ZxcvbnFactory =>
  (estimator ??= new ZxcvbnFactory({
    dictionary: { ...common.dictionary, trade: TRADE_WORDS },
    graphs: common.adjacencyGraphs,
    l33tMaxSubstitutions: 4,
    maxLength: MAX_ESTIMATED,
  }));

const LOG2_10 = Math.log2(10);

/** The characters a run draws from, by class. */
function alphabet(token: string): number {
  let n = 0;
  if (/[a-z]/.test(token)) n += 26;
  if (/[A-Z]/.test(token)) n += 26;
  if (/[0-9]/.test(token)) n += 10;
  if (/[^a-zA-Z0-9]/.test(token)) n += 33;
  return n;
}

/** zxcvbn's estimate in bits, its unexplained runs priced by their characters. */
function bitsOf(result: ZxcvbnResult): number {
  let bits = result.guessesLog10 * LOG2_10;
  for (const m of result.sequence) {
    if (m.pattern === 'bruteforce') bits += m.token.length * (Math.log2(Math.max(10, alphabet(m.token))) - LOG2_10);
  }
  return bits;
}

const PATTERN_NAMES: Record<string, string> = {
  dictionary: 'a common word or password',
  spatial: 'a keyboard pattern',
  repeat: 'one character or block repeated',
  sequence: 'a sequence (abcd, 1234...)',
  date: 'a date',
  regex: 'a year',
};

/** What makes most of the code guessable, when a pattern covers at least half of it. */
function mainPattern(result: ZxcvbnResult, length: number): string | undefined {
  const found = result.sequence.filter((m) => m.pattern !== 'bruteforce' && m.token.length * 2 >= length);
  const m = found.sort((a, b) => b.token.length - a.token.length)[0];
  if (!m) return undefined;
  if (m.pattern === 'dictionary' && (m as { dictionaryName?: string }).dictionaryName === 'userInputs') return 'the policy number';
  return PATTERN_NAMES[m.pattern] ?? m.pattern;
}

/** Letters and digits only, lower-cased: `POL/2026-0042` and `pol_2026_0042` are one number. */
const bare = (s: string) =>
  s
    .normalize('NFC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');

/** A run of this many letters and digits of the policy number or the CIG in the code is theirs (the next policy number shares most of it). */
const SHARED_RUN = 6;

function shares(code: string, value: string): boolean {
  const v = bare(value);
  if (v.length < 4) return false;
  if (code.includes(v)) return true;
  for (let i = 0; i + SHARED_RUN <= v.length; i++) if (code.includes(v.slice(i, i + SHARED_RUN))) return true;
  return false;
}

interface Related {
  policyNumber?: string | null;
  cig?: string | null;
}

/** The checks that cost nothing: length, and the guarantee's own identifiers inside the code. */
function plainWeakness(checkCode: string, related: Related): string | undefined {
  if ([...checkCode].length < MIN_CHECK_CODE_LENGTH)
    return `The checkCode has fewer than ${MIN_CHECK_CODE_LENGTH} characters: so short a code could be guessed.`;
  const code = bare(checkCode);
  for (const [name, value] of [
    ['policy number', related.policyNumber],
    ['CIG', related.cig],
  ] as const) {
    if (value && shares(code, value)) return `The checkCode contains (part of) the ${name}: anyone who knows the guarantee's other data could guess it.`;
  }
  return undefined;
}

/** The estimate's verdict (a few milliseconds at most): undefined when the code is strong enough. */
function estimatedWeakness(checkCode: string, related: Related): string | undefined {
  const inputs = [related.policyNumber, related.cig].flatMap((v) => (v ? [v, bare(v)] : []));
  const result = estimatorOnce().check(checkCode, inputs);
  const bits = bitsOf(result);
  if (bits >= MIN_CHECK_CODE_BITS) return undefined;
  const pattern = mainPattern(result, checkCode.length);
  return `The checkCode could be guessed: ${pattern ? `it is mostly ${pattern}, and ` : ''}it is estimated at ${Math.floor(bits)} bits, where at least ${MIN_CHECK_CODE_BITS} are needed (use 12 or more random letters and digits).`;
}

/**
 * Why `checkCode` cannot open its guarantee to the public, or undefined when it can.
 * `policyNumber` and `cig` are the guarantee's: a code that contains either is no secret.
 */
export function checkCodeWeakness(checkCode: string, related: Related = {}): string | undefined {
  return plainWeakness(checkCode, related) ?? estimatedWeakness(checkCode, related);
}

export type CheckCodeJudge = (checkCode: string, related: Related) => string | undefined;

/**
 * checkCodeWeakness, remembering the last `size` codes found strong: a guarantee verified again
 * and again costs the estimate once. A weak code is estimated every time: a public request pays
 * the estimate of the code it sent whether that code exists or not, and only a strong pair that
 * was sent before answers sooner (and a strong pair of the registry matches anyway), so the
 * answer's time tells nothing of the registry's codes. The CIG is judged on every call: another
 * request may name another.
 */
export function createCheckCodeJudge(size = 10_000): CheckCodeJudge {
  const strong = new Set<string>();
  return (checkCode, related) => {
    const plain = plainWeakness(checkCode, related);
    if (plain) return plain;
    const key = `${related.policyNumber ?? ''}\u0000${checkCode}`;
    if (strong.has(key)) return undefined;
    const verdict = estimatedWeakness(checkCode, { policyNumber: related.policyNumber ?? null });
    if (verdict === undefined) {
      if (strong.size >= size) strong.delete(strong.values().next().value as string);
      strong.add(key);
    }
    return verdict;
  };
}

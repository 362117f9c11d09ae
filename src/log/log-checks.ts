// The transparency log's part of a proof's checks (`cli verify`): the proof's `log` — its
// leaf's index, a checkpoint and the inclusion proof — checked against the log's key and the
// witnesses' keys the verifier pins. A proof without a pinned witness proves what the registry
// says; with one, what the registry could not have shown the witness differently.
import { parseCheckpoint } from './checkpoint.js';
import { formatEntry } from './entries.js';
import { cosignatureTime, openNote, type Verifier } from './note.js';
import { leafHashOf, verifyInclusion } from './tree.js';

export interface LogCheck {
  id: 'log-present' | 'log-checkpoint' | 'log-inclusion' | 'log-witness' | 'log-dated';
  name: string;
  ok: boolean;
  detail?: string;
}

export interface LogInclusionJson {
  index: number;
  checkpoint: string;
  inclusion: string[];
}

/** How far a witness's clock may run ahead of the registry's before a cosignature counts as later than a time the registry signed. */
export const CLOCK_SKEW_MS = 10 * 60_000;

/**
 * The checks of one leaf's `log` (kind and digest: what its entry is) with the pinned keys.
 * `logKey` undefined: the checkpoint's signature by the log cannot be checked (said, not failed).
 * `signedAt` (a receipt's verifiedAt): the checkpoint a receipt carries was cosigned before it was
 * made, so a pinned witness's cosignature dated later (beyond the clocks' skew) shows the receipt
 * back-dated: what a stolen receipt key's thief would do to slip under its compromise time.
 */
export function checkLogInclusion(
  leaf: { kind: 'record' | 'amendment'; digest: string; what: string },
  log: LogInclusionJson | undefined,
  keys: { logKey?: Verifier; witnesses: readonly Verifier[] },
  signedAt?: Date,
): { checks: LogCheck[]; cosigners: string[] } {
  const checks: LogCheck[] = [];
  const check = (id: LogCheck['id'], name: string, ok: boolean, detail?: string) =>
    checks.push({ id, name, ok, ...(detail !== undefined && !ok && { detail }) });
  if (!log) {
    if (keys.logKey || keys.witnesses.length)
      check('log-present', `the ${leaf.what}'s proof carries its inclusion in the transparency log`, false, 'no log in the proof');
    return { checks, cosigners: [] };
  }
  const shaped =
    typeof log === 'object' &&
    Number.isSafeInteger(log.index) &&
    typeof log.checkpoint === 'string' &&
    Array.isArray(log.inclusion) &&
    log.inclusion.every((h) => typeof h === 'string' && /^[0-9a-f]{64}$/.test(h));
  if (!shaped) {
    check('log-present', `the ${leaf.what}'s proof carries a well-formed log inclusion`, false, 'log is not {index, checkpoint, inclusion: [hex hashes]}');
    return { checks, cosigners: [] };
  }
  let text: string;
  let cosigners: string[] = [];
  try {
    const opened = openNote(log.checkpoint, [...(keys.logKey ? [keys.logKey] : []), ...keys.witnesses]);
    text = opened.text;
    if (keys.logKey) {
      const signed = opened.verified.some((s) => s.name === keys.logKey?.name && s.id === keys.logKey.id);
      check('log-checkpoint', "the log's checkpoint is signed by the log's key", signed, 'no signature by the pinned log key');
    }
    for (const w of keys.witnesses) {
      const sig = opened.verified.find((s) => s.name === w.name && s.id === w.id);
      check('log-witness', `the checkpoint is cosigned by the witness ${w.name}`, !!sig, 'no cosignature by it');
      if (!sig) continue;
      const at = new Date(cosignatureTime(sig.bytes) * 1000);
      cosigners.push(`${w.name} (at ${at.toISOString()})`);
      if (signedAt)
        check(
          'log-dated',
          `the witness ${w.name} cosigned the checkpoint before the receipt says it was signed`,
          at.getTime() <= signedAt.getTime() + CLOCK_SKEW_MS,
          `cosigned at ${at.toISOString()}, ${Math.round((at.getTime() - signedAt.getTime()) / 60_000)} min after the ${signedAt.toISOString()} the receipt says: back-dated, or a clock off by more than ${CLOCK_SKEW_MS / 60_000} min`,
        );
    }
  } catch (err) {
    // No pinned key signed it (or one that did is forged): read it unverified for the inclusion, and say so.
    if (keys.logKey || keys.witnesses.length) check('log-checkpoint', "the log's checkpoint opens with the pinned keys", false, (err as Error).message);
    text = log.checkpoint.slice(0, log.checkpoint.lastIndexOf('\n\n') + 1);
    cosigners = [];
  }
  try {
    const c = parseCheckpoint(text);
    const entry = new TextEncoder().encode(formatEntry({ kind: leaf.kind, digest: leaf.digest }));
    verifyInclusion(
      log.index,
      c.size,
      leafHashOf(entry),
      log.inclusion.map((h) => Buffer.from(h, 'hex')),
      c.root,
    );
    check('log-inclusion', `the ${leaf.what}'s leaf is in the log's checkpoint (entry ${log.index} of ${c.size})`, true);
  } catch (err) {
    check('log-inclusion', `the ${leaf.what}'s leaf is in the log's checkpoint`, false, (err as Error).message);
  }
  return { checks, cosigners };
}

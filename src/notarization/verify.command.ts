// `cli verify`: a notarization proof checked offline (proof.ts), then against its anchor (the
// registry's ledger, or the chain). A record's proof, an amendment's, or a guarantee's whole
// history (the record, every amendment and the chain between them), each anchor it names
// checked. What a script needs goes on stdout ("verified", "NOT verified", "verified offline
// only"), each check on stderr.
import { readFileSync } from 'node:fs';
import type { Config } from '../../config/index.js';
import type { Sequelize } from '../shared/db/sequelize.js';
import type { AnchorKeys } from './anchor-keys.js';
import { checkOnChain, evmProvider, evmSenderOf } from './evm.anchor.js';
import { redactText, secretPartsOfUrl } from '../shared/redact.js';
import { createLedgerAnchor } from './ledger.anchor.js';
import { AMENDMENT_CANONICAL_SCHEMA } from './canonical.js';
import { verifyAmendmentProof, verifyChain, verifyProof, type Anchored, type Verification } from './proof.js';
import { checkLogInclusion, type LogInclusionJson } from '../log/log-checks.js';
import { parseVerifierKey } from '../log/note.js';
import { witnessKey } from '../log/mirror.js';

/** Options of `verify` after the files: `--rpc URL`, `--from ADDRESS`, `--log-key VKEY`, `--witness VKEY` (repeated). */
function verifyOptions(args: string[]): { files: string[]; rpc?: string; from?: string; logKey?: string; witnesses: string[] } | undefined {
  const files: string[] = [];
  const opts: { rpc?: string; from?: string; logKey?: string } = {};
  const witnesses: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--rpc' || a === '--from' || a === '--log-key' || a === '--witness') {
      const value = args[++i];
      if (!value) return undefined;
      if (a === '--witness') witnesses.push(value);
      else opts[a === '--rpc' ? 'rpc' : a === '--from' ? 'from' : 'logKey'] = value;
    } else files.push(a);
  }
  return files.length >= 1 && files.length <= 2 ? { files, ...opts, witnesses } : undefined;
}

/** Each notarized leaf the files' proofs name, with its `log` (if any): what the log checks read. */
function logLeaves(docs: unknown[]): Array<{ kind: 'record' | 'amendment'; digest: string; what: string; log?: LogInclusionJson }> {
  const out: Array<{ kind: 'record' | 'amendment'; digest: string; what: string; log?: LogInclusionJson }> = [];
  const add = (proof: unknown, what: string) => {
    if (!isObject(proof) || typeof proof.digest !== 'string' || proof.notarizationStatus !== 'COMPLETE') return;
    const kind = proof.canonicalization === AMENDMENT_CANONICAL_SCHEMA ? 'amendment' : 'record';
    out.push({ kind, digest: proof.digest, what, ...(isObject(proof.log) && { log: proof.log as unknown as LogInclusionJson }) });
  };
  const [first, second] = docs;
  if (docs.length === 2) add(second, 'record');
  else if (isObject(first)) {
    add(first.proof, 'amendment' in first ? 'amendment' : 'guarantee');
    if (Array.isArray(first.amendmentProofs)) first.amendmentProofs.forEach((p, i) => add(p, `amendment ${i + 1}`));
  }
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The offline checks of what the files hold: `{guarantee, proof, amendments, amendmentProofs}`
 * (a whole history), `{guarantee, proof}` or `{amendment, proof}` in one file, or the JSON
 * and its proof in two; an amendment's proof is told by its canonicalization.
 */
function offline(docs: unknown[]): Verification {
  const [first, second] = docs;
  if (docs.length === 1) {
    if (isObject(first) && 'amendments' in first) return verifyChain(first);
    if (isObject(first) && 'amendment' in first) return verifyAmendmentProof(first.amendment, first.proof);
    return verifyProof(isObject(first) ? first.guarantee : undefined, isObject(first) ? first.proof : undefined);
  }
  // An amendment's proof, COMPLETE (its canonicalization) or PENDING (it names the amendment).
  if (isObject(second) && (second.canonicalization === AMENDMENT_CANONICAL_SCHEMA || 'amendmentId' in second)) return verifyAmendmentProof(first, second);
  return verifyProof(first, second);
}

/** The registry's side, when the command runs where it is configured (a third party verifying a proof has none). */
export interface RegistryAccess {
  config: Config;
  db: Sequelize;
  anchorKeys: Pick<AnchorKeys, 'evmAddress'>;
}

/**
 * Checks a proof offline, then against its anchor: the ledger in the configured database; the
 * chain at --rpc (or EVM_RPC_URL), the transaction's sender compared with --from (or the
 * registry's own address when its database is configured).
 *   0 verified: every check passed, the anchor's included
 *   1 NOT verified: a check failed
 *   2 the files could not be read, or the command is malformed
 *   3 verified offline only: consistent, but the anchor (or the EVM sender) was not checked,
 *     so the proof could have been made by anyone
 */
export async function verifyCommand(args: string[], say: (message: string) => void, usage: string, registry?: RegistryAccess): Promise<number> {
  const parsed = verifyOptions(args);
  if (!parsed) {
    say(usage);
    return 2;
  }
  let result: Verification;
  try {
    result = offline(parsed.files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as unknown));
  } catch (err) {
    say(`cannot read ${parsed.files.join(' and ')}: ${(err as Error).message}`);
    return 2;
  }
  const line = (ok: boolean, name: string, detail?: string) => say(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail && !ok ? ` (${detail})` : ''}`);
  for (const c of result.checks) line(c.ok, c.name, c.detail);
  if (!result.ok || !result.anchored.length) {
    process.stdout.write('NOT verified\n');
    return 1;
  }
  // The transparency log: each leaf in a checkpoint signed by the log's key and cosigned by each pinned witness.
  let keys;
  try {
    keys = { ...(parsed.logKey && { logKey: parseVerifierKey(parsed.logKey) }), witnesses: parsed.witnesses.map((w) => witnessKey(w)) };
  } catch (err) {
    say(`a key given: ${(err as Error).message}`);
    return 2;
  }
  let logFailed = false;
  const docs = parsed.files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as unknown);
  const leaves = logLeaves(docs);
  for (const leaf of leaves) {
    const { checks, cosigners } = checkLogInclusion(leaf, leaf.log, keys);
    for (const c of checks) line(c.ok, c.name, c.detail);
    logFailed ||= checks.some((c) => !c.ok);
    if (cosigners.length) say(`     cosigned by ${cosigners.join(', ')}`);
  }
  if (logFailed) {
    process.stdout.write('NOT verified\n');
    return 1;
  }
  if (leaves.some((l) => l.log) && !keys.logKey)
    say("the log's checkpoint signature was not checked: pin the log's key with --log-key (GET /log/key), and a witness's with --witness.");
  let unchecked: string | undefined;
  let failed = false;
  for (const anchored of result.anchored) {
    const outcome = await checkAnchor(anchored, parsed, line, registry);
    failed ||= outcome.failed;
    unchecked ??= outcome.unchecked;
  }
  if (failed) {
    process.stdout.write('NOT verified\n');
    return 1;
  }
  if (unchecked) {
    say(
      `the anchor itself was not checked: ${unchecked}. The record, its digest, its path and the anchor's own data agree, but anyone could have made such a proof.`,
    );
    process.stdout.write('verified offline only\n');
    return 3;
  }
  process.stdout.write('verified\n');
  return 0;
}

type Line = (ok: boolean, name: string, detail?: string) => void;

/**
 * One anchor checked: the ledger in the configured database; the chain at --rpc (or
 * EVM_RPC_URL), the transaction's sender compared with --from (or the registry's own address
 * when its database is configured). `unchecked`: why it could not be.
 */
async function checkAnchor(
  { anchor, root }: Anchored,
  opts: { rpc?: string; from?: string },
  line: Line,
  registry?: RegistryAccess,
): Promise<{ failed: boolean; unchecked?: string }> {
  const config = registry?.config;
  const db = registry?.db;
  if (anchor.kind === 'ledger') {
    if (!db) return { failed: false, unchecked: 'no database configured (DATABASE_URL) to read the ledger from' };
    let unchecked: string | undefined;
    const found = await createLedgerAnchor(db)
      .check(anchor.txHash)
      .catch((err: unknown) => {
        unchecked = `the database did not answer (${(err as Error).message})`;
        return null;
      });
    if (found === null) return { failed: false, ...(unchecked !== undefined && { unchecked }) };
    // The proof's entry hashes to txHash (checked offline), and so does the ledger's (check()).
    line(found !== undefined, 'the ledger holds an entry with this hash', `no entry ${anchor.txHash}`);
    if (found) line(found.intact, "the ledger's chain from this entry to its head is intact", found.problem);
    return { failed: !found?.intact };
  }
  const url = opts.rpc ?? config?.EVM_RPC_URL;
  // The sender to expect: --from, else the one of the registry's keys that the registry
  // recorded for this transaction (its key may have changed since), else its key now.
  const from =
    opts.from ??
    (registry && db
      ? await evmSenderOf(db, anchor.txHash)
          .then((sender) => sender ?? registry.anchorKeys.evmAddress())
          .catch(() => undefined)
      : undefined);
  if (!url) return { failed: false, unchecked: 'no --rpc URL (or EVM_RPC_URL) to read the chain from' };
  const provider = evmProvider(url, anchor.chainId ?? 1, 15_000);
  try {
    const onChain = await checkOnChain(provider, {
      txHash: anchor.txHash,
      root,
      chainId: anchor.chainId ?? 0,
      from: from ?? anchor.from ?? '',
      blockNumber: anchor.blockNumber,
    });
    for (const c of onChain) line(c.ok, c.name, c.detail);
    return {
      failed: !onChain.every((c) => c.ok),
      ...(!from && { unchecked: "the sender was not compared with the registry's address (give it with --from)" }),
    };
  } catch (err) {
    // The URL may carry an API key: it is named by neither the message nor the error.
    return { failed: false, unchecked: `the EVM node did not answer (${redactText((err as Error).message, secretPartsOfUrl(url))})` };
  } finally {
    provider.destroy();
  }
}

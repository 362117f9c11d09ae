// `cli verify`: a notarization proof checked offline (proof.ts), then against its anchor (the
// registry's ledger, or the chain). What a script needs goes on stdout ("verified", "NOT
// verified", "verified offline only"), each check on stderr.
import { readFileSync } from 'node:fs';
import type { Config } from '../../config/index.js';
import type { Sequelize } from '../shared/db/sequelize.js';
import type { AnchorKeys } from './anchor-keys.js';
import { checkOnChain, evmProvider, evmSenderOf } from './evm.anchor.js';
import { redactText, secretPartsOfUrl } from '../shared/redact.js';
import { createLedgerAnchor } from './ledger.anchor.js';
import { verifyProof } from './proof.js';

/** Options of `verify` after the files: `--rpc URL`, `--from ADDRESS`. */
function verifyOptions(args: string[]): { files: string[]; rpc?: string; from?: string } | undefined {
  const files: string[] = [];
  const opts: { rpc?: string; from?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--rpc' || a === '--from') {
      const value = args[++i];
      if (!value) return undefined;
      opts[a === '--rpc' ? 'rpc' : 'from'] = value;
    } else files.push(a);
  }
  return files.length >= 1 && files.length <= 2 ? { files, ...opts } : undefined;
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
  let guarantee: unknown;
  let proof: unknown;
  try {
    const docs = parsed.files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>);
    [guarantee, proof] = docs.length === 1 ? [docs[0]?.guarantee, docs[0]?.proof] : docs;
  } catch (err) {
    say(`cannot read ${parsed.files.join(' and ')}: ${(err as Error).message}`);
    return 2;
  }
  const result = verifyProof(guarantee, proof);
  const line = (ok: boolean, name: string, detail?: string) => say(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail && !ok ? ` (${detail})` : ''}`);
  for (const c of result.checks) line(c.ok, c.name, c.detail);
  if (!result.ok || !result.proof) {
    process.stdout.write('NOT verified\n');
    return 1;
  }
  const { anchor, root } = result.proof;
  const config = registry?.config;
  const db = registry?.db;
  let unchecked: string | undefined;
  let failed = false;
  if (anchor.kind === 'ledger') {
    if (!db) unchecked = 'no database configured (DATABASE_URL) to read the ledger from';
    else {
      const found = await createLedgerAnchor(db)
        .check(anchor.txHash)
        .catch((err: unknown) => {
          unchecked = `the database did not answer (${(err as Error).message})`;
          return null;
        });
      if (found !== null) {
        // The proof's entry hashes to txHash (checked above), and so does the ledger's (check()).
        line(found !== undefined, 'the ledger holds an entry with this hash');
        if (found) line(found.intact, "the ledger's chain from this entry to its head is intact", found.problem);
        failed = !found?.intact;
      }
    }
  } else {
    const url = parsed.rpc ?? config?.EVM_RPC_URL;
    // The sender to expect: --from, else the one of the registry's keys that the registry
    // recorded for this transaction (its key may have changed since), else its key now.
    const from =
      parsed.from ??
      (registry && db
        ? await evmSenderOf(db, anchor.txHash)
            .then((sender) => sender ?? registry.anchorKeys.evmAddress())
            .catch(() => undefined)
        : undefined);
    if (!url) unchecked = 'no --rpc URL (or EVM_RPC_URL) to read the chain from';
    else {
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
        failed = !onChain.every((c) => c.ok);
        if (!from) unchecked = "the sender was not compared with the registry's address (give it with --from)";
      } catch (err) {
        // The URL may carry an API key: it is named by neither the message nor the error.
        unchecked = `the EVM node did not answer (${redactText((err as Error).message, secretPartsOfUrl(url))})`;
      } finally {
        provider.destroy();
      }
    }
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

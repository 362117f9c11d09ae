// Administration CLI (`npm run -s cli -- ...` in development, `node dist/src/cli.js ...` in
// production). What a script needs goes alone on stdout, one value a line; messages go to stderr.
//
//   org create <name>      prints the new organization's id
//   key create <orgId>     prints a new API key (shown once; only its hash is stored)
//   key revoke <prefix>    revokes a key by its prefix (grk_xxxxxxxxxxxx)
//   migrate                applies pending database migrations, the bucket's CORS rule and upload events
//   secrets reencrypt      re-seals every stored secret under the first ENCRYPTION_KEY (after a rotation)
//   evm set-key            stores the EVM anchor's private key (read from standard input), sealed; prints its address
//   evm address            prints the EVM anchor's address (fund it with gas)
//   verify <file> [<file>] [--rpc URL] [--from ADDRESS] checks a notarization proof offline (one file {guarantee, proof}, or the
//                          guarantee's JSON and the proof's), then against the anchor when reachable
import { readFileSync } from 'node:fs';
import { getConfig } from '../config/index.js';
import { createAnchorKeys } from './notarization/anchor-keys.js';
import { checkOnChain, evmProvider } from './notarization/evm.anchor.js';
import { createLedgerAnchor } from './notarization/ledger.anchor.js';
import { verifyProof } from './notarization/proof.js';
import { createOrgRepository } from './orgs/org.repository.js';
import { createOrgService } from './orgs/org.service.js';
import { migrate } from './shared/db/migrator.js';
import { createSequelize } from './shared/db/sequelize.js';
import { AppError } from './shared/errors.js';
import { createLogger } from './shared/logger.js';
import { configureUploadEvents } from './files/storage-events.setup.js';
import { createSecretBox } from './shared/secrets.js';
import { createStorage } from './shared/storage.js';
import { createWebhookRepository } from './webhooks/webhook.repository.js';

const USAGE = `usage:
  cli org create <name>
  cli key create <orgId>
  cli key revoke <keyPrefix>
  cli migrate
  cli secrets reencrypt
  cli evm set-key            (the private key on standard input)
  cli evm address
  cli verify <file with {"guarantee": ..., "proof": ...}> [--rpc URL] [--from ADDRESS]
  cli verify <guarantee.json> <proof.json> [--rpc URL] [--from ADDRESS]`;

const say = (message: string) => process.stderr.write(`${message}\n`);

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

/** The configuration when there is one (a third party verifying a proof has none). */
function configIfAny() {
  try { return getConfig(); } catch { return undefined; }
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
async function verifyCommand(args: string[]): Promise<number> {
  const parsed = verifyOptions(args);
  if (!parsed) {
    say(USAGE);
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
  const config = configIfAny();
  let unchecked: string | undefined;
  let failed = false;
  const db = config && createSequelize({ url: config.DATABASE_URL, poolMax: 1 });
  try {
    if (anchor.kind === 'ledger') {
      if (!db) unchecked = 'no database configured (DATABASE_URL) to read the ledger from';
      else {
        const found = await createLedgerAnchor(db).check(anchor.txHash).catch((err: unknown) => {
          unchecked = `the database did not answer (${(err as Error).message})`;
          return null;
        });
        if (found !== null) {
          // The proof's entry hashes to txHash (checked above), and so does the ledger's (check()).
          line(found !== undefined, 'the ledger holds an entry with this hash');
          if (found) line(found.intact, 'the ledger\'s chain from this entry to its head is intact', found.problem);
          failed = !found?.intact;
        }
      }
    } else {
      const url = parsed.rpc ?? config?.EVM_RPC_URL;
      const from = parsed.from ?? (config && db ? await createAnchorKeys(db, createSecretBox(config.ENCRYPTION_KEY)).evmAddress().catch(() => undefined) : undefined);
      if (!url) unchecked = 'no --rpc URL (or EVM_RPC_URL) to read the chain from';
      else {
        const provider = evmProvider(url, anchor.chainId ?? 1, 15_000);
        try {
          const onChain = await checkOnChain(provider, { txHash: anchor.txHash, root, chainId: anchor.chainId ?? 0, from: from ?? anchor.from ?? '', blockNumber: anchor.blockNumber });
          for (const c of onChain) line(c.ok, c.name, c.detail);
          failed = !onChain.every((c) => c.ok);
          if (!from) unchecked = 'the sender was not compared with the registry\'s address (give it with --from)';
        } catch (err) {
          unchecked = `${url} did not answer (${(err as Error).message})`;
        } finally {
          provider.destroy();
        }
      }
    }
  } finally {
    await db?.close();
  }
  if (failed) {
    process.stdout.write('NOT verified\n');
    return 1;
  }
  if (unchecked) {
    say(`the anchor itself was not checked: ${unchecked}. The record, its digest, its path and the anchor's own data agree, but anyone could have made such a proof.`);
    process.stdout.write('verified offline only\n');
    return 3;
  }
  process.stdout.write('verified\n');
  return 0;
}

export async function runCli(argv: string[]): Promise<number> {
  const [noun, verb, arg] = argv;
  if (noun === 'verify') return verifyCommand(argv.slice(1));
  const config = getConfig();
  if (noun === 'migrate' && verb === undefined) {
    const applied = await migrate(config.DATABASE_URL, createLogger(config.LOG_LEVEL, process.stderr));
    say(applied.length ? `applied ${applied.join(', ')}` : 'database schema up to date');
    // The release phase also brings the bucket's CORS rule in line with UPLOAD_CORS_ORIGINS.
    const storage = createStorage(config);
    try {
      await storage.allowBrowserUploads(config.UPLOAD_CORS_ORIGINS);
      say(`bucket ${storage.bucket}: browser uploads allowed from ${config.UPLOAD_CORS_ORIGINS.join(', ') || 'no origin'}`);
      // And its upload events with STORAGE_EVENTS_URL (hints; the polling watch works without them).
      const topic = await configureUploadEvents(storage, config, config.STORAGE_EVENTS_URL, config.ENCRYPTION_KEY[0] as Buffer);
      say(topic ? `bucket ${storage.bucket}: upload events pushed to ${config.STORAGE_EVENTS_URL} (${topic})` : `bucket ${storage.bucket}: no upload events (polling only)`);
    } finally {
      storage.client.destroy();
    }
    return 0;
  }
  if (noun === 'secrets' && verb === 'reencrypt' && argv.length === 2) {
    // After putting a new key first in ENCRYPTION_KEY: every secret sealed under an older key
    // is sealed again under the new one; then the old key can be removed from the list.
    const db = createSequelize({ url: config.DATABASE_URL, poolMax: 2 });
    try {
      const box = createSecretBox(config.ENCRYPTION_KEY);
      const repo = createWebhookRepository(db);
      let resealed = 0;
      for (const row of await repo.sealedSecrets()) {
        if (box.isCurrent(row.secretEnc) && (!row.previousSecretEnc || box.isCurrent(row.previousSecretEnc))) continue;
        await repo.resealSecrets(row.id, box.seal(box.open(row.secretEnc)), row.previousSecretEnc && box.seal(box.open(row.previousSecretEnc)));
        resealed++;
      }
      const keys = await createAnchorKeys(db, box).reseal();
      say(`re-sealed ${resealed} webhook secret(s) and ${keys} anchor key(s) under the first ENCRYPTION_KEY`);
      process.stdout.write(`${resealed + keys}\n`);
      return 0;
    } finally {
      await db.close();
    }
  }
  if (noun === 'evm' && (verb === 'set-key' || verb === 'address') && argv.length === 2) {
    const db = createSequelize({ url: config.DATABASE_URL, poolMax: 1 });
    try {
      const keys = createAnchorKeys(db, createSecretBox(config.ENCRYPTION_KEY));
      if (verb === 'address') {
        const key = await keys.evmKey();
        if (!key) { say('no EVM anchor key: set one with `cli evm set-key`'); return 1; }
        process.stdout.write(`${key.address}\n`);
        return 0;
      }
      // From standard input, never the command line (which other users of the machine can read).
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      const address = await keys.setEvmKey(Buffer.concat(chunks).toString('utf8'));
      say(`stored the EVM anchor key, sealed under ENCRYPTION_KEY; fund ${address} with gas`);
      process.stdout.write(`${address}\n`);
      return 0;
    } catch (err) {
      if (err instanceof AppError && err.expose) { say(err.message); return 1; }
      throw err;
    } finally {
      await db.close();
    }
  }
  if (!arg || argv.length !== 3) {
    say(USAGE);
    return 2;
  }
  const db = createSequelize({ url: config.DATABASE_URL, poolMax: 2 });
  try {
    const orgs = createOrgService(createOrgRepository(db));
    if (noun === 'org' && verb === 'create') {
      const org = await orgs.createOrganization(arg);
      say(`created organization "${org.name}"`);
      process.stdout.write(`${org.id}\n`);
    } else if (noun === 'key' && verb === 'create') {
      const { key, prefix } = await orgs.createApiKey(arg);
      say(`created API key ${prefix} for organization ${arg}: store it now, it is not shown again`);
      process.stdout.write(`${key}\n`);
    } else if (noun === 'key' && verb === 'revoke') {
      await orgs.revokeApiKey(arg);
      say(`revoked API key ${arg}`);
    } else {
      say(USAGE);
      return 2;
    }
    return 0;
  } catch (err) {
    if (err instanceof AppError && err.expose) {
      say(err.message);
      return 1;
    }
    throw err;
  } finally {
    await db.close();
  }
}

const isMain = import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('/cli.js');
if (isMain) {
  try {
    process.exitCode = await runCli(process.argv.slice(2));
  } catch (err) {
    say((err as Error).message);
    process.exitCode = 1;
  }
}

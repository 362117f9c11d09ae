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
//   verify <file> [<file>] [--rpc URL] checks a notarization proof offline (one file {guarantee, proof}, or the
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
  cli verify <file with {"guarantee": ..., "proof": ...}> [--rpc URL]
  cli verify <guarantee.json> <proof.json> [--rpc URL]`;

const say = (message: string) => process.stderr.write(`${message}\n`);

/**
 * Checks a proof offline, then against its anchor when this machine reaches it (the ledger:
 * the service's database, when DATABASE_URL is configured). 0 verified, 1 not, 2 unreadable.
 */
async function verifyCommand(args: string[]): Promise<number> {
  const rpcAt = args.indexOf('--rpc');
  const rpc = rpcAt >= 0 ? args[rpcAt + 1] : undefined;
  const files = rpcAt >= 0 ? args.filter((_, i) => i !== rpcAt && i !== rpcAt + 1) : args;
  if (!files.length || files.length > 2 || (rpcAt >= 0 && !rpc)) {
    say(USAGE);
    return 2;
  }
  let guarantee: unknown;
  let proof: unknown;
  try {
    const parsed = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>);
    [guarantee, proof] = parsed.length === 1 ? [parsed[0]?.guarantee, parsed[0]?.proof] : parsed;
  } catch (err) {
    say(`cannot read ${files.join(' and ')}: ${(err as Error).message}`);
    return 2;
  }
  const result = verifyProof(guarantee, proof);
  for (const c of result.checks) say(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` (${c.detail})` : ''}`);
  let ok = result.ok;
  const anchor = result.proof?.anchor;
  if (ok && anchor?.kind === 'evm' && result.proof) {
    let url = rpc;
    if (!url) { try { url = getConfig().EVM_RPC_URL; } catch { url = undefined; } }
    if (!url) say('skip the chain itself: no --rpc URL (or EVM_RPC_URL); the proof holds offline');
    else {
      const provider = evmProvider(url, anchor.chainId ?? 1);
      try {
        const onChain = await checkOnChain(provider, { txHash: anchor.txHash, root: result.proof.root, from: anchor.from, blockNumber: anchor.blockNumber });
        for (const c of onChain) say(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail && !c.ok ? ` (${c.detail})` : ''}`);
        ok = onChain.every((c) => c.ok);
      } catch (err) {
        say(`skip the chain itself: ${url} did not answer (${(err as Error).message}); the proof holds offline`);
      } finally {
        provider.destroy();
      }
    }
  }
  if (ok && anchor?.kind === 'ledger') {
    let config;
    try { config = getConfig(); } catch { config = undefined; }
    if (!config) say('skip the ledger itself: no database configured (DATABASE_URL); the proof holds offline');
    else {
      const db = createSequelize({ url: config.DATABASE_URL, poolMax: 1 });
      try {
        const found = await createLedgerAnchor(db).check(anchor.txHash);
        // The proof's entry hashes to txHash (checked above), and so does the ledger's (check()).
        say(`${found ? 'ok  ' : 'FAIL'} the ledger holds an entry with this hash`);
        if (found) say(`${found.intact ? 'ok  ' : 'FAIL'} the ledger's chain from this entry to its head is intact${found.problem ? ` (${found.problem})` : ''}`);
        ok = found?.intact === true;
      } catch (err) {
        say(`skip the ledger itself: the database did not answer (${(err as Error).message}); the proof holds offline`);
      } finally {
        await db.close();
      }
    }
  }
  process.stdout.write(ok ? 'verified\n' : 'NOT verified\n');
  return ok ? 0 : 1;
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

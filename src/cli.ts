// Administration CLI (`npm run -s cli -- ...` in development, `node dist/src/cli.js ...` in
// production). What a script needs goes alone on stdout, one value a line; messages go to stderr.
//
//   org create <name> [--vat V [--allow-shared-vat]] [--register R]   prints the new organization's id; V and R are
//                          its public identifiers, shown to whoever verifies its guarantees; a VAT number another
//                          organization has is refused, naming it, unless --allow-shared-vat (a group of companies shares one)
//   org create <name> --kind authority --fiscal-code F [--ausa A] [--ipa I]   a contracting
//                          authority: its keys reach only the authorities' API
//   org set <orgId> [--name N] [--vat V [--allow-shared-vat]] [--register R] [--ausa A] [--ipa I]   changes them (the operator only: no API route does)
//   authority add-user <orgId> <fiscal code>   binds a person (the fiscal code their identity
//                          provider vouches for, SPID or CIE) to the authority: they may sign in to /authority
//   authority remove-user <orgId> <fiscal code>, authority users <orgId>
//   key create <orgId>     prints a new API key (shown once; only its hash is stored)
//   key revoke <prefix>    revokes a key by its prefix (grk_xxxxxxxxxxxx)
//   migrate                applies pending database migrations, the bucket's versioning, CORS rule and upload events
//   secrets reencrypt      re-seals every stored secret under the first ENCRYPTION_KEY (after a rotation)
//   evm set-key            stores the EVM anchor's private key (read from standard input), sealed; prints its address
//   evm address            prints the EVM anchor's address (fund it with gas)
//   trust import <list.xml>...  verifies EU trusted lists against TRUSTED_LIST_SIGNERS and keeps their
//                          qualified CA and timestamping services for signature checks (trust list, trust remove <territory>)
//   audit verify [--log <mirror dir> [--witness W]...]   checks every chain of the audit trail; names the first broken row of
//                          each; with a mirror of the transparency log, also that no chain's end was cut or rewritten
//   receipt verify <receipt> --jwks <URL or file>   checks a verification receipt with the published keys:
//                          its signature, and that its key was neither retired nor compromised when it says it signed
//   verification-key retire <kid> [--compromised-since <time>]   the key signs nothing more (configure the next
//                          one first); a leaked key's receipts from that time on prove nothing; the change goes into the log
//   log mirror <base URL> <dir> [--key K] [--witness W]...   copies the transparency log and checks every
//                          entry; exits 1 naming a rollback, a rewritten entry, a checkpoint a pinned witness did not cosign
//   log verify <dir> [--witness W]...   checks a mirror offline
//   witness serve [--name N] [--dir D] [--port P] --log <log verifier key>...   runs a witness of the
//                          transparency log as a process of its own (prints its verifier key)
//   verify <file> [<file>] [--rpc URL] [--from ADDRESS] checks a notarization proof offline (one file {guarantee, proof}
//                          or {amendment, proof}, or the JSON and the proof's in two; or one file with a whole history,
//                          {guarantee, proof, amendments, amendmentProofs}, the chain included), then against each anchor when reachable;
//                          [--log-key K] [--witness W]...: each leaf in the transparency log's checkpoint, signed by the log's key
//                          and cosigned by each pinned witness
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { getConfig, type Config } from '../config/index.js';
import { cliServices, openCore, type Core } from './core.js';
import { namedOrg, type OrgService, type OrgWithVat } from './orgs/org.service.js';
import type { Organization } from './orgs/org.repository.js';
import type { PublicJwk } from './verification/signing-keys.js';
import { createAuditRepository } from './audit/audit.repository.js';
import { AppError, NotFoundError } from './shared/errors.js';
import { truncate } from './shared/db/sequelize.js';
import { createLogger } from './shared/logger.js';
import { SecretContext } from './shared/secrets.js';
import type { Storage } from './shared/storage.js';

// Each command loads what it alone uses (the store's client, the log's mirror, the trusted
// lists' XML signatures, a receipt's JOSE...) when it runs: loading them all at every start was
// most of a command's time.

const USAGE = `usage:
  cli org create <name> [--vat <VAT number> [--allow-shared-vat]] [--register <register entry>]
  cli org create <name> --kind authority --fiscal-code <11 digits> [--ausa <codice AUSA>] [--ipa <IPA code>]
  cli org set <orgId> [--name <name>] [--vat <VAT number> [--allow-shared-vat]] [--register <register entry>] [--ausa <codice AUSA>] [--ipa <IPA code>]
                             (--allow-shared-vat: another organization has the VAT number too, a group of companies)
  cli org show <orgId>       (its kind on standard output, its identity on standard error)
  cli authority add-user <orgId> <fiscal code>
  cli authority remove-user <orgId> <fiscal code>
  cli authority users <orgId>
  cli key create <orgId>
  cli key revoke <keyPrefix>
  cli migrate
  cli secrets reencrypt
  cli evm set-key            (the private key on standard input)
  cli evm address
  cli trust import <list.xml>...
  cli trust list
  cli trust remove <territory>
  cli verify <file with {"guarantee": ..., "proof": ...}> [--rpc URL] [--from ADDRESS] [--log-key <log verifier key>] [--witness <witness verifier key>]...
  cli audit verify [--log <mirror dir> [--witness <witness verifier key>]...]
  cli receipt verify <receipt, or a file holding it> --jwks <URL or file> [--log-key <log verifier key>] [--witness <witness verifier key>]...
  cli verification-key retire <kid> [--compromised-since <time>]
  cli log mirror <base URL, e.g. https://registry.example/log> <dir> [--key <log verifier key>] [--witness <witness verifier key>]...
  cli log verify <dir> [--witness <witness verifier key>]...
  cli witness serve [--name <key name>] [--dir <state directory>] [--port <port>] --log <log verifier key> [--log ...]
  cli verify <guarantee.json> <proof.json> [--rpc URL] [--from ADDRESS]
  cli verify <amendment.json> <amendment-proof.json> [--rpc URL] [--from ADDRESS]
  cli verify <file with {"guarantee", "proof", "amendments": [...], "amendmentProofs": [...]}> [--rpc URL] [--from ADDRESS]`;

/** The options of `org create` and `org set`, each with a value; and their one flag without, a VAT number that another organization has too. */
const CREATE_OPTIONS = ['--vat', '--register', '--kind', '--fiscal-code', '--ausa', '--ipa'];
const SET_OPTIONS = ['--vat', '--register', '--name', '--ausa', '--ipa'];
const SHARED_VAT = '--allow-shared-vat';

const toStderr = (message: string) => void process.stderr.write(`${message}\n`);
/** Where the commands' messages go: stderr, or a caller's sink while runCli runs for it (npm start keeps them for its log). */
let sink: (message: string) => void = toStderr;
const say = (message: string) => sink(message);

/** An error the operator may read (a refused input, an unknown id): said, exit code 1; any other is thrown. */
function exitOnExposed(err: unknown): number {
  if (err instanceof AppError && err.expose) {
    say(err.message);
    return 1;
  }
  throw err;
}

/** The operator's commands in the audit trail. */
const CLI = { actor: 'cli' } as const;

/**
 * Seals again, under the first ENCRYPTION_KEY and bound to its row, every stored secret that
 * is not (an older key's, or sealed before secrets were bound); returns how many.
 */
async function resealSecrets(core: Core): Promise<number> {
  const box = core.secrets;
  const repo = core.repos.webhooks;
  let resealed = 0;
  for (const row of await repo.sealedSecrets()) {
    if (box.isCurrent(row.secretEnc) && (!row.previousSecretEnc || box.isCurrent(row.previousSecretEnc))) continue;
    const context = SecretContext.webhook(row.id);
    let next: { secretEnc: Buffer; previousSecretEnc: Buffer | null };
    try {
      next = {
        secretEnc: box.seal(box.open(row.secretEnc, context), context),
        previousSecretEnc: row.previousSecretEnc && box.seal(box.open(row.previousSecretEnc, context), context),
      };
    } catch (err) {
      say(`webhook ${row.id}: its secret does not open (${(err as Error).message}); left as it is`);
      continue;
    }
    // Only if unchanged since it was read: a rotation meanwhile wins.
    if (await repo.resealSecrets(row.id, row, next)) resealed++;
  }
  const keys = await core.repos.anchorKeys.reseal();
  const receiptKeys = await core.repos.signingKeys.reseal();
  say(`re-sealed ${resealed} webhook secret(s), ${keys} anchor key(s) and ${receiptKeys} receipt signing key(s) under the first ENCRYPTION_KEY`);
  return resealed + keys + receiptKeys;
}

export async function runCli(argv: string[], opts: { say?: (message: string) => void } = {}): Promise<number> {
  if (!opts.say) return command(argv);
  sink = opts.say;
  try {
    return await command(argv);
  } finally {
    sink = toStderr;
  }
}

async function command(argv: string[]): Promise<number> {
  const [noun, verb, arg] = argv;
  // A witness is anyone's: it needs none of the registry's settings.
  if (noun === 'witness') return (await import('./log/witness/witness.command.js')).witnessCommand(argv.slice(1), say, USAGE);
  // So is a mirror of the log.
  if (noun === 'log') return (await import('./log/log.command.js')).logCommand(argv.slice(1), say, USAGE);
  // And a receipt's check: anyone's, with the registry's published keys.
  if (noun === 'receipt' && verb === 'verify' && arg && argv[3] === '--jwks' && argv[4]) {
    const pins: { logKey?: string; witnesses: string[] } = { witnesses: [] };
    for (let i = 5; i < argv.length; i += 2) {
      const value = argv[i + 1];
      if (!value || (argv[i] !== '--log-key' && argv[i] !== '--witness')) {
        say(USAGE);
        return 2;
      }
      if (argv[i] === '--witness') pins.witnesses.push(value);
      else pins.logKey = value;
    }
    return receiptCommand(arg, argv[4], pins);
  }
  if (noun === 'verify') {
    const { verifyCommand } = await import('./notarization/verify.command.js');
    // Where the registry is configured, its ledger and its anchor's address are read too.
    const config = configIfAny();
    if (!config) return verifyCommand(argv.slice(1), say, USAGE);
    return withCore(config, (core) => verifyCommand(argv.slice(1), say, USAGE, { config, db: core.db, anchorKeys: core.repos.anchorKeys }));
  }
  const config = getConfig();
  if (noun === 'trust') {
    const { trustCommand } = await import('./files/trust/trust.command.js');
    const run = () => trustCommand(argv.slice(1), config, say, USAGE, (work) => withCore(config, (core) => work(core.repos.trust)));
    // An import names its files (the lists they hold are known once verified), a removal its territory.
    const lists =
      verb === 'remove'
        ? (arg ?? '')
        : argv
            .slice(2)
            .map((file) => basename(file))
            .join(',');
    if (verb === 'import' || verb === 'remove') return audited(config, `trust_list.${verb}`, truncate(`trust_list:${lists}`, 300), run);
    return run();
  }
  if (noun === 'migrate' && verb === undefined) {
    // Recorded once done: before, the audit trail's tables may not exist yet (a new database),
    // and a schema change is not a transaction a row could share. A failure is recorded when the
    // trail can take it.
    // Loaded for this command alone: the migrator (umzug and its dependencies) was a seventh of every command's start.
    const { migrate } = await import('./shared/db/migrator.js');
    const applied = await migrate(config.DATABASE_URL, createLogger(config.LOG_LEVEL, process.stderr)).catch(async (err: unknown) => {
      await recordSystem(config, 'schema.migrate', 'schema', 'failed').catch(() => undefined);
      throw err;
    });
    if (applied.length) await recordSystem(config, 'schema.migrate', truncate(`schema:${applied.join(',')}`, 300), 'ok');
    say(applied.length ? `applied ${applied.join(', ')}` : 'database schema up to date');
    return audited(config, 'storage.configure', truncate(`bucket:${config.S3_BUCKET}`, 300), () => configureBucket(config));
  }
  if (
    noun === 'audit' &&
    verb === 'verify' &&
    (argv.length === 2 || (argv[2] === '--log' && argv.length >= 4 && argv.length % 2 === 0 && argv.slice(4).every((a, i) => i % 2 === 1 || a === '--witness')))
  ) {
    // Every chain of the audit trail, row by row: exit 0 when all hold, 1 naming the first broken row of each chain that does not.
    // With --log <mirror dir> [--witness <key>]...: also every head the transparency log recorded, still there unchanged (a
    // cut or rewritten end), the mirror's checkpoint cosigned by each pinned witness (an operator's own rewritten log is not).
    const mirror = argv[3];
    const witnesses = argv.slice(4).filter((_, i) => i % 2 === 1);
    const recorded = mirror ? await recordedAuditHeads(mirror, witnesses) : undefined;
    if (recorded instanceof Error) {
      say(`FAIL ${recorded.message}`);
      return 1;
    }
    return withCore(config, async (core) => {
      const audit = createAuditRepository(core.db);
      const { rows, chains, broken } = await audit.verify();
      if (recorded) {
        const against = await audit.checkRecordedHeads(recorded);
        for (const b of against) if (!broken.some((k) => k.chain === b.chain && k.seq <= b.seq)) broken.push(b);
        say(`checked ${recorded.length} head(s) the transparency log recorded (mirror ${mirror})`);
      }
      for (const b of broken) say(`FAIL chain ${b.chain}: row ${b.seq}: ${b.problem}`);
      say(`checked ${rows} row(s) in ${chains} chain(s)`);
      process.stdout.write(broken.length ? 'audit trail NOT intact\n' : 'audit trail intact\n');
      return broken.length ? 1 : 0;
    });
  }
  if (noun === 'verification-key' && verb === 'retire' && arg && (argv.length === 3 || (argv.length === 5 && argv[3] === '--compromised-since'))) {
    const since = argv[4] === undefined ? null : new Date(argv[4]);
    if (since && (Number.isNaN(since.getTime()) || !/^\d{4}-\d{2}-\d{2}T/.test(argv[4] as string))) {
      say('--compromised-since takes a time such as 2026-11-01T00:00:00Z');
      return 2;
    }
    return audited(config, 'verification_key.retire', truncate(`verification_key:${arg}`, 300), () =>
      withCore(config, async (core) => {
        if (!(await core.repos.signingKeys.retire(arg, new Date(), since))) {
          say(`no receipt key ${arg} (see /.well-known/jwks.json)`);
          return 1;
        }
        say(
          `retired receipt key ${arg}${since ? `, its signatures from ${since.toISOString()} on held compromised` : ''}: /.well-known/jwks.json says so, and the transparency log records it at its next checkpoint`,
        );
        return 0;
      }),
    );
  }
  if (noun === 'secrets' && verb === 'reencrypt' && argv.length === 2) {
    // After putting a new key first in ENCRYPTION_KEY: every secret sealed under an older key
    // is sealed again under the new one; then the old key can be removed from the list.
    return audited(config, 'secrets.reencrypt', 'secrets:*', async () => {
      const n = await withCore(config, resealSecrets);
      process.stdout.write(`${n}\n`);
      return 0;
    });
  }
  if (noun === 'evm' && (verb === 'set-key' || verb === 'address') && argv.length === 2) {
    const run = () =>
      withCore(config, async (core) => {
        const keys = core.repos.anchorKeys;
        if (verb === 'address') {
          const key = await keys.evmKey();
          if (!key) {
            say('no EVM anchor key: set one with `cli evm set-key`');
            return 1;
          }
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
      }).catch(exitOnExposed);
    return verb === 'set-key' ? audited(config, 'evm.set_key', 'anchor_key:evm', run) : run();
  }
  if (noun === 'authority' && ['add-user', 'remove-user', 'users'].includes(verb ?? '') && arg && argv.length === (verb === 'users' ? 3 : 4)) {
    return withCore(config, async (core) => {
      const people = cliServices.authorityUsers(core);
      if (verb === 'users') {
        for (const u of await people.list(arg)) process.stdout.write(`${u.fiscalCode}\n`);
        return 0;
      }
      const person = argv[3] as string;
      if (verb === 'add-user') {
        const { fiscalCode, already } = await people.add(arg, person);
        say(already ? `${fiscalCode} was bound to authority ${arg} already` : `bound ${fiscalCode} to authority ${arg}: they may sign in to /authority`);
      } else say(`unbound ${await people.remove(arg, person)} from authority ${arg}`);
      return 0;
    }).catch(exitOnExposed);
  }
  // Options after the positional arguments, each with a value (but --allow-shared-vat).
  const options = new Map<string, string>();
  const allowed = verb === 'create' ? CREATE_OPTIONS : SET_OPTIONS;
  let allowSharedVat = false;
  for (let i = 3; i < argv.length; i += 2) {
    const [flag, value] = [argv[i] ?? '', argv[i + 1]];
    if (flag === SHARED_VAT && !allowSharedVat && noun === 'org' && (verb === 'create' || verb === 'set')) {
      allowSharedVat = true;
      i--;
      continue;
    }
    if (!allowed.includes(flag) || value === undefined || options.has(flag) || noun !== 'org') {
      say(USAGE);
      return 2;
    }
    options.set(flag, value);
  }
  const kind = options.get('--kind');
  if (!arg || (kind !== undefined && kind !== 'issuer' && kind !== 'authority')) {
    say(USAGE);
    return 2;
  }
  return withOrganizations(config, async (orgs) => {
    const given = (flag: string, as: string) => (options.has(flag) ? { [as]: options.get(flag) as string } : {});
    const described = (o: Organization) =>
      `${o.kind === 'authority' ? 'authority' : 'organization'} "${o.name}"${o.vatNumber ? `, VAT ${o.vatNumber}${o.vatShared ? ' (shared)' : ''}` : ''}` +
      `${o.register ? `, ${o.register}` : ''}${o.fiscalCode ? `, fiscal code ${o.fiscalCode}` : ''}${o.ausa ? `, AUSA ${o.ausa}` : ''}${o.ipa ? `, IPA ${o.ipa}` : ''}`;
    // Whoever else has the VAT number (--allow-shared-vat, or the organization's own given again).
    const sharing = (o: OrgWithVat) => {
      if (o.vatSharedWith.length) say(`its VAT number ${o.vatNumber} is shared with organization ${o.vatSharedWith.map(namedOrg).join(', ')}`);
    };
    if (noun === 'org' && verb === 'create') {
      const org = await orgs.createOrganization(
        arg,
        {
          ...(kind !== undefined && { kind }),
          ...given('--vat', 'vat'),
          ...given('--register', 'register'),
          ...given('--fiscal-code', 'fiscalCode'),
          ...given('--ausa', 'ausa'),
          ...given('--ipa', 'ipa'),
          ...(allowSharedVat && { allowSharedVat }),
        },
        CLI,
      );
      say(`created ${described(org)}`);
      sharing(org);
      process.stdout.write(`${org.id}\n`);
    } else if (noun === 'org' && verb === 'set') {
      const org = await orgs.setPublicIdentity(
        arg,
        {
          ...given('--name', 'name'),
          ...given('--vat', 'vat'),
          ...given('--register', 'register'),
          ...given('--ausa', 'ausa'),
          ...given('--ipa', 'ipa'),
          ...(allowSharedVat && { allowSharedVat }),
        },
        CLI,
      );
      say(`organization ${org.id} is now ${described(org)}`);
      sharing(org);
    } else if (noun === 'org' && verb === 'show') {
      const org = await orgs.find(arg);
      if (!org) throw new NotFoundError(`No organization ${arg}.`);
      say(described(org));
      process.stdout.write(`${org.kind}\n`);
    } else if (noun === 'key' && verb === 'create') {
      const { key, prefix } = await orgs.createApiKey(arg, CLI);
      say(`created API key ${prefix} for organization ${arg}: store it now, it is not shown again`);
      process.stdout.write(`${key}\n`);
    } else if (noun === 'key' && verb === 'revoke') {
      await orgs.revokeApiKey(arg, CLI);
      say(`revoked API key ${arg}`);
    } else {
      say(USAGE);
      return 2;
    }
    return 0;
  }).catch(exitOnExposed);
}

/**
 * The bucket as the service needs it (the release phase, `cli migrate`): its versioning on
 * (documents are object versions), its CORS rule in line with UPLOAD_CORS_ORIGINS, its upload
 * events with STORAGE_EVENTS_URL (hints; the polling watch works without them).
 */
async function configureBucket(config: Config): Promise<number> {
  const { createStorage } = await import('./shared/storage.js');
  const { configureUploadEvents } = await import('./files/storage-events.setup.js');
  const { logBucketOf } = await import('./log/tile-store.js');
  const storage = createStorage(config);
  try {
    await storage.enableVersioning();
    say(`bucket ${storage.bucket}: versioning enabled`);
    await storage.allowBrowserUploads(config.UPLOAD_CORS_ORIGINS);
    say(`bucket ${storage.bucket}: browser uploads allowed from ${config.UPLOAD_CORS_ORIGINS.join(', ') || 'no origin'}`);
    const topic = await configureUploadEvents(storage, config, config.STORAGE_EVENTS_URL, config.ENCRYPTION_KEY[0] as Buffer);
    say(
      topic
        ? `bucket ${storage.bucket}: upload events pushed to ${config.STORAGE_EVENTS_URL} (${topic})`
        : `bucket ${storage.bucket}: no upload events (polling only)`,
    );
    const logBucket = logBucketOf(config);
    const created = await ensureBucket(createStorage({ ...config, S3_BUCKET: logBucket }));
    say(`bucket ${logBucket}: the transparency log's tiles and checkpoint${created ? ' (created)' : ''}`);
  } finally {
    storage.client.destroy();
  }
  return 0;
}

/** Creates the bucket when it is not there (a plain one: the log's needs no versions or locks); whether it did. */
async function ensureBucket(storage: Storage): Promise<boolean> {
  const { isMissing } = await import('./shared/storage.js');
  const { CreateBucketCommand, HeadBucketCommand } = await import('@aws-sdk/client-s3');
  try {
    await storage.client.send(new HeadBucketCommand({ Bucket: storage.bucket }));
    return false;
  } catch (err) {
    if (!isMissing(err)) throw err;
    await storage.client.send(new CreateBucketCommand({ Bucket: storage.bucket }));
    return true;
  } finally {
    storage.client.destroy();
  }
}

/** The audit heads a mirror of the transparency log holds (checked first), or why it cannot be read. */
async function recordedAuditHeads(dir: string, witnesses: string[]): Promise<Array<{ chain: string; seq: number; hash: string; index: number }> | Error> {
  const { MirrorError, mirrorEntries, verifyMirror } = await import('./log/mirror.js');
  const { parseEntry } = await import('./log/entries.js');
  try {
    await verifyMirror(dir, { witnesses });
  } catch (err) {
    return err instanceof MirrorError ? err : new Error(`the mirror ${dir}: ${(err as Error).message}`);
  }
  const heads: Array<{ chain: string; seq: number; hash: string; index: number }> = [];
  for (const { index, line } of mirrorEntries(dir)) {
    const e = parseEntry(line);
    if (e.kind === 'audit') heads.push({ chain: e.chain, seq: e.seq, hash: e.hash, index });
  }
  return heads;
}

/** `receipt verify <receipt (a JWS, or a file holding one)> --jwks <URL or file>`: 0 when it holds, 1 saying why not. */
async function receiptCommand(receipt: string, jwks: string, pins: { logKey?: string; witnesses: string[] }): Promise<number> {
  const { checkReceipt, ReceiptError } = await import('./verification/receipt-check.js');
  const { checkLogInclusion } = await import('./log/log-checks.js');
  const { parseVerifierKey } = await import('./log/note.js');
  const { witnessKey } = await import('./log/mirror.js');
  const jws = existsSync(receipt) ? readFileSync(receipt, 'utf8').trim() : receipt.trim();
  const set = (
    /^https?:\/\//.test(jwks) ? await (await fetch(jwks, { signal: AbortSignal.timeout(30_000) })).json() : JSON.parse(readFileSync(jwks, 'utf8'))
  ) as { keys?: PublicJwk[] };
  try {
    const { payload, kid } = await checkReceipt(jws, set.keys ?? []);
    say(`receipt signed by key ${kid} at ${payload.verifiedAt}: ${payload.matches.length} match(es) for policy ${payload.query.policyNumber}`);
    // Each match's record in the transparency log, with the pinned keys.
    const keys = { ...(pins.logKey && { logKey: parseVerifierKey(pins.logKey) }), witnesses: pins.witnesses.map((w) => witnessKey(w)) };
    let failed = false;
    // A key held compromised from some time proves a receipt dated before it only when the log
    // binds the date: every match's leaf in a checkpoint a pinned witness cosigned before then.
    const compromised = (set.keys ?? []).find((k) => k.kid === kid)?.compromisedSince;
    if (compromised && !pins.witnesses.length) {
      say(`FAIL signed by key ${kid}, held compromised since ${compromised}: its date is bound only by the transparency log (give --log-key and --witness)`);
      return 1;
    }
    if (compromised && !payload.matches.length) {
      say(`FAIL signed by key ${kid}, held compromised since ${compromised}, and naming no guarantee the log could bind its date to`);
      return 1;
    }
    for (const m of payload.matches) {
      if (!m.digest || m.notarizationStatus !== 'COMPLETE') {
        // From a compromised key, a match the log does not bind lets the receipt be dated freely by whoever holds it.
        if (compromised) {
          say(`FAIL guarantee ${m.guaranteeId}: not notarized when the receipt was made, so the log does not bind the receipt's date`);
          failed = true;
        }
        continue;
      }
      const { checks, cosigners } = checkLogInclusion(
        { kind: 'record', digest: m.digest, what: `guarantee ${m.guaranteeId}` },
        m.log,
        keys,
        new Date(payload.verifiedAt),
      );
      for (const c of checks) say(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail && !c.ok ? ` (${c.detail})` : ''}`);
      if (cosigners.length) say(`     cosigned by ${cosigners.join(', ')}`);
      failed ||= checks.some((c) => !c.ok);
    }
    if (failed) return 1;
    process.stdout.write(`${JSON.stringify(payload)}\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof ReceiptError)) throw err;
    say(`FAIL ${err.message}`);
    return 1;
  }
}

/** One row of the audit trail's system chain, actor `cli`. */
function recordSystem(config: Config, action: string, target: string, outcome: string) {
  return withCore(config, (core) =>
    createAuditRepository(core.db).record({ orgId: null, actor: CLI.actor, action, target, requestId: null, outcome }, new Date()),
  );
}

/**
 * Runs a system-wide command (no organization's: the secrets, the trusted lists, the anchor's
 * key) recorded in the audit trail's system chain with actor `cli`: `requested` before it runs
 * (a database that cannot record it stops it), then how it ended. The command spans several
 * transactions of its own, so its rows frame it rather than share one.
 */
async function audited(config: Config, action: string, target: string, run: () => Promise<number>): Promise<number> {
  const record = (outcome: string) => recordSystem(config, action, target, outcome);
  await record('requested');
  let code: number;
  try {
    code = await run();
  } catch (err) {
    await record('failed');
    throw err;
  }
  await record(code === 0 ? 'ok' : `failed ${code}`);
  return code;
}

/** The configuration when there is one (a third party verifying a proof has none). */
function configIfAny(): Config | undefined {
  try {
    return getConfig();
  } catch {
    return undefined;
  }
}

/**
 * Runs `work` over the composition root's core (src/composition.ts) on a pool of two
 * connections of its own and no statement time limit (as the CLI had before), closed after:
 * every command that touches the database, and what
 * `npm start` uses for its development key and anchor.
 */
export async function withCore<T>(config: Config, work: (core: Core) => Promise<T>): Promise<T> {
  const core = openCore(config, createLogger(config.LOG_LEVEL, process.stderr), { poolMax: 2, statementTimeLimit: false });
  try {
    return await work(core);
  } finally {
    await core.close();
  }
}

/** Runs `work` with the organizations service: what `org` and `key` do, and what `npm start` uses to make its development key. */
export async function withOrganizations<T>(config: Config, work: (orgs: OrgService) => Promise<T>): Promise<T> {
  return withCore(config, (core) => work(cliServices.organizations(core)));
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

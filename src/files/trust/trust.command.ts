// `cli trust ...`: the EU trusted lists the signature check decides chains with.
//
//   trust import <list.xml>...   verifies each list's signature against TRUSTED_LIST_SIGNERS and
//                                keeps its qualified CA and timestamping services, replacing the
//                                territory's older list; prints "<territory> <sequence>" per list kept
//   trust list                   prints the kept lists: territory, sequence, issued, next update, services
//                                (none: says so on stderr, and how to import one)
//   trust remove <territory>     forgets a territory's list
//
// Lists are read offline: fetching them (AgID publishes Italy's at
// https://eidas.agid.gov.it/TL/TSL-IT.xml) is the operator's job, on a schedule. Each file is
// imported or refused on its own; the exit code is 1 when any was refused.
import type { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import type { Config } from '../../../config/index.js';
import { loadTrustAnchors } from '../p7m/p7m.verifier.js';
import type { TrustRepository } from './trust.repository.js';
import { readTrustedList, TrustedListError } from './trusted-list.js';

const MAX_FILE_BYTES = 32 * 1024 * 1024;

/** `withRepo` runs its work with the trust repository (the CLI's core, closed after). */
export async function trustCommand(
  args: string[],
  config: Config,
  say: (m: string) => void,
  usage: string,
  withRepo: (work: (repo: TrustRepository) => Promise<number>) => Promise<number>,
): Promise<number> {
  const [verb, ...rest] = args;
  const valid = (verb === 'import' && rest.length > 0) || (verb === 'list' && rest.length === 0) || (verb === 'remove' && rest.length === 1);
  if (!valid) {
    say(usage);
    return 2;
  }
  let signers: X509Certificate[] = [];
  if (verb === 'import') {
    if (!config.TRUSTED_LIST_SIGNERS) {
      say('TRUSTED_LIST_SIGNERS is not set: it names the PEM file of the certificates that may sign the lists');
      return 1;
    }
    signers = loadTrustAnchors(readFileSync(config.TRUSTED_LIST_SIGNERS, 'utf8'));
  }
  return withRepo(async (repo) => {
    if (verb === 'list') {
      const lists = await repo.lists();
      // Nothing on stdout (a script reads an empty list), but a person is told why and what to do.
      if (lists.length === 0) {
        say(
          "no trusted list kept: import one with `npm run -s cli -- trust import <TSL-IT.xml>` (AgID publishes Italy's at https://eidas.agid.gov.it/TL/TSL-IT.xml; TRUSTED_LIST_SIGNERS names the certificates that may sign it)",
        );
      }
      for (const l of lists) {
        const next = l.nextUpdate ? l.nextUpdate.toISOString() : '-';
        process.stdout.write(`${l.territory} ${l.sequenceNumber} ${l.issuedAt.toISOString()} ${next} ${l.services}\n`);
      }
      return 0;
    }
    if (verb === 'remove') {
      const territory = (rest[0] as string).toUpperCase();
      if (!(await repo.remove(territory, new Date()))) {
        say(`no ${territory} list is kept`);
        return 1;
      }
      say(`forgot the ${territory} list and its services`);
      return 0;
    }
    let refused = 0;
    for (const file of rest) {
      const outcome = await importOne(file, signers, repo);
      if (outcome.ok) {
        say(`${file}: ${outcome.message}`);
        process.stdout.write(`${outcome.territory} ${outcome.sequence}\n`);
      } else {
        say(`${file}: refused: ${outcome.message}`);
        refused++;
      }
    }
    return refused > 0 ? 1 : 0;
  });
}

type Imported = { ok: true; territory: string; sequence: number; message: string } | { ok: false; message: string };

async function importOne(file: string, signers: X509Certificate[], repo: TrustRepository): Promise<Imported> {
  let bytes: Buffer;
  try {
    if (statSync(file).size > MAX_FILE_BYTES) return { ok: false, message: 'larger than 32 MB' };
    bytes = readFileSync(file);
  } catch (err) {
    return { ok: false, message: (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message };
  }
  let list;
  try {
    list = readTrustedList(bytes.toString('utf8'), signers);
  } catch (err) {
    // Whatever a hostile file makes the reader throw, it is that file's refusal, not the batch's end.
    return { ok: false, message: err instanceof TrustedListError ? err.message : `the list cannot be read (${(err as Error).message})` };
  }
  const outcome = await repo.replace(list, new Date());
  if (outcome.result === 'refused') return { ok: false, message: outcome.why };
  const stale =
    list.nextUpdate && list.nextUpdate.getTime() < Date.now()
      ? ` (its next update was due ${list.nextUpdate.toISOString()}: until a newer list is imported, it decides no chain)`
      : '';
  const message =
    outcome.result === 'unchanged'
      ? `the ${list.territory} list ${list.sequenceNumber} is already kept${stale}`
      : `kept the ${list.territory} list ${list.sequenceNumber} with ${outcome.services} qualified CA and timestamping service(s)` +
        `${outcome.replaced === null ? '' : `, replacing list ${outcome.replaced}`}${stale}`;
  return { ok: true, territory: list.territory, sequence: list.sequenceNumber, message };
}

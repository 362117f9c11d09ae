// `npm run lint` (`tsx scripts/table-owners.ts [dir]`): every table is named in SQL only by its owner, the domain folder whose
// repositories keep it (README, "Who writes which table"). Other domains call the owner's
// functions. The allow-list below holds the places that still reach into another domain's
// table, each with its reason; issue 15 empties it. Migrations are the schema's, not a domain's.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const OWNERS: Record<string, string> = {
  organizations: 'src/orgs/',
  api_keys: 'src/orgs/',
  guarantees: 'src/guarantees/',
  guarantee_docs: 'src/guarantees/',
  files: 'src/files/',
  trusted_lists: 'src/files/trust/',
  trust_services: 'src/files/trust/',
  webhook_endpoints: 'src/webhooks/',
  webhook_events: 'src/webhooks/',
  webhook_deliveries: 'src/webhooks/',
  webhook_attempts: 'src/webhooks/',
  notarization_batches: 'src/notarization/',
  notarization_proofs: 'src/notarization/',
  notarization_ledger: 'src/notarization/',
  anchor_keys: 'src/notarization/',
  evm_transactions: 'src/notarization/',
  verification_counts: 'src/verification/',
  verification_keys: 'src/verification/',
  idempotency_keys: 'src/shared/idempotency.ts',
};

/** `file table`: still reaching into another domain's table, and why. */
const ALLOWED: Record<string, string> = {
  'src/guarantees/guarantee.repository.ts organizations': 'a new record takes its number from its organization (nextPlace)',
  'src/guarantees/guarantee.repository.ts files': "a guarantee's reads show each document's verdict",
  'src/notarization/notarization.repository.ts guarantees': 'notarization marks the records it anchors',
  'src/notarization/notarization.repository.ts guarantee_docs': "notarization marks the documents' notarized_at",
  'src/notarization/notarization.repository.ts files': "notarization waits for the documents' verdicts",
};

const SQL_REFERENCE = /\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+`?([a-z_]+)`?/g;

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The project to check: this one, or the directory given (the tests give a small one). */
const root = process.argv[2] ?? join(import.meta.dirname, '..');
const problems: string[] = [];
const used = new Set<string>();
for (const path of filesUnder(join(root, 'src'))) {
  const file = relative(root, path);
  if (file.startsWith('src/shared/db/migrations/')) continue;
  // Code only: prose in comments may say "from files" without being SQL.
  const code = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\*|\/\*)/.test(line))
    .join('\n');
  for (const [, table] of code.matchAll(SQL_REFERENCE)) {
    const owner = OWNERS[table!];
    if (!owner || file.startsWith(owner)) continue;
    const key = `${file} ${table}`;
    if (ALLOWED[key]) used.add(key);
    else problems.push(`${file} names ${table} in SQL, which ${owner} owns: call the owner's functions`);
  }
}
for (const key of Object.keys(ALLOWED)) if (!used.has(key)) problems.push(`allow-list entry "${key}" is no longer needed: remove it`);
for (const p of [...new Set(problems)]) process.stderr.write(`table owners: ${p}\n`);
process.exit(problems.length > 0 ? 1 : 0);

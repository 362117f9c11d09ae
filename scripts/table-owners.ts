// `npm run lint` (`tsx scripts/table-owners.ts [dir]`): every table is named in SQL only by its owner, the domain folder whose
// repositories keep it (README, "Who writes which table"). Other domains call the owner's
// functions, or build their reads with SQL fragments the owner exports (files' join from a
// document key, organizations' issuer columns), so that the table's name is written only in the
// owner's folder. There is no allow-list: no place needs one. Migrations are the schema's, not a domain's.
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
    problems.push(`${file} names ${table} in SQL, which ${owner} owns: call the owner's functions or use its fragments`);
  }
}
for (const p of [...new Set(problems)]) process.stderr.write(`table owners: ${p}\n`);
process.exit(problems.length > 0 ? 1 : 0);

// `npm run lint` (`tsx scripts/table-owners.ts [dir]`): every table is named in SQL only by its owner, the domain folder whose
// repositories keep it (docs/design.md, "Who writes which table"). Other domains call the owner's
// functions, or build their reads with SQL fragments the owner exports (files' join from a
// document key, organizations' issuer columns), so that the table's name is written only in the
// owner's folder. There is no allow-list: no place needs one. Migrations are the schema's, not a domain's.
// It reads SQL as text: a name built at run time (`FROM ${table}`) is beyond it, as it is beyond
// a reader; every table the migrations create must have an owner here.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const OWNERS: Record<string, string> = {
  organizations: 'src/orgs/',
  api_keys: 'src/orgs/',
  guarantees: 'src/guarantees/',
  guarantee_docs: 'src/guarantees/',
  guarantee_amendments: 'src/guarantees/',
  guarantee_amendment_docs: 'src/guarantees/',
  guarantee_folds: 'src/guarantees/',
  guarantee_notices: 'src/guarantees/',
  lifecycle_checks: 'src/guarantees/',
  files: 'src/files/',
  file_purges: 'src/files/',
  trusted_lists: 'src/files/trust/',
  trust_services: 'src/files/trust/',
  webhook_endpoints: 'src/webhooks/',
  webhook_events: 'src/webhooks/',
  webhook_deliveries: 'src/webhooks/',
  webhook_attempts: 'src/webhooks/',
  notarization_batches: 'src/notarization/',
  notarization_proofs: 'src/notarization/',
  notarization_amendment_proofs: 'src/notarization/',
  notarization_ledger: 'src/notarization/',
  anchor_keys: 'src/notarization/',
  evm_transactions: 'src/notarization/',
  verification_counts: 'src/verification/',
  verification_keys: 'src/verification/',
  audit_log: 'src/audit/',
  audit_heads: 'src/audit/',
  idempotency_keys: 'src/shared/idempotency.ts',
  guarantee_beneficiaries: 'src/authorities/',
  authority_users: 'src/authorities/',
  authority_logins: 'src/authorities/',
  authority_sessions: 'src/authorities/',
  log_sequencer: 'src/log/',
  log_entries: 'src/log/',
  log_hashes: 'src/log/',
  log_checkpoints: 'src/log/',
  log_cosignatures: 'src/log/',
  log_witnesses: 'src/log/',
  log_observed: 'src/log/',
  log_keys: 'src/log/',
};

/** Where a table name follows in SQL (any case; STRAIGHT_JOIN and LOCK TABLES included). */
const KEYWORD = /(?<![A-Za-z0-9])(?:FROM|JOIN|INTO|UPDATE|TABLES?|USING|TRUNCATE)\s+/gi;
/** A table reference: a name, an optional alias, then maybe a comma and the next one. */
const REFERENCE =
  /^`?([A-Za-z_][A-Za-z0-9_]*)`?(?:\s+(?:AS\s+)?(?!(?:ON|WHERE|SET|USING|FORCE|USE|IGNORE|STRAIGHT_JOIN|JOIN|LEFT|RIGHT|INNER|CROSS|NATURAL|VALUES|SELECT|ORDER|GROUP|LIMIT|READ|WRITE|PARTITION|RETURNING|WINDOW|HAVING)\b)`?[A-Za-z_][A-Za-z0-9_]*`?)?\s*(,)?\s*/i;

/** The tables named after a keyword at `text`'s start (a comma list: FROM a, b). */
function tablesAt(text: string): string[] {
  const tables: string[] = [];
  let rest = text;
  for (let m = REFERENCE.exec(rest); m; m = REFERENCE.exec(rest)) {
    tables.push((m[1] as string).toLowerCase());
    if (!m[2]) break;
    rest = rest.slice(m[0].length);
  }
  return tables;
}

/** `source` with its comments blanked (strings kept, a line of SQL starting with '*' included). */
function withoutComments(source: string): string {
  let out = '';
  let quote: string | undefined;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    if (quote) {
      out += c;
      if (c === '\\') out += source[++i] ?? '';
      else if (c === quote) quote = undefined;
    } else if (c === '/' && source[i + 1] === '/') {
      while (i < source.length && source[i] !== '\n') i++;
      out += '\n';
    } else if (c === '/' && source[i + 1] === '*') {
      const end = source.indexOf('*/', i + 2);
      i = end < 0 ? source.length : end + 1;
      out += ' ';
    } else {
      if (c === "'" || c === '"' || c === '`') quote = c;
      out += c;
    }
  }
  return out;
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The project to check: this one, or the directory given (the tests give a small one). */
const root = process.argv[2] ?? join(import.meta.dirname, '..');
const problems: string[] = [];
const MIGRATIONS = 'src/shared/db/migrations/';

// Every table the migrations create has an owner, and every owner's table exists.
const created = new Set(
  filesUnder(join(root, MIGRATIONS)).flatMap((path) =>
    [...readFileSync(path, 'utf8').matchAll(/CREATE TABLE (?:IF NOT EXISTS )?`?([a-z_]+)`?/gi)].map((m) => m[1] as string),
  ),
);
for (const table of created) if (!OWNERS[table]) problems.push(`table ${table} has no owner: add it to OWNERS in scripts/table-owners.ts`);
if (created.size) for (const table of Object.keys(OWNERS)) if (!created.has(table)) problems.push(`OWNERS names ${table}, which no migration creates`);

// The application's code, its workers and its scripts (the benchmarks mirror the SQL on purpose; tests read any table).
for (const path of ['src', 'workers', 'scripts'].flatMap((dir) => filesUnder(join(root, dir)))) {
  const file = relative(root, path);
  if (file.startsWith(MIGRATIONS) || file === 'scripts/table-owners.ts') continue;
  // Code only: prose in comments may say "from files" without being SQL.
  const code = withoutComments(readFileSync(path, 'utf8'));
  for (const m of code.matchAll(KEYWORD)) {
    for (const table of tablesAt(code.slice(m.index + m[0].length, m.index + m[0].length + 300))) {
      const owner = OWNERS[table];
      if (!owner || file.startsWith(owner)) continue;
      problems.push(`${file} names ${table} in SQL, which ${owner} owns: call the owner's functions or use its fragments`);
    }
  }
}
for (const p of [...new Set(problems)]) process.stderr.write(`table owners: ${p}\n`);
process.exit(problems.length > 0 ? 1 : 0);

// `npm run bench -- audit-script [--count N] [--rounds N]`
//
// What the audit row costs a registration's one-round-trip script (issue 17, part 4), without
// HTTP, the app or concurrency: one connection sends N registrations' scripts one after the
// other, alternating rounds of the script with the audit row (the application's: the place
// taken with the chain's seq, auditScriptStatements) and without it (the place alone), on a
// fresh organization of the bench database. Serially, a script's time is all of MariaDB's
// work for it plus a round trip; under the load of `npm run bench -- api` every statement
// after the place runs under the organization's row lock, which bounds one organization's
// registrations: this is the upper bound of what the audit row can take from them.
import { cpus } from 'node:os';
import mysql from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { applyEnv, localAppEnv } from '../scripts/local-env.js';
import { down, up } from '../scripts/services/index.js';
import { auditScriptStatements } from '../src/audit/audit.repository.js';
import { AUDIT_SEQ_VAR } from '../src/audit/audit.sql.js';
import { REGISTRATION, registrationStatements } from '../src/guarantees/guarantee.repository.js';
import { normalize } from '../src/guarantees/guarantee.service.js';
import { registryPlaceStatements } from '../src/orgs/org.repository.js';
import { migrate } from '../src/shared/db/migrator.js';
import { toPositional, type Statement } from '../src/shared/db/sequelize.js';
import { createLogger } from '../src/shared/logger.js';
import { log, median, appendResult } from './support.js';

export async function benchAuditScript(argv: string[]): Promise<void> {
  let count = 400;
  let rounds = 8;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--count') count = Number(argv[++i]);
    else if (argv[i] === '--rounds') rounds = Number(argv[++i]);
    else throw new Error(`unknown option ${argv[i]}`);
  }
  const { env, started } = await up('bench', ['mariadb']);
  applyEnv(env, localAppEnv('bench'));
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('no DATABASE_URL for the bench profile');
  await migrate(databaseUrl, createLogger('silent'));
  const conn = await mysql.createConnection({ uri: databaseUrl, multipleStatements: true, timezone: 'Z' });
  try {
    const orgId = uuidv7();
    await conn.query('INSERT INTO organizations (id, name, guarantee_count, created_at) VALUES (?, ?, 0, NOW(3))', [orgId, `bench-audit-${Date.now()}`]);
    const script = (audited: boolean): { sql: string; values: unknown[] } => {
      const place = registryPlaceStatements(orgId, new Date(), REGISTRATION.ms, audited ? AUDIT_SEQ_VAR : undefined);
      const statements: Statement[] = [
        ...registrationStatements(place, {
          orgId,
          requestHash: Buffer.alloc(32),
          idTail: uuidv7().slice(13),
          eventIdTail: uuidv7().slice(13),
          ...normalize({ details: { policyNumber: 'BENCH-AUDIT', actType: 'OTHER' }, economics: { garantedAmount: 1000 } }),
        }),
        ...(audited
          ? auditScriptStatements(
              {
                orgId,
                actor: 'grk_benchaudit00',
                requestId: null,
                action: 'guarantee.create',
                target: { sql: `CONCAT('guarantee:', ${REGISTRATION.id})` },
                outcome: 'ok',
              },
              { atSql: REGISTRATION.at, isoSql: REGISTRATION.iso },
              REGISTRATION.placed,
            )
          : []),
      ];
      const sql = ['START TRANSACTION'];
      const values: unknown[] = [];
      for (const s of statements) {
        const p = toPositional(s.sql);
        sql.push(p.sql);
        for (const i of p.order) values.push(s.bind[i] ?? null);
      }
      sql.push('COMMIT');
      return { sql: sql.join(';\n'), values };
    };
    const times: Record<'without' | 'with', number[]> = { without: [], with: [] };
    for (let r = 0; r < rounds; r++)
      for (const kind of ['without', 'with'] as const) {
        const t0 = performance.now();
        for (let i = 0; i < count; i++) {
          const s = script(kind === 'with');
          await conn.query(s.sql, s.values);
        }
        times[kind].push(((performance.now() - t0) * 1000) / count);
      }
    const [without, withRow] = [median(times.without), median(times.with)];
    const lines = [
      `without the audit row  ${without.toFixed(0).padStart(5)} µs a script (rounds: ${times.without.map((x) => x.toFixed(0)).join(' ')})`,
      `with the audit row     ${withRow.toFixed(0).padStart(5)} µs a script (rounds: ${times.with.map((x) => x.toFixed(0)).join(' ')})`,
      `the audit row          ${(withRow - without).toFixed(0).padStart(5)} µs, ${(((withRow - without) / without) * 100).toFixed(0)}% of a script without it`,
    ];
    for (const line of lines) process.stdout.write(`${line}\n`);
    appendResult(
      'audit-script',
      `\n### audit-script, ${new Date().toISOString()}\n\n${cpus().length} cores (${cpus()[0]?.model ?? 'cpu'}), Node ${process.version}, ${count} scripts a round, ${rounds} rounds of each, one connection, medians.\n\n\`\`\`\n${lines.join('\n')}\n\`\`\`\n`,
    );
    log('done');
  } finally {
    await conn.end();
    if (started.length) await down('bench', started);
  }
}

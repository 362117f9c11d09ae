/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-explicit-any --
   the baseline reads untyped rows and bodies on purpose: it has no validation layer. */
// The API benchmark's raw baseline: a bare node:http server running the same SQL as the
// application (the very statements, imported from the repositories; a registration as the same
// one-round-trip script) through a plain mysql2
// pool, with no framework, no validation, no logging and no metrics. Keys are cached for 1 s
// as the application caches them, so both do the same database work per request.
//
//   npm run build && DATABASE_URL=... PORT=... node dist/bench/raw-server.js
import { auditScriptStatements } from '../src/audit/audit.repository.js';
import { AUDIT_SEQ_VAR } from '../src/audit/audit.sql.js';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import mysql, { type ExecuteValues, type ResultSetHeader, type RowDataPacket } from 'mysql2/promise';
import { v7 as uuidv7 } from 'uuid';
import { GUARANTEE_SQL, REGISTRATION, registrationStatements, uuidAt } from '../src/guarantees/guarantee.repository.js';
import { normalize } from '../src/guarantees/guarantee.service.js';
import { lateEventStatement } from '../src/webhooks/webhook.repository.js';
import { FIND_API_KEY_SQL, REGISTRY_SQL, registryPlaceStatements } from '../src/orgs/org.repository.js';
import { toPositional } from '../src/shared/db/sequelize.js';

/** The raw server's actor in the audit trail (an API key's prefix has this shape). */
const RAW_ACTOR = 'grk_rawbaseline0';

const stmt = (sql: string) => {
  const p = toPositional(sql);
  return (params: unknown[]) => [p.sql, p.order.map((i) => params[i]) as ExecuteValues[]] as const;
};

const Q = {
  key: stmt(FIND_API_KEY_SQL),
  byId: stmt(GUARANTEE_SQL.findById),
  byTx: stmt(GUARANTEE_SQL.findByTransactionId),
  count: stmt(REGISTRY_SQL.size),
  list: stmt(GUARANTEE_SQL.listBySeq),
};

const POOL = {
  uri: process.env.DATABASE_URL,
  connectionLimit: Number(process.env.DATABASE_POOL_MAX ?? 20),
  timezone: 'Z',
  supportBigNumbers: true,
  bigNumberStrings: true,
};
const pool = mysql.createPool(POOL);
// Registrations' scripts: several statements in one query (as the application's script pool).
const scripts = mysql.createPool({ ...POOL, multipleStatements: true });
/** Marks for the values MariaDB fills in under the lock (random: no request carries them). */
const LATE = { id: `late-id-${randomUUID()}`, at: `late-at-${randomUUID()}` };
const cache = new Map<string, { orgId: string; hash: Buffer; until: number }>();

async function orgOf(req: IncomingMessage): Promise<string | undefined> {
  const key = req.headers['x-api-key'];
  if (typeof key !== 'string') return undefined;
  const prefix = key.slice(0, 16);
  let hit = cache.get(prefix);
  if (!hit || hit.until <= Date.now()) {
    const [rows] = await pool.execute<RowDataPacket[]>(...Q.key([prefix]));
    const row = rows[0];
    if (!row) return undefined;
    hit = { orgId: row.org_id as string, hash: row.key_hash as Buffer, until: Date.now() + 1000 };
    cache.set(prefix, hit);
  }
  const presented = createHash('sha256').update(key).digest();
  return timingSafeEqual(presented, hit.hash) ? hit.orgId : undefined;
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Rows to the v2 shape, with the same work as the app's fold + serializer, minus its abstractions. */
function shape(rows: RowDataPacket[]): unknown[] {
  const out: Array<Record<string, unknown> & { docs: unknown[] }> = [];
  for (const r of rows) {
    if (out.at(-1)?.id !== r.id) {
      out.push({
        details: {
          transactionId: r.transaction_id,
          policyNumber: r.policy_number,
          actType: r.act_type,
          checkCode: r.check_code,
          emittedAt: r.emitted_at,
          effectiveAt: r.effective_at,
          expiresAt: r.expires_at,
          isFixedExpiry: r.is_fixed_expiry === null ? null : r.is_fixed_expiry !== 0,
          cig: r.cig,
          batchCode: r.batch_code,
        },
        economics: {
          garantedAmount: r.garanted_amount === null ? null : Number(r.garanted_amount),
          contractAmount: r.contract_amount === null ? null : Number(r.contract_amount),
          isAutomaticRenewal: r.is_automatic_renewal === null ? null : r.is_automatic_renewal !== 0,
        },
        note: { shared: r.note_shared },
        sign: { emissionAt: r.sign_emission_at },
        txHash: r.tx_hash,
        notarizationStatus: r.notarization_status,
        docs: [],
        createdAt: r.created_at,
        id: r.id,
        orgId: r.org_id,
      });
    }
    if (r.doc_position !== null) out.at(-1)?.docs.push({ type: r.doc_type, key: r.doc_key, checksum: r.doc_checksum });
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<Record<string, any>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, any>) : {};
}

async function create(orgId: string, body: Record<string, any>): Promise<unknown> {
  const d = body.details ?? {};
  const txId = d.transactionId ?? null;
  const hash = createHash('sha256').update(JSON.stringify(body)).digest();
  if (txId !== null) {
    const [existing] = await pool.execute<RowDataPacket[]>(...Q.byTx([orgId, txId]));
    if (existing.length) return shape(existing)[0];
  }
  // The same one-round-trip script as the application's registration (guarantee.repository.ts,
  // REGISTRATION): the organization's place, the record, its audit row and its event, whose id
  // and createdAt MariaDB fills in under the lock.
  const idTail = uuidv7().slice(13);
  const record = {
    details: { transactionId: txId, policyNumber: d.policyNumber, actType: d.actType },
    economics: body.economics,
    note: { shared: '' },
    txHash: null,
    notarizationStatus: 'PENDING',
    docs: [],
    createdAt: LATE.at,
    id: LATE.id,
    orgId,
  };
  const place = registryPlaceStatements(orgId, new Date(), REGISTRATION.ms, AUDIT_SEQ_VAR);
  const statements = [
    ...registrationStatements(place, {
      orgId,
      requestHash: hash,
      idTail,
      eventIdTail: uuidv7().slice(13),
      // The app's own normalization of the body (its defaults), without its validation.
      ...normalize(body),
    }),
    // Its audit row, as the app writes it (the same durable work: issue 17).
    ...auditScriptStatements(
      { orgId, actor: RAW_ACTOR, requestId: null, action: 'guarantee.create', target: { sql: `CONCAT('guarantee:', ${REGISTRATION.id})` }, outcome: 'ok' },
      { atSql: REGISTRATION.at, isoSql: REGISTRATION.iso },
      REGISTRATION.placed,
    ),
    lateEventStatement({
      idSql: REGISTRATION.eventId,
      orgId,
      type: 'guarantee.created',
      body: JSON.stringify({ type: 'guarantee.created', timestamp: LATE.at, data: record }),
      late: [
        { mark: LATE.at, sql: REGISTRATION.iso },
        { mark: LATE.id, sql: REGISTRATION.id },
      ],
      createdAtSql: REGISTRATION.at,
      whenSql: REGISTRATION.placed,
    }),
  ];
  const sql = ['START TRANSACTION'];
  const values: unknown[] = [];
  for (const st of statements) {
    const p = toPositional(st.sql);
    sql.push(p.sql);
    for (const i of p.order) values.push(st.bind[i] ?? null);
  }
  sql.push('COMMIT');
  const conn = await scripts.getConnection();
  try {
    const [results] = await conn.query<ResultSetHeader[]>(sql.join(';\n'), values);
    // START TRANSACTION, SET @reg_ms = NULL, then the place taken.
    const ms = Number((results[2] as ResultSetHeader).insertId);
    return { ...record, id: uuidAt(ms, idTail), createdAt: new Date(ms) };
  } catch (err) {
    await conn.query('ROLLBACK');
    throw err;
  } finally {
    conn.release();
  }
}

const server = createServer((req, res) => {
  void (async () => {
    const orgId = await orgOf(req);
    if (!orgId) return send(res, 401);
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'POST' && url.pathname === '/api/v2/guarantees') return send(res, 200, await create(orgId, await readBody(req)));
    if (req.method === 'GET' && url.pathname === '/api/v2/guarantees') {
      const page = Number(url.searchParams.get('page') ?? 1);
      const limit = Number(url.searchParams.get('limit') ?? 10);
      const [countRows] = await pool.execute<RowDataPacket[]>(...Q.count([orgId]));
      const total = Number(countRows[0]?.n ?? 0);
      const top = total - (page - 1) * limit;
      if (top <= 0) return send(res, 200, { totalItems: total, guarantees: [] });
      const [rows] = await pool.execute<RowDataPacket[]>(...Q.list([orgId, Math.max(0, top - limit), top]));
      return send(res, 200, { totalItems: total, guarantees: shape(rows) });
    }
    const m = /^\/api\/v2\/guarantees\/([0-9a-f-]{36})$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      const [rows] = await pool.execute<RowDataPacket[]>(...Q.byId([m[1], orgId]));
      return rows.length ? send(res, 200, shape(rows)[0]) : send(res, 404);
    }
    send(res, 404);
  })().catch((err: Error) => {
    send(res, 500);
    process.stderr.write(`${err.message}\n`);
  });
});
server.keepAliveTimeout = 5000;
server.listen(Number(process.env.PORT ?? 0), () => {
  const addr = server.address();
  process.stdout.write(`${JSON.stringify({ ready: true, port: typeof addr === 'object' && addr ? addr.port : 0, id: randomUUID() })}\n`);
});
process.once('SIGTERM', () => {
  server.close(() => {
    void pool.end().finally(() => process.exit(0));
  });
  server.closeAllConnections();
});

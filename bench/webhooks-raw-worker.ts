// The raw baseline of `npm run bench -- webhooks`, run as its own process: the same durable
// work as a delivery without the service around it. A BullMQ worker takes a job carrying the
// id and the body, signs `id.timestamp.body` with HMAC-SHA256 (node:crypto), POSTs it with an
// undici Pool, and records the attempt with one INSERT.
import { createHmac } from 'node:crypto';
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { Pool } from 'undici';

const [queueName, prefix, target, concurrency, endpointId] = process.argv.slice(2) as [string, string, string, string, string];
const secret = Buffer.from('raw-baseline-secret-32-bytes-long!!');
const db = mysql.createPool({ uri: process.env.DATABASE_URL, connectionLimit: 10 });
const url = new URL(target);
const pool = new Pool(url.origin, { connections: 32 });
const connection = new Redis(process.env.REDIS_URL ?? '', { maxRetriesPerRequest: null });
const worker = new Worker<{ id: string; body: string }>(
  queueName,
  async (job) => {
    const ts = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', secret).update(`${job.data.id}.${ts}.${job.data.body}`).digest('base64');
    const started = performance.now();
    const res = await pool.request({
      path: url.pathname,
      method: 'POST',
      body: job.data.body,
      headers: { 'content-type': 'application/json', 'webhook-id': job.data.id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${signature}` },
    });
    await res.body.dump();
    await db.execute(
      'INSERT INTO webhook_attempts (event_id, endpoint_id, attempted_at, duration_ms, status_code, error, succeeded) VALUES (?, ?, NOW(3), ?, ?, NULL, 1)',
      [job.data.id, endpointId, Math.round(performance.now() - started), res.statusCode],
    );
  },
  { connection, prefix, concurrency: Number(concurrency) },
);
process.stdout.write('raw worker ready\n');
process.once('SIGTERM', () => {
  void worker
    .close()
    .then(() => Promise.all([pool.close(), db.end()]))
    .then(() => {
      connection.disconnect();
      process.exit(0);
    });
});

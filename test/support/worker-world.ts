// A world of its own for each of mocha's parallel workers (npm test runs the suite's files on
// two workers at once, scripts/test.ts): its own database, migrated once, its own queues and
// limits in Redis (a prefix of its own), its own transparency-log bucket, since the log
// publishes its checkpoint there and each database holds a log of its own, and its own documents
// bucket, since `cli migrate` and some tests set a bucket's CORS rule and upload events (one
// worker's would undo the other's). The servers are the run's; nothing a worker makes is seen
// by the other. Set in process.env before any test file is
// loaded, so that what a test starts (the CLI, the web and worker processes) inherits it too.
import { CreateBucketCommand, HeadBucketCommand } from '@aws-sdk/client-s3';
import { createConnection } from 'mysql2/promise';
import { createLogger } from '../../src/shared/logger.js';
import { migrate } from '../../src/shared/db/migrator.js';
import { createStorage } from '../../src/shared/storage.js';

/** The names a worker's world takes from the run's: `<database>_w<id>`, `<prefix>-w<id>`, `<log bucket>-w<id>`, `<bucket>-w<id>`. */
export function workerNames(env: NodeJS.ProcessEnv, id: string): { databaseUrl: string; queuePrefix: string; logBucket: string; bucket: string } {
  if (!/^\d+$/.test(id)) throw new Error(`MOCHA_WORKER_ID: expected a number, found "${id}"`);
  const url = new URL(env.DATABASE_URL ?? '');
  url.pathname = `${url.pathname}_w${id}`;
  return {
    databaseUrl: url.toString(),
    queuePrefix: `${env.QUEUE_PREFIX || 'test'}-w${id}`,
    logBucket: `${env.LOG_S3_BUCKET || `${env.S3_BUCKET}-log`}-w${id}`,
    bucket: `${env.S3_BUCKET}-w${id}`,
  };
}

/** Makes the worker's database (empty, then migrated) and log bucket, and points process.env at them. */
export async function enterWorkerWorld(id: string): Promise<void> {
  const names = workerNames(process.env, id);
  const url = new URL(names.databaseUrl);
  const database = decodeURIComponent(url.pathname.slice(1));
  // The run's user may make databases named registry_*: a worker's id is new in each run (mocha
  // counts them from 0), so one an earlier run left is dropped first.
  const admin = await createConnection({
    host: url.hostname,
    port: Number(url.port),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    connectTimeout: 10_000,
  });
  try {
    await admin.query(`DROP DATABASE IF EXISTS \`${database}\``);
    await admin.query(`CREATE DATABASE \`${database}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  } finally {
    await admin.end();
  }
  await migrate(names.databaseUrl, createLogger('silent'));
  const e = process.env;
  const { client } = createStorage({
    S3_ENDPOINT: e.S3_ENDPOINT,
    S3_REGION: e.S3_REGION ?? 'us-east-1',
    S3_BUCKET: names.logBucket,
    AWS_ACCESS_KEY_ID: e.AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY: e.AWS_SECRET_ACCESS_KEY,
  });
  try {
    // The run's log bucket is named after the run (scripts/test.ts), so is this one: it is new.
    await client.send(new CreateBucketCommand({ Bucket: names.logBucket }));
    // The documents' bucket as the local servers make the run's (scripts/services/ceph.ts): with
    // Object Lock, so versioned; kept from run to run as that one is (locked objects stay).
    const exists = await client.send(new HeadBucketCommand({ Bucket: names.bucket })).then(
      () => true,
      () => false,
    );
    if (!exists) await client.send(new CreateBucketCommand({ Bucket: names.bucket, ObjectLockEnabledForBucket: true }));
  } finally {
    client.destroy();
  }
  Object.assign(process.env, { DATABASE_URL: names.databaseUrl, QUEUE_PREFIX: names.queuePrefix, LOG_S3_BUCKET: names.logBucket, S3_BUCKET: names.bucket });
}

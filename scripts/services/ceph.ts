// Ceph's radosgw from Debian as the S3-compatible store: one monitor, one OSD (bluestore on a
// sparse file) and radosgw, without auth between the daemons, under .data/<profile>/ceph.
// It is the only S3 server installable here that enforces presigned POST policies.
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CreateBucketCommand, HeadBucketCommand, PutBucketVersioningCommand } from '@aws-sdk/client-s3';
import { createStorage } from '../../src/shared/storage.js';
import { ensurePackages, log, readPid, run, startDaemon, stopDaemon, waitFor } from './process.js';
import { socketPath, type LocalService, type ServiceContext } from './types.js';

const ACCESS_KEY = 'registry-local-access';
const SECRET_KEY = 'registry-local-secret-not-for-production';

const paths = (ctx: ServiceContext) => {
  const dir = join(ctx.dataDir, 'ceph');
  return {
    dir,
    conf: join(dir, 'ceph.conf'),
    mon: join(dir, 'mon.a'),
    osd: join(dir, 'osd.0'),
    initialized: join(dir, 'initialized'),
    userCreated: join(dir, 'user-created'),
    pid: (name: string) => join(dir, `${name}.daemon.pid`),
    log: (name: string) => join(dir, 'log', `${name}.log`),
  };
};

const bucketName = (ctx: ServiceContext) => `guarantee-registry-${ctx.profile}`;

function writeConf(ctx: ServiceContext, fsid: string): void {
  const p = paths(ctx);
  mkdirSync(join(p.dir, 'run'), { recursive: true });
  mkdirSync(join(p.dir, 'log'), { recursive: true });
  writeFileSync(
    p.conf,
    `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${ctx.ports.mon}
auth cluster required = none
auth service required = none
auth client required = none
ms bind msgr1 = false
ms bind msgr2 = true
ms mon client mode = crc
ms mon service mode = crc
ms mon cluster mode = crc
ms client mode = crc
ms service mode = crc
ms cluster mode = crc
run dir = ${p.dir}/run
admin socket = ${dirname(socketPath(`${p.dir}/run`, 'client.rgw.a.asok'))}/$name.asok
log file = ${p.dir}/log/$name.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = bluestore
bluestore block create = true
bluestore block size = 10737418240
bluestore fsck on mount = false
osd memory target = 1073741824
bluestore cache autotune = false
bluestore cache size = 134217728
[mon.a]
mon data = ${p.mon}
[osd.0]
osd data = ${p.osd}
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:${ctx.ports.rgw}
rgw data = ${p.dir}/rgw
`,
  );
}

const ceph = (ctx: ServiceContext, ...args: string[]) => run('ceph', ['-c', paths(ctx).conf, '--connect-timeout', '10', ...args], 30_000);

async function startMon(ctx: ServiceContext): Promise<void> {
  const p = paths(ctx);
  if (readPid(p.pid('mon')) === undefined) {
    startDaemon('ceph-mon', ['-c', p.conf, '-i', 'a', '-f'], { logFile: p.log('mon.stdout'), pidFile: p.pid('mon') });
  }
  await waitFor(
    'ceph-mon',
    async () => {
      await ceph(ctx, 'mon', 'stat');
      return true;
    },
    60_000,
    p.log('mon.a'),
  );
}

async function startOsd(ctx: ServiceContext): Promise<void> {
  const p = paths(ctx);
  if (readPid(p.pid('osd')) === undefined) {
    startDaemon('ceph-osd', ['-c', p.conf, '-i', '0', '-f'], { logFile: p.log('osd.stdout'), pidFile: p.pid('osd') });
  }
  await waitFor('ceph-osd', async () => /1 up/.test(await ceph(ctx, 'osd', 'stat')), 90_000, p.log('osd.0'));
}

async function rgwAnswers(ctx: ServiceContext): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${ctx.ports.rgw}/`, { signal: AbortSignal.timeout(2000) });
  await res.arrayBuffer();
  return res.ok;
}

async function initialize(ctx: ServiceContext): Promise<void> {
  const p = paths(ctx);
  log('initializing a one-node Ceph cluster for radosgw (first start only, about 20 s)');
  const fsid = randomUUID();
  writeConf(ctx, fsid);
  await run('monmaptool', ['--create', '--clobber', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${ctx.ports.mon}]`, join(p.dir, 'monmap')]);
  await run('ceph-mon', ['-c', p.conf, '--mkfs', '-i', 'a', '--monmap', join(p.dir, 'monmap')]);
  await startMon(ctx);
  await ceph(ctx, 'osd', 'create');
  mkdirSync(p.osd, { recursive: true });
  await run('ceph-osd', ['-c', p.conf, '-i', '0', '--mkfs'], 120_000);
  writeFileSync(p.initialized, `${fsid} ${ctx.ports.mon}`);
}

/** True when the cluster was made for this monitor address (its monmap holds the address). */
function initializedForThisPort(ctx: ServiceContext): boolean {
  const p = paths(ctx);
  if (!existsSync(p.initialized)) return false;
  const [, port] = readFileSync(p.initialized, 'utf8').trim().split(' ');
  if (port === String(ctx.ports.mon)) return true;
  log(`the local Ceph cluster under ${p.dir} was made for another monitor port: making it anew (its objects are lost)`);
  rmSync(p.dir, { recursive: true, force: true });
  return false;
}

/** What the application needs to reach this store (its S3_* and AWS_* variables). */
function storageSettings(ctx: ServiceContext) {
  return {
    S3_ENDPOINT: `http://127.0.0.1:${ctx.ports.rgw}`,
    S3_BUCKET: bucketName(ctx),
    S3_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: ACCESS_KEY,
    AWS_SECRET_ACCESS_KEY: SECRET_KEY,
  };
}

/** Creates the bucket, through the same client the application builds from the same settings. */
async function ensureBucket(ctx: ServiceContext): Promise<void> {
  const { client, bucket } = createStorage(storageSettings(ctx));
  try {
    try {
      await client.send(new HeadBucketCommand({ Bucket: bucket }));
    } catch {
      // Object Lock can only be had from a bucket's creation; it turns versioning on.
      await client.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }));
      log(`created bucket ${bucket} (versioned, Object Lock enabled)`);
    }
    // A bucket made before documents were pinned by version gets versioning now (as `release` does).
    await client.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: 'Enabled' } }));
    // The transparency log's tiles and checkpoint: a plain bucket of their own.
    const logBucket = `${bucket}-log`;
    try {
      await client.send(new HeadBucketCommand({ Bucket: logBucket }));
    } catch {
      await client.send(new CreateBucketCommand({ Bucket: logBucket }));
      log(`created bucket ${logBucket} (the transparency log's)`);
    }
  } finally {
    client.destroy();
  }
}

export const s3: LocalService = {
  name: 's3',
  externalWhen: ['S3_BUCKET'],
  install() {
    return ensurePackages(
      ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool'],
      ['ceph-mon', 'ceph-osd', 'radosgw'],
      ['--no-install-recommends'],
      's3',
    );
  },
  async isUp(ctx) {
    const p = paths(ctx);
    if (['mon', 'osd', 'rgw'].some((d) => readPid(p.pid(d)) === undefined)) return false;
    return rgwAnswers(ctx);
  },
  async start(ctx) {
    const p = paths(ctx);
    if (!initializedForThisPort(ctx)) await initialize(ctx);
    await startMon(ctx);
    await startOsd(ctx);
    if (readPid(p.pid('rgw')) === undefined) {
      startDaemon('radosgw', ['-c', p.conf, '-n', 'client.rgw.a', '-f'], { logFile: p.log('rgw.stdout'), pidFile: p.pid('rgw') });
    }
    await waitFor('radosgw', () => rgwAnswers(ctx), 120_000, p.log('client.rgw.a'));
    if (!existsSync(p.userCreated)) {
      await run(
        'radosgw-admin',
        ['-c', p.conf, 'user', 'create', '--uid=registry', '--display-name=registry', `--access-key=${ACCESS_KEY}`, `--secret-key=${SECRET_KEY}`],
        60_000,
      );
      writeFileSync(p.userCreated, 'registry');
    }
    await ensureBucket(ctx);
  },
  async stop(ctx) {
    const p = paths(ctx);
    // Reverse order of start: the gateway, then the OSD, then the monitor.
    const pids = [await stopDaemon('radosgw', p.pid('rgw')), await stopDaemon('ceph-osd', p.pid('osd')), await stopDaemon('ceph-mon', p.pid('mon'))];
    return pids.filter((pid) => pid !== undefined);
  },
  env: storageSettings,
};

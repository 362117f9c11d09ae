// `npm start` as a developer runs it (scripts/run.mjs start), against the run's servers: with
// DATABASE_URL, REDIS_URL, S3_BUCKET, CLAMD_HOST and OIDC_ISSUER set it starts no server of its
// own. It gets a database, buckets, queues, a port and a data folder (SERVICES_DATA_DIR: its
// API key and log file) of its own, so that a developer's npm start (.data/dev, port 3000) is
// neither used nor disturbed.
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateBucketCommand, DeleteBucketCommand, DeleteObjectCommand, ListObjectVersionsCommand } from '@aws-sdk/client-s3';
import { DeleteTopicCommand, ListTopicsCommand, SNSClient } from '@aws-sdk/client-sns';
import { productionNodeVersion } from '../../scripts/services/runtime.js';
import { eventually, harness } from '../support/harness.js';
import { freePort } from '../support/tcp-proxy.js';
import { createLogger } from '../../src/shared/logger.js';
import { migrations } from '../../src/shared/db/migrations/index.js';
import { migrate, pendingMigrations } from '../../src/shared/db/migrator.js';
import { createStorage, storeClientSettings } from '../../src/shared/storage.js';
import type { Config } from '../../config/index.js';

const BANNER = 'Guarantee Registry is running (development).';
const BANNER_END = 'Ctrl-C stops the API and workers';
/** What a line naming a migration looks like (0001-initial). */
const MIGRATION_NAME = /\b\d{4}-[a-z][a-z-]+/;

interface Line {
  from: 'stdout' | 'stderr';
  text: string;
}

/** A running `node scripts/run.mjs start`, its lines in the order they came (both streams). */
class Start {
  readonly lines: Line[] = [];
  readonly closed: Promise<[number | null, NodeJS.Signals | null]>;
  readonly child: ChildProcess;

  constructor(env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, ['scripts/run.mjs', 'start'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const from of ['stdout', 'stderr'] as const) {
      let rest = '';
      const stream = this.child[from];
      stream?.on('data', (d: Buffer) => {
        const parts = (rest + d.toString()).split('\n');
        rest = parts.pop() ?? '';
        for (const text of parts) this.lines.push({ from, text });
      });
      stream?.on('end', () => {
        if (rest) this.lines.push({ from, text: rest });
      });
    }
    // After both streams ended: every line is in.
    this.closed = once(this.child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  }

  get output(): string {
    return this.lines.map((l) => `${l.from}: ${l.text}`).join('\n');
  }

  index(prefix: string): number {
    return this.lines.findIndex((l) => l.text.startsWith(prefix));
  }

  /** Waits for the banner's last line; fails with the output when the start ends or takes too long. */
  async banner(timeoutMs = 120_000): Promise<void> {
    await eventually(
      'the banner',
      () => {
        if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`npm start ended before its banner:\n${this.output}`);
        return this.index(BANNER_END) >= 0;
      },
      timeoutMs,
      () => this.output,
    );
  }

  /** The value of the banner's `  <label>   value` line. */
  field(label: string): string {
    const line = this.lines.find((l) => l.text.startsWith(`  ${label} `));
    if (!line) throw new Error(`no "${label}" line in the banner:\n${this.output}`);
    return line.text.slice(label.length + 2).trim();
  }

  interrupt(): void {
    this.child.kill('SIGINT');
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

/** Whether process `pid` is gone (a zombie no init reaped counts as gone). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return /^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

/** The run's environment for a start: its own settings in `own`; the run's LOG_LEVEL (silent) and NODE_ENV are not the start's. */
function startEnv(own: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  // Also whatever would hide what is tested: the SDK's warning switch, and a STORAGE_EVENTS_URL (npm start points it at itself);
  // and the suite's log bucket (the start's log is another, in its own bucket's `-log`).
  for (const name of ['LOG_LEVEL', 'NODE_ENV', 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED', 'STORAGE_EVENTS_URL', 'LOG_S3_BUCKET']) delete env[name];
  return { ...env, ...own };
}

/** A database of its own next to the run's (the local user may make `registry_*` ones), empty. */
async function freshDatabase(config: Config, suffix: string): Promise<string> {
  const { db } = await harness();
  const url = new URL(config.DATABASE_URL);
  const name = `${url.pathname.slice(1)}_${suffix}`;
  await db.query(`DROP DATABASE IF EXISTS \`${name}\``);
  await db.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabase(url: string): Promise<void> {
  const { db } = await harness();
  await db.query(`DROP DATABASE IF EXISTS \`${new URL(url).pathname.slice(1)}\``);
}

/** Empties and removes a bucket (made by the test, or by the start's `cli migrate`), if there. */
async function removeBucket(config: Config, bucket: string): Promise<void> {
  const { client } = createStorage({ ...config, S3_BUCKET: bucket });
  try {
    for (;;) {
      const listed = await client.send(new ListObjectVersionsCommand({ Bucket: bucket })).catch(() => undefined);
      if (!listed) return;
      const versions = [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])];
      for (const v of versions) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: v.Key, VersionId: v.VersionId }));
      if (!listed.IsTruncated) break;
    }
    await client.send(new DeleteBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}

/** Waits for the start's banner; the lines it said before, checked: 25 at most, no warning among them. */
async function linesBeforeBanner(start: Start): Promise<string[]> {
  await start.banner();
  const before = start.lines.slice(0, start.index(BANNER)).map((l) => l.text);
  expect(before.length, start.output).to.be.at.most(25);
  expect(
    before.filter((l) => /NodeVersionSupportWarning|AWS SDK|Warning:/.test(l)),
    start.output,
  ).to.deep.equal([]);
  return before;
}

describe('npm start', function () {
  // Each start compiles the server and workers through tsx first: some 10 s, more on a loaded machine.
  this.timeout(240_000);
  let config: Config;
  let dataDir: string;
  let databaseUrl: string;
  let port: number;
  let env: NodeJS.ProcessEnv;
  const bucket = `${process.env.S3_BUCKET ?? 'guarantee-registry-test'}-start-${Date.now().toString(36)}`;
  const starts: Start[] = [];

  before(async () => {
    ({ config } = await harness());
    // Servers the environment does not name would be the dev profile's: the start must use the run's.
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'S3_BUCKET', 'CLAMD_HOST', 'OIDC_ISSUER'])
      expect(process.env[name], `${name} (npm start would start a server of its own)`).to.be.a('string').and.not.equal('');
    dataDir = mkdtempSync(join(tmpdir(), 'npm-start-'));
    databaseUrl = await freshDatabase(config, 'start');
    port = await freePort();
    // As the local servers make it (the documents' bucket has Object Lock); `cli migrate` sets the rest.
    const { client } = createStorage({ ...config, S3_BUCKET: bucket });
    try {
      await client.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true }));
    } finally {
      client.destroy();
    }
    env = startEnv({
      DATABASE_URL: databaseUrl,
      S3_BUCKET: bucket,
      QUEUE_PREFIX: `${config.QUEUE_PREFIX}-start`,
      PORT: String(port),
      SERVICES_DATA_DIR: dataDir,
    });
  });

  after(async () => {
    for (const s of starts) s.kill();
    await dropDatabase(databaseUrl);
    await removeBucket(config, bucket);
    await removeBucket(config, `${bucket}-log`);
    // The upload events' topic `cli migrate` made for the bucket.
    const sns = new SNSClient(storeClientSettings(config));
    try {
      const { Topics = [] } = await sns.send(new ListTopicsCommand({}));
      for (const t of Topics) if (t.TopicArn?.endsWith(`:${bucket}-uploads`)) await sns.send(new DeleteTopicCommand({ TopicArn: t.TopicArn }));
    } finally {
      sns.destroy();
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('says a line a stage before its banner (one for all the migrations, no AWS SDK warning), logs to the file the banner names, whose URLs match its example; Ctrl-C stops it cleanly', async () => {
    const start = new Start(env);
    starts.push(start);
    const before = await linesBeforeBanner(start);
    expect(
      before.filter((l) => l.startsWith('[services]')),
      'servers of its own',
    ).to.deep.equal([]);
    // On production's Node (.node-version): started on another, it runs there, in a child process, and says so in one line.
    const production = `v${productionNodeVersion()}`;
    const pid = start.child.pid as number;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    const versionOf = (p: number) => spawnSync(readlinkSync(`/proc/${p}/exe`), ['--version'], { encoding: 'utf8' }).stdout.trim();
    const serving = children.filter((p) => readlinkSync(`/proc/${p}/exe`).endsWith('/node'));
    if (process.version === production) {
      expect(
        before.filter((l) => l.startsWith('[start] running on Node')),
        start.output,
      ).to.deep.equal([]);
      expect(serving, 'a node process under the start').to.deep.equal([]);
    } else {
      expect(before[0], start.output).to.equal(
        `[start] running on Node ${production}, the one production runs on (this machine's is ${process.version}; --node current runs on it)`,
      );
      expect(serving.map(versionOf), "the start's own node process").to.deep.equal([production]);
    }
    // A new database: every migration applied, said in one line.
    const latest = migrations.at(-1)?.name;
    expect(before.filter((l) => /migration/i.test(l) || MIGRATION_NAME.test(l))).to.deep.equal([
      `[start] database: ${migrations.length} migrations applied, up to ${latest}`,
    ]);
    // No log line in the terminal: they are in the file.
    expect(start.lines.filter((l) => l.text.startsWith('{')).map((l) => l.text)).to.deep.equal([]);

    // The banner's URL is the one its example requests, on the start's port; the example works.
    const api = start.field('API');
    const example = /^ {2}curl -H 'X-API-Key: (\S+)' (\S+)$/.exec(start.lines.find((l) => l.text.startsWith('  curl '))?.text ?? '');
    expect(example, start.output).to.not.equal(null);
    const [, key = '', url = ''] = example as RegExpExecArray;
    expect(api).to.equal(url);
    expect(new URL(api).port).to.equal(String(port));
    expect(key).to.equal(start.field('API key'));
    expect((await fetch(url, { headers: { 'X-API-Key': key } })).status).to.equal(200);

    // The logs: in the file the banner names, the request's line among them (it is written within 100 ms).
    const logFile = join(dataDir, 'dev', 'api.log');
    expect(resolve(start.field('Logs').split(/\s+/)[0] ?? '')).to.equal(logFile);
    const logged = () =>
      readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { level: number; msg: string; path?: string });
    await eventually('the request in the log file', () => logged().some((l) => l.msg === 'request' && l.path === new URL(url).pathname), 5_000);
    expect(logged().some((l) => l.msg === 'API listening')).to.equal(true);
    // Not there either (what `cli migrate` says on stderr goes there).
    expect(readFileSync(logFile, 'utf8')).to.not.include('NodeVersionSupportWarning');

    const shown = start.lines.length;
    start.interrupt();
    const [code] = await start.closed;
    expect(code, start.output).to.equal(0);
    // The terminal: its own two lines, nothing after.
    expect(start.lines.slice(shown).map((l) => l.text)).to.deep.equal(['[start] stopping the API and workers', '[start] stopped']);
    // The file: nothing after the API's last line ("redis unreachable" was, its connection closed after it).
    const lines = logged();
    expect(lines.at(-1)?.msg, JSON.stringify(lines.slice(-5))).to.equal('shut down');
    expect(lines.slice(lines.findIndex((l) => l.msg.startsWith('shutting down'))).filter((l) => l.level >= 40)).to.deep.equal([]);
  });

  it('with LOG_LEVEL set, logs to the terminal; restarted, it has nothing to migrate and keeps its key; Ctrl-C: nothing logged after "shut down"', async () => {
    const key = existsSync(join(dataDir, 'dev', 'api-key')) ? readFileSync(join(dataDir, 'dev', 'api-key'), 'utf8').trim() : undefined;
    const start = new Start({ ...env, LOG_LEVEL: 'info' });
    starts.push(start);
    const before = await linesBeforeBanner(start);
    // Nothing to migrate: no migration named.
    expect(
      before.filter((l) => MIGRATION_NAME.test(l)),
      start.output,
    ).to.deep.equal([]);
    expect(before.some((l) => l.startsWith('{') && (JSON.parse(l) as { msg: string }).msg === 'API listening')).to.equal(true);
    expect(start.field('Logs')).to.match(/^this terminal \(LOG_LEVEL=info;/);
    if (key) expect(start.field('API key')).to.equal(key);

    start.interrupt();
    const [code] = await start.closed;
    expect(code, start.output).to.equal(0);
    const logged = start.lines.filter((l) => l.from === 'stdout' && l.text.startsWith('{')).map((l) => JSON.parse(l.text) as { level: number; msg: string });
    expect(logged.at(-1)?.msg, start.output).to.equal('shut down');
    expect(logged.filter((l) => l.level >= 40).map((l) => l.msg)).to.deep.equal([]);
    expect(start.lines.filter((l) => l.from === 'stderr').at(-1)?.text).to.equal('[start] stopped');
  });

  it('killed, takes its API with it (on Node 24 started from another Node, the child it runs in stops itself)', async () => {
    const start = new Start(env);
    starts.push(start);
    await start.banner();
    const api = start.field('API');
    const pid = start.child.pid as number;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    expect((await fetch(api, { headers: { 'X-API-Key': start.field('API key') } })).status).to.equal(200);
    start.kill();
    await start.closed;
    await eventually(
      'the API gone',
      async () =>
        (await fetch(api).then(
          () => false,
          () => true,
        )) && children.every(gone),
      30_000,
    );
  });

  it('killed during its start, before its banner: nothing is left running, nothing serves afterwards (the Node 24 child stops itself there too)', async () => {
    const start = new Start(env);
    starts.push(start);
    // Its first line: on another Node, the one that names Node 24.
    await eventually(
      'its first line',
      () => start.lines.length > 0,
      60_000,
      () => start.output,
    );
    const pid = start.child.pid as number;
    const childrenNow = () => readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    // On another Node, the child is made just after that line is written (the line may be read first).
    const children = start.lines[0]?.text.startsWith('[start] running on Node')
      ? await eventually(
          'the Node 24 child',
          () => {
            const now = childrenNow();
            return now.length === 1 && now;
          },
          10_000,
          () => start.output,
        )
      : childrenNow();
    start.kill();
    // Its exit, not its streams' end: a child left running would hold them open.
    if (start.child.exitCode === null && start.child.signalCode === null) await once(start.child, 'exit');
    try {
      await eventually(
        'its processes gone',
        () => children.every(gone),
        30_000,
        () => start.output,
      );
    } finally {
      for (const c of children) if (!gone(c)) process.kill(c, 'SIGKILL');
    }
    // Had the start gone on, it would serve within seconds.
    await new Promise((r) => setTimeout(r, 3000));
    expect(
      await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => 'served',
        () => 'refused',
      ),
    ).to.equal('refused');
  });

  it('the migrator logs each migration at debug only (its caller says which it applied); what is pending is known before', async () => {
    const url = await freshDatabase(config, 'start_migrator');
    try {
      const lines: Array<{ level: number; msg: string; migration?: string }> = [];
      const sink = { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string; migration?: string }) };
      expect(await pendingMigrations(url)).to.deep.equal(migrations.map((m) => m.name));
      const applied = await migrate(url, createLogger('debug', sink));
      expect(applied).to.deep.equal(migrations.map((m) => m.name));
      expect(lines.filter((l) => l.level > 20)).to.deep.equal([]);
      expect(lines.map((l) => l.migration)).to.deep.equal(applied);
      expect(await pendingMigrations(url)).to.deep.equal([]);
    } finally {
      await dropDatabase(url);
    }
  });
});

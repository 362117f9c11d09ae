import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { request, type IncomingMessage } from 'node:http';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newOrg } from '../support/harness.js';
import { entry } from '../support/entry.js';
import { freePort } from '../support/tcp-proxy.js';

describe('the API process', function () {
  this.timeout(60_000);

  it('on SIGTERM stops accepting, finishes the request in flight, then exits 0', async () => {
    const org = await newOrg();
    // A port the system just gave out, not a guess in the ephemeral range (the other parallel
    // worker's servers and connections take ports there: a guess once met one in use).
    const port = await freePort();
    const child = spawn(process.execPath, [...entry('src/server.ts')], {
      env: { ...process.env, PORT: String(port), LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    // Up to 30 s: tsx compiles the server first, which a loaded two-core machine has seen take over 10.
    for (let i = 0; i < 600 && !out.includes('API listening'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out, `stderr: ${err}`).to.include('API listening');

    // A create whose body is still on its way when SIGTERM arrives.
    const body = JSON.stringify({ details: { policyNumber: 'in-flight' } });
    const req = request({
      port,
      method: 'POST',
      path: '/api/v2/guarantees',
      headers: { 'X-API-Key': org.key, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    });
    const response = once(req, 'response');
    req.write(body.slice(0, 10));
    await new Promise((r) => setTimeout(r, 200));
    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    req.end(body.slice(10));
    const [res] = (await response) as [IncomingMessage];
    let text = '';
    for await (const chunk of res) text += (chunk as Buffer).toString();
    expect(res.statusCode).to.equal(200);
    expect(JSON.parse(text).details.policyNumber).to.equal('in-flight');

    const [code] = (await once(child, 'exit')) as [number];
    expect(code).to.equal(0);
    expect(out).to.include('shut down');
    // No longer accepting.
    const refused = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      () => false,
      () => true,
    );
    expect(refused).to.equal(true);
  });
});

describe('npm run services', function () {
  this.timeout(60_000);

  it("up prints every variable the Procfile's processes need (ENCRYPTION_KEY and the admin password among them): the configuration they validate at boot", async () => {
    const { parseConfig } = await import('../../config/index.js');
    // As an operator trying the Procfile locally: a shell with nothing of the app's set.
    const res = spawnSync(process.execPath, ['scripts/run.mjs', 'services', 'up', '--profile', 'test'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root' },
    });
    expect(res.status, res.stderr).to.equal(0);
    const env = Object.fromEntries(
      res.stdout
        .trim()
        .split('\n')
        .map((line) => {
          const m = /^export (\w+)='(.*)'$/.exec(line);
          if (!m) throw new Error(`not an export line: ${line}`);
          return [m[1], m[2]];
        }),
    );
    expect(env).to.include.keys('ENCRYPTION_KEY', 'DATABASE_URL', 'REDIS_URL', 'S3_BUCKET', 'CLAMD_PORT', 'ADMIN_USER', 'ADMIN_PASSWORD');
    expect(() => parseConfig({ PATH: process.env.PATH, ...env })).to.not.throw();
  });

  it('down says what it stopped, one line a service (its pid), and which were not running; on stderr, stdout empty', async () => {
    // A throwaway SERVICES_DATA_DIR: no pid file there is one of the run's servers, none of which is stopped.
    const dir = mkdtempSync(join(tmpdir(), 'services-down-'));
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', SERVICES_DATA_DIR: dir };
    const services = (...args: string[]) =>
      spawnSync(process.execPath, ['scripts/run.mjs', 'services', ...args, '--profile', 'bench'], { encoding: 'utf8', env });
    // First, that the directory is the one used: nothing runs there (a script that ignored it would see .data's servers).
    const before = services('status');
    expect(before.status, before.stderr).to.equal(0);
    expect(before.stdout).to.match(/^redis\tdown$/m);
    expect(before.stdout).to.not.match(/\t(up|external)$/m);
    // A daemon as `up` leaves one: its pid in the service's pid file.
    const daemon = spawn('sleep', ['300'], { stdio: 'ignore' });
    const exited = once(daemon, 'exit');
    mkdirSync(join(dir, 'bench', 'redis'), { recursive: true });
    writeFileSync(join(dir, 'bench', 'redis', 'daemon.pid'), String(daemon.pid));
    try {
      const res = services('down', '--only', 'redis,clamd');
      expect(res.status, res.stderr).to.equal(0);
      expect(res.stdout).to.equal('');
      expect(res.stderr).to.include(`[services] stopped redis (pid ${daemon.pid})\n`);
      expect(res.stderr).to.include('[services] clamd was not running\n');
      const [, signal] = (await exited) as [number | null, string | null];
      expect(signal).to.equal('SIGTERM');
      expect(existsSync(join(dir, 'bench', 'redis', 'daemon.pid'))).to.equal(false);
    } finally {
      daemon.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('up is idempotent: with the test servers running, a second up starts nothing and gives the same addresses', async () => {
    const { ALL, context, up } = await import('../../scripts/services/index.js');
    const ctx = context('test');
    // The servers this run uses locally (all four under npm test, unless the environment points elsewhere).
    const local = ALL.filter((s) => Object.entries(s.env(ctx)).every(([k, v]) => process.env[k] === v));
    const expected = Object.assign({}, ...local.map((s) => s.env(ctx))) as Record<string, string>;
    const saved = { ...process.env };
    try {
      for (const name of Object.keys(expected)) delete process.env[name];
      const { env, started } = await up(
        'test',
        local.map((s) => s.name),
      );
      expect(started).to.deep.equal([]);
      expect(env).to.deep.equal(expected);
    } finally {
      Object.assign(process.env, saved);
    }
  });
});

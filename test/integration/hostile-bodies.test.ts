// One API key opening 200 requests that each send 1 MiB - 1 bytes of body and stall, against
// the web process as the Procfile runs it (its `web` node flags): the process lives, keeps
// serving other keys at once, and holds at most its bounded bytes of bodies in flight.
// npm test: alone (it measures the web process's answers and memory under attack, which other tests' load would distort)
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { procfileFlags } from '../../scripts/procfile.js';
import { newOrg } from '../support/harness.js';
import { killOnExit } from '../support/processes.js';
import { freePort } from '../support/tcp-proxy.js';

const rssOf = (pid: number) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)?.[1] ?? 0) * 1024;

/** Opens a POST with a declared body of `length` bytes, sends all but `held` of it, and stalls. Resolves with the status if the server answers. */
function stalledPost(port: number, key: string, length: number, held: number): { socket: Socket; status: Promise<number | undefined> } {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  const status = new Promise<number | undefined>((resolve) => {
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m) resolve(Number(m[1]));
    });
    socket.on('close', () => resolve(undefined));
    socket.on('error', () => resolve(undefined));
  });
  socket.on('connect', () => {
    socket.write(`POST /api/v2/guarantees HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`);
    // A JSON string that never ends: nothing can be parsed before the last byte.
    socket.write(Buffer.concat([Buffer.from('{"note":{"shared":"'), Buffer.alloc(length - held - 19, 'a')]));
  });
  return { socket, status };
}

describe('the API process under hostile bodies', function () {
  this.timeout(90_000);
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
  });

  it('survives one key opening 200 stalled 1 MiB bodies, refuses what is over its bounds at once, and keeps serving other keys', async () => {
    const [hostile, other] = [await newOrg(), await newOrg()];
    const port = await freePort();
    const proc = spawn(process.execPath, [...procfileFlags('web'), '--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    killOnExit(proc);
    let out = '';
    proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    for (
      let i = 0;
      i < 200 &&
      !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    )
      await new Promise((r) => setTimeout(r, 100));
    const pid = proc.pid ?? 0;
    const rssBefore = rssOf(pid);

    const posts = Array.from({ length: 200 }, () => stalledPost(port, hostile.key, 1024 * 1024 - 1, 1));
    try {
      // Refusals come at once, without waiting for the bodies.
      const answered = await Promise.all(posts.map((p) => Promise.race([p.status, new Promise<'pending'>((r) => setTimeout(() => r('pending'), 5000))])));
      const refused = answered.filter((s) => s === 429).length;
      // Refused and closed at once: a client still writing its body may see the reset before the 429.
      const cutOff = answered.filter((s) => s === undefined).length;
      const pending = answered.filter((s) => s === 'pending').length;
      // BODY_BYTES_IN_FLIGHT_PER_KEY (8 MiB) holds 8 bodies of 1 MiB - 1; the other 192 are turned away at once.
      expect(pending).to.equal(8);
      expect(refused + cutOff).to.equal(192);
      expect(refused).to.be.above(0);
      expect(proc.exitCode).to.equal(null);

      // Another key is served at once meanwhile, reads and writes.
      const started = Date.now();
      const list = await fetch(`http://127.0.0.1:${port}/api/v1/guarantees`, { headers: { 'X-API-Key': other.key } });
      const create = await fetch(`http://127.0.0.1:${port}/api/v2/guarantees`, {
        method: 'POST',
        headers: { 'X-API-Key': other.key, 'Content-Type': 'application/json' },
        body: JSON.stringify({ details: { policyNumber: 'meanwhile' } }),
      });
      expect([list.status, create.status]).to.deep.equal([200, 200]);
      expect(Date.now() - started).to.be.below(2000);
      // The stalled bodies hold about 8 MiB, not 200.
      expect(rssOf(pid) - rssBefore).to.be.below(100 * 1024 * 1024);
    } finally {
      for (const p of posts) p.socket.destroy();
    }
    // Once they are gone, the key gets its share back.
    const again = await fetch(`http://127.0.0.1:${port}/api/v2/guarantees`, {
      method: 'POST',
      headers: { 'X-API-Key': hostile.key, 'Content-Type': 'application/json' },
      body: JSON.stringify({ details: { policyNumber: 'after' } }),
    });
    expect(again.status).to.equal(200);
    expect(out).to.not.include('FATAL');
  });
});

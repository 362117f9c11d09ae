// The hostile-bodies attacker and its health checker, shared by the test
// (test/integration/hostile-bodies.test.ts) and the bench (bench/hostile.ts): a POST that stalls
// before its body's last byte, and a prober in a process of its own (health-prober.mjs).
import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { killOnExit } from './processes.js';

/**
 * What a stalled POST sends of a declared body of `length` bytes: all but `held` of it, a JSON
 * string that never ends (nothing can be parsed before the last byte). Made once and shared by
 * every request: made afresh for each, 200 MiB allocated and copied in the attacker's process
 * competed for the machine's CPUs with the web process under test (bench/hostile.ts --fresh-bodies).
 */
export const stalledBody = (length: number, held: number) => Buffer.concat([Buffer.from('{"note":{"shared":"'), Buffer.alloc(length - held - 19, 'a')]);

/**
 * Opens a POST /api/v2/guarantees with a declared body of `length` bytes, sends `body` (all but
 * its last bytes) and stalls; `status` settles with the answer's status, or undefined when the
 * connection ends without one.
 */
export function stalledPost(port: number, key: string, length: number, body: Buffer): { socket: Socket; status: Promise<number | undefined> } {
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
    socket.write(body);
  });
  return { socket, status };
}

/** One health check: when it started (ms since the epoch), its latency, its status (0: failed or timed out), and the server's main thread's ms on a CPU and waiting for one so far (0 without a pid). */
export interface Probe {
  at: number;
  ms: number;
  status: number;
  ran: number;
  waited: number;
}

const PROBER = fileURLToPath(new URL('./health-prober.mjs', import.meta.url));

/**
 * Starts probing GET /healthz on `port` every `everyMs` (each probe given `timeoutMs`), reading
 * the scheduler's figures of `serverPid`'s main thread when one is given. `ready` settles once
 * the first probe has ended (or the prober has exited); `stop` ends the probing and gives every probe.
 */
export function startProber(
  port: number,
  everyMs: number,
  timeoutMs: number,
  serverPid?: number,
): { pid: number; ready: Promise<void>; stop: () => Promise<Probe[]> } {
  const args = [String(port), String(everyMs), String(timeoutMs), ...(serverPid ? [String(serverPid)] : [])];
  const child = spawn(process.execPath, [PROBER, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  killOnExit(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve) => {
    child.stdout.once('data', () => resolve());
    void exited.then(() => resolve());
  });
  return {
    pid: child.pid as number,
    ready,
    async stop() {
      child.stdin.end();
      await exited;
      return out
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => {
          const [at, ms, status, ran, waited] = line.split(' ').map(Number) as [number, number, number, number, number];
          return { at, ms, status, ran, waited };
        });
    },
  };
}

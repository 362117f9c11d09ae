// The hostile bench's prober, a process of its own so that the attack's writes (200 MiB from the
// bench's process) never delay a probe's start or its timing: `node --import tsx
// bench/hostile-probe.ts <port> <everyMs> <timeoutMs> <pid>` sends GET /healthz every `everyMs`,
// each on a new connection (no agent) whatever the earlier ones are doing, and prints one line per
// probe as it ends: `<start, ms since the epoch> <latency ms> <status, 0 when it failed or timed
// out> <ms the server's main thread (pid) had run> <ms it had waited for a CPU>`, the last two
// read from /proc/<pid>/schedstat as the probe started (a timeline of the server's CPU).
// It stops sending when its standard input ends, and exits once its probes in flight have ended.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';

const [port, everyMs, timeoutMs, pid] = process.argv.slice(2).map(Number) as [number, number, number, number];
if (!(port > 0 && everyMs > 0 && timeoutMs > 0 && pid > 0)) throw new Error('usage: hostile-probe.ts <port> <everyMs> <timeoutMs> <pid>');

/** The server's main thread: ms on a CPU and ms waiting for one, so far. */
function sched(): string {
  try {
    const [ran, waited] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ').map(Number) as [number, number];
    return `${(ran / 1e6).toFixed(1)} ${(waited / 1e6).toFixed(1)}`;
  } catch {
    return '0 0';
  }
}

const epochMs = () => performance.timeOrigin + performance.now();

function probe(): void {
  const start = performance.now();
  const startEpoch = epochMs();
  const cpu = sched();
  let done = false;
  const end = (status: number) => {
    if (done) return;
    done = true;
    process.stdout.write(`${startEpoch.toFixed(1)} ${(performance.now() - start).toFixed(1)} ${status} ${cpu}\n`);
  };
  const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: timeoutMs }, (res) => {
    res.resume();
    res.on('end', () => end(res.statusCode ?? 0));
    res.on('error', () => end(0));
  });
  // The timeout counts from the request's start, whether the connection, the answer or its end is late.
  const timer = setTimeout(() => {
    end(0);
    req.destroy();
  }, timeoutMs);
  req.on('close', () => clearTimeout(timer));
  req.on('error', () => end(0));
  req.end();
}

const timer = setInterval(probe, everyMs);
process.stdin.resume();
process.stdin.on('end', () => clearInterval(timer));

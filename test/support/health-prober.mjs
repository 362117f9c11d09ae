// The health checker of the hostile-bodies test and bench, a process of its own so that the
// attack's writes never delay a probe's start or its timing. Plain JavaScript, run by `node`
// with no loader (it starts in a few ms, not a second of tsx on a busy machine):
// `node test/support/health-prober.mjs <port> <everyMs> <timeoutMs> [<pid>]` sends GET /healthz
// every `everyMs`, each on a new connection (no agent) whatever the earlier ones are doing, and
// prints one line per probe as it ends: `<start, ms since the epoch> <latency ms> <status, 0 when
// it failed or took over timeoutMs in all> <ms the server's main thread (pid) had run> <ms it had
// waited for a CPU>`, the last two read from /proc/<pid>/task/<pid>/schedstat as the probe
// started (0 0 without a pid). It stops sending when its standard input ends, and exits once its
// probes in flight have ended.
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';

const [port, everyMs, timeoutMs, pid = 0] = process.argv.slice(2).map(Number);
if (!(port > 0 && everyMs > 0 && timeoutMs > 0 && pid >= 0)) throw new Error('usage: health-prober.mjs <port> <everyMs> <timeoutMs> [<pid>]');

/** The server's main thread: ms on a CPU and ms waiting for one, so far. */
function sched() {
  if (!pid) return '0 0';
  try {
    const [ran, waited] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ').map(Number);
    return `${(ran / 1e6).toFixed(1)} ${(waited / 1e6).toFixed(1)}`;
  } catch {
    return '0 0';
  }
}

function probe() {
  const start = performance.now();
  const startEpoch = performance.timeOrigin + start;
  const cpu = sched();
  let done = false;
  const end = (status) => {
    if (done) return;
    done = true;
    process.stdout.write(`${startEpoch.toFixed(1)} ${(performance.now() - start).toFixed(1)} ${status} ${cpu}\n`);
  };
  const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
    res.resume();
    res.on('end', () => end(res.statusCode ?? 0));
    res.on('error', () => end(0));
  });
  // The limit counts from the request's start, whether the connection, the answer or its end is late.
  const timer = setTimeout(() => {
    end(0);
    req.destroy();
  }, timeoutMs);
  req.on('close', () => clearTimeout(timer));
  req.on('error', () => end(0));
  req.end();
}

const timer = setInterval(probe, everyMs);
process.stdin.on('end', () => clearInterval(timer)).resume();

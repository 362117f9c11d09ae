// Preloaded into a benchmarked process (`node --import ./dist/bench/loop-delay.js ...`, compiled
// by `npm run build`) to see where its time went: with BENCH_LOOP_FILE set, it records each
// stall of the event loop (a 10 ms timer late by 20 ms or more) and each collector pause on the
// main thread, with their wall-clock times, and writes them as JSON to that file as the process
// exits: { stalls: [[end ms since the epoch, ms late]], gcs: [[start, ms, kind]], maxDelayMs,
// clock: [ms since the epoch, the monotonic clock in µs] } (the clock pair places a --cpu-prof
// profile's sample times, which are that monotonic clock's, on the wall clock).
// Without BENCH_LOOP_FILE it does nothing.
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

const file = process.env.BENCH_LOOP_FILE;
if (file) {
  const TICK_MS = 10;
  const stalls: Array<[number, number]> = [];
  const gcs: Array<[number, number, number]> = [];
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    const late = now - last - TICK_MS;
    if (late >= 20) stalls.push([Math.round(performance.timeOrigin + now), Math.round(late)]);
    last = now;
  }, TICK_MS).unref();
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0;
      gcs.push([Math.round(performance.timeOrigin + e.startTime), Number(e.duration.toFixed(1)), kind]);
    }
  }).observe({ entryTypes: ['gc'] });
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  process.on('exit', () => {
    const clock = [Date.now(), Number(process.hrtime.bigint() / 1000n)];
    writeFileSync(file, JSON.stringify({ stalls, gcs, maxDelayMs: delay.max / 1e6, clock }));
  });
}

import { expect } from 'chai';
import { createBatcher } from '../../../src/shared/batch.js';

describe('batching calls of one turn of the event loop', () => {
  it('hands the calls of one turn to one run, each caller getting its own result', async () => {
    const runs: number[][] = [];
    const double = createBatcher(
      (xs: number[]) => {
        runs.push(xs);
        return Promise.resolve(xs.map((x) => x * 2));
      },
      { maxItems: 100 },
    );
    expect(await Promise.all([double(1), double(2), double(3)])).to.deep.equal([2, 4, 6]);
    expect(await double(4)).to.equal(8);
    expect(runs).to.deep.equal([[1, 2, 3], [4]]);
  });

  it('runs a full batch at once, without waiting for the turn to end', async () => {
    const runs: number[][] = [];
    const same = createBatcher(
      (xs: number[]) => {
        runs.push(xs);
        return Promise.resolve(xs);
      },
      { maxItems: 2 },
    );
    const results = Promise.all([same(1), same(2), same(3)]);
    await Promise.resolve(); // a microtask: the turn (and its setImmediate) has not ended
    expect(runs).to.deep.equal([[1, 2]]);
    expect(await results).to.deep.equal([1, 2, 3]);
    expect(runs).to.deep.equal([[1, 2], [3]]);
  });

  it('gives every caller of a failed run its error, and the next turn a run of its own', async () => {
    let fail = true;
    const flaky = createBatcher((xs: number[]) => (fail ? Promise.reject(new Error('database away')) : Promise.resolve(xs)), { maxItems: 10 });
    const outcomes = await Promise.allSettled([flaky(1), flaky(2)]);
    expect(outcomes.map((o) => o.status === 'rejected' && (o.reason as Error).message)).to.deep.equal(['database away', 'database away']);
    fail = false;
    expect(await flaky(3)).to.equal(3);
  });

  it('refuses a run that does not give one result per call', async () => {
    const short = createBatcher((xs: number[]) => Promise.resolve(xs.slice(1)), { maxItems: 10 });
    const outcomes = await Promise.allSettled([short(1), short(2)]);
    expect(outcomes.every((o) => o.status === 'rejected')).to.equal(true);
  });
  it('settles every caller of a run that throws instead of rejecting', async () => {
    const throwing = createBatcher(
      (): Promise<number[]> => {
        throw new Error('thrown');
      },
      { maxItems: 10 },
    );
    const outcomes = await Promise.allSettled([throwing(1), throwing(2)]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
  });

  it('serial: keeps one run in flight; the calls made meanwhile go together in the next', async () => {
    const runs: number[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = createBatcher(
      async (xs: number[]) => {
        runs.push(xs);
        if (runs.length === 1) await gate;
        return xs;
      },
      { maxItems: 100, serial: true },
    );
    const first = slow(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).to.deep.equal([[1]]);
    const later = [slow(2), slow(3)];
    await new Promise((resolve) => setImmediate(resolve));
    const more = slow(4);
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs, 'nothing runs while the first is in flight').to.deep.equal([[1]]);
    release();
    expect(await Promise.all([first, ...later, more])).to.deep.equal([1, 2, 3, 4]);
    expect(runs).to.deep.equal([[1], [2, 3, 4]]);
  });

  /** A run per call of `go()`: each waits until released; the calls of each run and when it started are kept. */
  function gatedRuns() {
    const runs: Array<{ items: number[]; at: number; release: () => void }> = [];
    const run = async (items: number[]): Promise<number[]> => {
      await new Promise<void>((resolve) => {
        runs.push({ items, at: performance.now(), release: resolve });
      });
      return items;
    };
    return { runs, run };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('serial with minIntervalMs: the run that follows one in flight starts that long after it, with the calls made until then', async () => {
    const { runs, run } = gatedRuns();
    const spaced = createBatcher(run, { maxItems: 100, serial: true, minIntervalMs: 60 });
    const calls = [spaced(0)];
    await turn();
    calls.push(spaced(1), spaced(2)); // while the first run is in flight
    await turn();
    runs[0]?.release();
    await calls[0];
    await turn();
    // Without the interval the next run would have started as the first ended.
    expect(runs.map((r) => r.items)).to.deep.equal([[0]]);
    calls.push(spaced(3)); // during the wait: joins the next run
    while (runs.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    runs[1]?.release();
    expect(await Promise.all(calls)).to.deep.equal([0, 1, 2, 3]);
    expect(runs.map((r) => r.items)).to.deep.equal([[0], [1, 2, 3]]);
    // Node's timers keep whole milliseconds: "that long" is to within one.
    expect((runs[1]?.at ?? 0) - (runs[0]?.at ?? 0)).to.be.at.least(58);
  });

  it('serial with minIntervalMs: a call that finds the batcher idle runs at once, and a full batch does not wait', async () => {
    const { runs, run } = gatedRuns();
    const spaced = createBatcher(run, { maxItems: 3, serial: true, minIntervalMs: 10_000 });
    const t0 = performance.now();
    const lone = spaced(0);
    await turn();
    runs[0]?.release();
    await lone;
    await turn(); // idle again
    const next = spaced(1);
    await turn();
    expect(
      runs.map((r) => r.items),
      'an idle batcher holds nothing back',
    ).to.deep.equal([[0], [1]]);
    // Full when the run in flight ends: it goes at once.
    const full = [spaced(2), spaced(3), spaced(4)];
    await turn();
    runs[1]?.release();
    await next;
    await turn();
    expect(runs.map((r) => r.items)).to.deep.equal([[0], [1], [2, 3, 4]]);
    // Full while waiting for its time: it goes at once too.
    const waiting = spaced(5);
    await turn();
    runs[2]?.release();
    await Promise.all(full);
    await turn();
    expect(runs).to.have.length(3); // [5] waits for its time (10 s)...
    const more = [spaced(6), spaced(7)]; // ...until the batch is full
    await turn();
    expect(runs.map((r) => r.items)).to.deep.equal([[0], [1], [2, 3, 4], [5, 6, 7]]);
    runs[3]?.release();
    expect(await Promise.all([waiting, ...more])).to.deep.equal([5, 6, 7]);
    expect(performance.now() - t0).to.be.below(5000);
  });
});

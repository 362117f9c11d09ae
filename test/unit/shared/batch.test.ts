import { expect } from 'chai';
import { createBatcher } from '../../../src/shared/batch.js';

describe('batching calls of one turn of the event loop', () => {
  it('hands the calls of one turn to one run, each caller getting its own result', async () => {
    const runs: number[][] = [];
    const double = createBatcher((xs: number[]) => { runs.push(xs); return Promise.resolve(xs.map((x) => x * 2)); }, { maxItems: 100 });
    expect(await Promise.all([double(1), double(2), double(3)])).to.deep.equal([2, 4, 6]);
    expect(await double(4)).to.equal(8);
    expect(runs).to.deep.equal([[1, 2, 3], [4]]);
  });

  it('runs a full batch at once, without waiting for the turn to end', async () => {
    const runs: number[][] = [];
    const same = createBatcher((xs: number[]) => { runs.push(xs); return Promise.resolve(xs); }, { maxItems: 2 });
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
    const throwing = createBatcher((): Promise<number[]> => { throw new Error('thrown'); }, { maxItems: 10 });
    const outcomes = await Promise.allSettled([throwing(1), throwing(2)]);
    expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
  });

  it('serial: keeps one run in flight; the calls made meanwhile go together in the next', async () => {
    const runs: number[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const slow = createBatcher(async (xs: number[]) => { runs.push(xs); if (runs.length === 1) await gate; return xs; }, { maxItems: 100, serial: true });
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

  it('serial with minIntervalMs: under load a run starts that long after the previous one, the calls made meanwhile with it', async () => {
    const starts: Array<{ at: number; items: number[] }> = [];
    const spaced = createBatcher(async (xs: number[]) => {
      starts.push({ at: performance.now(), items: xs });
      await new Promise((resolve) => setTimeout(resolve, 8));
      return xs;
    }, { maxItems: 100, serial: true, minIntervalMs: 30 });
    // Calls keep coming faster than a run takes (a loaded server), for about 40 ms.
    const calls: Array<Promise<number>> = [];
    for (let i = 0; i < 20; i++) {
      calls.push(spaced(i));
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(await Promise.all(calls)).to.deep.equal([...Array(20).keys()]);
    const gaps = starts.slice(1).map((s, i) => s.at - (starts[i]?.at ?? 0));
    // Without the interval, a run would follow each 8 ms run at once: six or more.
    expect(starts.length, JSON.stringify(starts)).to.be.at.most(4);
    for (const gap of gaps) expect(gap).to.be.at.least(29);
    expect(starts.flatMap((s) => s.items)).to.deep.equal([...Array(20).keys()]);
  });

  it('serial with minIntervalMs: a call that finds nothing in flight runs at once, and a full batch does not wait', async () => {
    const runs: number[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const spaced = createBatcher(async (xs: number[]) => {
      runs.push(xs);
      if (xs.includes(3)) await gate;
      return xs;
    }, { maxItems: 3, serial: true, minIntervalMs: 10_000 });
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const t0 = performance.now();
    expect(await spaced(1)).to.equal(1);
    await turn(); // the run has ended
    // Idle again: the interval holds back only a run that follows one in flight.
    expect(await spaced(2)).to.equal(2);
    await turn();
    const first = spaced(3);
    await new Promise((resolve) => setImmediate(resolve));
    const waiting = spaced(4);
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await first; // [4] now waits for its time (10 s)...
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).to.deep.equal([[1], [2], [3]]);
    // ...until the batch is full: it goes at once.
    expect(await Promise.all([waiting, spaced(5), spaced(6)])).to.deep.equal([4, 5, 6]);
    expect(runs).to.deep.equal([[1], [2], [3], [4, 5, 6]]);
    expect(performance.now() - t0).to.be.below(1000);
  });
});

import { expect } from 'chai';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import { later, processorFor, stop } from '../../../src/shared/job-handlers.js';

/** Just what a processor touches of a job: its name, and moveToDelayed. */
function jobNamed(name: string) {
  const moved: number[] = [];
  const job = {
    name,
    data: {},
    moveToDelayed: (at: number) => {
      moved.push(at);
      return Promise.resolve();
    },
  } as unknown as Job<unknown, unknown, never>;
  return { job, moved };
}

describe('typed job handlers', () => {
  const names = ['look', 'scan'] as const;

  it("refuses at start-up a handler map that does not match the queue's job names", () => {
    expect(() => processorFor('q', names, { look: () => Promise.resolve(1) } as never)).to.throw('queue q: handlers for [look] but job names [look, scan]');
    expect(() => processorFor('q', ['look'], { look: () => Promise.resolve(1), extra: () => Promise.resolve(2) } as never)).to.throw(
      /handlers for \[extra, look\]/,
    );
  });

  it("runs the handler of the job's name; a name no handler knows fails for good, never as another job", async () => {
    const ran: string[] = [];
    const processor = processorFor('q', names, {
      look: () => {
        ran.push('look');
        return Promise.resolve('looked');
      },
      scan: () => {
        ran.push('scan');
        return Promise.resolve('scanned');
      },
    });
    expect(await processor(jobNamed('scan').job, 'token')).to.equal('scanned');
    const err = await processor(jobNamed('toString').job, 'token').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(UnrecoverableError);
    expect((err as Error).message).to.equal('queue q has no handler for job name "toString"');
    expect(ran).to.deep.equal(['scan']);
  });

  it('turns later(ms) into a delay that spends no attempt, and stop(reason) into a failure without retries', async () => {
    const processor = processorFor('q', names, { look: () => Promise.resolve(later(5000)), scan: () => Promise.resolve(stop('410 Gone')) });
    const { job, moved } = jobNamed('look');
    const before = Date.now();
    expect(await processor(job, 'token').catch((e: unknown) => e)).to.be.instanceOf(DelayedError);
    expect(moved[0]).to.be.within(before + 5000, Date.now() + 5000);
    const stopped = await processor(jobNamed('scan').job, 'token').catch((e: unknown) => e);
    expect(stopped).to.be.instanceOf(UnrecoverableError);
    expect((stopped as Error).message).to.equal('410 Gone');
    // A result that merely has a `later` among other fields is a result.
    const plain = processorFor('q', ['look'], { look: () => Promise.resolve({ later: 1, other: true }) });
    expect(await plain(jobNamed('look').job, 'token')).to.deep.equal({ later: 1, other: true });
  });
});

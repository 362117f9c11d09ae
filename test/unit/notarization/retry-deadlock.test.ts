// The notarizer's completing transaction is retried when InnoDB breaks a deadlock with it (a
// deadlock seen in CI between a batch's completion and writes beside its members), and only then.
import { expect } from 'chai';
import { retryDeadlock } from '../../../src/notarization/notarization.service.js';

const deadlock = () => Object.assign(new Error('Deadlock found when trying to get lock'), { parent: { errno: 1213 } });

describe('the notarizer retrying a transaction InnoDB chose to break a deadlock', () => {
  it('runs it again after a deadlock, up to three times in all', async () => {
    let runs = 0;
    expect(
      await retryDeadlock(() => {
        runs++;
        return runs < 3 ? Promise.reject(deadlock()) : Promise.resolve('done');
      }),
    ).to.equal('done');
    expect(runs).to.equal(3);
  });

  it('gives up after the third deadlock, and never retries another error', async () => {
    let runs = 0;
    const always = () => {
      runs++;
      return Promise.reject(deadlock());
    };
    await retryDeadlock(always).then(
      () => expect.fail('resolved'),
      (err: Error) => expect(err.message).to.match(/Deadlock/),
    );
    expect(runs).to.equal(3);
    runs = 0;
    await retryDeadlock(() => {
      runs++;
      return Promise.reject(new Error('the node refused it'));
    }).catch(() => undefined);
    expect(runs).to.equal(1);
  });
});

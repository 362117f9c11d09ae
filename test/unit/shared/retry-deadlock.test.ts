// A transaction is retried when InnoDB breaks a deadlock with it, and only then (the notarizer's
// completing transaction: a deadlock seen in CI beside a batch's members; webhooks' replays and
// the webhook log's purge, which lock one event from either side).
import { expect } from 'chai';
import { retryDeadlock } from '../../../src/shared/db/sequelize.js';

const deadlock = () => Object.assign(new Error('Deadlock found when trying to get lock'), { parent: { errno: 1213 } });

describe('retrying a transaction InnoDB chose to break a deadlock', () => {
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

import { expect } from 'chai';
import { startedByThisProcess, up, type LocalService } from '../../../scripts/services/index.js';

function fake(name: LocalService['name'], events: string[], fails = false): LocalService {
  return {
    name,
    externalWhen: [`FAKE_${name.toUpperCase()}_URL`],
    install: () => undefined,
    isUp: () => Promise.resolve(false),
    start() {
      events.push(`start ${name}`);
      return fails ? Promise.reject(new Error(`${name} would not start`)) : Promise.resolve();
    },
    stop() {
      events.push(`stop ${name}`);
      return Promise.resolve([]);
    },
    env: () => ({ [`FAKE_${name.toUpperCase()}_URL`]: `fake://${name}` }),
  };
}

describe('services up', () => {
  it('stops what it started when another service fails to start, then fails', async () => {
    const events: string[] = [];
    const before = startedByThisProcess.bench.length;
    const err = await up('bench', undefined, [fake('redis', events), fake('clamd', events, true)]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.equal('clamd would not start');
    expect(events.filter((e) => e.startsWith('stop')).sort()).to.deep.equal(['stop clamd', 'stop redis']);
    // Remembered as started by this process, for a caller interrupted mid-start.
    expect(startedByThisProcess.bench.slice(before)).to.include.members(['redis', 'clamd']);
    startedByThisProcess.bench.splice(before);
  });

  it('skips a service the environment points at', async () => {
    const events: string[] = [];
    process.env.FAKE_REDIS_URL = 'redis://elsewhere';
    try {
      const { env, started } = await up('bench', undefined, [fake('redis', events)]);
      expect(started).to.deep.equal([]);
      expect(env).to.deep.equal({});
      expect(events).to.deep.equal([]);
    } finally {
      delete process.env.FAKE_REDIS_URL;
    }
  });

  it('starts a service that is not run by default only when named (the EVM chain: tests, or NOTARIZATION_ANCHOR=evm)', async () => {
    const events: string[] = [];
    const optional = {
      ...fake('evm', events),
      byDefault: (profile: string, env: NodeJS.ProcessEnv) => profile === 'test' || env.NOTARIZATION_ANCHOR === 'evm',
    };
    expect((await up('bench', undefined, [fake('redis', events), optional])).started).to.deep.equal(['redis']);
    expect((await up('bench', ['evm'], [fake('redis', events), optional])).started).to.deep.equal(['evm']);
    expect((await up('test', undefined, [optional])).started).to.deep.equal(['evm']);
    startedByThisProcess.bench.splice(0);
    startedByThisProcess.test.splice(0);
  });
});

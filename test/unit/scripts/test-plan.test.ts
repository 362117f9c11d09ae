// What `npm test` runs: its arguments, the suite's files, the quick check, the files that run alone.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { aloneBecause, longestFirst, parseTestArgs, quickFiles, suiteFiles } from '../../../scripts/test-plan.js';
import { workerNames } from '../../support/worker-world.js';

describe('npm test: what it runs', () => {
  it('runs the whole suite on production\'s Node by default; --node picks runtimes in order, ":quick" or --quick the quick check', () => {
    expect(parseTestArgs([])).to.deep.equal({ runs: [{ runtime: 'production', quick: false }], jobs: undefined, files: [], mochaArgs: [] });
    expect(parseTestArgs(['--node', 'production', '--node', 'current:quick']).runs).to.deep.equal([
      { runtime: 'production', quick: false },
      { runtime: 'current', quick: true },
    ]);
    expect(parseTestArgs(['--node=20', '--quick']).runs).to.deep.equal([{ runtime: '20', quick: true }]);
    expect(parseTestArgs(['--quick']).runs).to.deep.equal([{ runtime: 'production', quick: true }]);
  });

  it('takes --jobs, gives mocha the rest, and tells the test files named (those that exist) from the values of options', () => {
    const { jobs, files, mochaArgs } = parseTestArgs(['--jobs', '1', '--grep', 'webhook', '--bail', 'test/integration/log.test.ts']);
    expect(jobs).to.equal(1);
    expect(files).to.deep.equal(['test/integration/log.test.ts']);
    expect(mochaArgs).to.deep.equal(['--grep', 'webhook', '--bail']);
    // A value that is no test file is an option's.
    expect(parseTestArgs(['--grep', 'a.test.ts'])).to.deep.include({ files: [], mochaArgs: ['--grep', 'a.test.ts'] });
  });

  it('refuses a --node without a runtime or with another mode, and a --jobs that is not a whole number above 0', () => {
    expect(() => parseTestArgs(['--node'])).to.throw(/--node needs a value/);
    expect(() => parseTestArgs(['--node', '--quick'])).to.throw(/--node needs a value/);
    expect(() => parseTestArgs(['--node', '24:fast'])).to.throw(/--node 24:fast: expected a runtime/);
    expect(() => parseTestArgs(['--node', ':quick'])).to.throw(/expected a runtime/);
    for (const bad of ['0', '1.5', 'two']) expect(() => parseTestArgs(['--jobs', bad])).to.throw(/--jobs/);
  });

  it('finds every test file, the unit suite first; the quick check is the unit suite and the start test', () => {
    const all = suiteFiles();
    expect(all).to.include('test/unit/scripts/test-plan.test.ts');
    expect(all).to.include('test/integration/start.test.ts');
    const firstIntegration = all.findIndex((f) => f.startsWith('test/integration/'));
    expect(all.slice(0, firstIntegration).every((f) => f.startsWith('test/unit/'))).to.equal(true);
    expect(all.slice(firstIntegration).every((f) => f.startsWith('test/integration/'))).to.equal(true);
    const quick = quickFiles(all);
    expect(quick.filter((f) => !f.startsWith('test/unit/'))).to.deep.equal(['test/integration/start.test.ts']);
    expect(quick.length).to.equal(firstIntegration + 1);
  });

  it('reads why a file must run alone from its own line, and only from a line of its own', () => {
    expect(aloneBecause("// Something.\n// npm test: alone (it pauses the run's MariaDB)\nimport x;\n")).to.equal("it pauses the run's MariaDB");
    expect(aloneBecause('// npm test: alone\n')).to.equal(undefined);
    expect(aloneBecause('const s = "// npm test: alone (no)";\n')).to.equal(undefined);
    // The suite's own: each says why.
    const alone = suiteFiles().filter((f) => aloneBecause(readFileSync(f, 'utf8')));
    expect(alone).to.include('test/integration/database-limits.test.ts');
  });

  it('gives the parallel workers the longest files first, those it has no duration of after, in their order', () => {
    expect(longestFirst(['a', 'b', 'c', 'd', 'e'], { b: 3, d: 30, e: 0.5 })).to.deep.equal(['d', 'b', 'e', 'a', 'c']);
    expect(longestFirst(['a', 'b'], {})).to.deep.equal(['a', 'b']);
    // The project's durations name files of the suite.
    const durations = JSON.parse(readFileSync('test/durations.json', 'utf8')) as Record<string, number>;
    expect(Object.keys(durations).filter((f) => !suiteFiles().includes(f))).to.deep.equal([]);
  });

  it("gives each parallel worker names of its own from the run's: database, queue prefix, log bucket and documents bucket", () => {
    const run = { DATABASE_URL: 'mysql://u:p@127.0.0.1:3307/registry_test?x=1', QUEUE_PREFIX: 'test-17', S3_BUCKET: 'docs', LOG_S3_BUCKET: 'docs-log-17' };
    const [one, two] = [workerNames(run, '1'), workerNames(run, '2')];
    expect(one).to.deep.equal({
      databaseUrl: 'mysql://u:p@127.0.0.1:3307/registry_test_w1?x=1',
      queuePrefix: 'test-17-w1',
      logBucket: 'docs-log-17-w1',
      bucket: 'docs-w1',
    });
    for (const key of Object.keys(one) as Array<keyof typeof one>) expect(two[key], key).to.not.equal(one[key]);
    expect(() => workerNames(run, '1; DROP')).to.throw(/MOCHA_WORKER_ID/);
  });
});

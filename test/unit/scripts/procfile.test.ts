import { expect } from 'chai';
import { flagsOf, procfileFlags } from '../../../scripts/procfile.js';

describe('the Procfile flags that benchmarks and tests start processes with', () => {
  const text = 'web: node --max-old-space-size=256 --no-maglev dist/src/server.js\nworker: node dist/workers/index.js\nrelease: node dist/src/cli.js migrate\n';

  it("reads a process's node flags, and none when it has none", () => {
    expect(flagsOf(text, 'web')).to.deep.equal(['--max-old-space-size=256', '--no-maglev']);
    expect(flagsOf(text, 'worker')).to.deep.equal([]);
  });

  it('refuses a Procfile without the process, rather than starting it without flags', () => {
    expect(() => flagsOf('release: node dist/src/cli.js migrate\n', 'web')).to.throw('the Procfile has no "web: node ..." line');
    expect(() => flagsOf('web: bin/server\n', 'web')).to.throw('the Procfile has no "web: node ..." line');
  });

  it("reads the project's own Procfile: the web process has a heap limit", () => {
    expect(procfileFlags('web').some((f) => f.startsWith('--max-old-space-size='))).to.equal(true);
  });
});

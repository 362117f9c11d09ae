// The documentation is tested: the README's quick start runs as written (its shell blocks, taken
// from the README itself) against the test servers, with the workers running, so that the README
// cannot drift from the product; every link between the README and docs/ resolves (the file, and
// the heading an anchor names); and nothing cites a file outside the project.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';
import { serve, type Served } from '../support/browser.js';
import { configWith, FAST_PIPELINE, harness, newOrg } from '../support/harness.js';
import { freePort } from '../support/tcp-proxy.js';

const run = promisify(execFile);
const DOCS = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const headings = (file: string) =>
  new Set(
    readFileSync(file, 'utf8')
      .replace(/```[\s\S]*?```/g, '')
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => slug(l.replace(/^#+ /, ''))),
  );

/** The shell blocks of the README's quick start, in order. */
function quickStart(): string {
  const readme = readFileSync('README.md', 'utf8');
  const start = readme.indexOf('\n## Quick start');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).join('\n');
}

describe('the documentation', function () {
  this.timeout(240_000);

  it('links between the README and docs/ resolve, to the file and the heading; nothing outside the project is cited; the README stays short', () => {
    const broken: string[] = [];
    for (const file of DOCS) {
      const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|mailto:)/.test(target as string)) continue;
        const [path, anchor] = (target as string).split('#') as [string, string | undefined];
        const to = path ? resolve(dirname(file), path) : resolve(file);
        if (!existsSync(to)) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && to.endsWith('.md') && !headings(to).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
      }
      expect(text, file).not.to.match(/shared\/(seed|design)|CONTRACT\.md|beyond the seed/i);
    }
    expect(broken).to.deep.equal([]);
    expect(readFileSync('README.md', 'utf8').split('\n').length).to.be.at.most(220);
    // Each guide says first who it is for.
    for (const file of DOCS.filter((f) => f.startsWith('docs/'))) expect(readFileSync(file, 'utf8').split('\n\n')[1], file).to.match(/^(For|Per) /);
  });

  it('serves an API reference that stands on its own: no "beyond the seed", every event type named', async () => {
    const { http } = await harness();
    const doc = JSON.stringify((await http.get('/openapi.json')).body);
    expect(doc).not.to.match(/seed|CONTRACT/);
    for (const type of ['guarantee.beneficiary_linked', 'guarantee.demanded', 'guarantee.amendment_pending', 'guarantee.amendment_answered'])
      expect(doc).to.include(type);
  });

  describe("the README's quick start, as written", () => {
    let app: Served;
    let workers: RunningWorkers;
    const settings = { ...FAST_PIPELINE, NOTARIZATION_INTERVAL_MS: '500', LOG_CHECKPOINT_INTERVAL_MS: '300' };

    before(async () => {
      app = await serve(settings);
      workers = await startWorkers(['scan', 'signature', 'notarization', 'webhooks'], {
        config: configWith({ ...settings, PUBLIC_BASE_URL: app.origin }),
        logger: createLogger('silent'),
      });
    });
    after(async () => {
      await workers?.close();
      app?.server.close();
    });

    it('uploads, registers, notarizes, verifies (the API and the proof offline), amends, and receives signed webhooks', async () => {
      const { key } = await newOrg();
      const port = await freePort();
      const script = quickStart()
        .replaceAll('localhost:3000', app.origin.replace('http://', ''))
        .replaceAll('127.0.0.1:4000', `127.0.0.1:${port}`)
        .replaceAll('.listen(4000)', `.listen(${port})`)
        // A reader takes seconds between steps; the script, none: the last deliveries get them before the receiver stops.
        .replace('kill %1', 'sleep 3; kill %1');
      expect(script, 'the quick start names each step').to.include('/api/v2/presigned-url').and.include('/amendments').and.include('cli -- verify');
      const { stdout, stderr } = await run('bash', ['-ec', `${script}\nwait`], {
        env: { ...process.env, KEY: key, NODE_NO_WARNINGS: '1' },
        timeout: 200_000,
        maxBuffer: 1 << 24,
      }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`the quick start failed: ${err.message}\n--- stdout\n${err.stdout ?? ''}\n--- stderr\n${err.stderr ?? ''}`);
      });
      const out = `${stdout}\n${stderr}`;
      expect(stdout).to.include('204').and.include('"Clean"').and.include('COMPLETE').and.include('"verifiable":true');
      expect(stdout).to.match(/: ACTIVE/);
      expect(stdout).to.include('"lastSeq":1');
      expect(out).to.match(/\bverified\b/);
      for (const type of ['guarantee.created', 'file.status.changed', 'guarantee.notarized', 'guarantee.verified', 'guarantee.amended'])
        expect(stdout, type).to.include(`webhook verified: ${type}`);
      expect(stdout).not.to.include('REFUSED');
    });
  });
});

// A guide not linked from the README is a guide nobody finds.
describe('the guides', () => {
  it('are each linked from the README', () => {
    const readme = readFileSync('README.md', 'utf8');
    for (const f of readdirSync('docs').filter((x) => x.endsWith('.md'))) expect(readme, f).to.include(`](${join('docs', f)})`);
  });
});

import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/shared/logger.js';

describe('logger', () => {
  it('redacts API keys, authorization headers and secrets', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger('info', sink);
    logger.info(
      { req: { headers: { 'x-api-key': 'grk_secretvalue', authorization: 'Bearer grk_x' } }, apiKey: 'k1', key: 'k2', secret: 'whsec_1', password: 'p' },
      'hello',
    );
    const line = lines.join('');
    for (const leaked of ['grk_secretvalue', 'Bearer grk_x', 'k1', 'k2', 'whsec_1', '"p"']) expect(line).to.not.include(leaked);
    expect(JSON.parse(line)).to.include({ msg: 'hello', apiKey: '[redacted]' });
  });
});

// The API process's buffered destination (LOG_BUFFER_BYTES, LOG_FLUSH_INTERVAL_MS): no line may
// be held for ever, in a process that stays quiet or in one that exits.
describe('logger, buffered stdout', () => {
  const loggerUrl = new URL('../../../src/shared/logger.ts', import.meta.url).href;

  function child(script: string) {
    return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `import { createLogger } from ${JSON.stringify(loggerUrl)};\n${script}`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
  }

  it('writes a line of a process that stays quiet within the flush interval', async function () {
    this.timeout(15_000);
    // The child logs one short line and then waits a minute: the line must come without an exit.
    const proc = child("createLogger('info', undefined, { buffered: true }).info('quiet line'); setTimeout(() => {}, 60_000);");
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let out = '';
        proc.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          if (out.includes('\n')) resolve(out);
        });
        proc.once('exit', (code) => reject(new Error(`child exited (${code}) before writing: ${out}`)));
      });
      expect(JSON.parse(line)).to.include({ msg: 'quiet line' });
    } finally {
      proc.kill('SIGKILL');
    }
  });

  it('writes every pending line when the process exits at once', async function () {
    this.timeout(15_000);
    const proc = child(
      "const log = createLogger('info', undefined, { buffered: true }); for (let i = 0; i < 50; i++) log.info({ i }, 'line'); process.exit(3);",
    );
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => proc.once('close', resolve));
    expect(code).to.equal(3);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { i: number });
    expect(lines.map((l) => l.i)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i));
  });
});

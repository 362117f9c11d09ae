import { expect } from 'chai';
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

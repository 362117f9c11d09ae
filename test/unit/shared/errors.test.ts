import { expect } from 'chai';
import { z } from 'zod';
import { toAppError } from '../../../src/shared/http/error-handler.js';
import { problemsOf } from '../../../src/shared/validation.js';

describe('error mapping', () => {
  it('makes database connection faults a 503 and unknown faults a 500 that exposes nothing', () => {
    const unavailable = Object.assign(new Error('connect ECONNREFUSED'), { name: 'SequelizeConnectionRefusedError' });
    expect(toAppError(unavailable).status).to.equal(503);
    const bug = toAppError(new TypeError('x is undefined'));
    expect(bug.status).to.equal(500);
    expect(bug.expose).to.equal(false);
  });

  it('turns zod issues into RFC 6901 pointers, escaping ~ and /', () => {
    const schema = z.strictObject({ 'a/b': z.strictObject({ 'c~d': z.number() }) });
    const result = schema.safeParse({ 'a/b': { 'c~d': 'x', extra: 1 } });
    expect(result.success).to.equal(false);
    if (!result.success) {
      expect(
        problemsOf(result.error)
          .map((p) => p.pointer)
          .sort(),
      ).to.deep.equal(['#/a~1b/c~0d', '#/a~1b/extra']);
    }
  });
});

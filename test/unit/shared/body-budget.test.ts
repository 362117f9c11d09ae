import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import type { Context } from 'koa';
import { createBodyBudget } from '../../../src/shared/http/body-budget.js';
import { RateLimitedError, UnavailableError } from '../../../src/shared/errors.js';

const MiB = 1024 * 1024;

/** The part of a Koa context the budget reads and writes. */
function request(headers: Record<string, string>): Context & { sent: Record<string, string>; req: EventEmitter } {
  const sent: Record<string, string> = {};
  return {
    get: (name: string) => headers[name.toLowerCase()] ?? '',
    set: (name: string, value: string) => {
      sent[name] = value;
    },
    sent,
    req: new EventEmitter(),
  } as unknown as Context & { sent: Record<string, string>; req: EventEmitter };
}

describe('bodies in flight (createBodyBudget)', () => {
  const limits = { processBytes: 3 * MiB, perOwnerBytes: 2 * MiB, maxBodyBytes: MiB };

  it('counts each body while its request runs, refuses an owner over its share (429) and the process over its total (503), closing the connection', async () => {
    const budget = createBodyBudget(limits);
    const gates: Array<() => void> = [];
    const hold = () =>
      new Promise<void>((resolve) => {
        gates.push(resolve);
      });
    const running = [
      budget.within(request({ 'content-length': String(MiB) }), 'a', hold),
      budget.within(request({ 'content-length': String(MiB) }), 'a', hold),
    ];
    expect(budget.inFlight()).to.equal(2 * MiB);
    const third = request({ 'content-length': '10' });
    let err: unknown;
    await budget
      .within(third, 'a', () => Promise.resolve())
      .catch((e: unknown) => {
        err = e;
      });
    expect(err).to.be.instanceOf(RateLimitedError);
    expect(third.sent.Connection).to.equal('close');
    // A chunked body of unknown length counts as the largest a route reads.
    running.push(budget.within(request({ 'transfer-encoding': 'chunked' }), 'b', hold));
    expect(budget.inFlight()).to.equal(3 * MiB);
    err = undefined;
    await budget
      .within(request({ 'content-length': '10' }), 'c', () => Promise.resolve())
      .catch((e: unknown) => {
        err = e;
      });
    expect(err).to.be.instanceOf(UnavailableError);
    for (const open of gates) open();
    await Promise.all(running);
    expect(budget.inFlight()).to.equal(0);
  });

  it('lets through requests without a body, and bodies over the route limit (answered 413 unread), without counting them', async () => {
    const budget = createBodyBudget(limits);
    let ran = 0;
    await budget.within(request({}), 'a', () => {
      ran++;
      expect(budget.inFlight()).to.equal(0);
      return Promise.resolve();
    });
    await budget.within(request({ 'content-length': String(5 * MiB) }), 'a', () => {
      ran++;
      expect(budget.inFlight()).to.equal(0);
      return Promise.resolve();
    });
    expect(ran).to.equal(2);
  });

  it('gives the share back as soon as the body is received, while the request goes on', async () => {
    const budget = createBodyBudget(limits);
    const ctx = request({ 'content-length': String(MiB) });
    let received = 0;
    await budget.within(ctx, 'a', async () => {
      expect(budget.inFlight()).to.equal(MiB);
      ctx.req.emit('end');
      received = budget.inFlight();
      await Promise.resolve();
    });
    expect(received).to.equal(0);
    expect(budget.inFlight()).to.equal(0);
  });

  it('gives the share back when the request fails', async () => {
    const budget = createBodyBudget(limits);
    await budget.within(request({ 'content-length': '100' }), 'a', () => Promise.reject(new Error('boom'))).catch(() => undefined);
    expect(budget.inFlight()).to.equal(0);
  });
});

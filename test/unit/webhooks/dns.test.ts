import { expect } from 'chai';
import { pbkdf2 } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import { dnsResolver } from '../../../src/webhooks/ssrf.js';

/** A name server that takes every query and never answers (dead upstream, a firewall dropping replies). */
async function silentNameServer(): Promise<{ address: string; queries: () => number; close(): void }> {
  const socket: Socket = createSocket('udp4');
  let queries = 0;
  socket.on('message', () => {
    queries += 1;
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { address: `127.0.0.1:${socket.address().port}`, queries: () => queries, close: () => socket.close() };
}

const threadPoolTask = () =>
  new Promise<void>((resolve, reject) => {
    pbkdf2('x', 'y', 1, 32, 'sha256', (err) => (err ? reject(err) : resolve()));
  });

describe('webhook name resolution (dnsResolver)', () => {
  it("gives up on a name server that never answers within its time limit, without holding libuv's thread pool", async () => {
    const server = await silentNameServer();
    try {
      const resolve = dnsResolver({ timeoutMs: 600, servers: [server.address] });
      const started = Date.now();
      // More lookups than the pool has threads (4): dns.lookup (getaddrinfo) would hold them all.
      const lookups = Array.from({ length: 8 }, (_, i) =>
        resolve(`tenant-${i}.example.test`).then(
          () => 'resolved',
          (err: Error) => err.message,
        ),
      );
      // Meanwhile, work on the thread pool (what database and Redis connects, file reads and crypto share) goes through at once.
      const poolStart = Date.now();
      await Promise.all(Array.from({ length: 8 }, threadPoolTask));
      expect(Date.now() - poolStart).to.be.below(300);
      const outcomes = await Promise.all(lookups);
      const took = Date.now() - started;
      expect(outcomes.every((o) => o !== 'resolved')).to.equal(true);
      expect(outcomes.join(' ')).to.match(/no answer|ETIMEOUT|timeout/i);
      expect(took).to.be.within(300, 2000);
      expect(server.queries()).to.be.at.least(8);
    } finally {
      server.close();
    }
  });

  it('answers localhost as loopback without a query (RFC 6761)', async () => {
    const server = await silentNameServer();
    try {
      const addresses = await dnsResolver({ timeoutMs: 200, servers: [server.address] })('localhost');
      expect(addresses.map((a) => a.address)).to.deep.equal(['127.0.0.1', '::1']);
      expect(server.queries()).to.equal(0);
    } finally {
      server.close();
    }
  });
});

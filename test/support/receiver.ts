// A real local webhook receiver: an HTTP server on loopback that records every request
// (headers and the body as received) and answers as the test says.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

export type Answer = (req: Received, res: ServerResponse, n: number) => void | Promise<void>;

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Requests being answered right now, and the most at once so far. */
  inFlight: () => number;
  maxInFlight: () => number;
  answer(fn: Answer): void;
  /** Waits until `n` requests arrived (fails after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export const ok: Answer = (_req, res) => {
  res.writeHead(204).end();
};

export async function receiver(path = '/hook', host = '127.0.0.1'): Promise<Receiver> {
  const received: Received[] = [];
  let handler: Answer = ok;
  let current = 0;
  let max = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      current++;
      max = Math.max(max, current);
      // Counted until the answer is handed to the socket ('finish'; 'close' if it never is).
      let done = false;
      const leave = () => {
        if (!done) {
          done = true;
          current--;
        }
      };
      res.on('finish', leave);
      res.on('close', leave);
      void Promise.resolve(handler(r, res, received.length)).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://${host}:${port}${path}`,
    port,
    received,
    inFlight: () => current,
    maxInFlight: () => max,
    answer(fn) {
      handler = fn;
    },
    async waitFor(n, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > until) throw new Error(`receiver got ${received.length} requests, not ${n}, within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return received;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

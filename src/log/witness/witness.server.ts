// The witness over HTTP (tlog-witness v1.0.0): POST /add-checkpoint; GET /key (its verifier key,
// for the logs and verifiers that pin it); GET /healthz. A process of its own, run by whoever
// witnesses the registry (`npm run -s cli -- witness serve`, the Procfile's `witness`).
import { createServer, type Server } from 'node:http';
import type { Witness } from './witness.js';
import { MAX_REQUEST_BYTES } from './witness.js';

export function createWitnessServer(witness: Witness, verifierKey: string): Server {
  const server = createServer((req, res) => {
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(body);
    };
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return send(200, 'ok\n');
    if (req.method === 'GET' && path === '/key') return send(200, `${verifierKey}\n`);
    if (path !== '/add-checkpoint') return send(404, 'not found\n');
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return send(405, 'POST only\n');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES && !refused) {
        refused = true;
        send(413, 'request too large\n');
        req.destroy();
      } else if (!refused) chunks.push(c);
    });
    req.on('end', () => {
      if (refused) return;
      const body = Buffer.concat(chunks);
      const text = body.toString('utf8');
      if (!Buffer.from(text, 'utf8').equals(body)) return send(400, 'malformed request: not UTF-8\n');
      witness.addCheckpoint(text).then(
        (a) => send(a.status, a.body, a.contentType),
        () => send(500, 'the witness could not keep its state\n'),
      );
    });
  });
  // A client that stalls is cut off: the witness answers every log in turn.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  return server;
}

// A TCP relay to a real server (clamd), for tests that need it unreachable for a while or slow:
// the server itself is real, only the path to it is controlled.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';

export interface TcpProxy {
  port: number;
  /** Starts accepting (on the same port) after `stop()`. */
  start(): Promise<void>;
  /** Refuses new connections and cuts the open ones. */
  stop(): Promise<void>;
  /**
   * Hangs: connections are accepted (new and open ones) but nothing more is forwarded either
   * way, as a server that stopped answering without closing anything. `false` resumes for new
   * connections (the hung ones are cut).
   */
  stall(on?: boolean): void;
}

/** A free local port, nothing listening on it. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Limits a stream to about `bytesPerSecond`. */
function throttle(bytesPerSecond: number): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      setTimeout(() => cb(null, chunk), Math.ceil((chunk.length / bytesPerSecond) * 1000));
    },
  });
}

export async function tcpProxy(
  target: { host: string; port: number },
  opts: { port?: number; listening?: boolean; uploadBytesPerSecond?: number } = {},
): Promise<TcpProxy> {
  const port = opts.port ?? (await freePort());
  let server: Server | undefined;
  let stalled = false;
  const sockets = new Set<Socket>();
  const proxy: TcpProxy = {
    port,
    async start() {
      if (server) return;
      const s = createServer((client) => {
        if (stalled) {
          // Accepted, read and never answered.
          sockets.add(client);
          client.on('error', () => client.destroy());
          client.on('close', () => sockets.delete(client));
          client.resume();
          return;
        }
        const upstream = connect(target.port, target.host);
        sockets.add(client).add(upstream);
        for (const sock of [client, upstream]) {
          sock.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
          sock.on('close', () => {
            sockets.delete(sock);
            client.destroy();
            upstream.destroy();
          });
        }
        (opts.uploadBytesPerSecond ? client.pipe(throttle(opts.uploadBytesPerSecond)) : client).pipe(upstream);
        upstream.pipe(client);
      });
      await new Promise<void>((resolve) => s.listen(port, '127.0.0.1', resolve));
      server = s;
    },
    stall(on = true) {
      stalled = on;
      for (const sock of sockets) {
        if (on) {
          sock.unpipe();
          sock.pause();
        } else sock.destroy();
      }
    },
    async stop() {
      const s = server;
      server = undefined;
      for (const sock of sockets) sock.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
  if (opts.listening !== false) await proxy.start();
  return proxy;
}

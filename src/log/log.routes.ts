// The transparency log over HTTP, as tlog-tiles lays it out: GET /log/checkpoint (the latest
// checkpoint with its cosignatures), /log/key (the log's verifier key), /log/tile/<L>/<N>[.p/<W>]
// and /log/tile/entries/<N>[.p/<W>]. The tiles are read from the log's rows, the same bytes as
// the objects in the log's bucket (which any static host or CDN can serve as well): an indexed
// range of at most 256 rows answers faster than the store (docs/benchmarks.md). Tiles never
// change: full ones are kept in memory here once read.
import type { Router } from '@koa/router';
import { Gauge, type Registry } from 'prom-client';
import { NotFoundError } from '../shared/errors.js';
import type { LogService } from './log.service.js';
import { parseTilePath } from './tiles.js';
import { CACHE } from './tile-store.js';
import { TILE_WIDTH } from './tree.js';

/** Bytes of full tiles kept in memory by a web process. */
const CACHE_BYTES = 32 * 1024 * 1024;

function tileCache(maxBytes: number) {
  const tiles = new Map<string, Uint8Array>();
  let bytes = 0;
  return {
    get(path: string): Uint8Array | undefined {
      const hit = tiles.get(path);
      if (hit) {
        tiles.delete(path);
        tiles.set(path, hit);
      }
      return hit;
    },
    set(path: string, tile: Uint8Array): void {
      if (tiles.has(path) || tile.length > maxBytes) return;
      tiles.set(path, tile);
      bytes += tile.length;
      for (const [k, v] of tiles) {
        if (bytes <= maxBytes) break;
        tiles.delete(k);
        bytes -= v.length;
      }
    },
  };
}

export function registerLogRoutes<S>(router: Router<S>, deps: { log: LogService; registry?: Registry }): void {
  const { log } = deps;
  const cache = tileCache(CACHE_BYTES);

  router.get('/log/checkpoint', async (ctx) => {
    const note = await log.checkpoint();
    if (!note) throw new NotFoundError('The log has no checkpoint yet.');
    ctx.type = 'text/plain; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = note;
  });

  router.get('/log/key', async (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = `${await log.verifierKey()}\n`;
  });

  router.get('/log/tile/*path', async (ctx) => {
    const path = ctx.path.slice('/log/'.length);
    const tile = parseTilePath(path);
    if (!tile) throw new NotFoundError('No such tile: tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>], N in groups of three digits (x001/234).');
    let bytes = cache.get(path);
    if (!bytes) {
      bytes = await log.tile(tile);
      if (!bytes) throw new NotFoundError('No such tile (yet).');
      if (tile.width === TILE_WIDTH) cache.set(path, bytes);
    }
    ctx.type = 'application/octet-stream';
    ctx.set('Cache-Control', CACHE.immutable);
    ctx.body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  });

  if (deps.registry) {
    new Gauge({
      name: 'registry_log_witness_up',
      help: "1 when the witness cosigned the log's latest checkpoint it was sent, 0 while it is down or refuses",
      labelNames: ['witness'],
      registers: [deps.registry],
      async collect() {
        this.reset();
        for (const w of await log.witnessStates().catch(() => [])) this.set({ witness: w.name }, w.up ? 1 : 0);
      },
    });
  }
}

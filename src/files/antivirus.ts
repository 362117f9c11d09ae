// clamd through clamscan: one pass over a stream sends it to clamd (INSTREAM) and hashes it,
// with backpressure, so memory stays flat whatever the file's size. A verdict is returned only
// when clamd gave one; anything else (clamd unreachable, a dropped connection, an unexpected
// answer, a timeout) throws ScannerUnavailableError, so that the caller retries: never a false
// Clean. A file that exceeds clamd's limits is reported as a threat (clamd runs with
// AlertExceedsMax, and a refused over-long stream is mapped here), never as Clean.
import { createHash } from 'node:crypto';
import { Transform, Writable, type Readable } from 'node:stream';
import NodeClam, { type ScanResult } from 'clamscan';

export type ScanVerdict =
  | { infected: false; sha256: string; bytes: number }
  /** The hash is of the whole input, or absent when clamd stopped the stream early. */
  | { infected: true; threat: string; sha256?: string; bytes: number };

export interface Antivirus {
  /** Scans and hashes the stream in one pass; consumes (and on failure destroys) it. */
  scan(input: Readable): Promise<ScanVerdict>;
  /** Engine and signature-database version, e.g. "ClamAV 1.4.3/27822/Fri Nov 20 08:33:51 2026". */
  version(): Promise<string>;
}

export interface ClamdAddress {
  socket?: string | undefined;
  host?: string | undefined;
  port?: number | undefined;
}

export class ScannerUnavailableError extends Error {
  override readonly name = 'ScannerUnavailableError';
}

/** clamd's answer when a stream is longer than its StreamMaxLength: the file could not be fully scanned. */
const STREAM_LIMIT = /size limit exceeded/i;
export const STREAM_LIMIT_THREAT = 'Heuristics.Limits.Exceeded.StreamMaxLength';

/** clamd's VERSION answer is asked again after this long (a database update changes it). */
const VERSION_TTL_MS = 60_000;

export function createAntivirus(address: ClamdAddress, opts: { timeoutMs: number }): Antivirus {
  let clam: Promise<NodeClam> | undefined;
  let cachedVersion: { value: string; at: number } | undefined;

  // init() pings clamd, so a failed init is forgotten and tried again on the next scan.
  function client(): Promise<NodeClam> {
    clam ??= new NodeClam()
      .init({
        removeInfected: false,
        preference: 'clamdscan',
        clamscan: { active: false },
        clamdscan: {
          socket: address.socket ?? false,
          host: address.socket ? false : (address.host ?? false),
          port: address.socket ? false : (address.port ?? false),
          timeout: opts.timeoutMs,
          localFallback: false,
          active: true,
        },
      })
      .catch((err: unknown) => {
        clam = undefined;
        throw new ScannerUnavailableError(`clamd unreachable: ${messageOf(err)}`);
      });
    return clam;
  }

  return {
    async scan(input) {
      let av: NodeClam;
      try {
        av = await client();
      } catch (err) {
        input.destroy();
        throw err;
      }
      return scanWith(av, input, opts.timeoutMs);
    },

    async version() {
      if (cachedVersion && Date.now() - cachedVersion.at < VERSION_TTL_MS) return cachedVersion.value;
      let raw: string;
      try {
        raw = await (await client()).getVersion();
      } catch (err) {
        throw err instanceof ScannerUnavailableError ? err : new ScannerUnavailableError(`clamd VERSION failed: ${messageOf(err)}`);
      }
      // The answer is NUL- or newline-terminated; an empty one means clamd dropped the connection.
      const value = String(raw)
        .replace(/[\0\r\n]+$/g, '')
        .trim();
      if (!value.startsWith('ClamAV')) throw new ScannerUnavailableError(`unexpected clamd VERSION answer: ${JSON.stringify(value.slice(0, 80))}`);
      cachedVersion = { value, at: Date.now() };
      return value;
    },
  };
}

/**
 * The bytes sent to clamd in blocks of this size. A store's response arrives in socket-sized
 * chunks (16-64 KiB) and clamscan writes each as an INSTREAM chunk of its own, in two socket
 * writes (length, then data): measured, those writes were the worker's largest CPU cost per
 * file. Blocks of 256 KiB make a sixteenth as many writes for clamd to read too, and hold at
 * most 256 KiB per stream.
 */
export const INSTREAM_BLOCK = 256 * 1024;

/** Regroups a stream's chunks into blocks of `size` bytes (the last one shorter). */
export function blocks(size: number): Transform {
  let held: Buffer[] = [];
  let heldBytes = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      held.push(chunk);
      heldBytes += chunk.length;
      if (heldBytes >= size) {
        const all = Buffer.concat(held, heldBytes);
        let offset = 0;
        for (; all.length - offset >= size; offset += size) this.push(all.subarray(offset, offset + size));
        held = offset < all.length ? [all.subarray(offset)] : [];
        heldBytes = all.length - offset;
      }
      cb();
    },
    flush(cb) {
      if (heldBytes) this.push(Buffer.concat(held, heldBytes));
      cb();
    },
  });
}

function scanWith(av: NodeClam, input: Readable, timeoutMs: number): Promise<ScanVerdict> {
  return new Promise<ScanVerdict>((resolve, reject) => {
    const hash = createHash('sha256');
    let bytes = 0;
    let result: ScanResult | undefined;
    let hashed = false;
    let settled = false;

    const regroup = blocks(INSTREAM_BLOCK);
    const pass = av.passthrough();
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        bytes += chunk.length;
        cb();
      },
    });

    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      input.unpipe(regroup);
      regroup.unpipe(pass);
      pass.unpipe(sink);
      for (const s of [input, regroup, pass, sink]) if (!s.destroyed) s.destroy();
      fn();
    };
    const fail = (err: unknown) => finish(() => reject(err instanceof ScannerUnavailableError ? err : toUnavailable(err)));

    // Both clamd's answer and the end of the hashing are needed for a Clean verdict; either may come first.
    const settleIfDone = () => {
      if (!result) return;
      if (result.isInfected === true) {
        const threat = result.viruses.filter(Boolean).join(', ') || 'unnamed threat';
        const digest = hashed ? hash.digest('hex') : undefined;
        finish(() => resolve({ infected: true, threat, bytes, ...(digest && { sha256: digest }) }));
      } else if (result.isInfected === false) {
        if (hashed) finish(() => resolve({ infected: false, sha256: hash.digest('hex'), bytes }));
      } else {
        fail(new ScannerUnavailableError(`clamd gave no verdict: ${JSON.stringify((result.resultString ?? '').slice(0, 120))}`));
      }
    };

    const timer = setTimeout(() => fail(new ScannerUnavailableError(`scan timed out after ${timeoutMs} ms`)), timeoutMs);

    pass.on('scan-complete', (r: ScanResult) => {
      result = r;
      settleIfDone();
    });
    pass.on('error', (err: unknown) => {
      // clamd refusing an over-long stream means the file could not be fully scanned: never Clean.
      if (STREAM_LIMIT.test(messageOf(err))) {
        result = { isInfected: true, viruses: [STREAM_LIMIT_THREAT] };
        settleIfDone();
      } else fail(err);
    });
    input.on('error', fail);
    regroup.on('error', fail);
    sink.on('error', fail);
    sink.on('finish', () => {
      hashed = true;
      settleIfDone();
    });
    input.pipe(regroup).pipe(pass).pipe(sink);
  });
}

function toUnavailable(err: unknown): ScannerUnavailableError {
  return new ScannerUnavailableError(`scan failed: ${messageOf(err)}`);
}

function messageOf(err: unknown): string {
  if (err instanceof Error) {
    // clamscan's NodeClamError carries clamd's text in `data.error`.
    const data = (err as Error & { data?: { error?: unknown } }).data;
    return typeof data?.error === 'string' ? `${err.message} (${data.error})` : err.message;
  }
  return String(err);
}

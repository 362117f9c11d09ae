// pino, one JSON line per event. Credentials are redacted wherever they appear in a log object.
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

// Exact paths only: wildcard paths make pino walk every logged object, on every line.
export const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  'apiKey',
  'key',
  'secret',
  'password',
  'err.config.headers.authorization',
];

/** Lines are held until this many bytes are pending, or until the next periodic flush. */
export const LOG_BUFFER_BYTES = 4096;
/** The longest a line waits in the buffer when the process is quiet. */
export const LOG_FLUSH_INTERVAL_MS = 100;

/**
 * A logger writing to `destination`, by default stdout asynchronously: lines logged while a
 * write is in flight go out together in the next one, and what is pending is flushed when the
 * process exits (by `process.exit` or at the end of its event loop).
 *
 * `buffered` (the API process's request log): lines go out together once `LOG_BUFFER_BYTES`
 * are pending, or `LOG_FLUSH_INTERVAL_MS` after they were logged, whichever comes first (one
 * write for some 15 request lines under load, where one write per line cost the request path
 * about a fifth of its CPU on a loaded machine: docs/benchmarks.md, "Get by id"). Its price: a
 * process killed by SIGKILL loses up to its last 100 ms (4 KiB) of lines. Workers do not
 * buffer: a worker killed mid-job must not take the lines of the jobs it finished with it.
 *
 * `file`: the lines are appended to this file (made with its folder when missing) instead of
 * stdout: `npm start` keeps the API's and the workers' lines in .data/dev/api.log.
 */
export function createLogger(level: string, destination?: pino.DestinationStream, opts: { buffered?: boolean; file?: string } = {}): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ??
      pino.destination({
        dest: opts.file ?? 1,
        sync: false,
        ...(opts.file !== undefined && { append: true, mkdir: true }),
        ...(opts.buffered && { minLength: LOG_BUFFER_BYTES, periodicFlush: LOG_FLUSH_INTERVAL_MS }),
      }),
  );
}

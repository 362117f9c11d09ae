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

/**
 * A logger writing to `destination`, by default stdout asynchronously: lines logged while a
 * write is in flight go out together in the next one (one syscall for many lines under load,
 * at once when idle), and what is pending is flushed when the process exits.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
}

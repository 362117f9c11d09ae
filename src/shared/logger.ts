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

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  }, destination);
}

// Reusable zod building blocks for request validation, and the mapping of zod issues to
// RFC 9457 field problems (`#/details/actType`).
import { z } from 'zod';
import { ValidationError, type FieldProblem } from './errors.js';

/** A UUID as the service writes them (lower-case hex); ids and file keys are built on it. */
export const UUID_PATTERN = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

const UUID_ONLY = new RegExp(`^${UUID_PATTERN}$`);
/** Whether `s` is a UUID as the service writes them: an id in a path that is not one is a 404, never a query. */
export const isUuid = (s: string): boolean => UUID_ONLY.test(s);

const MIN_MS = Date.UTC(1000, 0, 1);
export const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * An RFC 3339 date-time with an offset (`Z` or `+01:00`), a real calendar date, within
 * DATETIME's years 1000–9999 once in UTC. Parsed to a Date: millisecond precision, extra
 * fraction digits are truncated.
 */
export const dateTime = z.iso
  .datetime({ offset: true, error: 'must be an RFC 3339 date-time with an offset, such as 2025-03-31T10:00:00Z' })
  .superRefine((value, ctx) => {
    const [, y, mo, d] = /^(\d{4})-(\d{2})-(\d{2})/.exec(value) ?? [];
    const calendar = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
    if (calendar.getUTCMonth() !== Number(mo) - 1 || calendar.getUTCDate() !== Number(d)) {
      ctx.addIssue({ code: 'custom', message: 'is not a real calendar date' });
      return;
    }
    const ms = Date.parse(value);
    if (!(ms >= MIN_MS && ms <= MAX_MS)) ctx.addIssue({ code: 'custom', message: 'must fall between the years 1000 and 9999 (UTC)' });
  })
  .transform((value) => new Date(value))
  .meta({ description: 'RFC 3339 date-time with an offset; stored in UTC with millisecond precision.', example: '2025-03-31T10:00:00Z' });

export const MAX_AMOUNT = 9_999_999_999_999.99;

/** Money: a finite number >= 0 with at most two decimals (never rounded), as DECIMAL(15,2) holds. */
export const money = z
  .number({ error: 'must be a number' })
  .refine((n) => Number.isFinite(n) && n >= 0, 'must be a number >= 0')
  .refine((n) => n <= MAX_AMOUNT, `must be at most ${MAX_AMOUNT}`)
  .refine((n) => /^\d+(\.\d{1,2})?$/.test(String(n)), 'must have at most two decimals')
  .meta({ description: 'Amount in euro: >= 0, at most two decimals.', example: 150000.5 });

/** A lone UTF-16 surrogate: not Unicode text, and not storable or hashable as such. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const text = (max = 255) =>
  z
    .string({ error: 'must be a string' })
    .max(max, `must be at most ${max} characters`)
    .refine((s) => !LONE_SURROGATE.test(s), 'must be well-formed Unicode text (it holds a lone surrogate)');

/** A value the service assigns itself: accepted in a request, and ignored. */
export const ignored = (description: string) =>
  z
    .unknown()
    .optional()
    .meta({ description: `${description} Assigned by the service: a value sent by the client is ignored.` });

function pointer(path: readonly PropertyKey[]): string {
  return `#/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;
}

/** Flattens zod issues into one problem per field (unknown keys each get their own). */
export function problemsOf(error: z.ZodError): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ pointer: pointer([...issue.path, key]), detail: 'is not a known field' });
    } else if (issue.code === 'invalid_union' || issue.code === 'invalid_type') {
      out.push({ pointer: pointer(issue.path), detail: issue.message.replace(/^Invalid input: expected (\w+), received (\w+)$/, 'must be $1, not $2') });
    } else {
      out.push({ pointer: pointer(issue.path), detail: issue.message });
    }
  }
  return out;
}

/** Parses `input` or throws a ValidationError listing every problem. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors = problemsOf(result.error);
  throw new ValidationError(`Invalid ${what}: ${errors.map((e) => `${e.pointer.slice(1) || '/'} ${e.detail}`).join('; ')}`, errors);
}

export const positiveInt = (name: string, max: number) =>
  z
    .string()
    .regex(/^[1-9]\d{0,15}$/, `${name} must be a whole number >= 1`)
    .transform(Number)
    .refine((n) => n <= max, `${name} must be at most ${max}`);

export const MAX_LIMIT = 100;

/** A query string is text, validated as such; the document shows the integer it stands for (generated clients then take numbers). */
export const asInteger =
  (maximum: number, fallback: number) =>
  ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
    for (const key of Object.keys(jsonSchema)) if (key !== 'description') delete jsonSchema[key];
    Object.assign(jsonSchema, { type: 'integer', minimum: 1, maximum, default: fallback });
  };

/** `?page=&limit=` of every list of the API: page from 1, limit 1 to MAX_LIMIT (default 10). */
export const pagingQuery = z.object({
  page: positiveInt('page', Number.MAX_SAFE_INTEGER)
    .default(1)
    .meta({ description: 'Page number, from 1.', override: asInteger(Number.MAX_SAFE_INTEGER, 1) }),
  limit: positiveInt('limit', MAX_LIMIT)
    .default(10)
    .meta({ description: `Items per page, 1 to ${MAX_LIMIT}.`, override: asInteger(MAX_LIMIT, 10) }),
});

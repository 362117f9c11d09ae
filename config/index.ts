// The service's configuration: read from the environment once, validated with zod, frozen.
// Nothing else in the project reads process.env. A bad or missing value stops the process at
// boot with one line per variable.
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, `must be between ${min} and ${max}`);

const optionalString = z.string().trim().min(1).optional().catch(undefined);
const nonEmpty = (what: string) =>
  z
    .string({ error: `is required (${what})` })
    .trim()
    .min(1, `is required (${what})`);

function isCidr(value: string): boolean {
  const [addr, bits, ...rest] = value.split('/');
  if (rest.length || !addr || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  const family = isIP(addr);
  return family !== 0 && Number(bits) <= (family === 4 ? 32 : 128);
}

/** A 32-byte key in base64 (or hex); the first of a comma-separated list encrypts, all decrypt. */
const encryptionKeys = z
  .string({ error: 'is required (32 bytes, base64): openssl rand -base64 32' })
  .trim()
  .transform((value, ctx) => {
    const keys = value
      .split(',')
      .map((k) => k.trim())
      .filter(Boolean)
      .map((k) => (/^[0-9a-f]{64}$/i.test(k) ? Buffer.from(k, 'hex') : Buffer.from(k, 'base64')));
    if (!keys.length || keys.some((k) => k.length !== 32)) {
      ctx.addIssue({ code: 'custom', message: 'must be one or more comma-separated 32-byte keys in base64 or hex (openssl rand -base64 32)' });
      return z.NEVER;
    }
    return keys;
  });

/** An Ed25519 private key: PKCS#8 PEM (newlines may be written \\n) or a private JWK (JSON). */
const signingKey = z
  .string()
  .trim()
  .transform((value, ctx): KeyObject => {
    let key: KeyObject | undefined;
    try {
      key = value.startsWith('{')
        ? createPrivateKey({ key: JSON.parse(value) as { kty: string }, format: 'jwk' })
        : createPrivateKey({ key: value.replace(/\\n/g, '\n'), format: 'pem' });
    } catch {
      key = undefined;
    }
    if (key?.asymmetricKeyType !== 'ed25519') {
      ctx.addIssue({ code: 'custom', message: 'must be an Ed25519 private key: PKCS#8 PEM (openssl genpkey -algorithm ed25519) or a private JWK' });
      return z.NEVER;
    }
    return key;
  });

const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('production'),
    PORT: int(0, 65535).default(3000),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Behind a router (Heroku's): take the client's address from the last X-Forwarded-For hop. */
    TRUST_PROXY: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true'),

    DATABASE_URL: nonEmpty('mysql://user:password@host:port/database').refine(
      (v) => /^(mysql|mariadb):\/\/[^/]+\/\w+/.test(v),
      'must look like mysql://user:password@host:port/database',
    ),
    DATABASE_POOL_MAX: int(1, 500).default(20),
    /** Longest a statement may run or wait for a lock (then 503, retryable). */
    DATABASE_STATEMENT_TIMEOUT_MS: int(100, 600_000).default(10_000),
    REDIS_URL: nonEmpty('redis://host:port/db').refine((v) => /^rediss?:\/\//.test(v), 'must start with redis:// or rediss://'),

    S3_ENDPOINT: z.url({ error: 'must be a URL' }).optional(),
    S3_BUCKET: nonEmpty('the bucket that holds uploaded documents'),
    S3_REGION: z.string().trim().min(1).default('us-east-1'),
    AWS_ACCESS_KEY_ID: optionalString,
    AWS_SECRET_ACCESS_KEY: optionalString,
    /** Longest the store may take to accept a connection. */
    S3_CONNECT_TIMEOUT_MS: int(100, 120_000).default(5_000),
    /** Longest the store may take to start answering a request, and to send more of a body it is streaming. */
    S3_REQUEST_TIMEOUT_MS: int(100, 600_000).default(30_000),

    CLAMD_HOST: optionalString,
    CLAMD_PORT: int(1, 65535).optional(),
    CLAMD_SOCKET: optionalString,

    ADMIN_USER: optionalString,
    ADMIN_PASSWORD: optionalString,
    METRICS_TOKEN: optionalString,
    ENCRYPTION_KEY: encryptionKeys,

    WEBHOOK_ALLOWED_NETWORKS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .refine((list) => list.every(isCidr), 'must be a comma-separated list of CIDRs such as 127.0.0.0/8,10.1.0.0/16'),
    WEBHOOK_RETRY_SCHEDULE: z
      .string()
      .default('5,300,1800,7200,18000,36000,36000')
      .transform((v) => v.split(',').map((s) => s.trim()))
      .refine((list) => list.length > 0 && list.every((s) => /^\d+(\.\d+)?$/.test(s)), 'must be comma-separated seconds such as 5,300,1800')
      .transform((list) => list.map(Number)),
    /** Whether webhook endpoints may be plain http (default: outside production only). */
    WEBHOOK_ALLOW_HTTP: z
      .enum(['true', 'false'])
      .optional()
      .transform((v) => (v === undefined ? undefined : v === 'true')),
    /** Longest one delivery attempt may take (connect, send, answer). */
    WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(15_000),
    /** Longest the resolution of an endpoint's name may take (DNS queries, never getaddrinfo's thread pool). */
    WEBHOOK_DNS_TIMEOUT_MS: int(100, 60_000).default(5_000),
    /** Name servers for endpoints' names (IP or IP:port, comma-separated); default: the system's (/etc/resolv.conf). */
    WEBHOOK_DNS_SERVERS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .refine(
        (list) => list.every((s) => isIP(s) !== 0 || /^\d{1,3}(\.\d{1,3}){3}:\d{1,5}$/.test(s) || /^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(s)),
        'must be IP addresses, with :port if not 53 ([v6]:port)',
      ),
    /** An endpoint failing without a success for this long is disabled. */
    WEBHOOK_DISABLE_AFTER_SECONDS: int(1).default(5 * 24 * 3600),
    /** Deliveries in flight at once per worker process. */
    WEBHOOK_CONCURRENCY: int(1, 1000).default(50),
    /** Deliveries to one endpoint in flight at once per worker process: a slow receiver cannot take every slot. */
    WEBHOOK_ENDPOINT_CONCURRENCY: int(1, 1000).default(10),
    /** After a secret rotation, how long the previous secret keeps signing too. */
    WEBHOOK_SECRET_GRACE_SECONDS: int(0, 30 * 24 * 3600).default(24 * 3600),
    /** At most this long between notarization batches (a cycle also runs full batches at once). */
    NOTARIZATION_INTERVAL_MS: int(10, 86_400_000).default(10_000),
    /** Years each attached document version is kept under S3 Object Lock (COMPLIANCE), from its attachment or verdict, whichever is later. */
    DOCUMENT_RETENTION_YEARS: int(1, 100).default(10),
    /** Days after its URL was issued that an upload never attached to a guarantee or an amendment is deleted (its bytes and its row). */
    UNATTACHED_UPLOAD_DAYS: int(1, 3650).default(30),
    /** Days after the verdict that an Infected file's quarantined bytes are deleted (the verdict row stays). */
    INFECTED_RETENTION_DAYS: int(0, 3650).default(30),
    /** Days delivered webhook events (all their deliveries over), their deliveries and delivery attempts are kept. */
    WEBHOOK_LOG_DAYS: int(1, 3650).default(90),
    /** How often the maintenance worker's retention job runs (each run deletes in bounded batches; the rest waits for the next). */
    RETENTION_EVERY_MS: int(60_000, 86_400_000).default(3_600_000),
    /** How often the maintenance worker puts newly attached documents under Object Lock. */
    DOCUMENT_LOCK_EVERY_MS: int(1000, 86_400_000).default(60_000),
    /** How often the lifecycle check emits guarantee.expired and guarantee.claim_overdue (daily by default). */
    LIFECYCLE_CHECK_EVERY_MS: int(60_000, 7 * 86_400_000).default(86_400_000),
    /** Records per notarization batch (one Merkle tree, one anchor transaction). */
    NOTARIZATION_BATCH_SIZE: int(1, 5000).default(1000),
    /** Where batch roots are anchored: the embedded hash-chained ledger, or an EVM chain. */
    NOTARIZATION_ANCHOR: z.enum(['ledger', 'evm']).default('ledger'),
    /** The EVM anchor's JSON-RPC endpoint, and the chain it must be (nothing is sent to another). */
    EVM_RPC_URL: z.url({ error: 'must be a URL such as https://rpc.example.org' }).optional(),
    EVM_CHAIN_ID: int(1).optional(),
    /** Blocks that must hold (and follow) a batch's transaction before its records are COMPLETE. */
    EVM_CONFIRMATIONS: int(1, 10_000).default(3),
    MAX_UPLOAD_BYTES: int(1, 5 * 1024 ** 3).default(50 * 1024 * 1024),
    /** Browser origins allowed to upload straight to the bucket (its CORS rule); empty: none. */
    UPLOAD_CORS_ORIGINS: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      )
      .refine(
        (list) => list.every((o) => o === '*' || /^https?:\/\/[^/\s]+$/.test(o)),
        'must be comma-separated origins such as https://app.example.com (scheme and host, no path)',
      ),
    /** How long an issued upload URL (presigned POST) stays valid. */
    UPLOAD_URL_TTL_SECONDS: int(60, 7 * 24 * 3600).default(900),
    /** File extensions accepted as fileType (compound signed forms such as pdf.p7m included). */
    ALLOWED_FILE_TYPES: z
      .string()
      .default('pdf,p7m,pdf.p7m,p7m.p7m,pdf.p7m.p7m,xml,xml.p7m,tsd,pdf.tsd,pdf.p7m.tsd,m7m,pdf.m7m,txt,csv,jpg,jpeg,png,tif,tiff,p7s')
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim().toLowerCase().replace(/^\./, ''))
          .filter(Boolean),
      )
      .refine(
        (list) => list.length > 0 && list.every((t) => /^[a-z0-9]{1,10}(\.[a-z0-9]{1,10}){0,3}$/.test(t)),
        'must be comma-separated extensions such as pdf,p7m,pdf.p7m',
      ),
    /** After an upload URL expires, how long a started upload may still arrive and be scanned. */
    UPLOAD_GRACE_SECONDS: int(0, 24 * 3600).default(300),
    /** The fallback poll for an upload backs off to at most this interval. */
    UPLOAD_POLL_MAX_INTERVAL_MS: int(100, 600_000).default(30_000),
    /** Base URL of the web process as the object store reaches it: radosgw then posts upload
     * events there (hints; polling works without them). Unset: no event notifications. */
    STORAGE_EVENTS_URL: z.url({ error: 'must be a URL such as http://10.0.0.5:3000' }).optional(),
    /** Streams sent to clamd at once per worker process (clamd uses about a core per stream); four times as many scan jobs run, so that their other steps overlap. */
    SCAN_CONCURRENCY: int(1, 64).default(2),
    /** Attempts of a scan (clamd or the store unreachable) before the file is Error. */
    SCAN_ATTEMPTS: int(1, 50).default(8),
    /** First retry delay of a failed scan attempt (and of an upload check whose store or database was away); each next one doubles. */
    SCAN_BACKOFF_MS: int(10, 600_000).default(2000),
    /** Longest one scan attempt may take before it is abandoned and retried. */
    SCAN_TIMEOUT_MS: int(1000, 3_600_000).default(300_000),
    /** Signature checks run at once per worker process, each on its own thread. */
    SIGNATURE_CONCURRENCY: int(1, 64).default(1),
    /** BullMQ job lock (renewed every half of it): a job whose worker stops renewing it for this long is taken over at the next stalled check. Together with the interval below: a killed worker's jobs are taken over within about 25 s. */
    WORKER_LOCK_DURATION_MS: int(500, 600_000).default(15_000),
    /** How often workers look for jobs whose worker died (stalled jobs). */
    WORKER_STALLED_INTERVAL_MS: int(500, 600_000).default(5_000),
    /** Whether REDIS_URL is one node of a Redis Cluster (the others are discovered); the queue prefix is then hash-tagged. */
    REDIS_CLUSTER: z
      .enum(['true', 'false'])
      .default('false')
      .transform((v) => v === 'true'),
    /** Prefix of every Redis key the queues use (one per environment sharing a Redis). */
    QUEUE_PREFIX: z
      .string()
      .trim()
      .regex(/^[\w-]{1,40}$/, 'must be letters, digits, - or _')
      .default('grs'),
    SIGNATURE_TRUST_STORE: optionalString.refine((p) => p === undefined || existsSync(p), 'must be the path of an existing PEM file'),
    /**
     * PEM file of the certificates allowed to sign the trusted lists `cli trust import` reads (each
     * list's operator's, of its own country). Set for the signature workers too: there it turns the
     * lists on (chains are then checked, and while no list is imported none trusts anything).
     */
    TRUSTED_LIST_SIGNERS: optionalString.refine((p) => p === undefined || existsSync(p), 'must be the path of an existing PEM file'),
    /** How often a signature worker looks for newly imported trusted lists. */
    TRUSTED_LISTS_REFRESH_SECONDS: int(0, 86_400).default(60),
    /** Bytes of request bodies being received at once by a web process, and by one API key (a stalled body holds its bytes until the request timeout). */
    BODY_BYTES_IN_FLIGHT: int(1024 * 1024, 1024 ** 3).default(64 * 1024 * 1024),
    BODY_BYTES_IN_FLIGHT_PER_KEY: int(1024 * 1024, 1024 ** 3).default(8 * 1024 * 1024),
    /** Requests per minute per API key; 0 turns the limit off. */
    RATE_LIMIT_PER_MINUTE: int(0).default(3000),
    /** Failed authentications per minute per client address before 429. */
    AUTH_FAILURES_PER_MINUTE: int(1).default(60),
    /** Public verifications per minute per client address (malformed requests count too); 0 turns the limit off. */
    VERIFY_RATE_PER_MINUTE: int(0).default(30),
    /** The same, per IPv6 /64 (one subscriber's network: its 2^64 addresses are one client); 0 turns it off. Counted in Redis for every web process. */
    VERIFY_RATE_PER_MINUTE_PER_NETWORK: int(0).default(60),
    /** Public verification misses in one minute, the whole service together, at which a warning is logged (someone may be guessing codes). */
    VERIFY_MISS_SURGE_PER_MINUTE: int(1).default(600),
    /** A public request's body must arrive whole within this: a client that stalls is cut off (408) rather than hold its share of bytes. */
    PUBLIC_BODY_TIMEOUT_MS: int(100, 60_000).default(5_000),
    /** Signs verification receipts; required in production (elsewhere a key is generated once and sealed in the database). */
    VERIFICATION_SIGNING_KEY: signingKey.optional(),
    /** Where contracting authorities reach the service: the verification URL and QR code point to <PUBLIC_BASE_URL>/verify. Required in production. */
    PUBLIC_BASE_URL: z
      .url({ error: 'must be a URL such as https://registry.example.com' })
      .refine((u) => /^https?:\/\/[^?#]+$/.test(u), 'must be http(s), without a query or fragment')
      .transform((u) => u.replace(/\/$/, ''))
      .optional(),
    /**
     * The OpenID Provider the contracting authorities' people sign in with at /authority (SPID or
     * CIE in production, through their OpenID Connect federation or a broker); unset, the pages
     * say sign-in is not configured. npm start and npm test run a local one.
     */
    OIDC_ISSUER: z.url({ error: 'must be the issuer URL of an OpenID Provider' }).optional(),
    /** The registry's client at that provider. */
    OIDC_CLIENT_ID: optionalString,
    /** Its secret (client_secret_basic); or OIDC_CLIENT_PRIVATE_KEY. */
    OIDC_CLIENT_SECRET: optionalString,
    /** A private key (PEM, PKCS#8) to authenticate with private_key_jwt instead, as SPID and CIE require; its public key is registered at the provider. */
    OIDC_CLIENT_PRIVATE_KEY: optionalString,
    /** The ID token or userinfo claim that carries the person's fiscal number (SPID's and CIE's name by default; TINIT- before it is accepted). */
    OIDC_FISCAL_NUMBER_CLAIM: z.string().trim().min(1).default('https://attributes.eid.gov.it/fiscal_number'),
    /** The scopes asked for. */
    OIDC_SCOPES: z.string().trim().min(1).default('openid profile'),
    /** A session of /authority ends after this many minutes without a request. */
    SESSION_IDLE_MINUTES: int(1, 24 * 60).default(30),
    /**
     * Signs the transparency log's checkpoints (Ed25519, PKCS#8 PEM or a private JWK); required in
     * production (elsewhere a key is generated once and sealed in the database). Whoever has it can
     * sign a checkpoint of another history: keep it as the receipt key is kept.
     */
    LOG_SIGNING_KEY: signingKey.optional(),
    /** The log's name: its checkpoints' origin line and its key's name. By default <PUBLIC_BASE_URL's host and path>/log. */
    LOG_ORIGIN: z
      .string()
      .trim()
      .regex(/^[^\s+]+$/, 'must be one word without spaces or "+", such as registry.example.com/log')
      .optional(),
    /** A new checkpoint at most this often (whenever the log grew). */
    LOG_CHECKPOINT_INTERVAL_MS: int(100, 3_600_000).default(1000),
    /** The bucket the log's tiles and checkpoint are written to (any static host can serve it); by default <S3_BUCKET>-log. */
    LOG_S3_BUCKET: optionalString,
    /** The witnesses the log's checkpoints are sent to: "<URL> <verifier key>" pairs separated by ";" (the URL is the witness's submission prefix). */
    LOG_WITNESSES: z
      .string()
      .trim()
      .default('')
      .transform((value, ctx) => {
        const out: Array<{ url: string; vkey: string }> = [];
        for (const pair of value
          .split(';')
          .map((p) => p.trim())
          .filter(Boolean)) {
          const [url, vkey, ...rest] = pair.split(/\s+/);
          if (!url || !vkey || rest.length || !/^https?:\/\/[^\s]+$/.test(url)) {
            ctx.addIssue({ code: 'custom', message: `"${pair}" is not "<URL> <verifier key>"` });
            return z.NEVER;
          }
          out.push({ url: url.replace(/\/+$/, ''), vkey });
        }
        return out;
      }),
    /** Each witness's answer must come within this. */
    LOG_WITNESS_TIMEOUT_MS: int(100, 120_000).default(5000),
    /** The sequencer's lease: another process takes over this long after its holder stopped renewing it. */
    LOG_LEASE_MS: int(200, 600_000).default(30_000),
  })
  .superRefine((c, ctx) => {
    if (c.OIDC_ISSUER && !(c.OIDC_CLIENT_ID && (c.OIDC_CLIENT_SECRET || c.OIDC_CLIENT_PRIVATE_KEY))) {
      ctx.addIssue({
        code: 'custom',
        path: ['OIDC_CLIENT_ID'],
        message: 'OIDC_ISSUER needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET or OIDC_CLIENT_PRIVATE_KEY',
      });
    }
    if (c.OIDC_ISSUER?.startsWith('http:') && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(`${c.OIDC_ISSUER}/`) && c.NODE_ENV === 'production') {
      ctx.addIssue({
        code: 'custom',
        path: ['OIDC_ISSUER'],
        message: 'must be https in production (plain http only on this machine, as a local provider or broker)',
      });
    }
    if (c.OIDC_ISSUER && !c.PUBLIC_BASE_URL && c.NODE_ENV === 'production') {
      ctx.addIssue({
        code: 'custom',
        path: ['PUBLIC_BASE_URL'],
        message: 'is required with OIDC_ISSUER: the sign-in returns to <PUBLIC_BASE_URL>/authority/callback',
      });
    }
    if (c.NODE_ENV === 'production' && !c.VERIFICATION_SIGNING_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['VERIFICATION_SIGNING_KEY'],
        message: 'is required in production (openssl genpkey -algorithm ed25519): receipts must be signed by a key you keep',
      });
    }
    if (c.NODE_ENV === 'production' && !c.LOG_SIGNING_KEY) {
      ctx.addIssue({
        code: 'custom',
        path: ['LOG_SIGNING_KEY'],
        message: "is required in production (openssl genpkey -algorithm ed25519): the log's checkpoints must be signed by a key you keep",
      });
    }
    if (c.NODE_ENV === 'production' && !c.PUBLIC_BASE_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['PUBLIC_BASE_URL'],
        message: 'is required in production: the verification URLs printed on guarantees point there',
      });
    }
    if (!c.CLAMD_SOCKET && !(c.CLAMD_HOST && c.CLAMD_PORT)) {
      ctx.addIssue({ code: 'custom', path: ['CLAMD_HOST'], message: 'set CLAMD_HOST and CLAMD_PORT, or CLAMD_SOCKET' });
    }
    if (!c.ADMIN_USER !== !c.ADMIN_PASSWORD) {
      ctx.addIssue({
        code: 'custom',
        path: ['ADMIN_PASSWORD'],
        message: 'ADMIN_USER and ADMIN_PASSWORD go together (both set, or both unset to turn Bull Board off)',
      });
    }
    if (c.NOTARIZATION_ANCHOR === 'evm' && !(c.EVM_RPC_URL && c.EVM_CHAIN_ID)) {
      ctx.addIssue({ code: 'custom', path: ['EVM_RPC_URL'], message: 'NOTARIZATION_ANCHOR=evm needs EVM_RPC_URL and EVM_CHAIN_ID' });
    }
    if (!c.AWS_ACCESS_KEY_ID !== !c.AWS_SECRET_ACCESS_KEY) {
      ctx.addIssue({ code: 'custom', path: ['AWS_SECRET_ACCESS_KEY'], message: 'AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together' });
    }
  });

export type Config = Readonly<z.output<typeof schema>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Validates an environment; throws ConfigError naming every bad variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // An empty variable means unset (as Procfile platforms often leave them).
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || 'environment'}: ${i.message}`));
  }
  // On a Redis Cluster every key of a queue must hash to one slot, which BullMQ's scripts need:
  // the prefix becomes a hash tag ({grs}). Not elsewhere: it would move a running deployment's keys.
  const data = result.data.REDIS_CLUSTER ? { ...result.data, QUEUE_PREFIX: `{${result.data.QUEUE_PREFIX}}` } : result.data;
  return Object.freeze(data);
}

let loaded: Config | undefined;

/** The process's configuration, read from process.env on first use. */
export function getConfig(): Config {
  loaded ??= parseConfig(process.env);
  return loaded;
}

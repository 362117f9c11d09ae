// The local OpenID Provider (scripts/oidc/provider.ts, the `oidc-provider` library) that the
// contracting authorities' people sign in with under /authority: one per profile, its own
// process, on 127.0.0.1. Started by default for dev and test; OIDC_ISSUER set means a real
// provider is configured instead. Its client secret is made once per profile and kept in
// .data/<profile>/oidc/client-secret.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LOCAL_CLIENT_ID } from '../oidc/users.js';
import { readPid, startDaemon, stopDaemon, waitFor } from './process.js';
import type { LocalService, ServiceContext } from './types.js';

const dirOf = (ctx: ServiceContext) => join(ctx.dataDir, 'oidc');
const issuerOf = (ctx: ServiceContext) => `http://127.0.0.1:${ctx.ports.oidc}`;

function clientSecret(ctx: ServiceContext): string {
  const file = join(dirOf(ctx), 'client-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dirOf(ctx), { recursive: true });
  const secret = randomBytes(24).toString('base64url');
  writeFileSync(file, secret, { mode: 0o600 });
  return secret;
}

export const oidc: LocalService = {
  name: 'oidc',
  externalWhen: ['OIDC_ISSUER'],
  byDefault: (profile) => profile !== 'bench',
  install() {
    // An npm dependency: `npm install` (which npm start and npm test run first) brings it.
    return undefined;
  },
  async isUp(ctx) {
    if (readPid(join(dirOf(ctx), 'daemon.pid')) === undefined) return false;
    const res = await fetch(`${issuerOf(ctx)}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined);
    return res?.ok === true;
  },
  async start(ctx) {
    const dir = dirOf(ctx);
    mkdirSync(dir, { recursive: true });
    const tsx = join(ctx.root, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs');
    if (!existsSync(tsx)) throw new Error('tsx is not installed: run npm install');
    // `env` execs node in its place: the pid written is node's.
    startDaemon(
      'env',
      [
        `OIDC_PORT=${ctx.ports.oidc}`,
        `OIDC_CLIENT_SECRET=${clientSecret(ctx)}`,
        process.execPath,
        '--import',
        tsx,
        join(ctx.root, 'scripts', 'oidc', 'provider.ts'),
      ],
      { logFile: join(dir, 'provider.log'), pidFile: join(dir, 'daemon.pid'), cwd: ctx.root },
    );
    await waitFor('oidc', () => this.isUp(ctx), 30_000, join(dir, 'provider.log'));
  },
  async stop(ctx) {
    const pid = await stopDaemon('oidc', join(dirOf(ctx), 'daemon.pid'));
    return pid === undefined ? [] : [pid];
  },
  env(ctx) {
    return { OIDC_ISSUER: issuerOf(ctx), OIDC_CLIENT_ID: LOCAL_CLIENT_ID, OIDC_CLIENT_SECRET: clientSecret(ctx) };
  },
};

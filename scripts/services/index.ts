// `npm run services`: the local MariaDB, Redis, clamd, radosgw, EVM chain and OpenID Provider of one profile.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { s3 } from './ceph.js';
import { clamd } from './clamd.js';
import { evm } from './evm.js';
import { mariadb } from './mariadb.js';
import { oidc } from './oidc.js';
import { log } from './process.js';
import { redis } from './redis.js';
import { PORTS, type LocalService, type Profile, type ServiceContext } from './types.js';

export type { LocalService } from './types.js';

export { PROFILES, type Profile } from './types.js';

export const ALL: readonly LocalService[] = [mariadb, redis, clamd, s3, evm, oidc];
export type ServiceName = LocalService['name'];

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Where a profile's servers keep their data, pid files included: .data/<profile>, or
 * $SERVICES_DATA_DIR/<profile> (a test's throwaway directory: a `down` there stops nothing of
 * .data's servers). The ports are the profile's all the same.
 */
export function context(profile: Profile): ServiceContext {
  return { profile, root, dataDir: join(process.env.SERVICES_DATA_DIR || join(root, '.data'), profile), ports: PORTS[profile] };
}

/**
 * The services the environment does not already point at: those named in `only`, or else
 * those the profile runs by default.
 */
function localServices(profile: Profile, all: readonly LocalService[], only?: readonly ServiceName[], env: NodeJS.ProcessEnv = process.env): LocalService[] {
  return all.filter((s) => (only ? only.includes(s.name) : (s.byDefault?.(profile, env) ?? true)) && !s.externalWhen.some((v) => env[v]));
}

export interface UpResult {
  /** Environment variables for the application, for every local service of the profile. */
  env: Record<string, string>;
  /** The services this call started (the others were already running or are external). */
  started: ServiceName[];
}

/**
 * Every service this process began to start, per profile, even one still starting: what a
 * caller interrupted mid-way (Ctrl-C) must stop.
 */
export const startedByThisProcess: Record<Profile, ServiceName[]> = { dev: [], test: [], bench: [] };

/**
 * Starts what is not running (installing it first when missing); idempotent. When one
 * service fails to start, those this call started are stopped again before the error.
 */
export async function up(profile: Profile, only?: readonly ServiceName[], all: readonly LocalService[] = ALL): Promise<UpResult> {
  const ctx = context(profile);
  mkdirSync(ctx.dataDir, { recursive: true });
  const services = localServices(profile, all, only);
  const installed = new Map(services.map((s) => [s.name, s.install()]));
  const started: ServiceName[] = [];
  // One line per service once it answers, with its times (an installation said it began, above).
  const results = await Promise.allSettled(
    services.map(async (s) => {
      if (await s.isUp(ctx).catch(() => false)) return;
      const t0 = Date.now();
      started.push(s.name);
      startedByThisProcess[profile].push(s.name);
      await s.start(ctx);
      const install = installed.get(s.name);
      log(
        `${s.name}: ${install === undefined ? '' : `installed in ${install.toFixed(1)} s, `}ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (${profile})`,
      );
    }),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    log(`stopping ${started.join(', ') || 'nothing'} after a failed start`);
    await down(profile, started, all);
    throw failed.reason;
  }
  return { env: Object.assign({}, ...services.map((s) => s.env(ctx))) as Record<string, string>, started };
}

/** Stops the profile's servers (those in `only`): each one's name and the pids of the daemons it stopped (none: it was not running). */
export async function down(
  profile: Profile,
  only?: readonly ServiceName[],
  all: readonly LocalService[] = ALL,
): Promise<Array<{ name: ServiceName; pids: number[] }>> {
  const ctx = context(profile);
  // Not filtered by the environment: `down` stops what this project started, whatever points elsewhere now.
  return Promise.all(all.filter((s) => !only || only.includes(s.name)).map(async (s) => ({ name: s.name, pids: await s.stop(ctx) })));
}

export async function status(profile: Profile): Promise<Record<ServiceName, 'up' | 'down' | 'external'>> {
  const ctx = context(profile);
  const entries = await Promise.all(
    ALL.map(async (s) => {
      if (s.externalWhen.some((v) => process.env[v])) return [s.name, 'external'] as const;
      return [s.name, (await s.isUp(ctx).catch(() => false)) ? 'up' : 'down'] as const;
    }),
  );
  return Object.fromEntries(entries) as Record<ServiceName, 'up' | 'down' | 'external'>;
}

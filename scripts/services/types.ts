import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
// What every local server of `npm run services` provides.
export type Profile = 'dev' | 'test' | 'bench';
export const PROFILES: readonly Profile[] = ['dev', 'test', 'bench'];

export interface Ports {
  mariadb: number;
  redis: number;
  clamd: number;
  rgw: number;
  mon: number;
  evm: number;
  oidc: number;
}

/** Dev, test and bench never share ports or data. All below Linux's ephemeral range (32768+). */
export const PORTS: Record<Profile, Ports> = {
  dev: { mariadb: 3310, redis: 6390, clamd: 3311, rgw: 7480, mon: 13300, evm: 18545, oidc: 7590 },
  test: { mariadb: 3320, redis: 6391, clamd: 3321, rgw: 7481, mon: 13310, evm: 18546, oidc: 7591 },
  bench: { mariadb: 3330, redis: 6392, clamd: 3331, rgw: 7482, mon: 13320, evm: 18547, oidc: 7592 },
};

export interface ServiceContext {
  profile: Profile;
  /** `.data/<profile>` (or `$SERVICES_DATA_DIR/<profile>`) */
  dataDir: string;
  ports: Ports;
  /** The project's root folder. */
  root: string;
}

/**
 * A unix socket's path under `dir`, or, when that would pass the kernel's 107-byte limit
 * (a deeply nested checkout), a short one under /tmp named after `dir`.
 */
export function socketPath(dir: string, name: string): string {
  const full = `${dir}/${name}`;
  if (full.length <= 100) return full;
  const tag = createHash('sha256').update(dir).digest('hex').slice(0, 12);
  mkdirSync(`/tmp/grs-${tag}`, { recursive: true });
  return `/tmp/grs-${tag}/${name}`;
}

export interface LocalService {
  name: 'mariadb' | 'redis' | 'clamd' | 's3' | 'evm' | 'oidc';
  /** The environment variables that, when set, point at a server we must use instead. */
  externalWhen: string[];
  /** Whether `up` without a list starts it (default: always); otherwise only when named. */
  byDefault?(profile: Profile, env: NodeJS.ProcessEnv): boolean;
  /** Installs what is missing: the seconds it took, or undefined when nothing was. */
  install(): number | undefined;
  isUp(ctx: ServiceContext): Promise<boolean>;
  start(ctx: ServiceContext): Promise<void>;
  /** Stops what runs: the pids of the daemons it stopped (none: it was not running). */
  stop(ctx: ServiceContext): Promise<number[]>;
  /** The configuration the application needs to reach this local server. */
  env(ctx: ServiceContext): Record<string, string>;
}

// Small helpers to run local servers as detached daemons: each writes its output to a log
// file (never to our stdout, so that a daemon can never hold a CI pipe open), its pid to a
// file, and can be found and stopped by a later `services down`.
import { execFile, spawn, spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

// Debian installs the daemons (mariadbd, clamd, redis-server's helpers) in /usr/sbin, which a
// CI shell or `env -i` may leave out of PATH: they are found there all the same.
for (const dir of ['/usr/local/sbin', '/usr/sbin', '/sbin']) {
  const path = (process.env.PATH ?? '').split(':');
  if (!path.includes(dir)) process.env.PATH = [...path.filter(Boolean), dir].join(':');
}

export function log(message: string): void {
  process.stderr.write(`[services] ${message}\n`);
}

/** True while the process exists and is not a zombie (a container may have no init to reap it). */
export function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export function readPid(pidFile: string): number | undefined {
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
}

export function startDaemon(command: string, args: string[], opts: { logFile: string; pidFile: string; cwd?: string }): number {
  mkdirSync(dirname(opts.logFile), { recursive: true });
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(command, args, { cwd: opts.cwd, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  child.unref();
  // Reap it if it dies while we still run, so that isAlive() sees it gone.
  child.on('error', (err) => log(`${command}: ${err.message}`));
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  writeFileSync(opts.pidFile, String(child.pid));
  return child.pid;
}

/** Stops the daemon of `pidFile`: its pid, or undefined when it was not running. */
export async function stopDaemon(name: string, pidFile: string, graceMs = 15_000): Promise<number | undefined> {
  const pid = readPid(pidFile);
  if (pid === undefined) {
    rmSync(pidFile, { force: true });
    return undefined;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(50);
  if (isAlive(pid)) {
    log(`${name} did not stop within ${graceMs} ms: killing it`);
    process.kill(pid, 'SIGKILL');
    while (isAlive(pid)) await sleep(50);
  }
  rmSync(pidFile, { force: true });
  return pid;
}

export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  const tail = logFile && existsSync(logFile) ? `\n--- ${logFile} (tail) ---\n${readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n')}` : '';
  throw new Error(`${what} did not answer within ${timeoutMs} ms${tail}`);
}

/** Sends `payload` over TCP and resolves with what the peer answered before closing or `timeoutMs`. */
export function tcpExchange(port: number, payload: Buffer | string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, timeoutMs);
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (data.includes('\n') || data.includes('\0')) {
        clearTimeout(timer);
        socket.end();
        resolve(data);
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
  });
}

export function run(command: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(' ')} failed: ${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** Whether `binary` is on the PATH (or in /usr/sbin, /usr/bin); an absolute path: whether that file exists (a package without a binary). */
export function which(binary: string): boolean {
  if (binary.startsWith('/')) return existsSync(binary);
  return (
    spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0 || existsSync(`/usr/sbin/${binary}`) || existsSync(`/usr/bin/${binary}`)
  );
}

let aptUpdated = false;

/**
 * Where apt-get's and dpkg's output goes (hundreds of lines on a bare machine): a log file under
 * .data/, whose tail is printed only when an installation fails.
 */
export const INSTALL_LOG = process.env.INSTALL_LOG ?? join(import.meta.dirname, '..', '..', '.data', 'install.log');
const TAIL_LINES = 30;

/** Runs an installer with its output appended to INSTALL_LOG: its exit status, or why it did not start. APT_GET names a stand-in for apt-get (the tests' own). */
function installer(command: string, args: string[]): number | string | null {
  mkdirSync(dirname(INSTALL_LOG), { recursive: true });
  appendFileSync(INSTALL_LOG, `\n$ ${command} ${args.join(' ')}   (${new Date().toISOString()})\n`);
  const fd = openSync(INSTALL_LOG, 'a');
  try {
    const run = spawnSync(process.env.APT_GET ?? command, args, { stdio: ['ignore', fd, fd], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    return run.error ? `${process.env.APT_GET ?? command} did not start: ${run.error.message}` : run.status;
  } finally {
    closeSync(fd);
  }
}

/** The last lines of the install log, for an error message. */
function installLogTail(): string {
  const lines = readFileSync(INSTALL_LOG, 'utf8').trimEnd().split('\n');
  return lines.slice(-TAIL_LINES).join('\n');
}

/**
 * Installs Debian packages when a binary is missing: as root with apt-get, otherwise says how.
 * `label` names what they are for in the one line it prints. The seconds it took, or undefined
 * when nothing was missing.
 */
export function ensurePackages(binaries: string[], packages: string[], extraFlags: string[] = [], label = packages.join(' ')): number | undefined {
  if (binaries.every(which)) return undefined;
  const cmd = `apt-get install -y ${extraFlags.join(' ')} ${packages.join(' ')}`.replace(/\s+/g, ' ');
  if (process.getuid?.() !== 0) {
    throw new Error(`missing ${binaries.filter((b) => !which(b)).join(', ')}: run as root: apt-get update && ${cmd}`);
  }
  const t0 = Date.now();
  log(`${label}: installing ${packages.join(' ')} (output in ${relative(process.cwd(), INSTALL_LOG) || INSTALL_LOG})`);
  if (!aptUpdated) {
    installer('apt-get', ['update', '-qq']);
    aptUpdated = true;
  }
  const status = installer('apt-get', ['install', '-y', '-qq', ...extraFlags, ...packages]);
  if (status !== 0 || !binaries.every(which)) {
    const why = typeof status === 'string' ? status : `apt-get exited with ${status}`;
    throw new Error(`could not install ${packages.join(' ')} (${why}); the end of ${INSTALL_LOG}:\n${installLogTail()}`);
  }
  return (Date.now() - t0) / 1000;
}

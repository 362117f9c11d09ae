// The test run's own MariaDB, paused and resumed as a server that vanishes for a while.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// Tests that pause the server or set its globals run only where the test run started MariaDB itself.
export const PID_FILE = '.data/test/mariadb/mysqld.pid';
export const ownServer = existsSync(PID_FILE) && process.env.DATABASE_URL?.includes(':3320/') === true;
export const serverPid = () => Number(readFileSync(PID_FILE, 'utf8').trim());

/**
 * Stops the server and returns once every one of its threads is stopped: the signal is queued
 * at once, but a thread running on the other core goes on until it is interrupted, and could
 * answer a statement sent meanwhile (seen once in CI: the query the test expects to time out
 * was answered).
 */
export async function stopServer(pid: number): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  const stopped = () =>
    readdirSync(`/proc/${pid}/task`).every((t) => {
      const stat = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2).startsWith('T');
    });
  for (const until = Date.now() + 2000; !stopped() && Date.now() < until;) await sleep(1);
}

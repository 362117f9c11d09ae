// Processes the tests start (servers, the app's compiled processes) never outlive the test run.
import type { ChildProcess } from 'node:child_process';

/** Kills `child` when this process exits, even when a test ends before its `finally` (a timeout, mocha's exit). */
export function killOnExit(child: ChildProcess): void {
  const kill = () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  child.once('exit', () => process.removeListener('exit', kill));
}

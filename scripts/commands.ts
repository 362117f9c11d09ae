// The commands a script runs (npm test's checks and mocha), each in a process group of its own,
// so that stopping them reaches every process they started: mocha's bin is a wrapper that
// starts the real mocha, which starts its workers, which start the registry's processes, and a
// wrapper that dies of SIGTERM passes it on to none of them.
import { spawn, type ChildProcess } from 'node:child_process';

export interface CommandOptions {
  env?: NodeJS.ProcessEnv;
  /** Output kept, and shown only when the command fails. */
  quiet?: boolean;
}

export function createCommands() {
  const running = new Set<ChildProcess>();
  let refusing = false;

  /** Sends `signal` to every process of each running command's group. */
  function signalGroups(signal: NodeJS.Signals): void {
    for (const child of running)
      if (child.pid)
        try {
          process.kill(-child.pid, signal);
        } catch {
          // The group is gone already.
        }
  }

  return {
    /** Runs a command, its output shown as it comes (or kept: `quiet`): whether it succeeded. False at once, running nothing, after `refuse()`. */
    run(cmd: string, args: string[], opts: CommandOptions = {}): Promise<boolean> {
      if (refusing) return Promise.resolve(false);
      return new Promise((resolve) => {
        const child = spawn(cmd, args, { stdio: opts.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit', env: opts.env ?? process.env, detached: true });
        let out = '';
        child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
        running.add(child);
        child.on('error', (err) => {
          out += `${cmd}: ${err.message}\n`;
        });
        child.on('close', (code) => {
          running.delete(child);
          if (code !== 0 && opts.quiet) process.stderr.write(out);
          resolve(code === 0);
        });
      });
    },

    /** From now on, `run` starts nothing (the script is being stopped). */
    refuse(): void {
      refusing = true;
    },

    /**
     * Ends the running commands: SIGTERM to all of their groups, then SIGKILL to what is left
     * once they have all closed or `graceMs` has passed (a group's other processes may outlive
     * its leader: a test's server once its mocha worker died).
     */
    async end(graceMs: number): Promise<void> {
      if (!running.size) return;
      const children = [...running];
      const closed = children.map(
        (child) => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve))),
      );
      signalGroups('SIGTERM');
      await Promise.race([Promise.all(closed), new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
      for (const child of children)
        if (child.pid)
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // The group is gone.
          }
    },
  };
}

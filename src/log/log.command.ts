// `log mirror <base URL> <dir> [--key <vkey>] [--witness <vkey>]...` and `log verify <dir>
// [--witness <vkey>]...`: a mirror of the transparency log, anyone's (src/log/mirror.ts). Exit
// 0 when everything holds, 1 naming what does not (a rollback, a rewritten entry and its index,
// a checkpoint a pinned witness did not cosign), 2 for a usage error.
import { MirrorError, mirrorLog, verifyMirror } from './mirror.js';

export async function logCommand(args: string[], say: (line: string) => void, usage: string): Promise<number> {
  const [verb, ...rest] = args;
  const positional: string[] = [];
  const witnesses: string[] = [];
  let key: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i] as string;
    if (a === '--witness' || a === '--key') {
      const value = rest[++i];
      if (value === undefined) {
        say(usage);
        return 2;
      }
      if (a === '--witness') witnesses.push(value);
      else key = value;
    } else positional.push(a);
  }
  try {
    if (verb === 'mirror' && positional.length === 2) {
      const [base, dir] = positional as [string, string];
      const r = await mirrorLog(base, dir, { ...(key && { key }), witnesses });
      say(`mirrored ${base}: size ${r.size} (held ${r.previous}; ${r.fetched} entries bundle(s) fetched), every entry checked`);
      process.stdout.write(`${r.size}\n`);
      return 0;
    }
    if (verb === 'verify' && positional.length === 1 && !key) {
      const r = await verifyMirror(positional[0] as string, { witnesses });
      say(`${r.origin}: ${r.size} entries, every one leads to the checkpoint's root`);
      process.stdout.write(`${r.size}\n`);
      return 0;
    }
  } catch (err) {
    // Whatever a hostile log serves ends here as a refusal, not a stack trace.
    // fetch's own message ("fetch failed") says nothing: its cause does (refused, reset, timed out).
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why = `${(err as Error).message}${cause ? ` (${cause.code ?? cause.message ?? 'no reason given'})` : ''}`;
    say(`FAIL ${err instanceof MirrorError ? err.message : `the log could not be read: ${why}`}`);
    return 1;
  }
  say(usage);
  return 2;
}

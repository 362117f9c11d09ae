// What the transparency log's entries say: one line of ASCII each, its kind first.
//   record <digest>                          a guarantee's notarization leaf (its canonical digest, hex)
//   amendment <digest>                       an amendment's notarization leaf
//   audit <chain> <seq> <hash>               an audit chain's head: an organization's id (or
//                                            'system'), its last row's seq and hash
//   key-added <kid> <x>                      a receipt-signing key published (its JWK thumbprint
//                                            and base64url Ed25519 public key)
//   key-retired <kid> <at> [compromised-since <t>]
//                                            a key retired at `at`; a compromised key's receipts
//                                            signed after `t` are not to be believed
// Times are RFC 3339 UTC with milliseconds. The leaf hash is SHA-256(0x00 || the line's bytes).
// Runs in the browser too (the /verify page rebuilds a record's entry from its digest).
export type LogEntry =
  | { kind: 'record'; digest: string }
  | { kind: 'amendment'; digest: string }
  | { kind: 'audit'; chain: string; seq: number; hash: string }
  | { kind: 'key-added'; kid: string; x: string }
  | { kind: 'key-retired'; kid: string; at: string; compromisedSince?: string };

const HEX64 = /^[0-9a-f]{64}$/;
const CHAIN = /^[0-9A-Za-z-]{1,36}$/;
const KID = /^[A-Za-z0-9_-]{1,64}$/;
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export class EntryError extends Error {}

export function formatEntry(e: LogEntry): string {
  const line = ((): string => {
    switch (e.kind) {
      case 'record':
      case 'amendment':
        return `${e.kind} ${e.digest}`;
      case 'audit':
        return `audit ${e.chain} ${e.seq} ${e.hash}`;
      case 'key-added':
        return `key-added ${e.kid} ${e.x}`;
      case 'key-retired':
        return `key-retired ${e.kid} ${e.at}${e.compromisedSince ? ` compromised-since ${e.compromisedSince}` : ''}`;
    }
  })();
  // What is written is what parses back: a field that would not is refused here, not published.
  parseEntry(line);
  return line;
}

/** The entry a line holds; an EntryError for anything else. */
export function parseEntry(line: string): LogEntry {
  const f = line.split(' ');
  const [kind] = f;
  if ((kind === 'record' || kind === 'amendment') && f.length === 2 && HEX64.test(f[1] as string)) return { kind, digest: f[1] as string };
  if (kind === 'audit' && f.length === 4 && CHAIN.test(f[1] as string) && /^[1-9][0-9]{0,15}$/.test(f[2] as string) && HEX64.test(f[3] as string))
    return { kind, chain: f[1] as string, seq: Number(f[2]), hash: f[3] as string };
  if (kind === 'key-added' && f.length === 3 && KID.test(f[1] as string) && /^[A-Za-z0-9_-]{43}$/.test(f[2] as string))
    return { kind, kid: f[1] as string, x: f[2] as string };
  if (kind === 'key-retired' && KID.test(f[1] ?? '') && TIME.test(f[2] ?? '')) {
    if (f.length === 3) return { kind, kid: f[1] as string, at: f[2] as string };
    if (f.length === 5 && f[3] === 'compromised-since' && TIME.test(f[4] as string))
      return { kind, kid: f[1] as string, at: f[2] as string, compromisedSince: f[4] as string };
  }
  throw new EntryError(`not a log entry: ${JSON.stringify(line.slice(0, 80))}`);
}

export const entryBytes = (e: LogEntry): Uint8Array => new TextEncoder().encode(formatEntry(e));

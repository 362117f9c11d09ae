// The transparency log's checks in the browser (the /verify page): a proof's `log` — its leaf's
// index, the checkpoint, the inclusion proof — checked with WebCrypto's Ed25519 and the log's
// tree code (./tree.ts), without node:crypto. What a page served by the registry can prove: that
// the proof agrees with the log the registry publishes (its key at /log/key), and which
// witnesses' names the checkpoint carries; not that the registry is honest (a pinned witness's
// key, outside this page, does: `cli verify --witness`).
import { formatEntry } from './entries.js';
import { leafHashOf, verifyInclusion } from './tree.js';

export interface LogProofJson {
  index: number;
  checkpoint: string;
  inclusion: string[];
}

export interface PageLogResult {
  size: number;
  origin: string;
  inclusion: { ok: boolean; detail?: string };
  /** The checkpoint's signature by the key the registry publishes; undefined when it could not be checked (no WebCrypto Ed25519). */
  signature: { ok: boolean; detail?: string } | undefined;
  /** The names of the other signatures on the checkpoint (witnesses' cosignatures, not verified here). */
  cosigners: string[];
}

const fromBase64 = (s: string): Uint8Array => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
const fromHex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));

/** The note's text and its signature lines (name, and the bytes after the key id). */
function splitNote(note: string): { text: string; sigs: Array<{ name: string; id: number; sig: Uint8Array }> } {
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new Error('the checkpoint carries no signature');
  const text = note.slice(0, split + 1);
  const sigs = note
    .slice(split + 2)
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/u.exec(line);
      if (!m) throw new Error('a malformed signature line');
      const raw = fromBase64(m[2] as string);
      return { name: m[1] as string, id: new DataView(raw.buffer).getUint32(0), sig: raw.subarray(4) };
    });
  return { text, sigs };
}

export async function checkLogInBrowser(
  leaf: { kind: 'record' | 'amendment'; digest: string },
  log: LogProofJson,
  verifierKey: string | undefined,
): Promise<PageLogResult> {
  const { text, sigs } = splitNote(log.checkpoint);
  const [origin = '', sizeLine = '', rootLine = ''] = text.split('\n');
  const size = Number(sizeLine);
  const root = fromBase64(rootLine);
  let inclusion: PageLogResult['inclusion'];
  try {
    const entry = new TextEncoder().encode(formatEntry({ kind: leaf.kind, digest: leaf.digest }));
    verifyInclusion(log.index, size, leafHashOf(entry), log.inclusion.map(fromHex), root);
    inclusion = { ok: true };
  } catch (err) {
    inclusion = { ok: false, detail: (err as Error).message };
  }
  let signature: PageLogResult['signature'];
  const [name, hexId, encoded] = verifierKey
    ? [verifierKey.slice(0, verifierKey.indexOf('+')), ...verifierKey.slice(verifierKey.indexOf('+') + 1).split(/\+(.*)/s)]
    : [];
  const mine = sigs.find((s) => s.name === name && s.id === parseInt(hexId ?? '', 16));
  if (verifierKey && encoded) {
    try {
      const typeAndKey = fromBase64(encoded);
      const key = await crypto.subtle.importKey('raw', Uint8Array.from(typeAndKey.subarray(1)), { name: 'Ed25519' }, false, ['verify']);
      const ok = !!mine && name === origin && (await crypto.subtle.verify({ name: 'Ed25519' }, key, Uint8Array.from(mine.sig), new TextEncoder().encode(text)));
      signature = ok ? { ok } : { ok, detail: mine ? 'the signature does not verify' : 'no signature by the published key' };
    } catch {
      signature = undefined;
    }
  }
  return { size, origin, inclusion, signature, cosigners: sigs.filter((s) => s !== mine && s.name !== origin).map((s) => s.name) };
}

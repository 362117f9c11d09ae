// A witness (C2SP tlog-witness v1.0.0, tlog-cosignature v1): it keeps, for each log it is told
// to watch (the log's verifier key), the size and root of the last checkpoint it cosigned, and
// cosigns a new one only if it is signed by the log's key and proven consistent with that one.
// So a log that rewrote, forked or cut its history cannot get a cosignature for it, and anyone
// holding checkpoints cosigned by a witness they trust knows every one of them is the same
// history, grown. Answers as the specification says:
//   200 the cosignature line(s)      404 a log it does not watch    403 not signed by the log's key
//   400 a malformed request, or an old size larger than the checkpoint's
//   409 the old size is not the size it holds (its size in the body, text/x.tlog.size), or the
//       same size with another root (a fork)
//   422 the consistency proof does not verify
// Its state is a small file of its own (witness.store.ts), written before it answers.
import { parseCheckpoint } from '../checkpoint.js';
import { NoteError, openNote, signNote, type Signer, type Verifier } from '../note.js';
import { ProofError, verifyConsistency } from '../tree.js';
import type { WitnessStore } from './witness.store.js';

export interface WitnessAnswer {
  status: number;
  contentType: string;
  body: string;
}

/** The largest request a witness reads: a checkpoint with its signatures and 63 proof hashes fit many times over. */
export const MAX_REQUEST_BYTES = 64 * 1024;

const answer = (status: number, body: string, contentType = 'text/plain; charset=utf-8'): WitnessAnswer => ({ status, contentType, body });

export function createWitness(deps: { signer: Signer; logs: readonly Verifier[]; store: WitnessStore }) {
  const { signer, logs, store } = deps;
  let queue: Promise<unknown> = Promise.resolve();

  async function add(body: string): Promise<WitnessAnswer> {
    // old <size>, the proof's hashes, a blank line, the note.
    const blank = body.indexOf('\n\n');
    if (blank < 0) return answer(400, 'malformed request: no blank line before the checkpoint\n');
    const head = body.slice(0, blank).split('\n');
    const note = body.slice(blank + 2);
    const oldLine = /^old (0|[1-9][0-9]{0,15})$/.exec(head[0] ?? '');
    if (!oldLine) return answer(400, 'malformed request: the first line is "old <size>"\n');
    const old = Number(oldLine[1]);
    const proof: Uint8Array[] = [];
    for (const line of head.slice(1)) {
      const hash = Buffer.from(line, 'base64');
      if (hash.length !== 32 || hash.toString('base64') !== line) return answer(400, 'malformed request: a proof line is not a base64 hash\n');
      proof.push(hash);
    }
    if (proof.length > 63) return answer(400, 'malformed request: too many proof lines\n');
    const origin = note.slice(0, note.indexOf('\n'));
    const keys = logs.filter((v) => v.name === origin);
    if (!keys.length) return answer(404, 'unknown log\n');
    let text: string;
    try {
      text = openNote(note, keys).text;
    } catch (err) {
      if (err instanceof NoteError && /malformed/.test(err.message)) return answer(400, `malformed checkpoint: ${err.message}\n`);
      return answer(403, "the checkpoint is not signed by the log's key\n");
    }
    let checkpoint;
    try {
      checkpoint = parseCheckpoint(text);
    } catch (err) {
      return answer(400, `malformed checkpoint: ${(err as Error).message}\n`);
    }
    if (old > checkpoint.size) return answer(400, 'the old size is larger than the checkpoint\n');
    const held = await store.get(origin);
    const heldSize = held?.size ?? 0;
    if (old !== heldSize) return answer(409, `${heldSize}\n`, 'text/x.tlog.size');
    if (held && old === checkpoint.size && Buffer.compare(Buffer.from(held.root), Buffer.from(checkpoint.root)) !== 0) {
      return answer(409, `${heldSize}\n`, 'text/x.tlog.size');
    }
    try {
      if (held && old > 0) verifyConsistency(old, checkpoint.size, proof, held.root, checkpoint.root);
      else if (proof.length) throw new ProofError('a proof from the empty tree is empty');
    } catch (err) {
      return answer(422, `the consistency proof does not verify: ${(err as Error).message}\n`);
    }
    await store.put(origin, { size: checkpoint.size, root: checkpoint.root });
    const signed = signNote(text, [signer]);
    return answer(200, signed.slice(signed.lastIndexOf('\n\n') + 2));
  }

  return {
    /** Answers an add-checkpoint request; one at a time, so that the check of the old size and the update are one step. */
    addCheckpoint(body: string): Promise<WitnessAnswer> {
      const run = queue.then(() => add(body));
      queue = run.catch(() => undefined);
      return run;
    },
  };
}

export type Witness = ReturnType<typeof createWitness>;

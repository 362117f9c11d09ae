// The log's part of a proof's or a receipt's checks (src/log/log-checks.ts): the inclusion in a
// checkpoint signed by the log and cosigned by a pinned witness, and a receipt dated before the
// witness cosigned the checkpoint it carries refused as back-dated.
import { generateKeyPairSync } from 'node:crypto';
import { expect } from 'chai';
import { formatCheckpoint } from '../../../src/log/checkpoint.js';
import { entryBytes } from '../../../src/log/entries.js';
import { checkLogInclusion, CLOCK_SKEW_MS } from '../../../src/log/log-checks.js';
import { COSIGNATURE_V1, cosigner, ed25519Signer, parseVerifierKey, signNote, verifierKey } from '../../../src/log/note.js';
import { leafHashOf, memoryLevels, treeHashes } from '../../../src/log/tree.js';

const digest = 'ab'.repeat(32);
const cosignedAt = Date.parse('2026-11-20T12:00:00Z');

async function fixture() {
  const entries = [entryBytes({ kind: 'record', digest }), entryBytes({ kind: 'record', digest: 'cd'.repeat(32) })];
  const levels = memoryLevels(entries.map((e) => leafHashOf(e)));
  const tree = treeHashes((level, from, to) => Promise.resolve((levels[level] ?? []).slice(from, to)));
  const text = formatCheckpoint({ origin: 'registry.test/log', size: 2, root: await tree.root(2), extensions: [] });
  const logKey = generateKeyPairSync('ed25519').privateKey;
  const witnessKey = generateKeyPairSync('ed25519').privateKey;
  const note = signNote(text, [ed25519Signer('registry.test/log', logKey), cosigner('witness.test', witnessKey, () => cosignedAt / 1000)]);
  const log = { index: 0, checkpoint: note, inclusion: (await tree.inclusion(0, 2)).map((h) => Buffer.from(h).toString('hex')) };
  const keys = {
    logKey: parseVerifierKey(verifierKey('registry.test/log', logKey)),
    witnesses: [parseVerifierKey(verifierKey('witness.test', witnessKey, COSIGNATURE_V1))],
  };
  return { log, keys };
}

const leaf = { kind: 'record' as const, digest, what: 'guarantee g' };

describe('the log checks of a proof or a receipt', () => {
  it('pass for a leaf in a checkpoint signed by the log and cosigned by the pinned witness, naming its cosignature time', async () => {
    const { log, keys } = await fixture();
    const { checks, cosigners } = checkLogInclusion(leaf, log, keys);
    expect(checks.map((c) => [c.id, c.ok])).to.deep.equal([
      ['log-checkpoint', true],
      ['log-witness', true],
      ['log-inclusion', true],
    ]);
    expect(cosigners).to.deep.equal(['witness.test (at 2026-11-20T12:00:00.000Z)']);
  });

  it("refuse a receipt that says it was signed before the witness cosigned the checkpoint it carries (back-dated), within the clocks' skew", async () => {
    const { log, keys } = await fixture();
    const dated = (at: number) => checkLogInclusion(leaf, log, keys, new Date(at)).checks.find((c) => c.id === 'log-dated');
    expect(dated(cosignedAt + 60_000)?.ok, 'signed after the cosignature').to.equal(true);
    expect(dated(cosignedAt - CLOCK_SKEW_MS + 1000)?.ok, 'a witness clock a little ahead').to.equal(true);
    const back = dated(cosignedAt - CLOCK_SKEW_MS - 1000);
    expect(back?.ok).to.equal(false);
    expect(back?.detail).to.equal(
      'cosigned at 2026-11-20T12:00:00.000Z, 10 min after the 2026-11-20T11:49:59.000Z the receipt says: back-dated, or a clock off by more than 10 min',
    );
    // A proof (no receipt time) has no such check.
    expect(checkLogInclusion(leaf, log, keys).checks.some((c) => c.id === 'log-dated')).to.equal(false);
  });
});

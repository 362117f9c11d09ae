// Amendments notarized in a chain (docs/api.md "A guarantee's life", issue 16 part 3): each amendment's
// digest covers its canonical form, its guarantee's digest and the previous amendment's digest,
// sealed in the same batches as records; its proof from GET .../amendments/{seq}/proof; a
// single amendment or the whole history checked by `cli verify`; any amendment changed,
// removed or moved, found. Against the real database and the embedded ledger.
import { testSequencer } from '../support/log.js';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createAmendmentRepository } from '../../src/guarantees/amendment.repository.js';
import { createGuaranteeRepository } from '../../src/guarantees/guarantee.repository.js';
import type { Anchor, BatchToAnchor, Submission } from '../../src/notarization/anchor.js';
import { createLedgerAnchor } from '../../src/notarization/ledger.anchor.js';
import { createNotarizationRepository } from '../../src/notarization/notarization.repository.js';
import { createNotarizationService, GUARANTEE_BLOCKED_REASON } from '../../src/notarization/notarization.service.js';
import { createLogger } from '../../src/shared/logger.js';
import { verifyAmendmentProof, verifyChain } from '../../src/notarization/proof.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { harness, issueFile, newOrg, type TestOrg } from '../support/harness.js';
import { checksum, create, notarizeAll } from '../support/guarantees.js';
import { entry } from '../support/entry.js';

type Json = Record<string, unknown>;

async function get(org: TestOrg, path: string): Promise<{ status: number; body: Json }> {
  const res = await (await harness()).http.get(path).set('X-API-Key', org.key);
  return { status: res.status, body: res.body as Json };
}

async function amend(org: TestOrg, id: string, body: Json): Promise<Json> {
  const res = await (
    await harness()
  ).http
    .post(`/api/v2/guarantees/${id}/amendments`)
    .set('X-API-Key', org.key)
    .send({ effectiveAt: '2027-03-01T10:00:00+01:00', ...body });
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body as Json;
}

/** Everything `cli verify` takes for a whole history, read from the API. */
async function history(org: TestOrg, id: string): Promise<{ guarantee: Json; proof: Json; amendments: Json[]; amendmentProofs: Json[] }> {
  const amendments = (await get(org, `/api/v2/guarantees/${id}/amendments`)).body.amendments as Json[];
  return {
    guarantee: (await get(org, `/api/v2/guarantees/${id}`)).body,
    proof: (await get(org, `/api/v2/guarantees/${id}/proof`)).body,
    amendments,
    amendmentProofs: await Promise.all(amendments.map(async (a) => (await get(org, `/api/v2/guarantees/${id}/amendments/${a.seq as number}/proof`)).body)),
  };
}

const failed = (v: { checks: { id: string; ok: boolean }[] }) => v.checks.filter((c) => !c.ok).map((c) => c.id);

describe('lifecycle: amendments notarized in a chain', function () {
  this.timeout(60_000);
  let org: TestOrg;
  let id: string;
  let life: Awaited<ReturnType<typeof history>>;

  before(async () => {
    org = await newOrg();
    // An endpoint registered, so that the events are kept for delivery.
    const hook = await (await harness()).http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/chain' });
    expect(hook.status).to.equal(200);
    const clean = await issueFile(org.orgId, { status: 'Clean', checksum: checksum('appendix'), fileName: 'appendice-1.pdf' });
    id = (await create(org, { details: { policyNumber: 'P-CHAIN', expiresAt: '2030-01-01T00:00:00Z' }, economics: { garantedAmount: 1000 } })).id as string;
    await amend(org, id, { type: 'EXTENSION', expiresAt: '2031-06-30T00:00:00Z', reason: 'appendice n. 1', docs: [{ key: clean, type: 'OTHER' }] });
    await amend(org, id, { type: 'PARTIAL_RELEASE', garantedAmount: 600.5 });
    // Not yet sealed: PENDING, without a reason (nothing stops it).
    const pending = await get(org, `/api/v2/guarantees/${id}/amendments/1/proof`);
    expect(pending.status).to.equal(200);
    expect(pending.body).to.deep.equal({ guaranteeId: id, amendmentId: pending.body.amendmentId, seq: 1, notarizationStatus: 'PENDING' });
    // The guarantee is sealed first; its amendments follow it into the next batch.
    await notarizeAll();
    await notarizeAll();
    await amend(org, id, { type: 'CLAIM', claimedAmount: 200, effectiveAt: '2027-04-01T10:00:00+02:00' });
    await notarizeAll();
    life = await history(org, id);
  });

  it('notarizes every amendment: COMPLETE with its txHash, each proof linked to the guarantee and to the one before', () => {
    expect(life.amendments.map((a) => [a.seq, a.notarizationStatus])).to.deep.equal([
      [1, 'COMPLETE'],
      [2, 'COMPLETE'],
      [3, 'COMPLETE'],
    ]);
    const [p1, p2, p3] = life.amendmentProofs as [Json, Json, Json];
    expect(p1).to.include({
      notarizationStatus: 'COMPLETE',
      canonicalization: 'guarantee-registry/amendment/v1',
      seq: 1,
      guaranteeId: id,
      previousDigest: null,
    });
    expect(p1.guaranteeDigest).to.equal(life.proof.digest);
    expect(p2.guaranteeDigest).to.equal(life.proof.digest);
    expect(p2.previousDigest).to.equal(p1.digest);
    expect(p3.previousDigest).to.equal(p2.digest);
    // Amendment 3 was recorded after 1 and 2 were sealed: another batch, another anchor.
    expect((p3.anchor as Json).txHash).to.not.equal((p1.anchor as Json).txHash);
    for (const [i, a] of life.amendments.entries()) {
      expect(a.txHash).to.equal((life.amendmentProofs[i]?.anchor as Json).txHash);
      const v = verifyAmendmentProof(a, life.amendmentProofs[i]);
      expect(v.ok, JSON.stringify(v.checks)).to.equal(true);
    }
    expect(verifyChain(life).ok, JSON.stringify(verifyChain(life).checks)).to.equal(true);
  });

  it('emits guarantee.amendment_notarized once per amendment, the amendment COMPLETE', async () => {
    const { db } = await harness();
    const rows = await select<{ body: string }>(
      db,
      "SELECT body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.amendment_notarized' ORDER BY id",
      [org.orgId],
    );
    // One batch's events share their time (ids in the same millisecond): in seq order by sorting.
    const data = rows.map((r) => (JSON.parse(r.body) as { data: Json }).data).sort((x, y) => (x.seq as number) - (y.seq as number));
    expect(data.map((d) => [d.seq, d.notarizationStatus])).to.deep.equal([
      [1, 'COMPLETE'],
      [2, 'COMPLETE'],
      [3, 'COMPLETE'],
    ]);
    expect(data[0]?.txHash).to.equal(life.amendments[0]?.txHash);
  });

  it('finds any amendment changed, its proof changed, one removed, or two swapped', () => {
    const [a1, a2, a3] = life.amendments as [Json, Json, Json];
    const [p1, p2, p3] = life.amendmentProofs as [Json, Json, Json];

    // One field of one amendment: its own proof fails, and so does the chain from it on.
    const changed = { ...a2, garantedAmount: 700 };
    expect(failed(verifyAmendmentProof(changed, p2))).to.deep.equal(['digest']);
    expect(failed(verifyChain({ ...life, amendments: [a1, changed, a3] }))).to.have.members(['digest', 'chain-link', 'chain-link']);
    // A document's checksum, or its reason.
    const otherDoc = { ...a1, docs: [{ ...(a1.docs as Json[])[0], checksum: checksum('another file') }] };
    expect(failed(verifyAmendmentProof(otherDoc, p1))).to.deep.equal(['digest']);
    expect(failed(verifyAmendmentProof({ ...a1, reason: 'appendice n. 2' }, p1))).to.deep.equal(['digest']);

    // A proof claiming another link: its digest no longer covers the amendment.
    expect(failed(verifyAmendmentProof(a2, { ...p2, previousDigest: 'ab'.repeat(32) }))).to.include('digest');
    // A proof rebuilt around the change (digest recomputed, so the leaf no longer leads to the root).
    expect(failed(verifyAmendmentProof(a2, { ...p2, digest: 'cd'.repeat(32) }))).to.include.members(['digest', 'merkle-root']);

    // Amendment 2 removed (with its proof): the seqs have a gap, and 3 links to the wrong one.
    const removed = verifyChain({ ...life, amendments: [a1, a3], amendmentProofs: [p1, p3] });
    expect(failed(removed)).to.include.members(['chain-order', 'chain-link']);
    // ... and renumbered to hide the gap: 3's digest (over seq 3) no longer matches.
    expect(failed(verifyChain({ ...life, amendments: [a1, { ...a3, seq: 2 }], amendmentProofs: [p1, p3] }))).to.include('chain-link');
    // Two swapped.
    expect(failed(verifyChain({ ...life, amendments: [a2, a1, a3], amendmentProofs: [p2, p1, p3] }))).to.include.members(['chain-order', 'chain-link']);
    // The guarantee changed: its own proof and the chain's start both fail.
    const otherGuarantee = { ...life.guarantee, note: { shared: 'changed' } };
    expect(failed(verifyChain({ ...life, guarantee: otherGuarantee }))).to.include.members(['digest', 'chain-start']);
    // An amendment without its proof is not notarized.
    expect(failed(verifyChain({ ...life, amendmentProofs: [p1, p2] }))).to.deep.equal(['chain-notarized']);
    // Another guarantee's amendment slipped in.
    expect(failed(verifyChain({ ...life, amendments: [a1, { ...a2, guaranteeId: '00000000-0000-7000-8000-000000000000' }, a3] }))).to.include('chain-order');
  });

  it('cli verify: an amendment with its proof, and the whole history, verified against the ledger; a tampered one NOT verified', () => {
    const dir = mkdtempSync(join(tmpdir(), 'verify-chain-'));
    const run = (...args: string[]) => spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', ...args], { encoding: 'utf8', env: process.env });
    writeFileSync(join(dir, 'a2.json'), JSON.stringify(life.amendments[1]));
    writeFileSync(join(dir, 'p2.json'), JSON.stringify(life.amendmentProofs[1]));
    const one = run(join(dir, 'a2.json'), join(dir, 'p2.json'));
    expect(one.status, one.stderr).to.equal(0);
    expect(one.stdout).to.equal('verified\n');
    expect(one.stderr).to.include("ok   the amendment, with the proof's links, hashes to the proof's digest");

    writeFileSync(join(dir, 'life.json'), JSON.stringify(life));
    const whole = run(join(dir, 'life.json'));
    expect(whole.status, whole.stderr).to.equal(0);
    expect(whole.stdout).to.equal('verified\n');
    expect(whole.stderr).to.include("ok   amendment 3's proof links to the amendment before it");
    // Three batches (the guarantee's, amendments 1 and 2's, amendment 3's): each anchor looked up in the ledger.
    expect(whole.stderr.match(/ok {3}the ledger holds an entry with this hash/g)).to.have.length(3);

    const [a1, a2, a3] = life.amendments as [Json, Json, Json];
    writeFileSync(
      join(dir, 'cut.json'),
      JSON.stringify({ ...life, amendments: [a1, a3], amendmentProofs: [life.amendmentProofs[0], life.amendmentProofs[2]] }),
    );
    const cut = run(join(dir, 'cut.json'));
    expect(cut.status).to.equal(1);
    expect(cut.stdout).to.equal('NOT verified\n');
    expect(cut.stderr).to.include('FAIL the amendments are 1, 2, 3... in order');
    writeFileSync(join(dir, 'edited.json'), JSON.stringify({ ...life, amendments: [a1, { ...a2, garantedAmount: 999 }, a3] }));
    expect(run(join(dir, 'edited.json')).status).to.equal(1);
  });

  it('404 for another organization, a seq it does not have, or one that is no seq', async () => {
    const other = await newOrg();
    expect((await get(other, `/api/v2/guarantees/${id}/amendments/1/proof`)).status).to.equal(404);
    for (const seq of ['0', '4', 'abc', '-1', '1.5', '99999999999'])
      expect((await get(org, `/api/v2/guarantees/${id}/amendments/${seq}/proof`)).status, seq).to.equal(404);
    expect((await get(org, '/api/v2/guarantees/not-a-uuid/amendments/1/proof')).status).to.equal(404);
  });
});

describe('lifecycle: amendments that cannot be notarized', function () {
  this.timeout(60_000);
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });

  it('an amendment whose doc ends Infected is blocked with its reason; the chain goes on past it, over its digest', async () => {
    const { db } = await harness();
    const id = (await create(org, { details: { policyNumber: 'P-BAD-DOC' }, economics: { garantedAmount: 500 } })).id as string;
    const bad = await issueFile(org.orgId);
    await amend(org, id, { type: 'AMOUNT_CHANGE', garantedAmount: 400, docs: [{ key: bad }] });
    await amend(org, id, { type: 'EXTENSION', expiresAt: '2032-01-01T00:00:00Z' });
    await notarizeAll();
    await notarizeAll();
    // The scan still runs: amendment 1 waits, and 2 waits behind it.
    let life = await history(org, id);
    expect(life.amendmentProofs.map((p) => p.notarizationStatus)).to.deep.equal(['PENDING', 'PENDING']);
    expect(life.amendmentProofs[0]).to.not.have.property('reason');

    await execute(db, "UPDATE files SET status = 'Infected', checksum = $2 WHERE object_key = $1", [bad, checksum('eicar')]);
    await notarizeAll();
    life = await history(org, id);
    const [blocked, next] = life.amendmentProofs as [Json, Json];
    expect(blocked).to.include({ notarizationStatus: 'PENDING', reason: `Doc ${bad} is Infected: the amendment will not be notarized.` });
    expect(blocked.digest).to.match(/^[0-9a-f]{64}$/);
    expect(next).to.include({ notarizationStatus: 'COMPLETE', previousDigest: blocked.digest });
    expect(verifyAmendmentProof(life.amendments[1], next).ok).to.equal(true);
    // The whole history: intact, but amendment 1 is not notarized.
    expect(failed(verifyChain(life))).to.deep.equal(['chain-notarized']);
  });

  it('an amendment whose doc ends in Error is hashed with the checksum it had: judged Clean later, its JSON and the chain after it still verify', async () => {
    const { db } = await harness();
    const id = (await create(org, { details: { policyNumber: 'P-ERR-DOC' } })).id as string;
    const flaky = await issueFile(org.orgId);
    await amend(org, id, { type: 'EXTENSION', expiresAt: '2033-01-01T00:00:00Z', docs: [{ key: flaky }] });
    await amend(org, id, { type: 'RELEASE' });
    await execute(db, "UPDATE files SET status = 'Error' WHERE object_key = $1", [flaky]);
    await notarizeAll();
    await notarizeAll();
    const before = await history(org, id);
    expect(before.amendments[0]).to.include({ notarizationReason: `Doc ${flaky} is Error: the amendment will not be notarized.` });
    expect((before.amendments[0]?.docs as Json[])[0]?.checksum).to.equal(null);
    expect(before.amendmentProofs[1]).to.include({ notarizationStatus: 'COMPLETE' });
    // A retry judges the file after all: the hashed amendment keeps showing what was hashed.
    await execute(db, "UPDATE files SET status = 'Clean', checksum = $2 WHERE object_key = $1", [flaky, checksum('judged later')]);
    const after = await history(org, id);
    expect((after.amendments[0]?.docs as Json[])[0]?.checksum).to.equal(null);
    expect(failed(verifyChain(after))).to.deep.equal(['chain-notarized']);
    expect(verifyChain(after).checks.find((c) => c.id === 'chain-notarized')?.detail).to.include('is Error');
    // cli verify of the amendment with its PENDING proof: told as an amendment's, not a record's.
    const dir = mkdtempSync(join(tmpdir(), 'verify-pending-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(after.amendments[0]));
    writeFileSync(join(dir, 'p.json'), JSON.stringify(after.amendmentProofs[0]));
    const run = spawnSync(process.execPath, [...entry('src/cli.ts'), 'verify', join(dir, 'a.json'), join(dir, 'p.json')], {
      encoding: 'utf8',
      env: process.env,
    });
    expect(run.status).to.equal(1);
    expect(run.stdout).to.equal('NOT verified\n');
    expect(run.stderr).to.include("FAIL proof JSON is an amendment's notarization proof").and.not.include('v2 guarantee');
  });

  it("a blocked guarantee's amendments are blocked too", async () => {
    const { db } = await harness();
    const bad = await issueFile(org.orgId);
    const id = (await create(org, { details: { policyNumber: 'P-BAD-G' }, docs: [{ key: bad }] })).id as string;
    await amend(org, id, { type: 'RELEASE' });
    await execute(db, "UPDATE files SET status = 'Error' WHERE object_key = $1", [bad]);
    await notarizeAll();
    await notarizeAll();
    const proof = (await get(org, `/api/v2/guarantees/${id}/amendments/1/proof`)).body;
    expect(proof).to.include({ notarizationStatus: 'PENDING', reason: GUARANTEE_BLOCKED_REASON });
    expect(proof).to.not.have.property('digest');
  });

  it("an amendment whose scan runs holds back only its own guarantee's later amendments", async () => {
    const slow = await issueFile(org.orgId);
    const held = (await create(org, { details: { policyNumber: 'P-SLOW' } })).id as string;
    const free = (await create(org, { details: { policyNumber: 'P-FREE' } })).id as string;
    await amend(org, held, { type: 'AMOUNT_CHANGE', garantedAmount: 10, docs: [{ key: slow }] });
    await amend(org, held, { type: 'CANCELLATION' });
    await amend(org, free, { type: 'RELEASE' });
    await notarizeAll();
    await notarizeAll();
    expect((await get(org, `/api/v2/guarantees/${held}/amendments/1/proof`)).body.notarizationStatus).to.equal('PENDING');
    expect((await get(org, `/api/v2/guarantees/${held}/amendments/2/proof`)).body.notarizationStatus).to.equal('PENDING');
    expect((await get(org, `/api/v2/guarantees/${free}/amendments/1/proof`)).body.notarizationStatus).to.equal('COMPLETE');
  });
});

describe('lifecycle: amendments when the notarizer is interrupted', function () {
  this.timeout(60_000);

  it('an amendment left batched in a batch that the previous release anchored (it marks only the records) is marked done at the next cycle, with its event', async () => {
    const { db, events, http } = await harness();
    const org = await newOrg();
    expect((await http.post('/api/v1/webhooks').set('X-API-Key', org.key).send({ endpoint: 'http://127.0.0.1:9/heal' })).status).to.equal(200);
    const id = (await create(org, { details: { policyNumber: 'P-HEAL' } })).id as string;
    await notarizeAll();
    await amend(org, id, { type: 'RELEASE' });
    // A cycle seals the amendment and submits the batch, whose anchor is not final yet.
    const ledger = createLedgerAnchor(db);
    let sealed: { batch: BatchToAnchor; submission: Submission } | undefined;
    const unconfirmed: Anchor = {
      ...ledger,
      submit: async (batch) => {
        const submission = await ledger.submit(batch);
        sealed = { batch, submission };
        return submission;
      },
      confirm: () => Promise.resolve(undefined),
    };
    const guarantees = createGuaranteeRepository(db);
    const service = (anchor: Anchor) =>
      createNotarizationService({
        repo: createNotarizationRepository(db),
        guarantees,
        amendments: createAmendmentRepository(db),
        outbox: events.outbox,
        anchor,
        sequencer: testSequencer(db),
        batchSize: 1000,
        logger: createLogger('silent'),
      });
    await service(unconfirmed).cycle();
    const [row] = await select<{ notary_state: string }>(db, 'SELECT notary_state FROM guarantee_amendments WHERE guarantee_id = $1', [id]);
    expect(row?.notary_state).to.equal('batched');
    // The previous release's worker finishes that batch: the batch and its records, not the amendment.
    const { batch, submission } = sealed as NonNullable<typeof sealed>;
    const receipt = await ledger.confirm(batch, submission);
    const repo = createNotarizationRepository(db);
    await repo.transaction(async (t) => {
      expect(await repo.complete(batch.id, receipt as NonNullable<typeof receipt>, t)).to.equal(true);
      await guarantees.notary.markDone(await repo.members(batch.id), submission.txHash, new Date(), t);
    });
    expect((await get(org, `/api/v2/guarantees/${id}/amendments`)).body.amendments).to.satisfy((list: Json[]) => list[0]?.notarizationStatus === 'PENDING');

    await service(ledger).cycle();
    const [amendment] = (await get(org, `/api/v2/guarantees/${id}/amendments`)).body.amendments as Json[];
    expect(amendment).to.include({ notarizationStatus: 'COMPLETE', txHash: submission.txHash });
    const proof = (await get(org, `/api/v2/guarantees/${id}/amendments/1/proof`)).body;
    expect(verifyAmendmentProof(amendment, proof).ok).to.equal(true);
    const told = await select<{ body: string }>(db, "SELECT body FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.amendment_notarized'", [
      org.orgId,
    ]);
    expect(told.map((e) => (JSON.parse(e.body) as { data: Json }).data.txHash)).to.deep.equal([submission.txHash]);
  });
});

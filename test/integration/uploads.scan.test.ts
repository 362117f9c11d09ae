import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  FAST_PIPELINE,
  configWith,
  eventually,
  fileRow,
  harness,
  newOrg,
  pendingJob,
  presign,
  uploadForm,
  waitForStatus,
  type TestOrg,
} from '../support/harness.js';
import { FileDedup } from '../../src/files/file.jobs.js';
import { storageEventsToken } from '../../src/files/storage-events.routes.js';
import { encryptedPdf, zipOf } from '../support/encrypted-fixtures.js';
import { execute } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { createStorage, type Storage } from '../../src/shared/storage.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';

const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
/** The project's own test signature (config/clamav/registry-test.ndb). */
const PROJECT_TEST_MALWARE = 'GUARANTEE-REGISTRY-TEST-MALWARE-SIGNATURE-2f9c41';
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

async function readObject(storage: Storage, key: string, versionId?: string): Promise<Buffer | undefined> {
  if (!(await storage.head(key))) return undefined;
  const chunks: Buffer[] = [];
  for await (const c of await storage.read(key, versionId)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Whether the key's versions come down to exactly `keep` within a few seconds (the worker prunes just after recording the verdict). */
async function prunedTo(storage: Storage, key: string, keep: readonly string[]): Promise<boolean> {
  const want = [...keep].sort().join(',');
  return eventually('the other versions to be deleted', async () => (await storage.versions(key)).sort().join(',') === want, 5000).then(
    () => true,
    () => false,
  );
}

describe('uploads: noticed, scanned with the real clamd, kept', function () {
  this.timeout(60_000);
  let org: TestOrg;
  let workers: RunningWorkers;
  let storage: Storage;
  before(async () => {
    storage = createStorage((await harness()).config);
    workers = await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: createLogger('silent') });
  });
  after(async () => {
    await workers.close();
    storage.client.destroy();
  });
  beforeEach(async () => {
    org = await newOrg();
  });

  it('a clean upload becomes Clean with its checksum, size and engine; the judged version is the document, pinned by its VersionId', async () => {
    const up = await presign(org, { fileType: 'pdf', fileName: 'polizza.pdf' }, 1);
    const content = Buffer.from('%PDF-1.7 a perfectly ordinary guarantee\n');
    expect((await uploadForm(up.url, up.fields, content)).status).to.equal(204);
    const row = await waitForStatus(up.uuid, ['Clean', 'Infected', 'Error']);
    expect(row).to.include({ status: 'Clean', checksum: sha256(content), threat: null });
    expect(Number(row.size)).to.equal(content.length);
    expect(row.scan_engine).to.match(/^ClamAV \d+\.\d+/);
    expect(row.stored_key).to.equal(up.key);
    expect(row.version_id).to.be.a('string').and.not.equal('');
    expect(await storage.versions(up.key)).to.deep.equal([row.version_id]);
    expect((await readObject(storage, up.key, row.version_id ?? ''))?.equals(content)).to.equal(true);

    const view = await (await harness()).http.get(`/api/v2/files/${up.uuid}`).set('X-API-Key', org.key);
    expect(view.status).to.equal(200);
    expect(view.body).to.include({
      uuid: up.uuid,
      key: up.key,
      status: 'Clean',
      checksum: sha256(content),
      size: content.length,
      fileName: 'polizza.pdf',
      threat: null,
      signature: null,
    });
    expect(view.body.scan.engine).to.equal(row.scan_engine);
    const status = await (await harness()).http.get(`/api/v2/file-status/${up.key}`).set('X-API-Key', org.key);
    expect(status.body).to.equal('Clean');
  });

  it("EICAR and the project's test signature become Infected with the threat named, and only their judged bytes are kept, in quarantine (until the retention job)", async () => {
    for (const [content, threat] of [
      [EICAR, /Eicar/i],
      [`hello ${PROJECT_TEST_MALWARE} world`, /Guarantee-Registry-Test-Malware/],
    ] as const) {
      const up = await presign(org);
      expect((await uploadForm(up.url, up.fields, content)).status).to.equal(204);
      const row = await waitForStatus(up.uuid, ['Clean', 'Infected', 'Error']);
      expect(row.status).to.equal('Infected');
      expect(row.threat).to.match(threat);
      expect(row.stored_key).to.equal(null);
      const judged = (await storage.head(up.key))?.versionId as string;
      expect(await prunedTo(storage, up.key, [judged])).to.equal(true);
    }
  });

  it("files over the scanner's limits, archive bombs, an archive entry over the limit, an encrypted zip and an encrypted PDF are Infected, never Clean", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bomb-'));
    try {
      // Many entries whose expansion exceeds MaxScanSize (16 MB in the test clamd): 30 × 1 MB of zeros in a 30 kB zip.
      for (let i = 0; i < 30; i += 1) writeFileSync(join(dir, `part${i}.bin`), Buffer.alloc(1024 * 1024, i));
      execFileSync('zip', ['-q', '-r', 'bomb.zip', '.'], { cwd: dir });
      const bomb = readFileSync(join(dir, 'bomb.zip'));
      // Over StreamMaxLength (8 MB) clamd answers "size limit exceeded" and closes the connection;
      // clamscan may see the closed socket (EPIPE) before that answer, so the attempt can also
      // fail and end, after its retries, in Error. Either way, never Clean.
      const cases: Array<[Buffer, RegExp, string[]]> = [
        [Buffer.alloc(7 * 1024 * 1024, 'a'), /Limits\.Exceeded\.Max(File|Scan)Size/, ['Infected']], // over MaxFileSize (6 MB)
        [Buffer.alloc(9 * 1024 * 1024, 'a'), /Limits\.Exceeded\.StreamMaxLength/, ['Infected', 'Error']],
        [bomb, /Limits\.Exceeded\.MaxScanSize/, ['Infected']],
        // One entry over MaxFileSize, 10 MB of text in a 20 kB zip: with MaxFileSize below MaxScanSize it came back Clean.
        [zipOf({ 'polizza.txt': 'polizza fideiussoria '.repeat(500_000) }), /Limits\.Exceeded\.Max(File|Scan)Size/, ['Infected']],
        // Contents the scanner cannot read: a password-protected zip and a PDF encrypted with a user password.
        [zipOf({ 'polizza.pdf': '%PDF-1.4 a guarantee' }, 'segreta'), /Heuristics\.Encrypted\.Zip/, ['Infected']],
        [encryptedPdf(), /Heuristics\.Encrypted\.PDF/, ['Infected']],
      ];
      for (const [content, threat, statuses] of cases) {
        const up = await presign(org, { fileType: 'pdf' });
        expect((await uploadForm(up.url, up.fields, content)).status).to.equal(204);
        const row = await waitForStatus(up.uuid, ['Clean', 'Infected', 'Error'], 30_000);
        expect(row.status, `${content.length} bytes`).to.be.oneOf(statuses);
        if (row.status === 'Infected') expect(row.threat).to.match(threat);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a second upload to the same key after the verdict is another version: never judged as the document, and deleted', async () => {
    const up = await presign(org);
    const first = Buffer.from('first, clean');
    expect((await uploadForm(up.url, up.fields, first)).status).to.equal(204);
    const judged = await waitForStatus(up.uuid, ['Clean', 'Infected', 'Error']);
    expect(judged.status).to.equal('Clean');
    // The presigned POST can be replayed until it expires: the replay is stored...
    expect((await uploadForm(up.url, up.fields, EICAR)).status).to.equal(204);
    // ...a last look is scheduled for when the form can no longer be used...
    const { queues, http, config } = await harness();
    const lastLook = await eventually('the last look to be queued', () => pendingJob(queues.checks, FileDedup.lastLook(up.uuid)), 5000);
    expect(await lastLook.getState()).to.equal('delayed');
    expect(await storage.versions(up.key)).to.have.length(2);
    // ...and the store's event (as radosgw would push it) gets it discarded at once.
    const event = { Records: [{ eventName: 'ObjectCreated:Post', s3: { bucket: { name: config.S3_BUCKET }, object: { key: up.key, size: EICAR.length } } }] };
    const token = storageEventsToken(config.ENCRYPTION_KEY[0] as Buffer);
    expect((await http.post(`/internal/storage-events/${token}`).send(event)).status).to.equal(204);
    expect(await prunedTo(storage, up.key, [judged.version_id ?? ''])).to.equal(true);
    const after = await fileRow(up.uuid);
    expect(after).to.deep.equal(judged);
    expect((await readObject(storage, up.key, judged.version_id ?? ''))?.equals(first)).to.equal(true);
    expect((await readObject(storage, up.key))?.equals(first)).to.equal(true);
  });

  it('a key never uploaded becomes Error once its URL has expired and the grace period passed; a late upload within the grace is scanned', async () => {
    const { db } = await harness();
    const never = await presign(org);
    const late = await presign(org);
    // As if both URLs had expired: one 31 s ago (beyond the 30 s grace), one just now.
    await execute(db, 'UPDATE files SET expires_at = $2 WHERE uuid = $1', [never.uuid, new Date(Date.now() - 31_000)]);
    await execute(db, 'UPDATE files SET expires_at = $2 WHERE uuid = $1', [late.uuid, new Date(Date.now() - 1_000)]);
    const lost = await waitForStatus(never.uuid, ['Error', 'Clean']);
    expect(lost.status).to.equal('Error');
    expect(lost.status_reason).to.match(/expired/);
    // The form itself is still valid for the store (its policy is 15 minutes), as a started upload would be.
    expect((await uploadForm(late.url, late.fields, 'arrived late')).status).to.equal(204);
    expect((await waitForStatus(late.uuid, ['Error', 'Clean'])).status).to.equal('Clean');
  });

  it('uploads refused by the store (oversize, tampered policy) leave the file waiting, then Error, never scanned', async () => {
    const { db } = await harness();
    const up = await presign(org);
    const tampered = { ...up.fields, Policy: Buffer.from('{"expiration":"2099-01-01T00:00:00Z","conditions":[]}').toString('base64') };
    expect((await uploadForm(up.url, tampered, 'x')).status).to.equal(403);
    expect((await fileRow(up.uuid))?.status).to.equal('In Progress');
    await execute(db, 'UPDATE files SET expires_at = $2 WHERE uuid = $1', [up.uuid, new Date(Date.now() - 60_000)]);
    const row = await waitForStatus(up.uuid, ['Error', 'Clean', 'Infected']);
    expect(row).to.include({ status: 'Error', version_id: null, scan_engine: null });
  });

  it('a scanned file attached to a guarantee shows its checksum in docs; an Infected one cannot be attached', async () => {
    const { http } = await harness();
    const clean = await presign(org, { fileType: 'pdf', fileName: 'contratto.pdf' });
    const infected = await presign(org);
    await uploadForm(clean.url, clean.fields, 'the contract');
    await uploadForm(infected.url, infected.fields, EICAR);
    await waitForStatus(clean.uuid, ['Clean']);
    await waitForStatus(infected.uuid, ['Infected']);
    const created = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'P-1' }, docs: [{ type: 'BAIL_ACT', key: clean.key }] });
    expect(created.status).to.equal(200);
    expect(created.body.docs[0]).to.include({ key: clean.key, checksum: sha256('the contract'), originalFileName: 'contratto.pdf' });
    const read = await http.get(`/api/v2/guarantees/${created.body.id}`).set('X-API-Key', org.key);
    expect(read.body.docs[0].checksum).to.equal(sha256('the contract'));
    const refused = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ details: { policyNumber: 'P-2' }, docs: [{ key: infected.key }] });
    expect(refused.status).to.equal(400);
  });
});

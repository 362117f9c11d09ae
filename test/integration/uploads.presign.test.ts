import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { appWith, harness, newOrg, uploadForm, type TestOrg } from '../support/harness.js';
import { select } from '../../src/shared/db/sequelize.js';
import { createStorage } from '../../src/shared/storage.js';
import { entry } from '../support/entry.js';

async function objectSize(key: string): Promise<number | undefined> {
  const { config } = await harness();
  const storage = createStorage(config);
  try {
    const head = await storage.client.send(new HeadObjectCommand({ Bucket: storage.bucket, Key: key }));
    return head.ContentLength;
  } catch {
    return undefined;
  } finally {
    storage.client.destroy();
  }
}

describe('POST /api/v{1,2}/presigned-url', function () {
  this.timeout(30_000);
  let org: TestOrg;
  beforeEach(async () => {
    org = await newOrg();
  });
  const presign = async (version: 1 | 2, body: object, headers: Record<string, string> = {}) =>
    (await harness()).http.post(`/api/v${version}/presigned-url`).set('X-API-Key', org.key).set(headers).send(body);

  it('issues a key <uuid>.<ext> bound in a presigned POST, and records it for the organization', async () => {
    const res = await presign(1, { fileType: '.PDF', fileName: 'polizza.pdf' });
    expect(res.status).to.equal(200);
    expect(res.body.fileType).to.equal('.PDF');
    expect(res.body.key).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.pdf$/);
    expect(res.body.fields.key).to.equal(res.body.key);
    expect(res.body.presignedUrl).to.be.a('string');
    expect(res.body.fields).to.include.keys('Policy', 'X-Amz-Signature');
    const { db } = await harness();
    const [row] = await select<{
      org_id: string;
      status: string;
      file_type: string;
      original_file_name: string;
      is_document_public: number;
      expires_at: Date;
      uuid: string;
    }>(db, 'SELECT org_id, status, file_type, original_file_name, is_document_public, expires_at, uuid FROM files WHERE object_key = $1', [res.body.key]);
    expect(row).to.include({ org_id: org.orgId, status: 'In Progress', file_type: 'pdf', original_file_name: 'polizza.pdf', is_document_public: 0 });
    expect(res.body.key.startsWith(row?.uuid)).to.equal(true);
    expect((row?.expires_at.getTime() ?? 0) - Date.now()).to.be.within(890_000, 901_000);
  });

  it('accepts compound signed forms and records isDocumentPublic on v2', async () => {
    const res = await presign(2, { fileType: 'pdf.p7m', isDocumentPublic: true });
    expect(res.status).to.equal(200);
    expect(res.body.key).to.match(/\.pdf\.p7m$/);
    const [row] = await select<{ is_document_public: number }>((await harness()).db, 'SELECT is_document_public FROM files WHERE object_key = $1', [
      res.body.key,
    ]);
    expect(row?.is_document_public).to.equal(1);
  });

  for (const [what, version, body] of [
    ['a missing fileType', 1, {}],
    ['an empty fileType', 1, { fileType: '' }],
    ['a fileType not allowed', 1, { fileType: 'exe' }],
    ['a fileType that is not a string', 2, { fileType: 5 }],
    ['isDocumentPublic on v1', 1, { fileType: 'pdf', isDocumentPublic: true }],
    ['an unknown field', 2, { fileType: 'pdf', public: true }],
    ['isDocumentPublic that is not a boolean', 2, { fileType: 'pdf', isDocumentPublic: 'yes' }],
  ] as const) {
    it(`refuses ${what} with 400 and records nothing`, async () => {
      const res = await presign(version, body);
      expect(res.status).to.equal(400);
      expect(res.text).to.equal('');
      const [n] = await select<{ n: number }>((await harness()).db, 'SELECT COUNT(*) AS n FROM files WHERE org_id = $1', [org.orgId]);
      expect(Number(n?.n)).to.equal(0);
    });
  }

  it('needs an API key', async () => {
    expect((await (await harness()).http.post('/api/v1/presigned-url').send({ fileType: 'pdf' })).status).to.equal(401);
  });

  it('lets the client upload exactly that object, which a guarantee can then name (with the fileName as default)', async () => {
    const res = await presign(2, { fileType: 'pdf', fileName: 'atto.pdf' });
    const sent = await uploadForm(res.body.presignedUrl, res.body.fields, Buffer.from('%PDF-1.4 guarantee'));
    expect(sent.status, sent.text).to.equal(204);
    expect(await objectSize(res.body.key)).to.equal(18);
    const g = await (
      await harness()
    ).http
      .post('/api/v2/guarantees')
      .set('X-API-Key', org.key)
      .send({ docs: [{ type: 'BAIL_ACT', key: res.body.key }] });
    expect(g.status).to.equal(200);
    expect(g.body.docs[0]).to.include({ key: res.body.key, originalFileName: 'atto.pdf' });
  });

  it('is refused by the store when the file is larger than MAX_UPLOAD_BYTES', async () => {
    const http = await appWith({ MAX_UPLOAD_BYTES: '16' });
    const res = await http.post('/api/v1/presigned-url').set('X-API-Key', org.key).send({ fileType: 'txt' });
    const ok = await uploadForm(res.body.presignedUrl, res.body.fields, 'x'.repeat(16));
    expect(ok.status).to.equal(204);
    const res2 = await http.post('/api/v1/presigned-url').set('X-API-Key', org.key).send({ fileType: 'txt' });
    const big = await uploadForm(res2.body.presignedUrl, res2.body.fields, 'x'.repeat(17));
    expect(big.status).to.equal(400);
    expect(big.text).to.include('EntityTooLarge');
    expect(await objectSize(res2.body.key)).to.equal(undefined);
  });

  it('is refused by the store for another key, an empty file, or a tampered signature', async () => {
    const res = await presign(1, { fileType: 'pdf' });
    const last = String(res.body.key).slice(-5, -4);
    const otherKey = `${res.body.key.slice(0, -5)}${last === '0' ? '1' : '0'}.pdf`; // another key of the same shape
    expect(otherKey).to.not.equal(res.body.key);
    expect((await uploadForm(res.body.presignedUrl, { ...res.body.fields, key: otherKey }, 'data')).status).to.equal(403);
    expect(await objectSize(otherKey)).to.equal(undefined);
    expect((await uploadForm(res.body.presignedUrl, res.body.fields, '')).status).to.equal(400);
    const sig = String(res.body.fields['X-Amz-Signature']);
    const tampered = { ...res.body.fields, 'X-Amz-Signature': (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1) };
    expect((await uploadForm(res.body.presignedUrl, tampered, 'data')).status).to.equal(403);
    expect(await objectSize(res.body.key)).to.equal(undefined);
  });

  it('is refused by the store once the URL has expired', async () => {
    const { config } = await harness();
    const storage = createStorage(config);
    try {
      const key = `expired-${Date.now()}.pdf`;
      const post = await storage.presignUpload(key, 1024, 1);
      await sleep(2100);
      const sent = await uploadForm(post.url, post.fields, 'late');
      expect(sent.status).to.equal(403);
      expect(sent.text).to.match(/expired/i);
    } finally {
      storage.client.destroy();
    }
  });
});

describe('browser uploads (bucket CORS)', function () {
  this.timeout(30_000);

  it('cli migrate lets the configured origins POST to the bucket, and no other', async () => {
    const { spawnSync } = await import('node:child_process');
    const run = spawnSync(process.execPath, [...entry('src/cli.ts'), 'migrate'], {
      encoding: 'utf8',
      env: { ...process.env, UPLOAD_CORS_ORIGINS: 'https://portal.example.it' },
    });
    expect(run.status, run.stderr).to.equal(0);
    expect(run.stderr).to.include('browser uploads allowed from https://portal.example.it');
    const { config } = await harness();
    const preflight = (origin: string) =>
      fetch(`${config.S3_ENDPOINT}/${config.S3_BUCKET}`, {
        method: 'OPTIONS',
        headers: { Origin: origin, 'Access-Control-Request-Method': 'POST' },
      });
    const allowed = await preflight('https://portal.example.it');
    expect(allowed.headers.get('access-control-allow-origin')).to.equal('https://portal.example.it');
    const other = await preflight('https://evil.example.com');
    expect(other.headers.get('access-control-allow-origin')).to.equal(null);
  });
});

// Public verification (docs/authorities.md), through the API
// against the real MariaDB: matches and what they carry, the signed receipt and the JWKS,
// one answer for every kind of miss, malformed requests, the per-address limit, the issuer's
// view with its QR codes, counts and events.
import { generateKeyPairSync } from 'node:crypto';
import { expect } from 'chai';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet } from 'jose';
import jsqr from 'jsqr';
import { PNG } from 'pngjs';
import supertest from 'supertest';
import { v7 as uuidv7 } from 'uuid';
import { GUARANTEE_SQL, verificationKey } from '../../src/guarantees/guarantee.repository.js';
import { verifyChain, verifyProof } from '../../src/notarization/proof.js';
import { openQueues } from '../../src/queues.js';
import { execute, script, select } from '../../src/shared/db/sequelize.js';
import { createLogger } from '../../src/shared/logger.js';
import { producerConnection } from '../../src/shared/queues.js';
import { fanOutStatements, pendingDeliveries } from '../../src/webhooks/webhook.repository.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';
import { RECEIPT_TYPE } from '../../src/verification/receipt.js';
import { checksum, create, notarizeAll, registered, unique } from '../support/guarantees.js';
import { appWith, configWith, eventually, harness, issueFile, newOrg, appOver, eventsOver } from '../support/harness.js';
import { receiver } from '../support/receiver.js';
import { freePort } from '../support/tcp-proxy.js';

const silent = createLogger('silent');

// jsqr is CommonJS whose module.exports is the function; its types describe an ES default export.
const jsQR = jsqr as unknown as typeof jsqr.default;

interface MatchBody {
  issuer: { orgId: string; name: string; vatNumber: string | null; register: string | null };
  guarantee: { id: string; notarizationStatus: string; details: Record<string, unknown> };
  proof: unknown;
  documents: Array<{ key: string; status: string; checksum: string | null; signature: unknown }>;
}

let publicHttp: ReturnType<typeof supertest>;

const verify = (body: unknown, http = publicHttp) => http.post('/api/public/v1/verifications').send(body as object);

async function jwks(http = publicHttp): Promise<JSONWebKeySet> {
  const res = await http.get('/.well-known/jwks.json');
  expect(res.status).to.equal(200);
  return res.body as JSONWebKeySet;
}

describe('public verification (contracting authorities)', function () {
  this.timeout(30_000);

  before(async () => {
    publicHttp = await appWith({ VERIFY_RATE_PER_MINUTE: '0' });
  });

  it('finds a notarized guarantee by its codes, without a key: the issuer first, the record, a proof that verifies, the documents with their verdicts', async () => {
    const { id, policyNumber, checkCode, pdf, p7m } = await registered();
    await notarizeAll();

    const res = await verify({ policyNumber, checkCode });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.headers['cache-control']).to.equal('no-store');
    const body = res.body as { verifiedAt: string; matches: Array<Record<string, unknown>>; receipt: string };
    expect(body.matches).to.have.length(1);
    const [match] = body.matches as unknown as [MatchBody];
    expect(Object.keys(match)[0]).to.equal('issuer');
    expect(match.issuer).to.include({ name: match.issuer.name, vatNumber: 'IT00743110157', register: 'IVASS 1.00012' });
    expect(match.issuer.name).to.match(/^Assicurazioni .* S\.p\.A\.$/);
    expect(match.guarantee).to.include({ id, notarizationStatus: 'COMPLETE' });
    expect(match.guarantee.details).to.include({ policyNumber, checkCode });
    const offline = verifyProof(match.guarantee, match.proof);
    expect(offline.ok, JSON.stringify(offline.checks)).to.equal(true);
    expect(match.documents.map((d) => [d.key, d.status])).to.deep.equal([
      [pdf, 'Clean'],
      [p7m, 'Signed'],
    ]);
    expect(match.documents[0]?.signature).to.equal(null);
    expect(match.documents[1]?.signature).to.deep.equal({
      outcome: 'signed',
      signers: [
        {
          // The common name only: never the fiscal code the certificate carries.
          commonName: 'Mario Rossi',
          issuer: 'Test CA',
          signingTime: '2026-03-01T10:00:00.000Z',
          timestampedAt: '2026-03-01T10:00:05.000Z',
          qualified: true,
          trustedList: { territory: 'IT', provider: 'Certificatore di prova S.p.A.', qualified: true },
          counterSignature: false,
          chain: 'trusted',
          valid: true,
        },
      ],
    });
    expect(match.documents[0]?.checksum).to.match(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(res.body)).not.to.include('RSSMRA80A01H501U');
  });

  it('signs a receipt (EdDSA) that a JOSE library verifies with the JWKS, naming the query and each match but never the checkCode', async () => {
    const { id, policyNumber, checkCode } = await registered({ cig: 'Z9Y8X7W6V5' });
    await notarizeAll();
    const res = await verify({ policyNumber, checkCode, cig: 'Z9Y8X7W6V5', garantedAmount: 15000.5 });
    expect(res.status).to.equal(200);
    const { receipt, matches, verifiedAt } = res.body as {
      receipt: string;
      matches: Array<{ proof: { digest: string }; guarantee: { txHash: string } }>;
      verifiedAt: string;
    };

    expect(decodeProtectedHeader(receipt)).to.include({ alg: 'EdDSA', typ: RECEIPT_TYPE });
    const { payload } = await compactVerify(receipt, createLocalJWKSet(await jwks()));
    const text = new TextDecoder().decode(payload);
    expect(text).not.to.include(checkCode);
    expect(JSON.parse(text)).to.deep.equal({
      verifiedAt,
      query: { policyNumber, cig: 'Z9Y8X7W6V5', garantedAmount: 15000.5 },
      matches: [
        {
          guaranteeId: id,
          digest: matches[0]?.proof.digest,
          notarizationStatus: 'COMPLETE',
          txHash: matches[0]?.guarantee.txHash,
          status: 'ACTIVE',
          lastSeq: 0,
        },
      ],
    });
    // A receipt changed by one character no longer verifies.
    const forged = `${receipt.slice(0, 40)}${receipt[40] === 'A' ? 'B' : 'A'}${receipt.slice(41)}`;
    let refused = false;
    await compactVerify(forged, createLocalJWKSet(await jwks())).catch(() => {
      refused = true;
    });
    expect(refused).to.equal(true);
  });

  it('carries what the guarantee covers now and its amendments, each with its proof: the whole history verifies as cli verify checks it; the receipt names the state', async () => {
    const { org, id, policyNumber, checkCode } = await registered({ amount: 8000 });
    const { http } = await harness();
    const amend = async (body: Record<string, unknown>) =>
      expect((await http.post(`/api/v2/guarantees/${id}/amendments`).set('X-API-Key', org.key).send(body)).status).to.equal(200);
    await amend({ type: 'PARTIAL_RELEASE', effectiveAt: '2026-02-01T00:00:00Z', garantedAmount: 5000 });
    await notarizeAll();
    await notarizeAll();
    await amend({ type: 'RELEASE', effectiveAt: '2026-10-01T00:00:00Z', reason: 'Collaudo' });

    const res = await verify({ policyNumber, checkCode });
    expect(res.status).to.equal(200);
    const [match] = res.body.matches as Array<MatchBody & { state: Record<string, unknown>; amendments: Array<Record<string, unknown> & { proof: unknown }> }>;
    expect(match?.state).to.deep.equal({
      status: 'RELEASED',
      garantedAmount: 5000,
      expiresAt: '2027-12-31T00:00:00.000Z',
      openClaim: null,
      claimDueAt: null,
      lastSeq: 2,
      beneficiary: null,
      pendingConsent: null,
      scheduled: [],
    });
    // The record as registered never changes.
    expect((match?.guarantee as unknown as { economics: { garantedAmount: number } }).economics.garantedAmount).to.equal(8000);
    const amendments = match?.amendments ?? [];
    expect(amendments.map((a) => [a.seq, a.type, a.notarizationStatus])).to.deep.equal([
      [1, 'PARTIAL_RELEASE', 'COMPLETE'],
      [2, 'RELEASE', 'PENDING'],
    ]);
    expect(amendments[1]?.proof).to.equal(null);
    const own = (await http.get(`/api/v2/guarantees/${id}/amendments/1/proof`).set('X-API-Key', org.key)).body as unknown;
    expect(amendments[0]?.proof).to.deep.equal(own);
    // What a contracting authority received checks as a whole history, but for the amendment not yet notarized.
    const life = { guarantee: match?.guarantee, proof: match?.proof, amendments, amendmentProofs: amendments.map((a) => a.proof ?? undefined) };
    expect(
      verifyChain(life)
        .checks.filter((c) => !c.ok)
        .map((c) => c.id),
    ).to.deep.equal(['chain-notarized']);
    expect(verifyChain({ ...life, amendments: amendments.slice(0, 1), amendmentProofs: [amendments[0]?.proof] }).ok).to.equal(true);

    const { payload } = await compactVerify(res.body.receipt as string, createLocalJWKSet(await jwks()));
    expect((JSON.parse(new TextDecoder().decode(payload)) as { matches: unknown[] }).matches[0]).to.include({
      guaranteeId: id,
      status: 'RELEASED',
      lastSeq: 2,
    });
  });

  it('finds a PENDING record and says it is not notarized yet: no proof, the receipt with its digest (null while a document has no checksum)', async () => {
    const org = await newOrg();
    const clean = await issueFile(org.orgId, { status: 'Clean', checksum: checksum(unique()) });
    const waiting = await issueFile(org.orgId, { status: 'In Progress', public: true });
    const code = `PENDING-${unique()}-${unique()}`;
    const [p, q] = [`P-${unique()}`, `Q-${unique()}`];
    const ready = await create(org, { details: { policyNumber: p, checkCode: code }, docs: [{ key: clean }] });
    const notReady = await create(org, { details: { policyNumber: q, checkCode: code }, docs: [{ key: waiting }] });

    const a = await verify({ policyNumber: p, checkCode: code });
    expect(a.status).to.equal(200);
    expect(a.body.matches[0]).to.include({ proof: null });
    expect(a.body.matches[0].guarantee).to.include({ id: ready.id, notarizationStatus: 'PENDING', txHash: null });
    const receiptA = JSON.parse(new TextDecoder().decode((await compactVerify(a.body.receipt as string, createLocalJWKSet(await jwks()))).payload));
    expect(receiptA.matches[0]).to.deep.include({ guaranteeId: ready.id, notarizationStatus: 'PENDING', txHash: null });
    expect(receiptA.matches[0].digest).to.match(/^[0-9a-f]{64}$/);

    const b = await verify({ policyNumber: q, checkCode: code });
    expect(b.status).to.equal(200);
    expect(b.body.matches[0].documents[0]).to.include({ key: waiting, status: 'In Progress', checksum: null });
    const receiptB = JSON.parse(new TextDecoder().decode((await compactVerify(b.body.receipt as string, createLocalJWKSet(await jwks()))).payload));
    expect(receiptB.matches[0]).to.deep.include({ guaranteeId: notReady.id, digest: null });
  });

  it('shows every issuer that holds the same pair of codes, each with its own identity', async () => {
    const first = await registered();
    const second = await registered({ policyNumber: first.policyNumber, checkCode: first.checkCode });
    const res = await verify({ policyNumber: first.policyNumber, checkCode: first.checkCode });
    expect(res.status).to.equal(200);
    const matches = res.body.matches as Array<{ issuer: { orgId: string }; guarantee: { id: string } }>;
    expect(matches.map((m) => [m.issuer.orgId, m.guarantee.id])).to.deep.equal([
      [first.org.orgId, first.id],
      [second.org.orgId, second.id],
    ]);
  });

  it('answers every kind of miss the same: 404, no body, the same headers (unknown policy, wrong code, other case, a space, short or guessable code, other amount or CIG)', async () => {
    const { policyNumber, checkCode } = await registered({ cig: 'C1G0000001', amount: 2500 });
    const short = await registered({ checkCode: 'Ab3$5z7' }); // 7 characters: never verifiable publicly
    const weak = await registered({ checkCode: 'qwertyuiop12' }); // guessable: never verifiable publicly
    const misses = {
      unknownPolicy: { policyNumber: `NOPE-${unique()}`, checkCode },
      wrongCode: { policyNumber, checkCode: `${checkCode}0` },
      otherCase: { policyNumber, checkCode: checkCode.toLowerCase() },
      otherCasePolicy: { policyNumber: policyNumber.toLowerCase(), checkCode },
      trailingSpace: { policyNumber, checkCode: `${checkCode} ` },
      shortCode: { policyNumber: short.policyNumber, checkCode: short.checkCode },
      weakCode: { policyNumber: weak.policyNumber, checkCode: weak.checkCode },
      otherAmount: { policyNumber, checkCode, garantedAmount: 2500.01 },
      otherCig: { policyNumber, checkCode, cig: 'C1G0000002' },
    };
    const shapes = new Set<string>();
    for (const [name, body] of Object.entries(misses)) {
      const res = await verify(body);
      expect(res.status, name).to.equal(404);
      expect(res.text, name).to.equal('');
      const { date: _date, 'x-request-id': _id, ...headers } = res.headers as Record<string, string>;
      shapes.add(JSON.stringify(headers));
    }
    expect([...shapes], 'the headers of every miss').to.have.length(1);
    const asked = await verify(misses.wrongCode).set('Accept', 'application/problem+json');
    expect(asked.status).to.equal(404);
    expect(asked.body).to.deep.include({ status: 404, detail: 'No guarantee matches these codes.' });
    // The right codes with the right optional values still match.
    expect((await verify({ policyNumber, checkCode, cig: 'C1G0000001', garantedAmount: 2500 })).status).to.equal(200);
  });

  it('refuses malformed requests with 400 and an oversized one with 413, and never a 500', async () => {
    const cases: Array<[string, unknown, number]> = [
      ['an unknown property', { policyNumber: 'P-1', checkCode: '12345678', orgId: 'x' }, 400],
      ['no checkCode', { policyNumber: 'P-1' }, 400],
      ['an empty policyNumber', { policyNumber: '', checkCode: '12345678' }, 400],
      ['a number as code', { policyNumber: 'P-1', checkCode: 12345678 }, 400],
      ['three decimals', { policyNumber: 'P-1', checkCode: '12345678', garantedAmount: 1.005 }, 400],
      ['an array', [{ policyNumber: 'P-1', checkCode: '12345678' }], 400],
      ['an oversized body', { policyNumber: 'P-1', checkCode: 'x'.repeat(5000) }, 413],
    ];
    for (const [name, body, status] of cases) {
      const res = await verify(body).set('Accept', 'application/problem+json');
      expect(res.status, name).to.equal(status);
    }
    const notJson = await publicHttp.post('/api/public/v1/verifications').set('Content-Type', 'application/json').send('{"policyNumber":');
    expect(notJson.status).to.equal(400);
  });

  it('limits requests per client address, malformed ones counted, with Retry-After; another address still verifies the same policy', async () => {
    const { policyNumber, checkCode } = await registered();
    const http = await appWith({ VERIFY_RATE_PER_MINUTE: '3', TRUST_PROXY: 'true' });
    const from = (address: string, body: unknown) =>
      http
        .post('/api/public/v1/verifications')
        .set('X-Forwarded-For', address)
        .send(body as object);
    expect((await from('198.51.100.7', { policyNumber, checkCode })).status).to.equal(200);
    expect((await from('198.51.100.7', { policyNumber: 'x' })).status).to.equal(400);
    expect((await from('198.51.100.7', { policyNumber, checkCode: 'wrong-code' })).status).to.equal(404);
    const limited = await from('198.51.100.7', { policyNumber, checkCode });
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers['retry-after'])).to.be.within(1, 60);
    expect((await from('203.0.113.9', { policyNumber, checkCode })).status).to.equal(200);
  });

  it("looks codes up with one seek of the verification key's index, without a temporary table or a sort", async () => {
    const { db } = await harness();
    const plan = await select<{ table: string; key: string | null; type: string; Extra: string | null }>(
      db,
      `EXPLAIN ${GUARANTEE_SQL.findForVerification}`,
      [verificationKey('P-1', 'ABCDEFGH'), null, null],
      undefined,
      { prepared: false },
    );
    const g = plan.find((r) => r.table === 'g');
    expect(g, JSON.stringify(plan)).to.include({ key: 'ix_guarantees_verification_key', type: 'ref' });
    // An ORDER BY on the guarantee's columns cost a temporary table and a filesort per lookup.
    expect(
      plan.map((r) => r.Extra ?? ''),
      JSON.stringify(plan),
    ).to.satisfy((extras: string[]) => extras.every((e) => !/temporary|filesort/i.test(e)));
  });

  it('computes the verification key as MariaDB does, for any characters; a code under 8 characters has none', async () => {
    const { db } = await harness();
    const org = await newOrg();
    const pairs = [
      ['POL/2026/ÀÉÎ-ü', 'CÓDIGO-ñ-8'],
      ['Ω-polizza 𝄞', 'clé-😀-€€€-ñandú-ß'],
      ['AB', 'CDEFGHIJ'],
      ['A', 'BCDEFGHIJ'],
      ['pol short', 'SEVEN-7'],
    ];
    for (const [policyNumber, checkCode] of pairs) {
      const g = await create(org, { details: { policyNumber, checkCode } });
      const [row] = await select<{ verification_key: Buffer | null }>(db, 'SELECT verification_key FROM guarantees WHERE id = $1', [g.id]);
      if ([...(checkCode as string)].length < 8) expect(row?.verification_key, checkCode).to.equal(null);
      else expect(row?.verification_key?.toString('hex'), policyNumber).to.equal(verificationKey(policyNumber as string, checkCode as string).toString('hex'));
    }
    // The length prefix keeps ("AB", "CDEFGHIJ") and ("A", "BCDEFGHIJ") apart.
    expect(verificationKey('AB', 'CDEFGHIJ').equals(verificationKey('A', 'BCDEFGHIJ'))).to.equal(false);
    const res = await verify({ policyNumber: 'Ω-polizza 𝄞', checkCode: 'clé-😀-€€€-ñandú-ß' });
    expect(res.status).to.equal(200);
    expect((res.body.matches as MatchBody[]).map((m) => m.issuer.orgId)).to.include(org.orgId);
  });

  it('counts each verification for the issuer; without a webhook endpoint, no guarantee.verified event is kept', async () => {
    const { org, id, policyNumber, checkCode } = await registered();
    const { http, db } = await harness();
    const before = await http.get(`/api/v2/guarantees/${id}/verification`).set('X-API-Key', org.key);
    expect(before.body.verifications).to.deep.equal({ count: 0, lastAt: null });
    const answers = await Promise.all([1, 2, 3].map(() => verify({ policyNumber, checkCode })));
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200]);
    await verify({ policyNumber, checkCode: 'not-the-code' });

    const after = await http.get(`/api/v2/guarantees/${id}/verification`).set('X-API-Key', org.key);
    expect(after.body.verifications.count).to.equal(3);
    const latest = answers
      .map((a) => a.body.verifiedAt as string)
      .sort()
      .at(-1);
    expect(after.body.verifications.lastAt).to.equal(latest);
    // No endpoint would ever receive them (deliveries are made as they are written): not written.
    const events = await select<{ id: string }>(db, "SELECT id FROM webhook_events WHERE org_id = $1 AND type = 'guarantee.verified'", [org.orgId]);
    expect(events).to.have.length(0);
  });

  it('shows the issuer whether its guarantee is verifiable, the URL (codes in the fragment) and QR codes of it; other organizations get 404', async () => {
    const { org, id, policyNumber, checkCode } = await registered({ policyNumber: 'POL 1/2026', checkCode: 'Ab+c d&e=F' });
    const { http, config } = await harness();
    const view = await http.get(`/api/v2/guarantees/${id}/verification`).set('X-API-Key', org.key);
    expect(view.status).to.equal(200);
    const base = config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}`;
    expect(view.body).to.deep.equal({
      verifiable: true,
      url: `${base}/verify#policyNumber=POL+1%2F2026&checkCode=Ab%2Bc+d%26e%3DF`,
      verifications: { count: 0, lastAt: null },
    });
    const fragment = new URLSearchParams(new URL(view.body.url as string).hash.slice(1));
    expect([fragment.get('policyNumber'), fragment.get('checkCode')]).to.deep.equal([policyNumber, checkCode]);

    const png = await http.get(`/api/v2/guarantees/${id}/verification.png`).set('X-API-Key', org.key).buffer(true);
    expect(png.status).to.equal(200);
    expect(png.headers['content-type']).to.equal('image/png');
    const image = PNG.sync.read(png.body as Buffer);
    expect(jsQR(new Uint8ClampedArray(image.data), image.width, image.height)?.data).to.equal(view.body.url);

    const svg = await http.get(`/api/v2/guarantees/${id}/verification.svg`).set('X-API-Key', org.key).buffer(true);
    expect(svg.status).to.equal(200);
    expect(svg.headers['content-type']).to.equal('image/svg+xml');
    expect(String(svg.body ?? svg.text)).to.match(/^<svg [^>]*viewBox="0 0 \d+ \d+"/);

    const other = await newOrg();
    for (const suffix of ['', '.svg', '.png']) {
      expect((await http.get(`/api/v2/guarantees/${id}/verification${suffix}`).set('X-API-Key', other.key)).status, suffix).to.equal(404);
      expect((await http.get(`/api/v2/guarantees/${id}/verification${suffix}`)).status, suffix).to.equal(401);
    }
  });

  it('never matches a code that could be guessed, and tells the issuer why: under 10 characters, a repetition, a sequence, a common password, the CIG inside, no checkCode', async () => {
    const { http } = await harness();
    const cases: Array<[string, RegExp, string?]> = [
      ['short7c', /fewer than 10 characters/],
      ['aaaaaaaaaaaa', /one character or block repeated/],
      ['abcdefghijklmn', /a sequence/],
      ['password2024!', /common word or password.*estimated at \d+ bits/],
      ['1234567890', /could be guessed/],
      [`x-Z9Y8X7W6V5-q`, /contains \(part of\) the CIG/, 'Z9Y8X7W6V5'],
    ];
    for (const [checkCode, why, cig] of cases) {
      const { org, id, policyNumber } = await registered({ checkCode, ...(cig && { cig }) });
      const view = await http.get(`/api/v2/guarantees/${id}/verification`).set('X-API-Key', org.key);
      expect(view.body, checkCode).to.include({ verifiable: false });
      expect(view.body.reason, checkCode)
        .to.match(why)
        .and.match(/never matches a public verification/);
      // The exact codes, and with the CIG too: a miss like any other.
      const miss = await verify({ policyNumber, checkCode });
      expect(miss.status, checkCode).to.equal(404);
      expect(miss.text, checkCode).to.equal('');
      expect((await verify({ policyNumber, checkCode, cig: cig ?? 'A1B2C3D4E5' })).status, checkCode).to.equal(404);
    }
    // 10 random letters and digits are enough.
    const strong = await registered({ checkCode: 'K4JD9LQ2Mx' });
    const view = await http.get(`/api/v2/guarantees/${strong.id}/verification`).set('X-API-Key', strong.org.key);
    expect(view.body).to.include({ verifiable: true }).and.not.have.property('reason');
    expect((await verify({ policyNumber: strong.policyNumber, checkCode: strong.checkCode })).status).to.equal(200);
    const bare = await create(strong.org, { details: { policyNumber: 'NO-CODE' } });
    const bareView = await http.get(`/api/v2/guarantees/${bare.id as string}/verification`).set('X-API-Key', strong.org.key);
    expect(bareView.body).to.include({ verifiable: false });
    expect(bareView.body.reason).to.match(/no checkCode/);
    expect(bareView.body.url).to.match(/\/verify#policyNumber=NO-CODE&checkCode=$/);
  });

  it('signs with VERIFICATION_SIGNING_KEY when set, and the JWKS keeps the keys that signed before (rotation)', async () => {
    const { policyNumber, checkCode } = await registered();
    const before = (await jwks()).keys.map((k) => k.kid);
    const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const rotated = await appWith({ VERIFY_RATE_PER_MINUTE: '0', VERIFICATION_SIGNING_KEY: pem.replace(/\n/g, '\\n') });
    const res = await verify({ policyNumber, checkCode }, rotated);
    expect(res.status).to.equal(200);
    const kid = decodeProtectedHeader(res.body.receipt as string).kid as string;
    expect(before).not.to.include(kid);
    const after = await jwks(rotated);
    expect(after.keys.map((k) => k.kid)).to.include.members([...before, kid]);
    for (const k of after.keys) expect(k).to.include({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' }).and.not.have.property('d');
    await compactVerify(res.body.receipt as string, createLocalJWKSet(after));
  });

  it('stops signing with a key retired while it runs: the configured one answers 503 (nothing counted) until the next is configured', async () => {
    const { policyNumber, checkCode, id } = await registered();
    const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    const running = await appWith({ VERIFY_RATE_PER_MINUTE: '0', VERIFICATION_SIGNING_KEY: pem.replace(/\n/g, '\\n') }, undefined, { receiptKeyRecheckMs: 0 });
    const first = await verify({ policyNumber, checkCode }, running);
    expect(first.status).to.equal(200);
    const kid = decodeProtectedHeader(first.body.receipt as string).kid as string;
    const counted = async () =>
      Number(
        (await select<{ n: number }>((await harness()).db, 'SELECT verifications AS n FROM verification_counts WHERE guarantee_id = $1', [id]))[0]?.n ?? 0,
      );
    const before = await counted();
    await execute((await harness()).db, 'UPDATE verification_keys SET retired_at = NOW(3) WHERE kid = $1', [kid]);
    const refused = await running.post('/api/public/v1/verifications').set('Accept', 'application/problem+json').send({ policyNumber, checkCode });
    expect(refused.status).to.equal(503);
    expect(JSON.parse(refused.text).detail).to.include('receipt signing key was retired');
    expect(await counted(), 'the refused verification is not counted').to.equal(before);
    // The key set still answers, and says the key is retired (what verifiers of its receipts need most).
    const set = await jwks(running);
    expect(set.keys.find((k) => k.kid === kid)).to.have.property('retiredAt');
  });
});

describe("public verification: guarantee.verified reaches the issuer's webhooks", function () {
  this.timeout(60_000);

  /** An organization's registered guarantee with a webhook endpoint at a local receiver. */
  async function withEndpoint() {
    const { http } = await harness();
    const r = await registered();
    const hooks = await receiver('/verified');
    expect((await http.post('/api/v1/webhooks').set('X-API-Key', r.org.key).send({ endpoint: hooks.url })).status).to.equal(200);
    return { ...r, hooks };
  }

  const eventsOf = async (orgId: string) =>
    select<{ id: string; created_at: Date; dispatched_at: Date | null; status: string | null }>(
      (await harness()).db,
      `SELECT e.id, e.created_at, e.dispatched_at, d.status FROM webhook_events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id
     WHERE e.org_id = $1 AND e.type = 'guarantee.verified'`,
      [orgId],
    );

  before(async () => {
    publicHttp = await appWith({ VERIFY_RATE_PER_MINUTE: '0' });
  });

  it("fans the event out in the verification's own transaction (dispatched as written, its delivery made), and delivers it", async () => {
    const { config } = await harness();
    const { org, id, policyNumber, checkCode, hooks } = await withEndpoint();
    let workers: RunningWorkers | undefined;
    try {
      expect((await verify({ policyNumber, checkCode })).status).to.equal(200);
      // No relay round is needed: the event was written dispatched, with its pending delivery.
      const [event, ...more] = await eventsOf(org.orgId);
      expect(more).to.have.length(0);
      expect(event?.dispatched_at?.getTime()).to.equal(event?.created_at.getTime());
      expect(event?.status).to.be.oneOf(['pending', 'succeeded']);
      workers = await startWorkers(['webhooks'], { config, logger: silent });
      const [received] = await hooks.waitFor(1, 20_000);
      const body = JSON.parse(received?.body ?? '{}') as { type: string; data: Record<string, unknown> };
      expect(body).to.deep.include({ type: 'guarantee.verified' });
      // Nothing about who verified.
      expect(Object.keys(body.data).sort()).to.deep.equal(['guaranteeId', 'verifiedAt']);
      expect(body.data.guaranteeId).to.equal(id);
      expect(received?.headers['webhook-id']).to.equal(event?.id);
    } finally {
      await workers?.close();
      await hooks.close();
    }
  });

  it("writes a batch's events, byte for byte, for the organizations with an endpoint registered by then, a disabled one included (kept for a replay), and only for them", async () => {
    const { db, webhooks } = await harness();
    const { org: active, hooks } = await withEndpoint();
    const { org: disabled, hooks: disabledHooks } = await withEndpoint();
    const { org: late, hooks: lateHooks } = await withEndpoint();
    await execute(db, "UPDATE webhook_endpoints SET status = 'disabled', disabled_reason = 'test' WHERE org_id = $1", [disabled.orgId]);
    const none = await newOrg();
    const at = new Date(Date.now() + 1); // after the endpoints were registered...
    await execute(db, 'UPDATE webhook_endpoints SET created_at = $1 WHERE org_id = $2', [new Date(at.getTime() + 60_000), late.orgId]); // ...but this one
    const rows = [active, none, disabled, active, none, late].map((o, i) => ({
      id: uuidv7({ msecs: at.getTime() }),
      orgId: o.orgId,
      body: JSON.stringify({ n: i, s: 'é 😀 \\ " \n \u2028 \u0000 \\u00e9' }),
    }));
    try {
      const results = await script(db, webhooks.fannedOutStatements('guarantee.verified', rows, at));
      const written = await select<{ id: string; org_id: string; body: string; status: string; created_at: Date; dispatched_at: Date }>(
        db,
        `SELECT e.id, e.org_id, e.body, e.created_at, e.dispatched_at, d.status FROM webhook_events e JOIN webhook_deliveries d ON d.event_id = e.id
         WHERE e.id IN ($1) ORDER BY e.body`,
        [rows.map((r) => r.id)],
        undefined,
        { prepared: false },
      );
      expect(written.map((w) => [w.org_id, w.body, w.status])).to.deep.equal([
        [active.orgId, rows[0]?.body, 'pending'],
        [disabled.orgId, rows[2]?.body, 'failed'],
        [active.orgId, rows[3]?.body, 'pending'],
      ]);
      for (const w of written) expect([w.created_at.getTime(), w.dispatched_at.getTime()]).to.deep.equal([at.getTime(), at.getTime()]);
      // The organizations without an endpoint by then: no event at all.
      const kept = await select<{ org_id: string }>(db, 'SELECT org_id FROM webhook_events WHERE id IN ($1)', [rows.map((r) => r.id)], undefined, {
        prepared: false,
      });
      expect(kept.map((k) => k.org_id).sort()).to.deep.equal([active.orgId, active.orgId, disabled.orgId].sort());
      // The last result is the deliveries made: the pending ones are to be queued.
      expect(
        pendingDeliveries(results.at(-1) as Parameters<typeof pendingDeliveries>[0])
          .map((d) => d.eventId)
          .sort(),
      ).to.deep.equal([rows[0]?.id, rows[3]?.id].sort());
    } finally {
      // No worker is to try these deliveries to receivers that are gone.
      await execute(db, 'DELETE FROM webhook_deliveries WHERE event_id IN ($1)', [rows.map((r) => r.id)], undefined, { prepared: false });
      await Promise.all([hooks.close(), disabledHooks.close(), lateHooks.close()]);
    }
  });

  type PlanRow = { table: string; type: string; key: string | null };
  const explain = async (statements: ReadonlyArray<{ sql: string; bind: unknown[] }>): Promise<PlanRow[][]> => {
    const { db } = await harness();
    return Promise.all(
      statements.map((statement) =>
        select<PlanRow>(db, `EXPLAIN ${statement.sql.replace(/\s+RETURNING .*$/s, '')}`, statement.bind, undefined, { prepared: false }),
      ),
    );
  };

  it("writes a verification's event and deliveries through the endpoints' index, and reads events by primary key only", async () => {
    const { webhooks } = await harness();
    const at = new Date();
    const plans = async (orgId: string) =>
      explain(webhooks.fannedOutStatements('guarantee.verified', [{ id: '00000000-0000-7000-8000-000000000000', orgId, body: '{}' }], at));
    const { org, hooks } = await withEndpoint();
    try {
      for (const orgId of [(await newOrg()).orgId, org.orgId]) {
        for (const plan of await plans(orgId)) {
          expect(plan[0]?.table, JSON.stringify(plan)).to.equal('j'); // the JSON rows sent
          expect(plan.length, JSON.stringify(plan)).to.be.above(1);
          for (const r of plan.slice(1)) {
            expect(r.type, JSON.stringify(plan)).to.be.oneOf(['ref', 'eq_ref']); // a seek, never a scan of every endpoint
            expect(r.key, JSON.stringify(plan)).to.equal(r.table === 'ev' ? 'PRIMARY' : 'uq_webhook_endpoints_url');
          }
        }
      }
    } finally {
      await hooks.close();
    }
  });

  it("the relay fans out from the organizations' endpoints: without any, no event or delivery is read; with some, events and deliveries by primary key", async () => {
    const at = new Date();
    const plans = async (orgId: string) => explain(fanOutStatements([{ id: '00000000-0000-7000-8000-000000000000', orgId }], at));
    for (const plan of await plans((await newOrg()).orgId)) expect(plan[0]?.table, JSON.stringify(plan)).to.equal('ep');
    const { org, hooks } = await withEndpoint();
    try {
      for (const plan of await plans(org.orgId)) {
        expect(plan[0]?.table, JSON.stringify(plan)).to.equal('ep');
        // Never through an endpoint's index of deliveries, which would read all its pending ones.
        expect(plan.find((r) => r.table !== 'ep')?.key, JSON.stringify(plan)).to.equal('PRIMARY');
      }
    } finally {
      await hooks.close();
    }
  });

  it('answers at once with Redis unreachable; the delivery waits in the database and the reconciler queues it once Redis is there', async () => {
    const { config, db, events } = await harness();
    const { org, id, policyNumber, checkCode, hooks } = await withEndpoint();
    const deadRedis = producerConnection(`redis://127.0.0.1:${await freePort()}/0`);
    deadRedis.on('error', () => undefined);
    const deadQueues = openQueues(deadRedis, config.QUEUE_PREFIX, silent);
    const warnings: string[] = [];
    const logger = createLogger('warn', {
      write: (line: string) => {
        warnings.push(line);
      },
    });
    const deadEvents = eventsOver(db, deadQueues, config, logger);
    const http = supertest(
      appOver({ config: configWith({ VERIFY_RATE_PER_MINUTE: '0' }), logger: silent, db, queues: deadQueues, events: deadEvents }).callback(),
    );
    let workers: RunningWorkers | undefined;
    try {
      const started = Date.now();
      expect((await verify({ policyNumber, checkCode }, http)).status).to.equal(200);
      expect(Date.now() - started).to.be.below(2000);
      const [event] = await eventsOf(org.orgId);
      expect(event?.status).to.equal('pending');
      const notQueued = () => warnings.filter((w) => w.includes('webhook deliveries not queued')).length;
      await eventually('the failure to queue to be logged', () => notQueued() === 1, 5000);
      // Another batch soon after is left to the reconciler at once, without trying Redis or saying so again.
      const again = Date.now();
      expect((await verify({ policyNumber, checkCode }, http)).status).to.equal(200);
      expect(Date.now() - again).to.be.below(1000);
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(notQueued()).to.equal(1);
      // Redis is there again (the harness's): the reconciler finds the delivery past its due time.
      expect(await events.reconcile({ graceMs: 0 })).to.be.at.least(1);
      workers = await startWorkers(['webhooks'], { config, logger: silent });
      const [received] = await hooks.waitFor(1, 20_000);
      expect((JSON.parse(received?.body ?? '{}') as { data: { guaranteeId: string } }).data.guaranteeId).to.equal(id);
    } finally {
      await workers?.close();
      await hooks.close();
      await deadQueues.close();
      deadRedis.disconnect();
      await deadEvents.relay.stop();
    }
  });
});

// The verification page (GET /verify) in a real browser, opened as a clerk would: from the QR
// code's URL, with a wrong code, with the file received (the registered one and another), with a
// proof whose ledger entry was tampered with, on a phone, by keyboard, in English, printed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { launch, screenshot, serve, watchedPage, type Served, type WatchedPage } from '../support/browser.js';
import { checksum, notarizeAll, registered, unique } from '../support/guarantees.js';
import supertest from 'supertest';
import { configWith, harness, issueFile, newAuthority } from '../support/harness.js';
import { openCore, transparencyLog } from '../../src/composition.js';
import { createLogRepository } from '../../src/log/log.repository.js';
import { createLogger } from '../../src/shared/logger.js';
import { startWitness } from '../support/log.js';
import { entry } from '../support/entry.js';

const PDF = `%PDF-1.4\n% polizza fideiussoria ${unique()}\n%%EOF\n`;

/** Runs `expression` in the page (a string: these tests are type-checked without the DOM's types). */
const inPage = <T>(page: Page, expression: string): Promise<T> => page.evaluate(expression) as Promise<T>;
const q = (selector: string) => `document.querySelector(${JSON.stringify(selector)})`;
const text = (page: Page, selector: string) => inPage<string>(page, `${q(selector)}?.textContent ?? ''`);
const attr = (page: Page, selector: string, name: string) => inPage<string | null>(page, `${q(selector)}?.getAttribute(${JSON.stringify(name)}) ?? null`);

async function resultOf(page: Page): Promise<string> {
  await page.waitForSelector('[data-verify-result]', { timeout: 10_000 });
  return (await attr(page, '[data-verify-result]', 'data-status')) ?? '';
}

const checks = (page: Page) =>
  inPage<Array<[string, string]>>(
    page,
    "[...document.querySelectorAll('[data-check]')].map((e) => [e.getAttribute('data-check'), e.getAttribute('data-passed')])",
  );

describe('the verification page in Chromium', function () {
  this.timeout(60_000);
  let browser: Browser;
  let app: Served;
  let files: string;
  let watched: WatchedPage[] = [];

  before(async () => {
    browser = await launch();
    app = await serve({ VERIFY_RATE_PER_MINUTE: '0' });
    files = mkdtempSync(join(tmpdir(), 'verify-page-'));
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => app?.server.close(resolve));
  });

  afterEach(async () => {
    for (const w of watched) {
      expect(w.problems, 'console errors, exceptions and requests to other hosts').to.deep.equal([]);
      await w.page.close();
    }
    watched = [];
  });

  async function open(
    url: string,
    viewport?: { width: number; height: number; deviceScaleFactor?: number; isMobile?: boolean; hasTouch?: boolean },
  ): Promise<Page> {
    const w = await watchedPage(browser, app.origin, viewport);
    watched.push(w);
    await w.page.goto(url, { waitUntil: 'domcontentloaded' });
    return w.page;
  }

  async function qrUrl(org: { key: string }, id: string): Promise<string> {
    const { http } = await harness();
    const view = await http.get(`/api/v2/guarantees/${id}/verification`).set('X-API-Key', org.key);
    // The issuer's URL is PUBLIC_BASE_URL's; the page is opened on this test's server.
    return (view.body.url as string).replace(/^http:\/\/[^/]+/, app.origin);
  }

  it("from the QR code's URL: verifies at once, shows the issuer first, the terms, every proof step passed, the documents; matches the file received, not another", async () => {
    const g = await registered({ pdfContent: PDF, policyNumber: `POL/${unique()}`, amount: 150000 });
    await notarizeAll();
    const page = await open(await qrUrl(g.org, g.id));

    expect(await resultOf(page)).to.equal('found');
    expect(await inPage<string>(page, `${q('#policyNumber')}.value`)).to.equal(g.policyNumber);
    const article = await inPage<{ first: string; text: string }>(
      page,
      `({ first: ${q('article.match')}.firstElementChild.className, text: ${q('article.match')}.textContent })`,
    );
    expect(article.first).to.equal('issuer');
    expect(article.text).to.include('IT00743110157').and.include('IVASS 1.00012').and.include(g.policyNumber);
    expect(article.text).to.match(/150\.000,00\s€/);
    const steps = await checks(page);
    expect(steps.map(([id]) => id)).to.include.members(['digest', 'merkle-root', 'path-position', 'ledger-root', 'ledger-hash']);
    expect(
      steps.every(([, passed]) => passed === 'true'),
      JSON.stringify(steps),
    ).to.equal(true);
    expect(await inPage<string[]>(page, "[...document.querySelectorAll('.doc')].map((e) => e.textContent)")).to.satisfy(
      (docs: string[]) =>
        docs[0]?.includes('Nessuna minaccia rilevata') &&
        docs[1]?.includes('Firmato da Mario Rossi') &&
        !docs[1].includes('RSSMRA80A01H501U') &&
        docs[1].includes('marca temporale del') &&
        docs[1].includes('certificato qualificato secondo la lista di fiducia IT (Certificatore di prova S.p.A.)') &&
        docs[1].includes('certificato emesso da Test CA'),
    );

    writeFileSync(join(files, 'ricevuta.pdf'), PDF);
    const input = await page.$('#file-input');
    await (input as NonNullable<typeof input>).uploadFile(join(files, 'ricevuta.pdf'));
    await page.waitForSelector('[data-file-match]');
    expect(await attr(page, '[data-file-match]', 'data-matched-key')).to.equal(g.pdf);
    await screenshot(page, 'verify-desktop');

    writeFileSync(join(files, 'altro.pdf'), `${PDF} `);
    await (input as NonNullable<typeof input>).uploadFile(join(files, 'altro.pdf'));
    await page.waitForFunction("document.querySelector('[data-file-match]')?.getAttribute('data-matched-key') === ''");
    expect(await text(page, '[data-file-match]')).to.include('NON corrisponde');

    // The receipt is there to print: the print stylesheet keeps it and drops the form.
    const jws = await text(page, '[data-receipt]');
    expect(jws.split('.')).to.have.length(3);
    await page.emulateMediaType('print');
    expect(await inPage<string>(page, "getComputedStyle(document.getElementById('verify-form')).display")).to.equal('none');
    expect(await inPage<string>(page, "getComputedStyle(document.querySelector('[data-receipt]')).display")).not.to.equal('none');
    await screenshot(page, 'verify-print');
  });

  it("with the issuer's private documents: not shown, counted, and every step that can be recomputed passes; says what the anchor's checks do not prove", async () => {
    const g = await registered();
    const { http } = await harness();
    const secret = await issueFile(g.org.orgId, { status: 'Clean', checksum: checksum(unique()), fileName: 'riservato.pdf' });
    // A second guarantee of the same codes, with a private document; the first has none.
    const checkCode = `${g.checkCode}Q`;
    const res = await http
      .post('/api/v2/guarantees')
      .set('X-API-Key', g.org.key)
      .send({ details: { policyNumber: g.policyNumber, checkCode, actType: 'BAIL_ACT' }, docs: [{ key: g.pdf }, { key: secret }] });
    expect(res.status).to.equal(200);
    const hidden = await issueFile(g.org.orgId, { status: 'Clean', checksum: checksum(unique()), fileName: 'appendice-riservata.pdf' });
    const amended = await http
      .post(`/api/v2/guarantees/${res.body.id as string}/amendments`)
      .set('X-API-Key', g.org.key)
      .send({ type: 'EXTENSION', effectiveAt: '2027-01-01T00:00:00Z', expiresAt: '2029-12-31T00:00:00Z', docs: [{ key: hidden }] });
    expect(amended.status).to.equal(200);
    await notarizeAll();
    await notarizeAll();
    const page = await open(`${app.origin}/verify#${new URLSearchParams({ policyNumber: g.policyNumber, checkCode }).toString()}`);
    expect(await resultOf(page)).to.equal('found');
    await page.waitForSelector('[data-amendment]');
    const steps = await checks(page);
    expect(steps.map(([id]) => id)).to.include.members(['merkle-root', 'ledger-root', 'chain-start', 'chain-link']);
    expect(
      steps.every(([, passed]) => passed === 'true'),
      JSON.stringify(steps),
    ).to.equal(true);
    expect(await attr(page, '[data-private-documents]', 'data-private-documents')).to.equal('1');
    expect(await text(page, '[data-digest-withheld]')).to.include('documenti riservati');
    expect(await text(page, '[data-amendment]')).to.include('1 documento riservato');
    expect(await inPage<string>(page, 'document.body.textContent'))
      .not.to.include('riservato.pdf')
      .and.not.include('appendice-riservata.pdf');
    // The anchor's checks say what they do not prove: the page does not query the chain or the ledger.
    expect(await attr(page, '[data-not-checked]', 'data-not-checked')).to.equal('ledger');
    expect(await text(page, '[data-not-checked]')).to.include('tenuto dal registro stesso');
    await screenshot(page, 'verify-private-documents');
  });

  it("checks the guarantee in the transparency log: the inclusion and the log key's signature recomputed here, the cosigning witness named, and what that proves said; a lying inclusion proof fails", async () => {
    const g = await registered({ pdfContent: PDF, policyNumber: `LOG/${unique()}`, amount: 5000 });
    await notarizeAll();
    const h = await harness();
    // The log as the page's server names it (its origin follows PUBLIC_BASE_URL): the key it publishes at /log/key.
    const settings = { PUBLIC_BASE_URL: app.origin };
    const probe = transparencyLog(openCore(configWith(settings), createLogger('silent'), { db: h.db }));
    const w = await startWitness(mkdtempSync(join(tmpdir(), 'witness-')), [await probe.service.verifierKey()]);
    try {
      const { service: log, sequencer } = transparencyLog(
        openCore(configWith({ ...settings, LOG_WITNESSES: `${w.url} ${w.vkey}` }), createLogger('silent'), { db: h.db }),
      );
      // One entry more, so that the record's leaf has its sibling in the tree (the lie below is told there).
      await sequencer.exclusive((fence) =>
        createLogRepository(h.db).transaction((t) => fence.append([new TextEncoder().encode(`record ${'c'.repeat(64)}`)], t)),
      );
      await log.tick({ force: true });
      const page = await open(await qrUrl(g.org, g.id));
      expect(await resultOf(page)).to.equal('found');
      await page.waitForSelector('[data-log-check="inclusion"]', { timeout: 10_000 });
      expect(await attr(page, '[data-log-check="inclusion"]', 'data-passed'), await text(page, '[data-log]')).to.equal('true');
      expect(await attr(page, '[data-log-check="signature"]', 'data-passed'), await text(page, '[data-log]')).to.equal('true');
      expect(await text(page, '[data-log-cosigner]')).to.equal('witness.test');
      expect(await text(page, '[data-log-proves]')).to.include('non può dimostrare che il registro sia onesto');
      expect(await text(page, '[data-not-checked]')).to.satisfy((t: string) => t.includes('--rpc') || t.includes('registro interno'));
      await page.evaluate("document.querySelector('[data-log]').scrollIntoView()");
      await screenshot(page, 'verify-log');

      // The receipt carries the same inclusion; cli receipt verify checks it with the pinned keys.
      const jws = await text(page, '[data-receipt]');
      const payload = JSON.parse(Buffer.from(jws.split('.')[1] as string, 'base64url').toString('utf8')) as { matches: Array<{ log?: unknown }> };
      expect(payload.matches[0]?.log, 'the receipt names the log inclusion').to.not.equal(undefined);
      const jwks = join(files, 'jwks.json');
      writeFileSync(jwks, await (await fetch(`${app.origin}/.well-known/jwks.json`)).text());
      const checked = spawnSync(
        process.execPath,
        [...entry('src/cli.ts'), 'receipt', 'verify', jws, '--jwks', jwks, '--log-key', await probe.service.verifierKey(), '--witness', w.vkey],
        { encoding: 'utf8', env: { ...process.env, NODE_NO_WARNINGS: '1' } },
      );
      expect(checked.status, checked.stderr).to.equal(0);
      expect(checked.stderr).to.include('ok   the checkpoint is cosigned by the witness witness.test');

      // The registry serves a proof whose sibling hash lies: the inclusion fails here.
      const [row] = await select<{ log_index: string | number }>(h.db, 'SELECT log_index FROM notarization_proofs WHERE guarantee_id = $1', [g.id]);
      const sibling = Number(row?.log_index) ^ 1;
      const [kept] = await select<{ leaf_hash: Buffer }>(h.db, 'SELECT leaf_hash FROM log_entries WHERE idx = $1', [sibling]);
      expect(kept, 'the sibling leaf').to.not.equal(undefined);
      await execute(h.db, 'UPDATE log_entries SET leaf_hash = $2 WHERE idx = $1', [sibling, Buffer.alloc(32, 7)]);
      try {
        const lied = await open(await qrUrl(g.org, g.id));
        expect(await resultOf(lied)).to.equal('found');
        await lied.waitForSelector('[data-log-check="inclusion"]', { timeout: 10_000 });
        expect(await attr(lied, '[data-log-check="inclusion"]', 'data-passed')).to.equal('false');
      } finally {
        await execute(h.db, 'UPDATE log_entries SET leaf_hash = $2 WHERE idx = $1', [sibling, kept?.leaf_hash]);
      }
    } finally {
      await w.stop();
    }
  });

  it('a wrong code shows one neutral message; changing the fragment verifies again', async () => {
    const g = await registered();
    const page = await open(`${app.origin}/verify#policyNumber=${encodeURIComponent(g.policyNumber)}&checkCode=WRONG-${unique()}`);
    expect(await resultOf(page)).to.equal('not-found');
    expect(await text(page, '[data-verify-result]')).to.include('Nessuna garanzia corrisponde');
    await screenshot(page, 'verify-not-found');

    await page.evaluate(`location.hash = ${JSON.stringify(new URLSearchParams({ policyNumber: g.policyNumber, checkCode: g.checkCode }).toString())}`);
    await page.waitForSelector('[data-verify-result][data-status="found"]', { timeout: 10_000 });
    // Not yet notarized: found, and says so; no proof steps yet.
    expect(await text(page, '[data-verify-result]')).to.include('non ancora notarizzata');
    expect(await checks(page)).to.deep.equal([]);
  });

  it('shows a failed step when the ledger entry behind the proof was tampered with in the database', async () => {
    const g = await registered();
    await notarizeAll();
    const { db } = await harness();
    const [batch] = await select<{ id: number; receipt: string }>(
      db,
      'SELECT b.id, b.receipt FROM notarization_batches b JOIN notarization_proofs p ON p.batch_id = b.id WHERE p.guarantee_id = $1',
      [g.id],
    );
    const original = (batch as { receipt: string }).receipt;
    const receipt = JSON.parse(original) as { entry: { recordedAt: string } };
    receipt.entry.recordedAt = '2020-01-01T00:00:00.000Z';
    await execute(db, 'UPDATE notarization_batches SET receipt = $2 WHERE id = $1', [batch?.id, JSON.stringify(receipt)]);
    try {
      const page = await open(await qrUrl(g.org, g.id));
      expect(await resultOf(page)).to.equal('found');
      const steps = Object.fromEntries(await checks(page));
      expect(steps['ledger-hash']).to.equal('false');
      expect(steps.digest).to.equal('true');
      expect(await text(page, '.banner.bad')).to.include('NON è superato');
      await screenshot(page, 'verify-tampered');
    } finally {
      await execute(db, 'UPDATE notarization_batches SET receipt = $2 WHERE id = $1', [batch?.id, original]);
    }
  });

  it("shows what the guarantee covers today first, then its history, each amendment's proof steps passed; an amendment changed in the database fails its steps and breaks the chain after it", async () => {
    const g = await registered({ amount: 100000 });
    const { http, db } = await harness();
    const amend = async (body: Record<string, unknown>) => {
      const res = await http.post(`/api/v2/guarantees/${g.id}/amendments`).set('X-API-Key', g.org.key).send(body);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    };
    const APPENDIX = `%PDF-1.4\n% appendice ${unique()}\n%%EOF\n`;
    const appendix = await issueFile(g.org.orgId, { status: 'Clean', checksum: checksum(APPENDIX), fileName: 'appendice-1.pdf', public: true });
    await amend({
      type: 'EXTENSION',
      effectiveAt: '2026-06-01T09:00:00+02:00',
      expiresAt: '2028-12-31T00:00:00Z',
      reason: 'Appendice n. 1: proroga',
      docs: [{ key: appendix, type: 'OTHER' }],
    });
    await amend({ type: 'PARTIAL_RELEASE', effectiveAt: '2026-09-01T09:00:00+02:00', garantedAmount: 60000, reason: 'SAL n. 2' });
    await notarizeAll();
    await notarizeAll();
    await amend({ type: 'CLAIM', effectiveAt: '2026-10-01T09:00:00+02:00', claimedAmount: 25000, reason: 'Inadempimento' });
    const page = await open(await qrUrl(g.org, g.id));
    expect(await resultOf(page)).to.equal('found');
    // The state comes right after the issuer, before the terms as registered.
    const order = await inPage<string[]>(page, `[...${q('article.match')}.children].map((e) => e.querySelector('h4')?.textContent ?? e.className)`);
    expect(order.slice(0, 3)).to.deep.equal(['issuer', 'Che cosa copre oggi', "Condizioni all'emissione"]);
    expect(await attr(page, '[data-guarantee-state]', 'data-guarantee-state')).to.equal('CLAIMED');
    expect(await attr(page, '[data-guarantee-state]', 'data-history-holds')).to.equal('true');
    const state = await text(page, '[data-guarantee-state]');
    expect(state)
      .to.include('Escussa')
      .and.match(/60\.000,00\s€/)
      .and.include('31 dicembre 2028')
      .and.include('16 ottobre 2026');
    const items = await inPage<Array<[string, string]>>(
      page,
      "[...document.querySelectorAll('[data-amendment]')].map((e) => [e.getAttribute('data-seq'), e.textContent])",
    );
    expect(items.map(([seq]) => seq)).to.deep.equal(['1', '2', '3']);
    expect(items[0]?.[1]).to.include('Proroga').and.include('Appendice n. 1: proroga').and.include('Notarizzata');
    expect(items[1]?.[1])
      .to.include('Svincolo parziale')
      .and.match(/60\.000,00\s€/);
    expect(items[2]?.[1]).to.include('Escussione').and.include('non ancora notarizzata');
    const amendmentSteps = (seq: number) =>
      inPage<Array<[string, string]>>(
        page,
        `[...document.querySelectorAll('[data-amendment][data-seq="${seq}"] [data-check]')].map((e) => [e.getAttribute('data-check'), e.getAttribute('data-passed')])`,
      );
    for (const seq of [1, 2]) {
      const steps = await amendmentSteps(seq);
      expect(steps.map(([id]) => id)).to.include.members(['digest', 'merkle-root', 'ledger-hash', 'chain-start', 'chain-link']);
      expect(
        steps.every(([, passed]) => passed === 'true'),
        JSON.stringify(steps),
      ).to.equal(true);
    }
    expect(await amendmentSteps(3)).to.deep.equal([]);
    expect(Object.fromEntries(await checks(page))).to.include({ 'chain-order': 'true', 'chain-state': 'true' });
    // Amendment 3 is not notarized yet: the status says it counts it.
    expect(await text(page, '[data-guarantee-state] .caveat')).to.include('non (ancora) notarizzate');
    await screenshot(page, 'verify-history');
    // The appendix received on paper is checked like the guarantee's own documents.
    writeFileSync(join(files, 'appendice.pdf'), APPENDIX);
    const input = await page.$('#file-input');
    await (input as NonNullable<typeof input>).uploadFile(join(files, 'appendice.pdf'));
    await page.waitForSelector('[data-file-match]');
    expect(await attr(page, '[data-file-match]', 'data-matched-key')).to.equal(appendix);

    // In English too.
    await page.click('[data-lang="en"]');
    expect(await text(page, '[data-guarantee-state]')).to.include('Claimed: the beneficiary has asked for payment');
    expect(await text(page, '[data-amendment][data-seq="2"]')).to.include('Partial release');

    // A registry (or anyone in between) that says the guarantee is still active, the claim left out: the status no longer follows from the history.
    const real = (await http.post('/api/public/v1/verifications').send({ policyNumber: g.policyNumber, checkCode: g.checkCode })).body as {
      matches: Array<{ state: Record<string, unknown> }>;
    };
    const lying = { ...real, matches: real.matches.map((m) => ({ ...m, state: { ...m.state, status: 'ACTIVE', openClaim: null, claimDueAt: null } })) };
    const w = await watchedPage(browser, app.origin);
    watched.push(w);
    await w.page.setRequestInterception(true);
    w.page.on('request', (r) => {
      if (r.url().endsWith('/api/public/v1/verifications')) void r.respond({ status: 200, contentType: 'application/json', body: JSON.stringify(lying) });
      else void r.continue();
    });
    await w.page.goto(await qrUrl(g.org, g.id), { waitUntil: 'domcontentloaded' });
    expect(await resultOf(w.page)).to.equal('found');
    expect(await attr(w.page, '[data-guarantee-state]', 'data-history-holds')).to.equal('false');
    expect(Object.fromEntries(await checks(w.page))['chain-state']).to.equal('false');

    // Amendment 1's reason rewritten in the database: its digest no longer matches its proof, and 2's link no longer matches it.
    await execute(db, "UPDATE guarantee_amendments SET reason = 'Appendice n. 1: proroga di un anno' WHERE guarantee_id = $1 AND seq = 1", [g.id]);
    const tampered = await open(await qrUrl(g.org, g.id));
    expect(await resultOf(tampered)).to.equal('found');
    const steps1 = Object.fromEntries(
      await inPage<Array<[string, string]>>(
        tampered,
        "[...document.querySelectorAll('[data-amendment][data-seq=\"1\"] [data-check]')].map((e) => [e.getAttribute('data-check'), e.getAttribute('data-passed')])",
      ),
    );
    expect(steps1).to.include({ digest: 'false', 'chain-link': 'false', 'merkle-root': 'true' });
    const steps2 = await inPage<Array<[string, string]>>(
      tampered,
      "[...document.querySelectorAll('[data-amendment][data-seq=\"2\"] [data-check]')].map((e) => [e.getAttribute('data-check'), e.getAttribute('data-passed')])",
    );
    expect(Object.fromEntries(steps2)).to.include({ digest: 'true', 'chain-link': 'false' });
    expect(await text(tampered, '[data-amendment][data-seq="1"] .banner.bad')).to.include('NON è superato');
    // The status is flagged where it is read first.
    expect(await attr(tampered, '[data-guarantee-state]', 'data-history-holds')).to.equal('false');
    expect(await text(tampered, '[data-guarantee-state] .banner.bad')).to.include('potrebbe non essere attendibile');
    await screenshot(tampered, 'verify-history-tampered');
  });

  it('shows an amendment that will never be notarized, with its reason, and says the status counts it', async () => {
    const g = await registered();
    const { http, db } = await harness();
    const bad = await issueFile(g.org.orgId);
    const res = await http
      .post(`/api/v2/guarantees/${g.id}/amendments`)
      .set('X-API-Key', g.org.key)
      .send({ type: 'AMOUNT_CHANGE', effectiveAt: '2027-06-01T00:00:00Z', garantedAmount: 9000, docs: [{ key: bad }] });
    expect(res.status).to.equal(200);
    await execute(db, "UPDATE files SET status = 'Infected' WHERE object_key = $1", [bad]);
    await notarizeAll();
    await notarizeAll();
    const page = await open(await qrUrl(g.org, g.id));
    expect(await resultOf(page)).to.equal('found');
    expect(await text(page, '[data-amendment][data-seq="1"] [data-blocked]'))
      .to.include('Non sarà notarizzata')
      .and.include(`Doc ${bad} is Infected`);
    expect(await attr(page, '[data-guarantee-state]', 'data-history-holds')).to.equal('true');
    expect(await text(page, '[data-guarantee-state] .caveat')).to.include('non (ancora) notarizzate');
    await screenshot(page, 'verify-history-blocked');
  });

  it('shows who recorded each amendment, the authority that took charge and its pending consent; the history still holds', async () => {
    const g = await registered();
    const { http } = await harness();
    const authority = await newAuthority();
    const taken = await supertest(app.origin)
      .post('/api/authority/v1/guarantees')
      .set('X-API-Key', authority.key)
      .send({ policyNumber: g.policyNumber, checkCode: g.checkCode, cig: 'A1B2C3D4E5', garantedAmount: 15000.5 });
    expect(taken.status, JSON.stringify(taken.body)).to.equal(200);
    const demand = await http
      .post(`/api/authority/v1/guarantees/${g.id}/amendments`)
      .set('X-API-Key', authority.key)
      .send({ type: 'DEMAND', claimedAmount: 2500, reason: 'Inadempimento' });
    expect(demand.status).to.equal(200);
    const reduce = await http
      .post(`/api/v2/guarantees/${g.id}/amendments`)
      .set('X-API-Key', g.org.key)
      .send({ type: 'PARTIAL_RELEASE', effectiveAt: '2027-06-01T00:00:00Z', garantedAmount: 9000 });
    expect(reduce.body.consent).to.equal('PENDING');
    await notarizeAll();
    await notarizeAll();
    const page = await open(await qrUrl(g.org, g.id));
    expect(await resultOf(page)).to.equal('found');
    await page.waitForSelector('[data-amendment]');
    const actors = await inPage<Array<[string, string]>>(
      page,
      "[...document.querySelectorAll('[data-amendment]')].map((e) => [e.getAttribute('data-seq'), e.getAttribute('data-actor')])",
    );
    expect(actors).to.deep.equal([
      ['1', 'authority'],
      ['2', 'authority'],
      ['3', 'issuer'],
    ]);
    expect(await text(page, '[data-amendment][data-seq="1"]'))
      .to.include('Presa in carico della stazione appaltante')
      .and.include('la stazione appaltante');
    expect(await text(page, '[data-amendment][data-seq="2"]'))
      .to.include('Escussione della stazione appaltante')
      .and.include('Inadempimento');
    expect(await text(page, '[data-amendment][data-seq="3"]'))
      .to.include("l'emittente")
      .and.include('Consenso della stazione appaltante')
      .and.include('in attesa');
    // The partial release waits: the state is the demand's, and it follows from the history.
    expect(await attr(page, '[data-guarantee-state]', 'data-guarantee-state')).to.equal('CLAIMED');
    expect(await attr(page, '[data-guarantee-state]', 'data-history-holds')).to.equal('true');
    const steps = await checks(page);
    expect(
      steps.every(([, passed]) => passed === 'true'),
      JSON.stringify(steps),
    ).to.equal(true);
    await screenshot(page, 'verify-history-authority');
  });

  it('on a phone: fits the screen without sideways scrolling, its history of amendments too; an amendment in effect later is listed as such', async () => {
    const g = await registered();
    const { http } = await harness();
    // In effect in two months: recorded, and not yet what the guarantee covers.
    const later = new Date(Date.now() + 60 * 24 * 3600 * 1000);
    const amended = await http
      .post(`/api/v2/guarantees/${g.id}/amendments`)
      .set('X-API-Key', g.org.key)
      .send({ type: 'EXTENSION', effectiveAt: later.toISOString(), expiresAt: '2029-06-30T00:00:00Z', reason: 'Appendice n. 1' });
    expect(amended.status).to.equal(200);
    await notarizeAll();
    await notarizeAll();
    const page = await open(await qrUrl(g.org, g.id), { width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    expect(await resultOf(page)).to.equal('found');
    const widths = await inPage<number[]>(page, '[document.documentElement.scrollWidth, window.innerWidth]');
    expect(widths[0], 'page width against the screen').to.be.at.most(widths[1] as number);
    expect(await inPage<number>(page, "document.querySelectorAll('[data-amendment]').length")).to.equal(1);
    expect(await text(page, '[data-guarantee-state] [data-scheduled="1"]'))
      .to.include('Proroga')
      .and.include(String(later.getUTCFullYear()));
    expect(await text(page, '[data-guarantee-state]')).not.to.include('30 giugno 2029');
    expect(Object.fromEntries(await checks(page))).to.include({ 'chain-state': 'true' });
    await screenshot(page, 'verify-phone');
  });

  it('works by keyboard alone, with labelled fields, and in English', async () => {
    const g = await registered();
    const page = await open(`${app.origin}/verify`);
    for (const id of ['policyNumber', 'checkCode', 'cig', 'garantedAmount']) {
      expect(await page.$(`label[for="${id}"]`), `label of ${id}`).not.to.equal(null);
    }
    await page.click('[data-lang="en"]');
    expect(await text(page, 'h1')).to.equal('Guarantee verification');
    expect(await inPage<string>(page, 'document.documentElement.lang')).to.equal('en');
    await page.focus('#policyNumber');
    await page.keyboard.type(g.policyNumber);
    await page.keyboard.press('Tab');
    await page.keyboard.type(g.checkCode);
    await page.keyboard.press('Enter');
    expect(await resultOf(page)).to.equal('found');
    expect(await text(page, '[data-verify-result] h2')).to.equal('Guarantee found');
  });

  it('says when to retry after too many verifications (429)', async () => {
    const limited = await serve({ VERIFY_RATE_PER_MINUTE: '1' });
    const w = await watchedPage(browser, limited.origin);
    try {
      const page = w.page;
      await page.goto(`${limited.origin}/verify#policyNumber=P-${unique()}&checkCode=CODE-${unique()}`, { waitUntil: 'domcontentloaded' });
      expect(await resultOf(page)).to.equal('not-found');
      await page.evaluate("location.hash = 'policyNumber=P-2&checkCode=CODE-22222'");
      await page.waitForSelector('[role="alert"].banner', { timeout: 10_000 });
      expect(await text(page, '[role="alert"].banner')).to.match(/Riprovi tra \d+ secondi/);
      expect(w.problems).to.deep.equal([]);
    } finally {
      // Whatever failed, the page and its keep-alive connections go: server.close() would
      // otherwise wait for them, and the test's own error be lost to mocha's timeout.
      await w.page.close().catch(() => undefined);
      limited.server.closeAllConnections();
      await new Promise((resolve) => limited.server.close(resolve));
    }
  });
});

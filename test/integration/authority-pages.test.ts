// The contracting authority's pages (/authority) in Chromium, signed in through the local
// OpenID Provider that npm test runs (scripts/oidc/provider.ts, the oidc-provider library) with
// its test people: take charge with the tender's data, demand payment with a document, the 15
// days shown, answer the issuer's change that waits for consent, release; a person bound to no
// authority sees only that; the sessions' CSRF tokens, idle end and sign-out. Desktop and phone.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { LOCAL_PASSWORD, LOCAL_USERS } from '../../scripts/oidc/users.js';
import { CLAIM_TERM_MS } from '../../src/guarantees/amendments.js';
import { execute, select } from '../../src/shared/db/sequelize.js';
import { launch, screenshot, serve, watchedPage, type Served, type WatchedPage } from '../support/browser.js';
import { registered } from '../support/guarantees.js';
import { FAST_PIPELINE, configWith, harness, newAuthority, waitForStatus, type TestAuthority } from '../support/harness.js';
import { createLogger } from '../../src/shared/logger.js';
import { startWorkers, type RunningWorkers } from '../../workers/index.js';

const inPage = <T>(page: Page, expression: string): Promise<T> => page.evaluate(expression) as Promise<T>;
const q = (selector: string) => `document.querySelector(${JSON.stringify(selector)})`;
const text = (page: Page, selector: string) => inPage<string>(page, `${q(selector)}?.textContent ?? ''`);
const attr = (page: Page, selector: string, name: string) => inPage<string | null>(page, `${q(selector)}?.getAttribute(${JSON.stringify(name)}) ?? null`);

const [MARIO, GIULIA] = LOCAL_USERS as [(typeof LOCAL_USERS)[0], (typeof LOCAL_USERS)[0]];
const codeOf = (u: { fiscalNumber: string }) => u.fiscalNumber.replace('TINIT-', '');

describe("the contracting authority's pages in Chromium, through a real OpenID Provider", function () {
  this.timeout(90_000);
  let browser: Browser;
  let app: Served;
  let authority: TestAuthority;
  let watched: WatchedPage[] = [];
  let workers: RunningWorkers;
  const issuer = process.env.OIDC_ISSUER ?? '';

  before(async () => {
    expect(issuer, 'npm test runs the local OpenID Provider (OIDC_ISSUER)').to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    browser = await launch();
    // The scan workers: a demand's document is scanned as any upload.
    workers = await startWorkers(['scan'], { config: configWith(FAST_PIPELINE), logger: createLogger('silent') });
    app = await serve({ VERIFY_RATE_PER_MINUTE: '0' });
    authority = await newAuthority('Comune di Roccadoro');
    // Mario Rossi works for it (as `cli authority add-user` binds him); Giulia Bianchi for none.
    const { db } = await harness();
    await execute(db, 'DELETE FROM authority_users WHERE fiscal_number IN ($1, $2)', [codeOf(MARIO), codeOf(GIULIA)]);
    await execute(db, 'INSERT INTO authority_users (fiscal_number, org_id, created_at) VALUES ($1, $2, NOW(3))', [codeOf(MARIO), authority.orgId]);
  });

  after(async () => {
    // The test people are the local provider's, shared with other tests (the CLI's binds Mario Rossi too).
    await execute((await harness()).db, 'DELETE FROM authority_users WHERE fiscal_number IN ($1, $2)', [codeOf(MARIO), codeOf(GIULIA)]);
    await workers?.close();
    await browser?.close();
    await new Promise((resolve) => app?.server.close(resolve));
  });

  afterEach(async () => {
    for (const w of watched) {
      // Chromium logs each 4xx page as an error: those the test asked for are answers, not faults.
      const problems = w.problems.filter((p) => !/^console: Failed to load resource: the server responded with a status of (400|401|403|404|409)\b/.test(p));
      expect(problems, 'console errors, exceptions and requests to other hosts').to.deep.equal([]);
      await w.page.browserContext().close();
    }
    watched = [];
  });

  /** A fresh browser context (its own cookies) and a page in it. */
  async function fresh(viewport?: { width: number; height: number; deviceScaleFactor?: number; isMobile?: boolean; hasTouch?: boolean }): Promise<Page> {
    const context = await browser.createBrowserContext();
    const w = await watchedPage(context as unknown as Browser, app.origin, viewport, [issuer]);
    watched.push(w);
    return w.page;
  }

  /** Signs in as `user` from /authority, through the provider's login form. */
  async function signIn(page: Page, user: { login: string }, password = LOCAL_PASSWORD): Promise<void> {
    await page.goto(`${app.origin}/authority`, { waitUntil: 'load' });
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('[data-sign-in]')]);
    expect(page.url().startsWith(`${issuer}/interaction/`), page.url()).to.equal(true);
    await page.type('#login', user.login);
    await page.type('#password', password);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
  }

  async function submit(page: Page, selector: string): Promise<number> {
    const [res] = await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click(selector)]);
    return res?.status() ?? 0;
  }

  it('signs in through the provider, takes charge with the tender data, demands payment with a document (15 days from receipt), answers a change, releases; each act in the chain', async () => {
    const r = await registered();
    const page = await fresh();
    await signIn(page, MARIO);
    expect(page.url()).to.equal(`${app.origin}/authority`);
    expect(await text(page, 'header')).to.include('Mario Rossi');
    // The session's cookie: HttpOnly and SameSite=Lax (Secure behind https).
    const cookies = await page.cookies();
    const session = cookies.find((c) => c.name === 'authority_session');
    expect(session).to.include({ httpOnly: true, sameSite: 'Lax' });

    // Taking charge: a wrong code is the public verification's 404, and nothing is linked.
    await page.type('#policyNumber', r.policyNumber);
    await page.type('#checkCode', 'WRONG-CODE-123');
    await page.type('#cig', 'A1B2C3D4E5');
    await page.type('#garantedAmount', '15.000,50');
    expect(await submit(page, '[data-form="take-charge"] button')).to.equal(404);
    expect(await attr(page, '[data-notice="bad"]', 'data-notice')).to.equal('bad');
    expect(await inPage<number>(page, "document.querySelectorAll('[data-guarantee-row]').length")).to.equal(0);
    await page.$eval('#checkCode', (e) => ((e as unknown as { value: string }).value = ''));
    await page.type('#checkCode', r.checkCode);
    expect(await submit(page, '[data-form="take-charge"] button')).to.equal(200);
    expect(page.url()).to.equal(`${app.origin}/authority/guarantees/${r.id}?done=BENEFICIARY_LINKED`);
    expect(await attr(page, '[data-guarantee-state]', 'data-guarantee-state')).to.equal('ACTIVE');

    // The demand, with its document uploaded through the page (one origin), dated by the server.
    const dir = mkdtempSync(join(tmpdir(), 'authority-pages-'));
    const letter = join(dir, 'escussione.pdf');
    writeFileSync(letter, `%PDF-1.4\n% richiesta di escussione ${Date.now()}\n%%EOF\n`);
    await page.type('#claimedAmount', '5000');
    await page.type('#demand-reason', 'Inadempimento contrattuale');
    const input = await page.$('#document');
    await input?.uploadFile(letter);
    const before = Date.now();
    expect(await submit(page, '[data-form="demand"] button')).to.equal(200);
    expect(await attr(page, '[data-guarantee-state]', 'data-guarantee-state')).to.equal('CLAIMED');
    expect(await attr(page, '[data-guarantee-state]', 'data-days-left')).to.equal('15');
    const { http } = await harness();
    const state = (await http.get(`/api/v2/guarantees/${r.id}/state`).set('X-API-Key', r.org.key)).body as {
      claimDueAt: string;
      openClaim: { effectiveAt: string };
    };
    expect(Date.parse(state.openClaim.effectiveAt)).to.be.within(before - 1000, Date.now());
    expect(Date.parse(state.claimDueAt)).to.equal(Date.parse(state.openClaim.effectiveAt) + CLAIM_TERM_MS);
    const amendments = (await http.get(`/api/v2/guarantees/${r.id}/amendments`).set('X-API-Key', r.org.key)).body as {
      amendments: Array<{ type: string; actor: string; docs: Array<{ key: string; originalFileName: string }> }>;
    };
    const demand = amendments.amendments.find((a) => a.type === 'DEMAND');
    expect(demand?.actor).to.equal('authority');
    expect(demand?.docs.map((d) => d.originalFileName)).to.deep.equal(['escussione.pdf']);
    // The document is scanned as any upload.
    await waitForStatus((demand?.docs[0]?.key ?? '').split('.')[0] as string, ['Clean'], 30_000);
    // Each act names the person in the authority's audit trail.
    const { db } = await harness();
    const audit = await select<{ actor: string }>(db, "SELECT actor FROM audit_log WHERE chain = $1 AND action = 'amendment.record'", [authority.orgId]);
    expect(audit.map((a) => a.actor)).to.include(`user:${codeOf(MARIO)}`);

    // The list shows it with its status and the days left.
    await page.goto(`${app.origin}/authority`, { waitUntil: 'load' });
    const row = `[data-guarantee-row="${r.id}"]`;
    expect(await attr(page, row, 'data-status')).to.equal('CLAIMED');
    expect(await attr(page, row, 'data-days-left')).to.equal('15');
    await screenshot(page, 'authority-list');
    // Filtered by status: the demanded one among the CLAIMED, none among the RELEASED.
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('[data-filter="CLAIMED"]')]);
    expect(await attr(page, row, 'data-status')).to.equal('CLAIMED');
    expect(await attr(page, '[data-filter="CLAIMED"]', 'aria-current')).to.equal('page');
    await page.goto(`${app.origin}/authority?status=RELEASED`, { waitUntil: 'load' });
    expect(await page.$(row)).to.equal(null);

    // Withdrawn; then the issuer cuts the cover, which waits for the authority's answer.
    await page.goto(`${app.origin}/authority/guarantees/${r.id}`, { waitUntil: 'load' });
    expect(await submit(page, '[data-form="withdraw"] button')).to.equal(200);
    const cut = await http
      .post(`/api/v2/guarantees/${r.id}/amendments`)
      .set('X-API-Key', r.org.key)
      .send({ type: 'PARTIAL_RELEASE', garantedAmount: 9000, effectiveAt: '2026-03-01T00:00:00Z', reason: 'SAL n. 1' });
    expect(cut.status, JSON.stringify(cut.body)).to.equal(200);
    await page.goto(`${app.origin}/authority`, { waitUntil: 'load' });
    expect(await attr(page, row, 'data-amendment-pending')).to.equal('');
    await page.goto(`${app.origin}/authority/guarantees/${r.id}`, { waitUntil: 'load' });
    expect(await attr(page, '[data-amendment-pending]', 'data-amendment-pending')).to.equal(String(cut.body.seq));
    await screenshot(page, 'authority-guarantee-pending');
    expect(await submit(page, '[data-form="answer"] button[value="ACCEPT"]')).to.equal(200);
    expect(await attr(page, '[data-guarantee-state]', 'data-guarantee-state')).to.equal('PARTIALLY_RELEASED');
    expect(await text(page, '[data-guarantee-state]')).to.match(/9\.?000,00\s€/);

    // A stale page (another act since) is a 409 that records nothing.
    const stale = await page.$eval('[data-form="release"] input[name=expectedSeq]', (e) => (e as unknown as { value: string }).value);
    await http
      .post(`/api/v2/guarantees/${r.id}/amendments`)
      .set('X-API-Key', r.org.key)
      .send({ type: 'EXTENSION', expiresAt: '2031-01-01T00:00:00Z', effectiveAt: '2026-03-01T00:00:00Z' });
    expect(await submit(page, '[data-form="release"] button')).to.equal(409);
    expect(await text(page, '[data-notice="bad"]')).to.include(`expectedSeq is ${stale}`);
    expect(await submit(page, '[data-form="release"] button')).to.equal(200);
    expect(await attr(page, '[data-guarantee-state]', 'data-guarantee-state')).to.equal('RELEASED');
    const types = await inPage<string[]>(
      page,
      "[...document.querySelectorAll('[data-amendment]')].map((e) => e.getAttribute('data-type') + ':' + e.getAttribute('data-actor'))",
    );
    expect(types).to.deep.equal([
      'BENEFICIARY_LINKED:authority',
      'DEMAND:authority',
      'DEMAND_WITHDRAWN:authority',
      'PARTIAL_RELEASE:issuer',
      'AMENDMENT_RESPONSE:authority',
      'EXTENSION:issuer',
      'RELEASE:authority',
    ]);
    await screenshot(page, 'authority-guarantee');

    // Signing out ends the session here and at the provider.
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('form.logout button')]);
    expect(page.url().startsWith(issuer), page.url()).to.equal(true);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('#logout-yes')]);
    expect(page.url()).to.equal(`${app.origin}/authority`);
    expect(await page.$('[data-sign-in]')).not.to.equal(null);
    const res = await fetch(`${app.origin}/authority`, { headers: { cookie: `authority_session=${session?.value ?? ''}` } });
    expect(await res.text()).to.include('data-sign-in');
  });

  it('shows a person bound to no authority that they have no access, and nothing else; a wrong password signs no one in', async () => {
    const page = await fresh();
    await page.goto(`${app.origin}/authority`, { waitUntil: 'load' });
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('[data-sign-in]')]);
    await page.type('#login', GIULIA.login);
    await page.type('#password', 'not-the-password');
    expect(await submit(page, 'button[type=submit]')).to.equal(401);
    expect(page.url().startsWith(issuer)).to.equal(true);
    await page.type('#password', LOCAL_PASSWORD);
    await Promise.all([page.waitForNavigation({ waitUntil: 'load' }), page.click('button[type=submit]')]);
    expect(page.url()).to.equal(`${app.origin}/authority`);
    expect(await text(page, '[data-no-access]')).to.include(codeOf(GIULIA));
    expect(await page.$('[data-form]')).to.equal(null);
    await page.goto(`${app.origin}/authority/guarantees/00000000-0000-7000-8000-000000000000`, { waitUntil: 'load' });
    expect(await page.$('[data-no-access]')).not.to.equal(null);
    await screenshot(page, 'authority-no-access');
  });

  it('refuses a form without the session CSRF token or from another origin, and ends a session idle for 30 minutes', async () => {
    const page = await fresh();
    await signIn(page, MARIO);
    const cookie = (await page.cookies()).find((c) => c.name === 'authority_session');
    const headers = { cookie: `authority_session=${cookie?.value ?? ''}`, 'content-type': 'application/x-www-form-urlencoded' };
    const body = 'policyNumber=P&checkCode=CODE-12345&cig=A1B2C3D4E5&garantedAmount=10';
    expect((await fetch(`${app.origin}/authority/guarantees`, { method: 'POST', headers, body })).status).to.equal(403);
    const csrf = await page.$eval('input[name=csrf]', (e) => (e as unknown as { value: string }).value);
    const foreign = await fetch(`${app.origin}/authority/guarantees`, {
      method: 'POST',
      headers: { ...headers, origin: 'https://evil.example' },
      body: `${body}&csrf=${csrf}`,
    });
    expect(foreign.status).to.equal(403);
    // A form larger than any form may be is refused before it is read.
    const huge = await fetch(`${app.origin}/authority/guarantees`, { method: 'POST', headers, body: `csrf=${csrf}&x=${'a'.repeat(200_000)}` });
    expect(huge.status).to.equal(413);
    // With the token, the same form is heard (a miss: 404).
    expect((await fetch(`${app.origin}/authority/guarantees`, { method: 'POST', headers, body: `${body}&csrf=${csrf}` })).status).to.equal(404);
    // Idle for 30 minutes: signed out.
    const { db } = await harness();
    await execute(db, 'UPDATE authority_sessions SET seen_at = NOW(3) - INTERVAL 31 MINUTE WHERE fiscal_number = $1', [codeOf(MARIO)]);
    await page.goto(`${app.origin}/authority`, { waitUntil: 'load' });
    expect(await page.$('[data-sign-in]')).not.to.equal(null);
    expect(
      (await select(db, 'SELECT 1 FROM authority_sessions WHERE fiscal_number = $1 AND seen_at < NOW(3) - INTERVAL 30 MINUTE', [codeOf(MARIO)])).length,
    ).to.equal(0);
  });

  it('behind a router that ends TLS (PUBLIC_BASE_URL https, plain http to us): the cookies are Secure and __Host-, and the sign-in begins', async () => {
    const behind = await serve({ VERIFY_RATE_PER_MINUTE: '0', PUBLIC_BASE_URL: 'https://registry.example.it' });
    try {
      const res = await fetch(`${behind.origin}/authority/login?next=/authority/guarantees/x`, { redirect: 'manual' });
      expect(res.status).to.equal(302);
      const location = new URL(res.headers.get('location') ?? '');
      expect(location.origin).to.equal(issuer);
      expect(location.searchParams.get('redirect_uri')).to.equal('https://registry.example.it/authority/callback');
      expect(location.searchParams.get('code_challenge_method')).to.equal('S256');
      const set = res.headers.getSetCookie().join('\n');
      const login = set.split('\n').find((c) => c.startsWith('__Host-authority_login=')) ?? '';
      for (const attribute of ['path=/', 'secure', 'samesite=lax', 'httponly']) expect(login.toLowerCase().split('; '), login).to.include(attribute);
      const lang = await fetch(`${behind.origin}/authority?lang=en`, { redirect: 'manual' });
      expect(lang.status).to.equal(200);
      expect(lang.headers.getSetCookie().join('\n')).to.match(/authority_lang=en;.*secure/);
    } finally {
      await new Promise((resolve) => behind.server.close(resolve));
    }
  });

  it('without PUBLIC_BASE_URL (npm start): the sign-in returns to the address the browser used', async () => {
    const local = await serve({ VERIFY_RATE_PER_MINUTE: '0', PUBLIC_BASE_URL: undefined, NODE_ENV: 'development' });
    try {
      const res = await fetch(`${local.origin}/authority/login`, { redirect: 'manual' });
      expect(res.status).to.equal(302);
      expect(new URL(res.headers.get('location') ?? '').searchParams.get('redirect_uri')).to.equal(`${local.origin}/authority/callback`);
    } finally {
      await new Promise((resolve) => local.server.close(resolve));
    }
  });

  it('on a phone, in English: fits the screen without sideways scrolling', async () => {
    const r = await registered();
    const page = await fresh({ width: 390, height: 844, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
    await signIn(page, MARIO);
    await page.goto(`${app.origin}/authority?lang=en`, { waitUntil: 'load' });
    expect(await inPage<string>(page, 'document.documentElement.lang')).to.equal('en');
    await page.type('#policyNumber', r.policyNumber);
    await page.type('#checkCode', r.checkCode);
    await page.type('#cig', 'A1B2C3D4E5');
    await page.type('#garantedAmount', '15000.50');
    expect(await submit(page, '[data-form="take-charge"] button')).to.equal(200);
    expect(await text(page, 'h1')).to.include('Policy');
    const widths = await inPage<number[]>(page, '[document.documentElement.scrollWidth, window.innerWidth]');
    expect(widths[0], 'page width against the screen').to.be.at.most(widths[1] as number);
    await screenshot(page, 'authority-phone');
    await page.goto(`${app.origin}/authority`, { waitUntil: 'load' });
    const listWidths = await inPage<number[]>(page, '[document.documentElement.scrollWidth, window.innerWidth]');
    expect(listWidths[0]).to.be.at.most(listWidths[1] as number);
    await screenshot(page, 'authority-list-phone');
  });
});

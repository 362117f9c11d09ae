// Debian's Chromium driven by puppeteer-core (npm cannot download a browser here), and the app
// listening on a real port for it. Every page fails its test on a console error, an uncaught
// exception, or a request to any host but the app's (the verification endpoint's own 404 and
// 429, which Chromium logs as errors, excepted). Screenshots go to test-output/screenshots/.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { createLogger } from '../../src/shared/logger.js';
import { configWith, harness, appOver } from './harness.js';

export const SCREENSHOTS = join(process.cwd(), 'test-output', 'screenshots');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface Served {
  origin: string;
  server: Server;
}

/** The app, with these settings, on 127.0.0.1 (a secure context, as WebCrypto needs), PUBLIC_BASE_URL its own address. */
export async function serve(overrides: Record<string, string | undefined> = {}): Promise<Served> {
  const base = await harness();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const app = appOver({
    config: configWith({ PUBLIC_BASE_URL: origin, ...overrides }),
    logger: createLogger('silent'),
    db: base.db,
    queues: base.queues,
    events: base.events,
  });
  const handle = app.callback();
  server.on('request', (req, res) => {
    void handle(req, res);
  });
  return { origin, server };
}

export async function launch(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
  });
}

export interface WatchedPage {
  page: Page;
  problems: string[];
}

/** A new page whose console errors, exceptions and requests to other origins (but `also`'s) are collected. */
export async function watchedPage(
  browser: Browser,
  origin: string,
  viewport: { width: number; height: number; deviceScaleFactor?: number; isMobile?: boolean; hasTouch?: boolean } = { width: 1280, height: 900 },
  also: readonly string[] = [],
): Promise<WatchedPage> {
  const page = await browser.newPage();
  await page.setViewport(viewport);
  const problems: string[] = [];
  // Chromium logs every 4xx answer as a console error; the verification endpoint's 404 (a miss)
  // and 429 (the limit) are answers the page handles, not faults.
  const handled = `${origin}/api/public/v1/verifications`;
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (m.location().url === handled && /status of (404|429)\b/.test(m.text())) return;
    problems.push(`console: ${m.text()} (${m.location().url ?? ''})`);
  });
  page.on('pageerror', (err) => problems.push(`exception: ${String(err)}`));
  page.on('request', (r) => {
    const url = r.url();
    if (![origin, ...also].some((o) => url.startsWith(`${o}/`)) && !url.startsWith('data:')) problems.push(`request to another host: ${url}`);
  });
  return { page, problems };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const path = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

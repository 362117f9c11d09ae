// The verification page, GET /verify: HTML, a stylesheet and one script, all served by this
// process (no CDN, no other host). The script is bundled with esbuild from
// src/verification/page/ when the process first serves the page, so the browser runs the very
// proof checks of `cli verify`; the bundle stays in memory. A Content-Security-Policy forbids
// the page any request to another origin.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Router } from '@koa/router';
import { build } from 'esbuild';

interface Asset {
  body: string;
  type: string;
  version: string;
}
interface Page {
  html: string;
  js: Asset;
  css: Asset;
}

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The page's sources: under the project's root, whether this module runs from src/ (tsx) or dist/. */
function pageDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the project root (package.json) to build the verification page from');
    dir = up;
  }
  return join(dir, 'src', 'verification', 'page');
}

const version = (body: string): string => createHash('sha256').update(body).digest('hex').slice(0, 16);

async function make(): Promise<Page> {
  const dir = pageDir();
  const bundle = await build({
    entryPoints: [join(dir, 'verify.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: ['es2020'],
    minify: true,
    legalComments: 'eof',
    logLevel: 'silent',
  });
  const js: Asset = { body: bundle.outputFiles[0]?.text ?? '', type: 'text/javascript; charset=utf-8', version: '' };
  js.version = version(js.body);
  const cssBody = readFileSync(join(dir, 'verify.css'), 'utf8');
  const css: Asset = { body: cssBody, type: 'text/css; charset=utf-8', version: version(cssBody) };
  const html = readFileSync(join(dir, 'index.html'), 'utf8')
    .replace('{{js}}', `/verify/app.js?v=${js.version}`)
    .replace('{{css}}', `/verify/app.css?v=${css.version}`);
  return { html, js, css };
}

let page: Promise<Page> | undefined;
/** The page, built once per process (again after a failed build). */
export function verifyPage(): Promise<Page> {
  page ??= make().catch((err: unknown) => {
    page = undefined;
    throw err;
  });
  return page;
}

export function registerVerifyPage(router: Router): void {
  router.get('/verify', async (ctx) => {
    const { html } = await verifyPage();
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  });
  for (const name of ['js', 'css'] as const) {
    router.get(`/verify/app.${name}`, async (ctx) => {
      const asset = (await verifyPage())[name];
      ctx.set('X-Content-Type-Options', 'nosniff');
      // A versioned URL never changes; an unversioned one is checked each time.
      ctx.set('Cache-Control', ctx.query.v === asset.version ? 'public, max-age=31536000, immutable' : 'no-cache');
      ctx.type = asset.type;
      ctx.body = asset.body;
    });
  }
}

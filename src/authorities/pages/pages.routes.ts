// /authority: the contracting authorities' pages, for their people signed in with OpenID
// Connect (./sign-in.ts). Sessions: a random cookie value (HttpOnly, SameSite=Lax, Secure and
// __Host- when PUBLIC_BASE_URL is https), kept by its hash, ended after SESSION_IDLE_MINUTES
// without a request and by the sign-out; every form carries the session's CSRF token, and a
// POST from another origin is refused. A person bound to no authority sees so, and nothing else.
// The acts go through the same service, rules and audit as the authority API, the person named
// in the audit trail (`user:<fiscal code>`).
import type { Router } from '@koa/router';
import busboy from 'busboy';
import type { Context, Middleware } from 'koa';
import { timingSafeEqual } from 'node:crypto';
import type { Config } from '../../../config/index.js';
import type { FileService } from '../../files/file.service.js';
import type { ApiActor, AuthState } from '../../orgs/auth.middleware.js';
import { AppError, ForbiddenError, PayloadTooLargeError, ValidationError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { parseOrThrow } from '../../shared/validation.js';
import { GUARANTEE_STATUSES } from '../../guarantees/amendments.js';
import { createAuthorityAct, takeCharge } from '../authority.schemas.js';
import type { AuthorityService } from '../authority.service.js';
import type { Session, SessionRepository } from '../session.repository.js';
import { SignInRefused, token, type SignIn } from '../sign-in.js';
import { CSS } from './style.js';
import { guaranteePage, listPage, noAccessPage, page, signInPage, stringsOf, type Lang, type Raw } from './html.js';

/** Guarantees per page of the list. */
const PAGE_SIZE = 20;
/** A form's fields: few and short; a demand's one document at most the upload limit. */
const MAX_FIELDS = 20;
const MAX_FIELD_BYTES = 4096;
/** What a page's form may carry besides its document (its fields and the multipart framing): the body budget counts a form as at most its document and this. */
export const PAGE_FORM_BYTES = 2 * MAX_FIELDS * MAX_FIELD_BYTES;
/** The idle clock is written at most this often (a page's requests do not each write). */
const TOUCH_EVERY_MS = 60_000;

interface Form {
  fields: Map<string, string>;
  file?: { name: string; bytes: Buffer };
}

/** The request's form (urlencoded or multipart), within its limits: a 400 or 413 otherwise. */
function readForm(ctx: Context, maxFileBytes: number): Promise<Form> {
  // Larger than any form may be: refused before a byte is read, and the sender cut off.
  if (Number(ctx.get('Content-Length') || '0') > maxFileBytes + PAGE_FORM_BYTES) {
    ctx.set('Connection', 'close');
    return Promise.reject(new PayloadTooLargeError(`The form is larger than ${maxFileBytes + PAGE_FORM_BYTES} bytes.`));
  }
  return new Promise((resolve, reject) => {
    // A sender that goes away mid-form: no answer waits for the rest.
    ctx.req.once('close', () => {
      if (!ctx.req.complete) reject(new ValidationError('The form did not arrive whole.'));
    });
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: ctx.req.headers,
        limits: { fields: MAX_FIELDS, fieldSize: MAX_FIELD_BYTES, files: maxFileBytes ? 1 : 0, fileSize: maxFileBytes, parts: MAX_FIELDS + 1 },
      });
    } catch {
      reject(new ValidationError('The request is not a form.'));
      return;
    }
    const form: Form = { fields: new Map() };
    let failure: Error | undefined;
    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) failure ??= new ValidationError(`The field ${name} is too long.`);
      form.fields.set(name, value);
    });
    bb.on('file', (_name, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('limit', () => {
        failure ??= new PayloadTooLargeError(`The document is larger than ${maxFileBytes} bytes.`);
      });
      stream.on('end', () => {
        const bytes = Buffer.concat(chunks);
        if (bytes.length > 0) form.file = { name: (info.filename ?? '').slice(-200), bytes };
      });
    });
    bb.on('filesLimit', () => (failure ??= new ValidationError('One document at a time.')));
    bb.on('fieldsLimit', () => (failure ??= new ValidationError('Too many fields.')));
    bb.on('partsLimit', () => (failure ??= new ValidationError('Too many parts.')));
    bb.on('error', (err: Error) => reject(new ValidationError(`The form could not be read: ${err.message}`)));
    bb.on('close', () => (failure ? reject(failure) : resolve(form)));
    ctx.req.pipe(bb);
  });
}

/** The :id of the route (Koa's context types its params loosely). */
const idOf = (ctx: Context): string => (ctx.params as Record<string, string | undefined>).id ?? '';

function sameToken(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

/** An amount as people type it: 1.234,56 or 1234.56 (what is not one is left for the validation to refuse). */
export function amountOf(input: string | undefined): number | string | undefined {
  if (input === undefined || input.trim() === '') return undefined;
  const t = input.trim().replace(/\s|€/g, '');
  // A comma and one or two digits at the end: Italian (dots group thousands). Dots before groups of three and no comma: Italian thousands too.
  const normalized = /,\d{1,2}$/.test(t) || /^\d{1,3}(\.\d{3})+$/.test(t) ? t.replace(/\./g, '').replace(',', '.') : t.replace(/,/g, '');
  return /^\d+(\.\d{1,2})?$/.test(normalized) ? Number(normalized) : input;
}

/** Midnight of `date` (YYYY-MM-DD) in Italy, as an instant with its offset; what is not such a date is left for the validation to refuse. */
export function romeMidnight(date: string): string {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return date;
  const rome = new Intl.DateTimeFormat('en-CA', {
    timeZone: 'Europe/Rome',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    hourCycle: 'h23',
  });
  // Italy is at +01:00 or +02:00: the offset whose midnight is that day's 00 h in Rome (a day of a clock change included).
  for (const offset of ['+01:00', '+02:00']) {
    const instant = new Date(`${date}T00:00:00${offset}`);
    if (Number.isNaN(instant.getTime())) return date;
    const parts = Object.fromEntries(rome.formatToParts(instant).map((p) => [p.type, p.value]));
    if (`${parts.year}-${parts.month}-${parts.day}` === date && parts.hour === '00') return `${date}T00:00:00${offset}`;
  }
  return date;
}

export function registerAuthorityPages(
  router: Router<AuthState>,
  deps: {
    config: Config;
    logger: Logger;
    sessions: SessionRepository;
    signIn: SignIn;
    service: AuthorityService;
    files: FileService;
    /** The public verification's limits per client: taking charge is a lookup by the same codes. */
    limit: Middleware;
    maxUploadBytes: number;
    now?: () => Date;
  },
): void {
  const { config, sessions, signIn, service, files, limit, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const idleMs = config.SESSION_IDLE_MINUTES * 60_000;
  const secure = config.PUBLIC_BASE_URL?.startsWith('https:') === true;
  const SESSION = secure ? '__Host-authority_session' : 'authority_session';
  const LOGIN = secure ? '__Host-authority_login' : 'authority_login';
  const cookie = { httpOnly: true, sameSite: 'lax' as const, secure, path: '/', overwrite: true };
  const providerOrigin = config.OIDC_ISSUER ? new URL(config.OIDC_ISSUER).origin : '';
  const CSP = `default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self' ${providerOrigin}; frame-ancestors 'none'; base-uri 'none'`;
  // The registry's own address (Koa's ctx.origin is the request's Origin header, not ours).
  const baseOf = (ctx: Context) => config.PUBLIC_BASE_URL ?? `${ctx.protocol}://${ctx.host}`;

  /** The cookies of `ctx`, Secure when the public URL is https (behind a router that ends TLS, the hop to us is plain http). */
  function cookiesOf(ctx: Context): Context['cookies'] {
    if (secure) ctx.cookies.secure = true;
    return ctx.cookies;
  }

  function langOf(ctx: Context): Lang {
    const asked = ctx.query.lang;
    if (asked === 'it' || asked === 'en') {
      cookiesOf(ctx).set('authority_lang', asked, { httpOnly: true, sameSite: 'lax', secure, maxAge: 365 * 86_400_000, overwrite: true });
      return asked;
    }
    return ctx.cookies.get('authority_lang') === 'en' ? 'en' : 'it';
  }

  function answer(ctx: Context, status: number, title: string, main: Raw, s?: Session): void {
    ctx.status = status;
    ctx.set('Content-Security-Policy', CSP);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'same-origin');
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page({ lang: langOf(ctx), path: ctx.url, title, ...(s && { person: { name: s.name, csrf: s.csrf } }) }, main);
  }

  async function sessionOf(ctx: Context): Promise<Session | undefined> {
    const id = ctx.cookies.get(SESSION);
    if (!id || id.length > 64) return undefined;
    const s = await sessions.session(id, now(), idleMs);
    if (!s) {
      cookiesOf(ctx).set(SESSION, null, cookie);
      return undefined;
    }
    if (now().getTime() - s.seenAt.getTime() > TOUCH_EVERY_MS) await sessions.touch(id, now());
    return s;
  }

  const actor = (ctx: Context, s: Session): ApiActor => ({
    actor: `user:${s.fiscalNumber}`,
    requestId: (ctx.state as { requestId?: string }).requestId ?? null,
  });

  /** Runs `work` for a signed-in person bound to an authority; the sign-in page or the no-access page otherwise. */
  async function signedIn(ctx: Context, work: (s: Session & { authorityId: string }) => Promise<void>): Promise<void> {
    const s = await sessionOf(ctx);
    const lang = langOf(ctx);
    if (!s) {
      answer(
        ctx,
        ctx.method === 'GET' ? 200 : 401,
        stringsOf(lang).signInTitle,
        signInPage(lang, signIn.enabled, ctx.method === 'GET' ? undefined : stringsOf(lang).sessionEnded),
      );
      return;
    }
    if (!s.authorityId) {
      answer(ctx, 403, stringsOf(lang).noAccess, noAccessPage(lang, s.fiscalNumber), s);
      return;
    }
    await work(s as Session & { authorityId: string });
  }

  /** A POST's form, once its origin and CSRF token are the session's. */
  async function postedForm(ctx: Context, s: Session, maxFileBytes = 0): Promise<Form> {
    const origin = ctx.get('Origin');
    if (origin && origin !== new URL(baseOf(ctx)).origin) throw new ForbiddenError('This form was sent from another site.');
    const form = await readForm(ctx, maxFileBytes);
    if (!sameToken(form.fields.get('csrf') ?? '', s.csrf)) throw new ForbiddenError('This form is stale or was not sent from this site: reload the page.');
    return form;
  }

  async function listAnswer(ctx: Context, s: Session & { authorityId: string }, status = 200, error?: string, form?: Record<string, string>) {
    const lang = langOf(ctx);
    const pageNo = Math.max(1, Math.min(1_000_000, Number.parseInt(String(ctx.query.page ?? '1'), 10) || 1));
    const asked = ctx.query.status;
    const filter = typeof asked === 'string' && (GUARANTEE_STATUSES as readonly string[]).includes(asked) ? asked : undefined;
    const list = await service.list(s.authorityId, { page: pageNo, limit: PAGE_SIZE, status: filter });
    const pages = Math.max(1, Math.ceil(list.totalItems / PAGE_SIZE));
    answer(
      ctx,
      status,
      stringsOf(lang).guarantees,
      listPage(lang, {
        items: list.guarantees,
        total: list.totalItems,
        page: pageNo,
        pages,
        csrf: s.csrf,
        now: now(),
        ...(filter && { status: filter }),
        ...(error && { error }),
        ...(form && { form }),
      }),
      s,
    );
  }

  async function guaranteeAnswer(ctx: Context, s: Session & { authorityId: string }, id: string, status = 200, error?: string) {
    const lang = langOf(ctx);
    const view = await service.view(s.authorityId, id);
    const done = typeof ctx.query.done === 'string' ? ctx.query.done : undefined;
    answer(
      ctx,
      status,
      `${stringsOf(lang).policy} ${view.guarantee.details.policyNumber ?? ''}`,
      guaranteePage(lang, view, { csrf: s.csrf, now: now(), ...(done && { done }), ...(error && { error }) }),
      s,
    );
  }

  /** Records an act from a form of the guarantee's page: back to the page, with what was done or why not (its 4xx). */
  async function act(
    ctx: Context,
    fields: (form: Form, s: Session & { authorityId: string }) => Record<string, unknown> | Promise<Record<string, unknown>>,
    maxFileBytes = 0,
  ) {
    await signedIn(ctx, async (s) => {
      const id = idOf(ctx);
      try {
        const form = await postedForm(ctx, s, maxFileBytes);
        const expected = Number.parseInt(form.fields.get('expectedSeq') ?? '', 10);
        const raw = { ...(await fields(form, s)), ...(Number.isInteger(expected) && { expectedSeq: expected }) };
        const input = parseOrThrow(createAuthorityAct, raw, 'act');
        await service.act(s.authorityId, id, input, actor(ctx, s));
        ctx.status = 303;
        ctx.redirect(`/authority/guarantees/${id}?done=${input.type}`);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500 || err.status === 404) throw err;
        await guaranteeAnswer(ctx, s, id, err.status, err.message);
      }
    });
  }

  const text = (form: Form, name: string) => {
    const v = form.fields.get(name)?.trim();
    return v ? v : undefined;
  };

  router.get('/authority/app.css', (ctx) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.type = 'text/css; charset=utf-8';
    ctx.body = CSS;
  });

  router.get('/authority', async (ctx) => {
    await signedIn(ctx, (s) => listAnswer(ctx, s));
  });

  // Limited per client as the public verification is: each sign-in begun is a row (for ten minutes).
  router.get('/authority/login', limit, async (ctx) => {
    const start = await signIn.start(`${baseOf(ctx)}/authority/callback`);
    const asked = ctx.query.next;
    const next = typeof asked === 'string' && asked.length <= 200 && /^\/authority(\/[\w/-]*)?$/.test(asked) ? asked : '/authority';
    await sessions.addLogin({ state: start.state, codeVerifier: start.codeVerifier, nonce: start.nonce, returnTo: next }, now());
    // The browser that began the sign-in is the one that may finish it.
    cookiesOf(ctx).set(LOGIN, start.state, { ...cookie, maxAge: 10 * 60_000 });
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(start.url);
  });

  router.get('/authority/callback', async (ctx) => {
    const lang = langOf(ctx);
    const state = typeof ctx.query.state === 'string' ? ctx.query.state : '';
    const bound = ctx.cookies.get(LOGIN);
    cookiesOf(ctx).set(LOGIN, null, cookie);
    const login = state && bound && sameToken(state, bound) ? await sessions.takeLogin(state, now()) : undefined;
    if (!login) {
      answer(ctx, 400, stringsOf(lang).signInTitle, signInPage(lang, signIn.enabled, 'Accesso non riuscito / Sign-in failed: start again.'));
      return;
    }
    let person;
    try {
      person = await signIn.finish(new URL(`${baseOf(ctx)}${ctx.url}`), login);
    } catch (err) {
      if (!(err instanceof SignInRefused)) throw err;
      logger.warn({ err: err.message }, 'a sign-in to /authority was refused');
      answer(ctx, 400, stringsOf(lang).signInTitle, signInPage(lang, signIn.enabled, `Accesso non riuscito / Sign-in failed: ${err.message}`));
      return;
    }
    // A new session for every sign-in: a value set before it (fixation) is never reused.
    const old = ctx.cookies.get(SESSION);
    if (old && old.length <= 64) await sessions.removeSession(old);
    const id = token();
    await sessions.addSession(id, { fiscalNumber: person.fiscalNumber, name: person.name, csrf: token(), idToken: person.idToken }, now());
    await sessions.removeIdle(new Date(now().getTime() - idleMs), 100);
    cookiesOf(ctx).set(SESSION, id, cookie);
    ctx.status = 303;
    ctx.redirect(login.returnTo);
  });

  router.post('/authority/logout', async (ctx) => {
    const s = await sessionOf(ctx);
    let idToken: string | null = null;
    if (s) {
      await postedForm(ctx, s);
      idToken = s.idToken;
      await sessions.removeSession(ctx.cookies.get(SESSION) ?? '');
    }
    cookiesOf(ctx).set(SESSION, null, cookie);
    ctx.status = 303;
    // Only a signed-in person's own form (its CSRF token checked) ends the session at the provider too.
    ctx.redirect((s && (await signIn.logoutUrl(idToken, `${baseOf(ctx)}/authority`))) || '/authority');
  });

  router.post('/authority/guarantees', async (ctx) => {
    await signedIn(ctx, async (s) => {
      let form: Form | undefined;
      try {
        form = await postedForm(ctx, s);
        const f = form;
        const q = parseOrThrow(
          takeCharge,
          {
            policyNumber: text(f, 'policyNumber'),
            checkCode: text(f, 'checkCode'),
            cig: text(f, 'cig'),
            garantedAmount: amountOf(f.fields.get('garantedAmount')),
          },
          'the tender data',
        );
        let linked: { guarantee: { id: string } } | undefined;
        await limit(ctx, async () => {
          linked = await service.takeCharge(s.authorityId, q, actor(ctx, s));
        });
        ctx.status = 303;
        ctx.redirect(`/authority/guarantees/${linked?.guarantee.id ?? ''}?done=BENEFICIARY_LINKED`);
      } catch (err) {
        if (!(err instanceof AppError) || err.status >= 500) throw err;
        const kept = form ? Object.fromEntries([...form.fields].filter(([k]) => k !== 'csrf' && k !== 'checkCode')) : undefined;
        await listAnswer(ctx, s, err.status, err.message, kept);
      }
    });
  });

  router.get('/authority/guarantees/:id', async (ctx) => {
    await signedIn(ctx, (s) => guaranteeAnswer(ctx, s, idOf(ctx)));
  });

  router.post('/authority/guarantees/:id/demand', async (ctx) => {
    await act(
      ctx,
      async (form, s) => {
        const docs = [];
        if (form.file) {
          const ext = /\.([a-z0-9]{1,8})$/i.exec(form.file.name)?.[1]?.toLowerCase() ?? '';
          const uploaded = await files.receiveUpload(
            s.authorityId,
            { fileType: ext, fileName: form.file.name, isDocumentPublic: false, api: 2 },
            form.file.bytes,
            actor(ctx, s),
          );
          docs.push({ key: uploaded.key });
        }
        return { type: 'DEMAND', claimedAmount: amountOf(form.fields.get('claimedAmount')), reason: text(form, 'reason'), ...(docs.length && { docs }) };
      },
      deps.maxUploadBytes,
    );
  });

  router.post('/authority/guarantees/:id/withdraw', async (ctx) => {
    await act(ctx, (form) => ({ type: 'DEMAND_WITHDRAWN', reason: text(form, 'reason') }));
  });

  router.post('/authority/guarantees/:id/answer', async (ctx) => {
    await act(ctx, (form) => ({
      type: 'AMENDMENT_RESPONSE',
      amendmentSeq: Number(form.fields.get('amendmentSeq')),
      decision: form.fields.get('decision'),
      reason: text(form, 'reason'),
    }));
  });

  router.post('/authority/guarantees/:id/release', async (ctx) => {
    await act(ctx, (form) => {
      const partial = form.fields.get('type') === 'PARTIAL_RELEASE';
      return {
        type: partial ? 'PARTIAL_RELEASE' : 'RELEASE',
        effectiveAt: romeMidnight(text(form, 'effectiveAt') ?? ''),
        reason: text(form, 'reason'),
        ...(partial && { garantedAmount: amountOf(form.fields.get('garantedAmount')) }),
      };
    });
  });
}

// The local OpenID Provider that npm start and npm test run as their own process: the
// certified `oidc-provider` library (authorization code with PKCE, ID tokens, userinfo,
// RP-initiated logout), with the test people of ./users.ts and a login page of its own that
// checks their password. SPID and CIE are OpenID Connect providers in production; like SPID,
// it gives the person's fiscal number as `https://attributes.eid.gov.it/fiscal_number`
// (TINIT-<code>), here in the ID token and in userinfo both.
//
// Settings (environment): OIDC_PORT, OIDC_CLIENT_SECRET. It listens on 127.0.0.1 only, keeps
// everything in memory (a restart signs everyone out) and signs with a key made at start.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { LOCAL_CLIENT_ID, LOCAL_PASSWORD, LOCAL_USERS } from './users.js';

export const FISCAL_NUMBER_CLAIM = 'https://attributes.eid.gov.it/fiscal_number';

// oidc-provider warns, once per setting, that development defaults should be changed: this
// provider is for local runs by design, and its warnings would bury the log.
const warn = console.warn;
console.warn = (...args: unknown[]) => {
  if (!String(args[0]).includes('oidc-provider')) warn(...args);
};
const { default: Provider } = await import('oidc-provider');

const port = Number(process.env.OIDC_PORT);
const secret = process.env.OIDC_CLIENT_SECRET;
if (!port || !secret) throw new Error('OIDC_PORT and OIDC_CLIENT_SECRET are required');
const issuer = `http://127.0.0.1:${port}`;

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) => `<!doctype html>
<html lang="it"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><link rel="icon" href="data:,">
<style>
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f3f4f6;color:#1b1b1b}
main{max-width:24rem;margin:3rem auto;background:#fff;border:1px solid #d0d4da;border-radius:8px;padding:1.5rem}
h1{font-size:1.3rem;margin:0 0 .5rem}p.note{color:#4a5563;font-size:.9rem}
label{display:block;font-weight:600;margin-top:1rem}input{width:100%;box-sizing:border-box;font:inherit;padding:.6rem;margin-top:.3rem;border:1px solid #8a94a3;border-radius:4px}
button{margin-top:1.2rem;width:100%;font:inherit;font-weight:600;padding:.7rem;border:0;border-radius:4px;background:#0b4f8a;color:#fff;cursor:pointer}
.error{color:#a4000f;font-weight:600}
</style></head><body><main>${body}</main></body></html>`;

const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: LOCAL_CLIENT_ID,
      client_secret: secret,
      // A loopback client (RFC 8252 §7.3): any port of 127.0.0.1 or localhost may be its
      // redirect's, as npm start and each test's app listen on their own.
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/authority/callback', 'http://localhost/authority/callback'],
      post_logout_redirect_uris: ['http://127.0.0.1/authority', 'http://localhost/authority'],
      response_types: ['code'],
      grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  jwks: { keys: [{ ...jwk, kid: 'local', use: 'sig', alg: 'RS256' }] },
  pkce: { required: () => true },
  claims: { openid: ['sub'], profile: ['given_name', 'family_name', FISCAL_NUMBER_CLAIM] },
  // The profile's claims in the ID token too (CIE does so; SPID gives them in userinfo only).
  conformIdTokenClaims: false,
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  findAccount: (_ctx, id) => {
    const user = LOCAL_USERS.find((u) => u.login === id);
    if (!user) return undefined;
    return {
      accountId: id,
      claims: () => ({ sub: id, given_name: user.givenName, family_name: user.familyName, [FISCAL_NUMBER_CLAIM]: user.fiscalNumber }),
    };
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: (ctx, form) => {
        ctx.body = page(
          'Uscita',
          `<h1>Uscire dal provider di identità locale?</h1>${form}<button type="submit" form="op.logoutForm" value="yes" name="logout" id="logout-yes">Sì, esci</button>`,
        );
      },
      postLogoutSuccessSource: (ctx) => {
        ctx.body = page('Uscito', '<h1>Sei uscito.</h1>');
      },
    },
  },
  renderError: (ctx, out) => {
    ctx.type = 'html';
    ctx.body = page('Errore', `<h1>Errore</h1><p class="error">${esc(String(out.error))}: ${esc(String(out.error_description ?? ''))}</p>`);
  },
});

function loginForm(uid: string, error = '', login = ''): string {
  return page(
    'Accesso',
    `<h1>Provider di identità locale</h1>
<p class="note">Solo per npm start e npm test: persone di prova, password «${LOCAL_PASSWORD}».</p>
${error && `<p class="error" role="alert">${esc(error)}</p>`}
<form method="post" action="/interaction/${esc(uid)}/login" autocomplete="off">
<label for="login">Utente</label><input id="login" name="login" value="${esc(login)}" required autofocus>
<label for="password">Password</label><input id="password" name="password" type="password" required>
<button type="submit">Accedi</button></form>`,
  );
}

async function formBody(req: IncomingMessage): Promise<URLSearchParams> {
  let body = '';
  for await (const chunk of req) {
    body += String(chunk);
    if (body.length > 4096) throw new Error('body too large');
  }
  return new URLSearchParams(body);
}

/** The login page and its submission; everything else is the provider's. */
async function interaction(req: IncomingMessage, res: ServerResponse, uid: string, submit: boolean): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new Error('interaction mismatch');
  const html = (status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(body);
  };
  if (!submit) return html(200, loginForm(uid));
  const form = await formBody(req);
  const login = form.get('login') ?? '';
  const user = LOCAL_USERS.find((u) => u.login === login);
  if (!user || form.get('password') !== LOCAL_PASSWORD) return html(401, loginForm(uid, 'Utente o password errati.', login));
  // Signed in, and the registry's request granted as it asks (a provider for local runs asks no consent).
  const grant = new provider.Grant({ accountId: login, clientId: String(details.params.client_id) });
  grant.addOIDCScope(typeof details.params.scope === 'string' ? details.params.scope : 'openid');
  grant.addOIDCClaims(['given_name', 'family_name', FISCAL_NUMBER_CLAIM]);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: login }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

const handle = provider.callback();
const server = createServer((req, res) => {
  const m = /^\/interaction\/([\w-]+)(\/login)?$/.exec(req.url?.split('?')[0] ?? '');
  if (m && (req.method === 'GET' || (req.method === 'POST' && m[2]))) {
    interaction(req, res, m[1] as string, req.method === 'POST').catch((err: unknown) => {
      res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page('Errore', `<h1>Errore</h1><p class="error">${esc((err as Error).message)}</p>`));
    });
    return;
  }
  void handle(req, res);
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`oidc provider listening at ${issuer}\n`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));

// The sign-in of the contracting authorities' people with OpenID Connect (`openid-client`, a
// certified relying party library): the authorization code flow with PKCE (S256), a `state`
// used once and a `nonce` checked in the ID token; the person's fiscal number from the ID token
// or, as SPID gives it, from userinfo. The provider's metadata is discovered once (again after
// a failure), every call to it within OIDC_TIMEOUT_SECONDS.
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import * as client from 'openid-client';
import type { Config } from '../../config/index.js';
import { UnavailableError } from '../shared/errors.js';
import { personFiscalCode } from './fiscal-number.js';

/** Every request to the provider ends within this. */
const OIDC_TIMEOUT_SECONDS = 5;

export const token = () => randomBytes(32).toString('base64url');

export interface SignedIn {
  /** The fiscal code (without TINIT-), upper case. */
  fiscalNumber: string;
  name: string;
  idToken: string;
}

/** Why a sign-in that came back from the provider is refused (the page says it; a 400). */
export class SignInRefused extends Error {}

async function clientAuth(config: Config): Promise<client.ClientAuth> {
  if (config.OIDC_CLIENT_PRIVATE_KEY) {
    const key = createPrivateKey(config.OIDC_CLIENT_PRIVATE_KEY.replace(/\\n/g, '\n'));
    const der = key.export({ format: 'der', type: 'pkcs8' });
    const algorithm = key.asymmetricKeyType === 'ec' ? { name: 'ECDSA', namedCurve: 'P-256' } : { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    return client.PrivateKeyJwt(await webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign']));
  }
  return client.ClientSecretBasic(config.OIDC_CLIENT_SECRET ?? '');
}

export function createSignIn(config: Config) {
  const issuer = config.OIDC_ISSUER;
  let discovered: Promise<client.Configuration> | undefined;

  /** The provider's configuration, discovered once; a failure is a 503 and the next call tries again. */
  async function provider(): Promise<client.Configuration> {
    if (!issuer) throw new UnavailableError('Sign-in is not configured (OIDC_ISSUER).');
    discovered ??= (async () => {
      const url = new URL(issuer);
      return client.discovery(url, config.OIDC_CLIENT_ID ?? '', undefined, await clientAuth(config), {
        timeout: OIDC_TIMEOUT_SECONDS,
        // Only a provider on plain http (the local one of npm start and npm test) needs it.
        ...(url.protocol === 'http:' && { execute: [client.allowInsecureRequests] }),
      });
    })();
    try {
      return await discovered;
    } catch (err) {
      discovered = undefined;
      throw new UnavailableError(`The identity provider cannot be reached (${(err as Error).message}): retry in a moment.`);
    }
  }

  return {
    enabled: issuer !== undefined,

    /** Where to send the browser, with the PKCE verifier, state and nonce to keep until it returns. */
    async start(redirectUri: string): Promise<{ url: string; state: string; codeVerifier: string; nonce: string }> {
      const p = await provider();
      const codeVerifier = client.randomPKCECodeVerifier();
      const state = token();
      const nonce = token();
      const url = client.buildAuthorizationUrl(p, {
        redirect_uri: redirectUri,
        scope: config.OIDC_SCOPES,
        code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { url: url.href, state, codeVerifier, nonce };
    },

    /** The person the provider's answer (`callbackUrl`, as the browser brought it) vouches for. */
    async finish(callbackUrl: URL, login: { state: string; codeVerifier: string; nonce: string }): Promise<SignedIn> {
      const p = await provider();
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(p, callbackUrl, {
          pkceCodeVerifier: login.codeVerifier,
          expectedState: login.state,
          expectedNonce: login.nonce,
          idTokenExpected: true,
        });
      } catch (err) {
        if (err instanceof client.ResponseBodyError || err instanceof client.AuthorizationResponseError) throw new SignInRefused(err.message);
        if ((err as { code?: string }).code?.startsWith('OAUTH_')) throw new SignInRefused((err as Error).message);
        throw new UnavailableError(`The identity provider cannot be reached (${(err as Error).message}): retry in a moment.`);
      }
      const claims = tokens.claims();
      if (!claims || !tokens.id_token) throw new SignInRefused('The identity provider sent no ID token.');
      const claim = config.OIDC_FISCAL_NUMBER_CLAIM;
      let fiscal: unknown = claims[claim];
      let profile: Record<string, unknown> = claims;
      // SPID puts the person's attributes in userinfo only.
      if (typeof fiscal !== 'string') {
        try {
          profile = await client.fetchUserInfo(p, tokens.access_token, claims.sub);
        } catch (err) {
          if ((err as { code?: string }).code?.startsWith('OAUTH_')) throw new SignInRefused((err as Error).message);
          throw new UnavailableError(`The identity provider cannot be reached (${(err as Error).message}): retry in a moment.`);
        }
        fiscal = profile[claim];
      }
      const code = typeof fiscal === 'string' ? personFiscalCode(fiscal) : undefined;
      if (!code) throw new SignInRefused(`The identity provider gave no fiscal number (${claim}).`);
      const name = [profile.given_name, profile.family_name].filter((v) => typeof v === 'string').join(' ') || code;
      return { fiscalNumber: code, name: name.slice(0, 200), idToken: tokens.id_token };
    },

    /** Where the browser ends the session at the provider too, and comes back to `returnTo`; undefined when it has no end-session endpoint. */
    async logoutUrl(idToken: string | null, returnTo: string): Promise<string | undefined> {
      const p = await provider().catch(() => undefined);
      if (!p?.serverMetadata().end_session_endpoint) return undefined;
      return client.buildEndSessionUrl(p, { post_logout_redirect_uri: returnTo, ...(idToken && { id_token_hint: idToken }) }).href;
    },
  };
}

export type SignIn = ReturnType<typeof createSignIn>;

// Public verification over HTTP: the contracting authorities' endpoint (no key), the receipts'
// public keys, and the issuer's view of a guarantee's verification with its QR code. Thin:
// parse, call the service, answer.
import type { Router } from '@koa/router';
import QRCode from 'qrcode';
import type { GuaranteeService } from '../guarantees/guarantee.service.js';
import { orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { NotFoundError } from '../shared/errors.js';
import { readJsonObject } from '../shared/http/body.js';
import { parseOrThrow } from '../shared/validation.js';
import type { MissWatch } from './public-limits.js';
import type { PublicJwk } from './signing-keys.js';
import { verificationRequest } from './verification.schemas.js';
import type { VerificationService } from './verification.service.js';

/** A verification request is two codes and two optional values: far below this. */
export const MAX_VERIFICATION_BODY_BYTES = 4096;

/** How long the JWKS is kept in memory (a rotation made by another process shows within it). */
const JWKS_TTL_MS = 60_000;

export function registerVerificationRoutes(
  router: Router<AuthState>,
  deps: {
    verifications: VerificationService;
    guarantees: GuaranteeService;
    /** Counts the misses for the whole service. */
    misses?: MissWatch;
    /** PUBLIC_BODY_TIMEOUT_MS: a body not received whole by then is cut off (408). */
    bodyTimeoutMs: number;
  },
): void {
  const { verifications, guarantees, misses, bodyTimeoutMs } = deps;
  let jwks: { at: number; keys: Promise<PublicJwk[]> } | undefined;

  router.post('/api/public/v1/verifications', async (ctx) => {
    const raw = await readJsonObject(ctx, MAX_VERIFICATION_BODY_BYTES, { timeoutMs: bodyTimeoutMs });
    const query = parseOrThrow(verificationRequest, raw, 'verification');
    try {
      ctx.body = await verifications.verify(query);
    } catch (err) {
      if (err instanceof NotFoundError) misses?.record();
      throw err;
    }
    // The answer names the codes: no shared cache may keep it.
    ctx.set('Cache-Control', 'no-store');
  });

  router.get('/.well-known/jwks.json', async (ctx) => {
    if (!jwks || Date.now() - jwks.at > JWKS_TTL_MS) {
      const keys = verifications.publicKeys();
      jwks = { at: Date.now(), keys };
      keys.catch(() => {
        jwks = undefined;
      });
    }
    ctx.body = { keys: await jwks.keys };
    ctx.set('Cache-Control', 'public, max-age=300');
  });

  router.get('/api/v2/guarantees/:id/verification', async (ctx) => {
    ctx.body = await verifications.issuerView(await guarantees.get(orgIdOf(ctx.state), ctx.params.id ?? ''));
  });

  router.get('/api/v2/guarantees/:id/verification.svg', async (ctx) => {
    const url = verifications.urlOf(await guarantees.get(orgIdOf(ctx.state), ctx.params.id ?? ''));
    ctx.type = 'image/svg+xml';
    ctx.body = await QRCode.toString(url, { type: 'svg', errorCorrectionLevel: 'M', margin: 4 });
  });

  router.get('/api/v2/guarantees/:id/verification.png', async (ctx) => {
    const url = verifications.urlOf(await guarantees.get(orgIdOf(ctx.state), ctx.params.id ?? ''));
    ctx.type = 'image/png';
    // 8 pixels a module: sharp when printed at 300 dpi about 3 cm wide.
    ctx.body = await QRCode.toBuffer(url, { type: 'png', errorCorrectionLevel: 'M', margin: 4, scale: 8 });
  });
}

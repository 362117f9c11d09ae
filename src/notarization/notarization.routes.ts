// GET /api/v2/guarantees/{ID}/proof: the record's notarization proof (digest, Merkle path, root,
// anchor), or where it stands while it has none; GET .../amendments/{seq}/proof, an
// amendment's. Thin: parse, call the services, answer.
import type { Router } from '@koa/router';
import { orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import type { AmendmentService } from '../guarantees/amendment.service.js';
import type { GuaranteeService } from '../guarantees/guarantee.service.js';
import type { ProofService } from './notarization.service.js';

export function registerNotarizationRoutes(router: Router<AuthState>, guarantees: GuaranteeService, amendments: AmendmentService, proofs: ProofService): void {
  router.get('/api/v2/guarantees/:id/proof', async (ctx) => {
    const orgId = orgIdOf(ctx.state);
    const record = await guarantees.get(orgId, ctx.params.id ?? '');
    ctx.body = await proofs.proof(orgId, record);
  });

  router.get('/api/v2/guarantees/:id/amendments/:seq/proof', async (ctx) => {
    const amendment = await amendments.one(orgIdOf(ctx.state), ctx.params.id ?? '', ctx.params.seq ?? '');
    ctx.body = await proofs.amendmentProof(amendment);
  });
}

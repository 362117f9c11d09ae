// GET /api/v2/audit: an organization's own audit rows, oldest first, by seq. Thin: parse, read, answer.
import type { Router } from '@koa/router';
import type { z } from 'zod';
import { orgIdOf, type AuthState } from '../orgs/auth.middleware.js';
import { parseOrThrow } from '../shared/validation.js';
import type { AuditRow } from './audit-chain.js';
import type { AuditRepository } from './audit.repository.js';
import { auditQuery, type auditItem } from './audit.schemas.js';

export function toAuditItem(r: AuditRow): z.infer<typeof auditItem> {
  return {
    seq: r.seq,
    at: r.at.toISOString(),
    orgId: r.orgId,
    actor: r.actor,
    action: r.action,
    target: r.target,
    requestId: r.requestId,
    outcome: r.outcome,
    prevHash: r.prevHash,
    hash: r.hash,
  };
}

export function registerAuditRoutes(router: Router<AuthState>, audit: Pick<AuditRepository, 'list'>): void {
  router.get('/api/v2/audit', async (ctx) => {
    const { since, limit } = parseOrThrow(auditQuery, ctx.query, 'query');
    const rows = await audit.list(orgIdOf(ctx.state), since, limit);
    // `next` names where to go on; null once a page comes back short (the end, for now).
    ctx.body = { items: rows.map(toAuditItem), next: rows.length === limit ? (rows.at(-1)?.seq ?? null) : null };
  });
}

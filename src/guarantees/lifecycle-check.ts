// The lifecycle check (CONTRACT "Lifecycle"): a periodic job (LIFECYCLE_CHECK_EVERY_MS, daily
// by default) emits `guarantee.expired` once when a guarantee's expiry passes (no automatic
// renewal, no open claim, not released or cancelled), and `guarantee.claim_overdue` once when an
// open claim passes its due date. Each run looks at the window since the last one (kept in
// lifecycle_checks): the guarantees whose registered expiry, extended expiry or claim due date
// fell in it are the candidates, each folded at the run's time (src/guarantees/amendments.ts).
// A notice is written with its event in one transaction, keyed by what it is about, so a run
// repeated after a failure (the window is moved only once a run has finished) emits nothing
// twice. Times are UTC instants: a change of the local clock (summer time) moves nothing. The
// first run looks at everything before it: a guarantee that expired before the check existed
// is told once, as well.
import { execute, select, type Sequelize, type Transaction } from '../shared/db/sequelize.js';
import type { Outbox } from '../shared/events/outbox.js';
import type { AmendmentRepository } from './amendment.repository.js';
import { toStateView } from './amendment.serializer.js';
import { CLAIM_TERM_MS, stateAfter } from './amendments.js';

/** Candidates read per statement. */
const PAGE = 500;
/** The start of the first window. */
const EPOCH = new Date(0);

/** `name`: the check's row in lifecycle_checks; `since`: where its first window starts (by default, the beginning). */
export function createLifecycleCheck(deps: { db: Sequelize; amendments: AmendmentRepository; outbox: Outbox; name?: string; since?: Date; now?: () => Date }) {
  const { db, amendments, outbox } = deps;
  const name = deps.name ?? 'notices';
  const now = deps.now ?? (() => new Date());

  /** The guarantees (id and organization) with an expiry or a claim due date in (from, to]. */
  async function candidates(from: Date, to: Date): Promise<Array<{ id: string; orgId: string }>> {
    const claimsFrom = new Date(from.getTime() - CLAIM_TERM_MS);
    const claimsTo = new Date(to.getTime() - CLAIM_TERM_MS);
    const found = new Map<string, string>();
    const sources = [
      { sql: 'SELECT id, org_id FROM guarantees WHERE expires_at > $1 AND expires_at <= $2', bind: [from, to] },
      {
        sql: "SELECT guarantee_id AS id, org_id FROM guarantee_amendments WHERE type = 'EXTENSION' AND expires_at > $1 AND expires_at <= $2",
        bind: [from, to],
      },
      {
        sql: "SELECT guarantee_id AS id, org_id FROM guarantee_amendments WHERE type = 'CLAIM' AND effective_at > $1 AND effective_at <= $2",
        bind: [claimsFrom, claimsTo],
      },
    ];
    for (const source of sources) {
      // Keyset pages by id, so that a window holding many does not come back in one result.
      for (let after = ''; ;) {
        const rows = await select<{ id: string; org_id: string }>(
          db,
          `${source.sql} AND ${source.sql.includes('guarantee_id') ? 'guarantee_id' : 'id'} > $3 ORDER BY 1 LIMIT ${PAGE}`,
          [...source.bind, after],
        );
        for (const r of rows) found.set(r.id, r.org_id);
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1]?.id ?? '';
      }
    }
    return [...found].map(([id, orgId]) => ({ id, orgId }));
  }

  /** Writes the notice and its event, once: false when it was written already. */
  async function notify(
    t: Transaction,
    g: { id: string; orgId: string },
    kind: 'expired' | 'claim_overdue',
    ref: string,
    data: unknown,
    at: Date,
  ): Promise<boolean> {
    const written = await execute(
      db,
      'INSERT IGNORE INTO guarantee_notices (guarantee_id, kind, ref, created_at) VALUES ($1, $2, $3, $4)',
      [g.id, kind, ref, at],
      t,
    );
    if (written !== 1) return false;
    await outbox.add(t, g.orgId, kind === 'expired' ? 'guarantee.expired' : 'guarantee.claim_overdue', data, at);
    return true;
  }

  return {
    /** One run: the notices due since the last run, up to now. Returns how many were emitted. */
    async run(): Promise<{ expired: number; claimOverdue: number }> {
      const to = now();
      const [last] = await select<{ checked_until: Date }>(db, 'SELECT checked_until FROM lifecycle_checks WHERE name = $1', [name]);
      const from = last?.checked_until ?? deps.since ?? EPOCH;
      const counts = { expired: 0, claimOverdue: 0 };
      for (const g of await candidates(from, to)) {
        const issued = await amendments.issued(g.orgId, g.id);
        if (!issued) continue;
        const state = stateAfter(issued, await amendments.list(g.id), to);
        await db.transaction(async (t) => {
          if (state.status === 'EXPIRED' && state.expiresAt) {
            const data = { guaranteeId: g.id, expiresAt: state.expiresAt.toISOString(), state: toStateView(state) };
            if (await notify(t, g, 'expired', state.expiresAt.toISOString(), data, to)) counts.expired++;
          }
          if (state.openClaim && state.claimDueAt && state.claimDueAt <= to) {
            const data = { guaranteeId: g.id, claim: toStateView(state).openClaim, claimDueAt: state.claimDueAt.toISOString(), state: toStateView(state) };
            if (await notify(t, g, 'claim_overdue', String(state.openClaim.seq), data, to)) counts.claimOverdue++;
          }
        });
      }
      await execute(
        db,
        'INSERT INTO lifecycle_checks (name, checked_until) VALUES ($1, $2) ON DUPLICATE KEY UPDATE checked_until = GREATEST(checked_until, VALUES(checked_until))',
        [name, to],
      );
      return counts;
    },
  };
}

export type LifecycleCheck = ReturnType<typeof createLifecycleCheck>;

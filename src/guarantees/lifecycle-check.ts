// The lifecycle check (docs/api.md "A guarantee's life"): a periodic job (LIFECYCLE_CHECK_EVERY_MS, daily
// by default) tells what a guarantee's state showed, as recorded at each instant, since the
// check first ran: `guarantee.expired` once when its cover lapsed (the state turned EXPIRED:
// its expiry passed without automatic renewal, no claim open, not released or cancelled; or
// later, when a claim open then was closed; or at a registration already expired), and
// `guarantee.claim_overdue` once when a claim showed open past its due date (lapsesOf in
// src/guarantees/amendments.ts). So what is told does not depend on when the runs fall: an
// expiry extended after it passed, before the next run, is told all the same (the event's state
// is the state now, extended), and a guarantee lapsed before the first run is never told,
// whatever is recorded later.
// - Each run looks at the window since the last one (lifecycle_checks), widened back by
//   OVERLAP_MS so that a transaction still open when the last run read is seen now. Its
//   candidates are the guarantees with a date in it (a registered or extended expiry, a claim's
//   due date) and those written in it (a registration, or any amendment): the only instants at
//   which a state changes.
// - Each candidate is decided under its guarantee's lock, as amendments are recorded (so every
//   amendment recorded before the run's time is there); a notice is written with its event in
//   that transaction, keyed by what it is about (the expiry; the claim's seq), so a window
//   looked at twice, or two runs at once, emit nothing twice.
// - A candidate that fails is logged and the window is not moved: the next run looks again.
// - The first run records its time as the check's start (started_at) and only sets the
//   watermark: what lapsed before it is not told, rather than every expiry in history at once.
// Times are UTC instants: a change of the local clock (summer time) moves nothing.
import { execute, select, type Sequelize } from '../shared/db/sequelize.js';
import type { Outbox } from '../shared/events/outbox.js';
import type { Logger } from '../shared/logger.js';
import type { AmendmentRepository } from './amendment.repository.js';
import { toStateView } from './amendment.serializer.js';
import { CLAIM_TERM_MS, lapsesOf, stateAfter } from './amendments.js';

/** Candidates read per statement. */
const PAGE = 500;
/** How far back each window reaches into the previous one: longer than any transaction. */
export const OVERLAP_MS = 10 * 60_000;

interface Candidate {
  id: string;
  org_id: string;
}

export function createLifecycleCheck(deps: {
  db: Sequelize;
  amendments: AmendmentRepository;
  outbox: Outbox;
  logger: Logger;
  /** The check's row in lifecycle_checks. */
  name?: string;
  now?: () => Date;
}) {
  const { db, amendments, outbox, logger } = deps;
  const name = deps.name ?? 'notices';
  const now = deps.now ?? (() => new Date());

  /** The candidates of (from, to], page by page (keyset on the id), each page handed to `each`. */
  async function eachCandidatePage(from: Date, to: Date, each: (page: Candidate[]) => Promise<void>): Promise<void> {
    const claimsFrom = new Date(from.getTime() - CLAIM_TERM_MS);
    const claimsTo = new Date(to.getTime() - CLAIM_TERM_MS);
    const sources: Array<{ sql: string; bind: unknown[] }> = [
      { sql: 'SELECT id, org_id FROM guarantees WHERE expires_at > $1 AND expires_at <= $2', bind: [from, to] },
      { sql: 'SELECT id, org_id FROM guarantees WHERE created_at > $1 AND created_at <= $2 AND expires_at <= $2', bind: [from, to] },
      {
        sql: "SELECT guarantee_id AS id, org_id FROM guarantee_amendments WHERE type = 'EXTENSION' AND expires_at > $1 AND expires_at <= $2",
        bind: [from, to],
      },
      {
        sql: "SELECT guarantee_id AS id, org_id FROM guarantee_amendments WHERE type IN ('CLAIM', 'DEMAND') AND effective_at > $1 AND effective_at <= $2",
        bind: [claimsFrom, claimsTo],
      },
      { sql: 'SELECT guarantee_id AS id, org_id FROM guarantee_amendments WHERE created_at > $1 AND created_at <= $2', bind: [from, to] },
    ];
    for (const source of sources) {
      const idColumn = source.sql.includes('guarantee_id AS id') ? 'guarantee_id' : 'id';
      for (let after = ''; ;) {
        const page = await select<Candidate>(db, `${source.sql} AND ${idColumn} > $3 ORDER BY ${idColumn} LIMIT ${PAGE}`, [...source.bind, after]);
        if (page.length) await each(page);
        if (page.length < PAGE) break;
        after = page[page.length - 1]?.id ?? '';
      }
    }
  }

  /** Decides one guarantee under its lock: tells what it showed from `since` (the check's start) to `at`; how many notices it emitted. */
  function decide(g: Candidate, since: Date, at: Date): Promise<{ expired: number; claimOverdue: number }> {
    return amendments.transaction(async (t) => {
      const issued = await amendments.lockIssued(g.org_id, g.id, t);
      const done = { expired: 0, claimOverdue: 0 };
      if (!issued) return done;
      const [registered] = await select<{ created_at: Date }>(db, 'SELECT created_at FROM guarantees WHERE id = $1', [g.id], t);
      if (!registered) return done;
      const list = await amendments.list(g.id, t);
      const now = toStateView(stateAfter(issued, list, at));
      const notify = async (kind: 'expired' | 'claim_overdue', ref: string, data: unknown): Promise<boolean> => {
        const written = await execute(
          db,
          'INSERT IGNORE INTO guarantee_notices (guarantee_id, kind, ref, created_at) VALUES ($1, $2, $3, $4)',
          [g.id, kind, ref, at],
          t,
        );
        if (written !== 1) return false;
        // To the issuer, and to the contracting authority that took charge of the guarantee.
        for (const party of [g.org_id, ...(now.beneficiary && now.beneficiary !== g.org_id ? [now.beneficiary] : [])]) {
          await outbox.add(t, party, kind === 'expired' ? 'guarantee.expired' : 'guarantee.claim_overdue', data, new Date());
        }
        return true;
      };
      const lapses = lapsesOf(issued, registered.created_at, list, at);
      for (const { at: shownAt, state } of lapses.expired) {
        if (shownAt < since || !state.expiresAt) continue;
        const data = { guaranteeId: g.id, expiresAt: state.expiresAt.toISOString(), state: now };
        if (await notify('expired', state.expiresAt.toISOString(), data)) done.expired++;
      }
      for (const { at: shownAt, state } of lapses.claimOverdue) {
        if (shownAt < since || !state.openClaim) continue;
        const then = toStateView(state);
        const data = { guaranteeId: g.id, claim: then.openClaim, claimDueAt: then.claimDueAt, state: now };
        if (await notify('claim_overdue', String(state.openClaim.seq), data)) done.claimOverdue++;
      }
      return done;
    });
  }

  return {
    /** One run: the notices due since the last run, up to now. Returns how many were emitted, and how many guarantees failed. */
    async run(): Promise<{ expired: number; claimOverdue: number; failed: number }> {
      const to = now();
      const [last] = await select<{ checked_until: Date; started_at: Date }>(db, 'SELECT checked_until, started_at FROM lifecycle_checks WHERE name = $1', [
        name,
      ]);
      const counts = { expired: 0, claimOverdue: 0, failed: 0 };
      if (last) {
        const from = new Date(last.checked_until.getTime() - OVERLAP_MS);
        const seen = new Set<string>();
        await eachCandidatePage(from, to, async (page) => {
          for (const g of page) {
            if (seen.has(g.id)) continue;
            seen.add(g.id);
            try {
              const done = await decide(g, last.started_at, to);
              counts.expired += done.expired;
              counts.claimOverdue += done.claimOverdue;
            } catch (err) {
              counts.failed++;
              logger.warn(
                { guarantee: g.id, err: (err as Error).message },
                'lifecycle check: a guarantee could not be decided; its window is looked at again next run',
              );
            }
          }
        });
      }
      // Moved only when every candidate was decided. The first run sets it and the check's start (never moved after).
      if (!counts.failed) {
        await execute(
          db,
          'INSERT INTO lifecycle_checks (name, checked_until, started_at) VALUES ($1, $2, $2) ON DUPLICATE KEY UPDATE checked_until = GREATEST(checked_until, VALUES(checked_until))',
          [name, to],
        );
      }
      return counts;
    },
  };
}

export type LifecycleCheck = ReturnType<typeof createLifecycleCheck>;

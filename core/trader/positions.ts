import { winnerLabel } from '../outcomes.ts';
import { z } from 'zod';
import { DUST_SHARES } from '../positions.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { POS_KEY, cursorField, effectiveAsOf, encodeCursor, listOf } from './cursors.ts';
import { resolveTrader, venueSchema, walletPositionsSql } from './identity.ts';
import { FEED_LIMIT } from './rules.ts';
import { OutcomeSide, count, iso, isoOrNull, num, num0, outcomeName } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// 2. Positions feed
// ---------------------------------------------------------------------------------------------------------------

export const POSITION_STATUSES = ['OPEN', 'WON', 'LOST', 'REDEEMABLE', 'VOID'] as const;

export const TraderPositionsQuery = z.object({
  /** one status, a list, or a comma-separated string; all statuses when omitted */
  status: listOf(POSITION_STATUSES).optional(),
  limit: z.coerce.number().int().min(FEED_LIMIT.min).max(FEED_LIMIT.max).default(FEED_LIMIT.default),
  cursor: cursorField('pos', POS_KEY).optional(),
});
export type TraderPositionsQueryInput = z.input<typeof TraderPositionsQuery>;

export const TraderPosition = z.object({
  condition_id: z.string(),
  market_title: z.string(),
  market_slug: z.string(),
  category: z.string(),
  outcome: OutcomeSide,
  /** 0 or 1: the outcome's index in the market (its name may be the venue's: Up / Down, a team) */
  outcome_index: z.number().int().min(0).max(1),
  status: z.enum(POSITION_STATUSES),
  /** the market's winner as of T: YES | NO (or the venue's names of them) | INVALID; null while unresolved or on a tie / multi-outcome payout */
  winner_outcome: z.string().nullable(),
  /** P&L label of a resolved position (also on REDEEMABLE rows); null while unresolved */
  pnl_label: z.enum(['WON', 'LOST', 'VOID']).nullable(),
  /** shares held at T (0 once fully exited) */
  shares: z.number(),
  closed: z.boolean(),
  avg_price: z.number().nullable(),
  entry_price: z.number().nullable(),
  cost_basis: z.number(),
  mark: z.number().nullable(),
  realized_pnl: z.number(),
  unrealized_pnl: z.number(),
  total_pnl: z.number(),
  volume_usdc: z.number(),
  trades: count,
  redeemed_shares: z.number(),
  opened_at: z.string(),
  last_activity_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type TraderPosition = z.infer<typeof TraderPosition>;

export const TraderPositions = z.object({
  proxy_wallet: z.string(),
  as_of: z.string(),
  /** rows matching the status filter, over all pages */
  total_rows: count,
  rows: z.array(TraderPosition),
  next_cursor: z.string().nullable(),
});
export type TraderPositions = z.infer<typeof TraderPositions>;

/**
 * One wallet's positions as of T, newest activity first: ordered by (last activity desc, market id, outcome), a
 * total order, paginated by keyset. The cursor is opaque and pins the first page's T.
 */
export async function traderPositions(db: QueryRunner, wallet: number | string, asOf: AsOf, opts: TraderPositionsQueryInput = {}): Promise<TraderPositions | null> {
  const q = TraderPositionsQuery.parse(opts);
  const T0 = effectiveAsOf(asOf, q.cursor);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const schema = await venueSchema(db);
  const T = tsLiteral(T0);
  const statuses = q.status ?? [...POSITION_STATUSES];
  const statusSql = statuses.map((s) => `'${s}'`).join(', ');
  let keyset = 'true';
  if (q.cursor) {
    const [kts, km, ko] = q.cursor.key;
    keyset = `(k_ts < ${kts} OR (k_ts = ${kts} AND (market_id > ${km} OR (market_id = ${km} AND outcome_index > ${ko}))))`;
  }
  const rows = await db.all<Record<string, unknown>>(
    `WITH p AS (${walletPositionsSql(schema, who.wallet_id, T0)}),
    f AS (
      SELECT p.*, epoch_us(p.last_ts) AS k_ts, m.condition_id, m.question, m.slug, m.category, m.outcome_labels, r.winner, r.resolved_at
      FROM p JOIN markets m USING (market_id)
      LEFT JOIN (SELECT market_id, winner, resolved_at FROM resolutions WHERE resolved_at <= ${T}) r USING (market_id)
      WHERE p.status IN (${statusSql}))
    SELECT *, (SELECT count(*) FROM f) AS total_rows FROM f WHERE ${keyset}
    ORDER BY k_ts DESC, market_id, outcome_index LIMIT ${q.limit + 1}`,
  );
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  const total = rows.length ? num0(rows[0]!.total_rows) : 0;
  return {
    proxy_wallet: who.address,
    as_of: T0.toISOString(),
    total_rows: total,
    rows: page.map((r) => ({
      condition_id: String(r.condition_id),
      market_title: String(r.question),
      market_slug: String(r.slug),
      category: String(r.category),
      outcome: outcomeName(num0(r.outcome_index), r.outcome_labels),
      outcome_index: num0(r.outcome_index),
      status: r.status as TraderPosition['status'],
      winner_outcome: r.resolved_at === null || r.resolved_at === undefined ? null : winnerLabel(r.outcome_labels as string[] | null, (r.winner as string | null) ?? null),
      pnl_label: (r.pnl_label as TraderPosition['pnl_label']) ?? null,
      shares: num0(r.shares),
      closed: num0(r.shares) <= DUST_SHARES,
      avg_price: num(r.avg_price),
      entry_price: num(r.entry_price),
      cost_basis: num0(r.cost_basis),
      mark: num(r.mark),
      realized_pnl: num0(r.realized_pnl),
      unrealized_pnl: num0(r.unrealized_pnl),
      total_pnl: num0(r.total_pnl),
      volume_usdc: num0(r.volume_usdc),
      trades: num0(r.trades),
      redeemed_shares: num0(r.redeemed_shares),
      opened_at: iso(r.first_ts),
      last_activity_at: iso(r.last_ts),
      resolved_at: isoOrNull(r.resolved_at),
    })),
    next_cursor: rows.length > q.limit && last ? encodeCursor('pos', T0, [num0(last.k_ts), num0(last.market_id), num0(last.outcome_index)]) : null,
  };
}

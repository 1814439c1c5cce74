import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { positionEventsSql, positionsSql } from '../positions.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { PK_MARKET, PK_OUTCOME, PK_WALLET, venueSchema } from './identity.ts';
import { TOP_ROI_RULE } from './rules.ts';
import { OutcomeSide, Params, iso, num0, outcomeName } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// 4. Top-ROI trades
// ---------------------------------------------------------------------------------------------------------------

export const TopRoiQuery = z.object({
  limit: z.coerce.number().int().min(TOP_ROI_RULE.limit.min).max(TOP_ROI_RULE.limit.max).default(TOP_ROI_RULE.limit.default),
  category: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z][a-z0-9_]{0,39}$/, 'category is a lowercase name')
    .optional(),
  since_days: z.coerce.number().int().min(TOP_ROI_RULE.sinceDays.min).max(TOP_ROI_RULE.sinceDays.max).default(TOP_ROI_RULE.sinceDays.default),
  sort: z.enum(['roi', 'profit']).default('roi'),
  dir: z.enum(['asc', 'desc']).default('desc'),
});
export type TopRoiQueryInput = z.input<typeof TopRoiQuery>;

export const TopRoiTrade = z.object({
  rank: z.number().int().positive(),
  /** opaque trader id: a keyed hash of the proxy wallet, never the wallet itself */
  tid: z.string(),
  wallet_label: z.string(),
  display: z.object({ username: z.string().nullable(), pseudonym: z.string() }),
  market_title: z.string(),
  market_slug: z.string(),
  category: z.string(),
  outcome: OutcomeSide,
  cost_usdc: z.number().positive(),
  profit_usdc: z.number(),
  /** payout value / cost: (cost + profit) / cost */
  roi_x: z.number().nonnegative(),
  entry_price: z.number().min(0).max(1),
  resolved_at: z.string(),
});
export type TopRoiTrade = z.infer<typeof TopRoiTrade>;

export const TopRoiTrades = z.object({ trades: z.array(TopRoiTrade), as_of: z.string() });
export type TopRoiTrades = z.infer<typeof TopRoiTrades>;

/**
 * The opaque trader id of the public surfaces: HMAC-SHA256 keyed by a server secret over the lowercase proxy
 * wallet, base64url, 128 bits, prefixed `t_`. Stable for a key (the address never changes; the dense wallet_id may
 * across re-ingests), unlinkable to the address without the key.
 */
export function traderTid(key: string | Uint8Array, address: string): string {
  if ((typeof key === 'string' ? Buffer.byteLength(key) : key.byteLength) < 16) throw new Error('tid key must be at least 16 bytes');
  return `t_${createHmac('sha256', key).update(`tid:v1:${address.toLowerCase()}`).digest('base64url').slice(0, 22)}`;
}

/**
 * Best (or worst) closed trades: positions in markets that resolved YES or NO within the trailing `since_days`
 * ending at T, built only from buy fills (no split or conversion inventory), costing at least TOP_ROI_RULE.minCostUsd
 * (buy notional + taker fees). roi_x = payout value / cost, where the payout value = cost + final P&L (sale
 * proceeds + payout of the shares held). `tidKey` is the surface's secret for traderTid.
 */
export async function topRoiTrades(db: QueryRunner, asOf: AsOf, opts: TopRoiQueryInput, tidKey: string | Uint8Array): Promise<TopRoiTrades> {
  const q = TopRoiQuery.parse(opts);
  traderTid(tidKey, '0x'); // validates the key before any work
  const T = tsLiteral(asOf);
  const S = await venueSchema(db);
  const params = new Params();
  const categorySql = q.category ? `AND m.category = ${params.add(q.category)}` : '';
  const order = q.sort === 'roi' ? 'roi_x' : 'profit_usdc';
  const dir = q.dir === 'asc' ? 'ASC' : 'DESC';
  const rows = await db.all<Record<string, unknown>>(
    `WITH win AS (
      SELECT r.market_id, r.resolved_at FROM resolutions r JOIN markets m USING (market_id)
      WHERE r.resolved_at <= ${T} AND r.resolved_at > ${T} - INTERVAL ${q.since_days} DAY AND r.winner IN ('YES', 'NO') ${categorySql}),
    fill_legs AS (SELECT * FROM ${S}.fill_legs WHERE market_id IN (SELECT market_id FROM win)),
    inv_keys AS (SELECT DISTINCT tx_hash, log_index FROM ${S}.inventory_legs WHERE market_id IN (SELECT market_id FROM win)),
    inventory_legs AS (SELECT l.* FROM ${S}.inventory_legs l SEMI JOIN inv_keys k USING (tx_hash, log_index)),
    inventory_events AS (SELECT e.* FROM ${S}.inventory_events e SEMI JOIN inv_keys k USING (tx_hash, log_index)),
    mids AS (SELECT * FROM ${S}.mids WHERE market_id IN (SELECT market_id FROM fill_legs UNION SELECT market_id FROM inventory_legs)),
    ${positionEventsSql(asOf)},
    acq AS (
      SELECT ${PK_WALLET} AS wallet_id, ${PK_MARKET} AS market_id, ${PK_OUTCOME} AS outcome_index,
        sum(q * px) FILTER (WHERE q > 0 AND is_trade = 1) AS cost_in,
        count(*) FILTER (WHERE q > 0 AND is_trade = 0) AS inv_in
      FROM ev GROUP BY pk),
    pos AS (SELECT * FROM (${positionsSql(asOf)}) WHERE resolved AND bought_shares > 0),
    t AS (
      SELECT pos.wallet_id, pos.market_id, pos.outcome_index, acq.cost_in AS cost_usdc, pos.realized_pnl AS profit_usdc,
        (acq.cost_in + pos.realized_pnl) / acq.cost_in AS roi_x, pos.entry_price, win.resolved_at,
        m.question, m.slug, m.category, m.outcome_labels, w.address, w.username, w.pseudonym
      FROM pos JOIN acq USING (wallet_id, market_id, outcome_index) JOIN win USING (market_id)
      JOIN markets m USING (market_id) JOIN wallets w USING (wallet_id)
      WHERE acq.inv_in = 0 AND acq.cost_in >= ${TOP_ROI_RULE.minCostUsd})
    SELECT * FROM t ORDER BY ${order} ${dir}, cost_usdc DESC, wallet_id, market_id, outcome_index LIMIT ${q.limit}`,
    params.values,
  );
  return {
    as_of: asOf.toISOString(),
    trades: rows.map((r, i) => ({
      rank: i + 1,
      tid: traderTid(tidKey, String(r.address)),
      wallet_label: (r.username as string | null) ?? String(r.pseudonym),
      display: { username: (r.username as string | null) ?? null, pseudonym: String(r.pseudonym) },
      market_title: String(r.question),
      market_slug: String(r.slug),
      category: String(r.category),
      outcome: outcomeName(num0(r.outcome_index), r.outcome_labels),
      cost_usdc: num0(r.cost_usdc),
      profit_usdc: num0(r.profit_usdc),
      roi_x: Math.max(0, num0(r.roi_x)),
      entry_price: num0(r.entry_price),
      resolved_at: iso(r.resolved_at),
    })),
  };
}

/**
 * Wallet behaviour features as of T in one statement over the venue tables: activity, clip sizes, entry timing,
 * contrarian entries. The trader endpoints run it over one wallet's rows (core/trader/); the live engine computes
 * the same figures from its position state (core/analytics/wallets.ts featuresSql).
 */
import { tsLiteral, type AsOf } from './query.ts';
import { TAG_RULES } from './tags.ts';

export function walletFeaturesSql(asOf: AsOf): string {
  const T = tsLiteral(asOf);
  const drop = TAG_RULES.contrarian.dropCents / 100;
  return `WITH legs AS (SELECT * FROM fill_legs WHERE ts <= ${T}),
    f AS (
      SELECT wallet_id, sum(size_usdc) AS lifetime_volume_usdc, count(*)::INTEGER AS trade_count,
        count(DISTINCT market_id)::INTEGER AS markets_traded, min(ts) AS first_trade_at, max(ts) AS last_trade_at,
        median(size_usdc) AS median_fill_usdc, count(*) FILTER (WHERE side = 'BUY')::INTEGER AS n_buys,
        avg((role = 'taker')::INTEGER) AS taker_share
      FROM legs GROUP BY 1),
    entries AS (SELECT wallet_id, market_id, min(ts) AS first_buy FROM legs WHERE side = 'BUY' GROUP BY ALL),
    ages AS (
      SELECT e.wallet_id, count(*)::INTEGER AS n_entry_positions,
        median(greatest(0, epoch(e.first_buy) - epoch(m.trading_opens_at)) / nullif(epoch(m.end_date) - epoch(m.trading_opens_at), 0)) AS median_entry_age
      FROM entries e JOIN markets m USING (market_id) GROUP BY 1),
    buys AS (SELECT wallet_id, market_id, outcome_index, ts, ts - INTERVAL 24 HOUR AS t_prev FROM legs WHERE side = 'BUY'),
    buys_now AS (
      SELECT b.*, m.mid AS mid_now FROM buys b
      ASOF LEFT JOIN mids m ON m.market_id = b.market_id AND m.outcome_index = b.outcome_index AND m.ts <= b.ts),
    buys_prev AS (
      SELECT b.*, m.mid AS mid_prev FROM buys_now b
      ASOF LEFT JOIN mids m ON m.market_id = b.market_id AND m.outcome_index = b.outcome_index AND m.ts <= b.t_prev),
    contra AS (
      SELECT wallet_id, avg(CASE WHEN mid_prev - mid_now >= ${drop} THEN 1 ELSE 0 END) AS contrarian_buy_share
      FROM buys_prev GROUP BY 1)
    SELECT f.*, coalesce(a.n_entry_positions, 0) AS n_entry_positions, a.median_entry_age, c.contrarian_buy_share
    FROM f LEFT JOIN ages a USING (wallet_id) LEFT JOIN contra c USING (wallet_id)`;
}

/**
 * Alpha versus the mid (methodology "Alpha versus mid"): for a buy of token T at price p at time t,
 * alpha_h = value_T(t + h) - p; for a sell, p - value_T(t + h), where value is the latest mid at or before t + h,
 * or the payout when the market resolved by then. Horizons 1 h, 24 h and to resolution. Per wallet: the
 * size-weighted mean in cents and its count. A fill whose horizon has not elapsed by T does not count. Means are rounded to 1e-9 cent so
 * that rebuilds agree whatever order parallel threads summed in.
 */
import { tsLiteral, type AsOf } from './query.ts';

export const ALPHA_HORIZONS = { '1h': 1, '24h': 24 } as const;

/** SQL (a SELECT): per wallet alpha_1h_cents, n_alpha_1h, alpha_24h_cents, n_alpha_24h, alpha_res_cents, n_alpha_res. */
export function walletAlphaSql(asOf: AsOf): string {
  const T = tsLiteral(asOf);
  const horizon = (name: string, hours: number) => `
  h${name} AS (
    SELECT l.wallet_id, l.size_usdc, l.sign,
      CASE WHEN r.resolved_at <= l.ts + INTERVAL ${hours} HOUR THEN r.payout ELSE m.mid END - l.price AS move
    FROM legs l
    ASOF LEFT JOIN mids m ON m.market_id = l.market_id AND m.outcome_index = l.outcome_index AND m.ts <= l.t${name}
    LEFT JOIN res r ON r.market_id = l.market_id AND r.outcome_index = l.outcome_index
    WHERE l.t${name} <= ${T}),
  a${name} AS (
    SELECT wallet_id, round(100 * sum(size_usdc * sign * move) / nullif(sum(size_usdc), 0), 9) AS alpha_${name}_cents, count(*) AS n_alpha_${name}
    FROM h${name} WHERE move IS NOT NULL GROUP BY 1)`;
  return `WITH legs AS (
      SELECT wallet_id, market_id, outcome_index, ts, price, size_usdc, CASE side WHEN 'BUY' THEN 1 ELSE -1 END AS sign,
        ts + INTERVAL 1 HOUR AS t1h, ts + INTERVAL 24 HOUR AS t24h
      FROM fill_legs WHERE ts <= ${T}),
    res AS (
      SELECT market_id, 0 AS outcome_index, payout_yes AS payout, resolved_at FROM resolutions WHERE resolved_at <= ${T}
      UNION ALL SELECT market_id, 1, payout_no, resolved_at FROM resolutions WHERE resolved_at <= ${T}),
    ${horizon('1h', 1)},
    ${horizon('24h', 24)},
    ares AS (
      SELECT l.wallet_id, round(100 * sum(l.size_usdc * l.sign * (r.payout - l.price)) / nullif(sum(l.size_usdc), 0), 9) AS alpha_res_cents, count(*) AS n_alpha_res
      FROM legs l JOIN res r ON r.market_id = l.market_id AND r.outcome_index = l.outcome_index GROUP BY 1)
    SELECT w.wallet_id, a1.alpha_1h_cents, coalesce(a1.n_alpha_1h, 0) AS n_alpha_1h, a24.alpha_24h_cents, coalesce(a24.n_alpha_24h, 0) AS n_alpha_24h,
      ar.alpha_res_cents, coalesce(ar.n_alpha_res, 0) AS n_alpha_res
    FROM (SELECT DISTINCT wallet_id FROM legs) w
    LEFT JOIN a1h a1 USING (wallet_id) LEFT JOIN a24h a24 USING (wallet_id) LEFT JOIN ares ar USING (wallet_id)`;
}

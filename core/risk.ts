/**
 * Risk-adjusted return (methodology "Risk-adjusted return"): daily mark-to-market P&L per wallet over a trailing
 * window (default 90 days), divided by the capital at work that day; annualized Sharpe and Sortino, and the max
 * drawdown of the compounded return index. Fewer than 10 days with capital at work: null (unmeasured).
 *
 * Daily P&L is summed per token: a token's running P&L is its cash flows so far plus shares held times its value
 * (latest mid at the day's end, or the payout once resolved; a redemption swaps shares for the same cash, so it
 * changes nothing). Capital at work on day d = the marked value of holdings at the end of day d-1 plus the USDC
 * spent buying on day d; a day with less than $1 at work carries no return.
 */
import { tsLiteral, type AsOf } from './query.ts';

export const RISK_WINDOW_DAYS = 90;
export const MIN_RISK_DAYS = 10;
export const MIN_CAPITAL_USD = 1;
const ANNUALIZE = Math.sqrt(365);

export interface RiskStats {
  n_days: number;
  sharpe: number | null;
  sortino: number | null;
  max_drawdown: number | null;
  mean_daily_return: number | null;
}

/** Reference statistics over a series of daily returns (tests' oracle for the SQL, and single-wallet use). */
export function riskStats(returns: readonly number[]): RiskStats {
  const n = returns.length;
  if (n < MIN_RISK_DAYS) return { n_days: n, sharpe: null, sortino: null, max_drawdown: null, mean_daily_return: null };
  const mean = returns.reduce((a, b) => a + b, 0) / n;
  const variance = returns.reduce((a, r) => a + (r - mean) ** 2, 0) / (n - 1);
  const downside = Math.sqrt(returns.reduce((a, r) => a + Math.min(r, 0) ** 2, 0) / n);
  let logWealth = 0;
  let peak = 0;
  let worst = 0;
  for (const r of returns) {
    logWealth += Math.log(1 + Math.max(r, -0.9999));
    peak = Math.max(peak, logWealth);
    worst = Math.min(worst, logWealth - peak);
  }
  return {
    n_days: n,
    sharpe: variance > 0 ? (mean / Math.sqrt(variance)) * ANNUALIZE : null,
    sortino: downside > 0 ? (mean / downside) * ANNUALIZE : null,
    max_drawdown: 1 - Math.exp(worst),
    mean_daily_return: mean,
  };
}

/** SQL (a SELECT): per wallet and day in the window: pnl, capital, ret (null when capital < $1). */
export function dailyReturnsSql(asOf: AsOf, windowDays = RISK_WINDOW_DAYS): string {
  const T = tsLiteral(asOf);
  return `WITH bounds AS (SELECT date_trunc('day', ${T}) - INTERVAL ${windowDays} DAY AS d0, date_trunc('day', ${T}) AS d1),
    legs AS (
      SELECT wallet_id, market_id, outcome_index, ts, CASE side WHEN 'BUY' THEN shares ELSE -shares END AS dq,
        CASE side WHEN 'BUY' THEN -(size_usdc + fee_usdc) ELSE size_usdc - fee_usdc END AS cash,
        CASE side WHEN 'BUY' THEN size_usdc + fee_usdc ELSE 0 END AS spent
      FROM fill_legs WHERE ts <= ${T}
      UNION ALL
      -- inventory: tokens move; USDC of the event is booked once, on its first leg
      SELECT l.wallet_id, l.market_id, l.outcome_index, i.ts, l.shares_delta,
        CASE WHEN row_number() OVER (PARTITION BY l.tx_hash, l.log_index ORDER BY l.market_id, l.outcome_index) = 1 THEN i.usdc_delta ELSE 0 END,
        CASE WHEN row_number() OVER (PARTITION BY l.tx_hash, l.log_index ORDER BY l.market_id, l.outcome_index) = 1 THEN greatest(-i.usdc_delta, 0) ELSE 0 END
      FROM inventory_legs l JOIN inventory_events i USING (tx_hash, log_index) WHERE i.ts <= ${T}),
    active AS (
      SELECT wallet_id FROM legs, bounds WHERE ts >= d0 GROUP BY wallet_id HAVING count(DISTINCT date_trunc('day', ts)) >= ${MIN_RISK_DAYS}),
    -- per token and day; history before the window is folded into the day before it
    daily AS (
      SELECT l.wallet_id, l.market_id, l.outcome_index, greatest(date_trunc('day', l.ts), b.d0 - INTERVAL 1 DAY) AS day,
        sum(dq) AS dq, sum(cash) AS cash, sum(spent) AS spent
      FROM legs l SEMI JOIN active a ON a.wallet_id = l.wallet_id, bounds b GROUP BY ALL),
    res AS (SELECT market_id, date_trunc('day', resolved_at) AS rday, payout_yes, payout_no, resolved_at FROM resolutions WHERE resolved_at <= ${T}),
    spans AS (
      SELECT d.wallet_id, d.market_id, d.outcome_index, min(d.day) AS first_day,
        least((SELECT d1 FROM bounds), coalesce(any_value(r.rday), (SELECT d1 FROM bounds))) AS last_day
      FROM daily d LEFT JOIN res r USING (market_id) GROUP BY ALL),
    grid AS (
      SELECT s.wallet_id, s.market_id, s.outcome_index, unnest(generate_series(s.first_day, greatest(s.first_day, s.last_day), INTERVAL 1 DAY)) AS day
      FROM spans s),
    cum AS (
      SELECT g.wallet_id, g.market_id, g.outcome_index, g.day,
        sum(coalesce(d.dq, 0)) OVER w AS shares, sum(coalesce(d.cash, 0)) OVER w AS cash, coalesce(d.spent, 0) AS spent,
        least(g.day + INTERVAL 1 DAY, ${T}) AS eod
      FROM grid g LEFT JOIN daily d USING (wallet_id, market_id, outcome_index, day)
      WINDOW w AS (PARTITION BY g.wallet_id, g.market_id, g.outcome_index ORDER BY g.day ROWS UNBOUNDED PRECEDING)),
    valued AS (
      SELECT c.*, CASE WHEN r.resolved_at <= c.eod THEN (CASE c.outcome_index WHEN 0 THEN r.payout_yes ELSE r.payout_no END) ELSE m.mid END AS value
      FROM cum c
      ASOF LEFT JOIN mids m ON m.market_id = c.market_id AND m.outcome_index = c.outcome_index AND m.ts <= c.eod
      LEFT JOIN res r ON r.market_id = c.market_id),
    token_pnl AS (
      SELECT *, cash + shares * coalesce(value, 0) AS pnl_cum, greatest(shares, 0) * coalesce(value, 0) AS exposure FROM valued),
    token_daily AS (
      SELECT wallet_id, day,
        pnl_cum - coalesce(lag(pnl_cum) OVER w, 0) AS pnl,
        coalesce(lag(exposure) OVER w, 0) + spent AS capital
      FROM token_pnl WINDOW w AS (PARTITION BY wallet_id, market_id, outcome_index ORDER BY day))
    SELECT wallet_id, day, sum(pnl) AS pnl, sum(capital) AS capital,
      CASE WHEN sum(capital) >= ${MIN_CAPITAL_USD} THEN sum(pnl) / sum(capital) END AS ret
    FROM token_daily, bounds WHERE day >= d0 GROUP BY wallet_id, day`;
}

/** SQL (a SELECT): per wallet Sharpe, Sortino, max drawdown over the window, as riskStats() defines them. */
export function walletRiskSql(asOf: AsOf, windowDays = RISK_WINDOW_DAYS): string {
  return `WITH r AS (SELECT wallet_id, day, ret FROM (${dailyReturnsSql(asOf, windowDays)}) WHERE ret IS NOT NULL),
    w AS (SELECT *, sum(ln(1 + greatest(ret, -0.9999))) OVER (PARTITION BY wallet_id ORDER BY day ROWS UNBOUNDED PRECEDING) AS lw FROM r),
    dd AS (SELECT *, lw - greatest(0, max(lw) OVER (PARTITION BY wallet_id ORDER BY day ROWS UNBOUNDED PRECEDING)) AS under FROM w)
    SELECT wallet_id, count(*)::INTEGER AS risk_days,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} AND stddev_samp(ret) > 0 THEN avg(ret) / stddev_samp(ret) * ${ANNUALIZE} END AS sharpe,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} AND avg(least(ret, 0) * least(ret, 0)) > 0 THEN avg(ret) / sqrt(avg(least(ret, 0) * least(ret, 0))) * ${ANNUALIZE} END AS sortino,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} THEN 1 - exp(least(0, min(under))) END AS max_drawdown,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} THEN avg(ret) END AS mean_daily_return
    FROM dd GROUP BY wallet_id`;
}

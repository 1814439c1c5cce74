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

/**
 * SQL (a SELECT): per wallet and day in the window: pnl, capital, ret (null when capital < $1).
 *
 * A token's P&L on day d telescopes into a trade part and a holding part:
 *   pnl_d = cash_d + dq_d * v_{d-1} + shares_d * (v_d - v_{d-1}),   capital_d = spent_d + max(shares_{d-1}, 0) * v_{d-1}
 * where v is the token's day-end value (0 when it has none). Holdings only change on trade days, so each run of
 * days between two trades is one segment with constant shares; its days are expanded and joined to one shared
 * per-token daily value table, then summed per wallet and day in a single streaming hash aggregate. No per-wallet
 * per-token grid is sorted or windowed (the naive formulation, kept as the tests' reference, spilled > 50 GB at
 * full scale). A token counts from its first trade day to the day it resolves (or T's day): after that its value
 * is the payout, it changes nothing and is no longer capital at work.
 */
/** A slice of the wallets (wallet_id % of = k): a big venue is computed in slices so that nothing spills to disk. */
export interface WalletSlice {
  of: number;
  k: number;
}

export function dailyReturnsSql(asOf: AsOf, windowDays = RISK_WINDOW_DAYS, slice?: WalletSlice): string {
  const T = tsLiteral(asOf);
  // day indexes run 1 (the fold day) .. windowDays + 2; the key stride leaves room for the day after T's
  const stride = windowDays + 4;
  return `WITH bounds AS (SELECT date_trunc('day', ${T}) - INTERVAL ${windowDays} DAY AS d0, date_trunc('day', ${T}) AS d1),
    ${riskLegsSql(T, slice)},
    -- per token and day; history before the window is folded into the day before it
    daily AS (
      SELECT l.wallet_id, l.market_id, l.outcome_index, greatest(date_trunc('day', l.ts), b.d0 - INTERVAL 1 DAY) AS day,
        sum(dq) AS dq, sum(cash) AS cash, sum(spent) AS spent
      FROM legs l SEMI JOIN active a ON a.wallet_id = l.wallet_id, bounds b GROUP BY ALL),
    res AS (SELECT market_id, date_trunc('day', resolved_at) AS rday, payout_yes, payout_no, resolved_at FROM resolutions WHERE resolved_at <= ${T}),
    -- each trade day of a token opens a segment of constant shares that lasts until its next trade day
    seg AS (
      SELECT d.*, sum(d.dq) OVER w AS shares, lead(d.day) OVER w AS next_day,
        greatest(min(d.day) OVER (PARTITION BY d.wallet_id, d.market_id, d.outcome_index), least(b.d1, coalesce(r.rday, b.d1))) AS last_day
      FROM daily d LEFT JOIN res r USING (market_id), bounds b
      WINDOW w AS (PARTITION BY d.wallet_id, d.market_id, d.outcome_index ORDER BY d.day)),
    live AS (SELECT * FROM seg WHERE day <= last_day),
    -- day-end value of every token held, on every day of the window and the fold day before it
    tokens AS (SELECT DISTINCT market_id, outcome_index FROM live),
    days AS (SELECT unnest(generate_series(d0 - INTERVAL 1 DAY, d1, INTERVAL 1 DAY)) AS day FROM bounds),
    token_days AS (SELECT t.market_id, t.outcome_index, d.day, least(d.day + INTERVAL 1 DAY, ${T}) AS eod FROM tokens t, days d),
    valued AS (
      SELECT g.market_id, g.outcome_index, g.day,
        coalesce(CASE WHEN r.resolved_at <= g.eod THEN (CASE g.outcome_index WHEN 0 THEN r.payout_yes ELSE r.payout_no END) ELSE m.mid END, 0) AS v
      FROM token_days g
      ASOF LEFT JOIN mids m ON m.market_id = g.market_id AND m.outcome_index = g.outcome_index AND m.ts <= g.eod
      LEFT JOIN res r ON r.market_id = g.market_id),
    -- one row per token and day index (1 = the fold day), keyed by a single BIGINT: token * stride + index
    tv AS (
      SELECT (g.market_id * 2 + g.outcome_index)::BIGINT * ${stride} + date_diff('day', b.d0 - INTERVAL 1 DAY, g.day) + 1 AS tk, g.v,
        g.v - coalesce(lag(g.v) OVER (PARTITION BY g.market_id, g.outcome_index ORDER BY g.day), 0) AS dv
      FROM valued g, bounds b),
    -- days as indexes; a (wallet, day) pair packed into one BIGINT key keeps joins and aggregates narrow
    idx AS (
      SELECT l.wallet_id, l.dq, l.cash, l.spent, l.shares, (l.market_id * 2 + l.outcome_index)::BIGINT * ${stride} AS tk0,
        date_diff('day', b.d0 - INTERVAL 1 DAY, l.day) + 1 AS i,
        date_diff('day', b.d0 - INTERVAL 1 DAY, least(coalesce(l.next_day - INTERVAL 1 DAY, l.last_day), l.last_day)) + 1 AS i_end,
        date_diff('day', b.d0 - INTERVAL 1 DAY, l.last_day) + 1 AS i_last
      FROM live l, bounds b),
    trade_part AS (
      SELECT x.wallet_id::BIGINT * ${stride} + x.i AS k, sum(x.cash + x.dq * coalesce(t.v, 0)) AS pnl, sum(x.spent) AS capital
      FROM idx x LEFT JOIN tv t ON t.tk = x.tk0 + x.i - 1 GROUP BY k),
    held AS (SELECT wallet_id, shares, tk0, i_last, unnest(generate_series(i, i_end)) AS i FROM idx WHERE shares <> 0),
    hold_part AS (
      SELECT h.wallet_id::BIGINT * ${stride} + h.i AS k, sum(h.shares * t.dv) AS pnl,
        sum(CASE WHEN h.i < h.i_last THEN greatest(h.shares, 0) * t.v ELSE 0 END) AS exposure
      FROM held h JOIN tv t ON t.tk = h.tk0 + h.i GROUP BY k),
    parts AS (
      SELECT k, pnl, capital FROM trade_part
      UNION ALL SELECT k, pnl, 0 FROM hold_part
      UNION ALL SELECT k + 1, 0, exposure FROM hold_part WHERE exposure <> 0),
    per_day AS (SELECT k, sum(pnl) AS pnl, sum(capital) AS capital FROM parts GROUP BY k)
    SELECT (k // ${stride})::INTEGER AS wallet_id, b.d0 - INTERVAL 1 DAY + to_days((k % ${stride} - 1)::INTEGER) AS day, pnl, capital,
      CASE WHEN capital >= ${MIN_CAPITAL_USD} THEN pnl / capital END AS ret
    FROM per_day, bounds b WHERE k % ${stride} >= 2`;
}

/**
 * SQL CTEs \`legs\` (every token movement of every wallet as of T with its cash and USDC spent) and \`active\` (wallets
 * that moved tokens on at least MIN_RISK_DAYS distinct days of the window); needs a \`bounds\` CTE (d0, d1).
 */
export function riskLegsSql(T: string, slice?: WalletSlice): string {
  const only = (col: string) => (slice && slice.of > 1 ? ` AND ${col} % ${slice.of} = ${slice.k}` : '');
  return `legs AS (
      SELECT wallet_id, market_id, outcome_index, ts, CASE side WHEN 'BUY' THEN shares ELSE -shares END AS dq,
        CASE side WHEN 'BUY' THEN -(size_usdc + fee_usdc) ELSE size_usdc - fee_usdc END AS cash,
        CASE side WHEN 'BUY' THEN size_usdc + fee_usdc ELSE 0 END AS spent
      FROM fill_legs WHERE ts <= ${T}${only('wallet_id')}
      UNION ALL
      -- inventory: tokens move; USDC of the event is booked once, on its first leg
      SELECT l.wallet_id, l.market_id, l.outcome_index, i.ts, l.shares_delta,
        CASE WHEN row_number() OVER (PARTITION BY l.tx_hash, l.log_index ORDER BY l.market_id, l.outcome_index) = 1 THEN i.usdc_delta ELSE 0 END,
        CASE WHEN row_number() OVER (PARTITION BY l.tx_hash, l.log_index ORDER BY l.market_id, l.outcome_index) = 1 THEN greatest(-i.usdc_delta, 0) ELSE 0 END
      FROM inventory_legs l JOIN inventory_events i USING (tx_hash, log_index) WHERE i.ts <= ${T}${only('l.wallet_id')}),
    active AS (
      SELECT wallet_id FROM legs, bounds WHERE ts >= d0 GROUP BY wallet_id HAVING count(DISTINCT date_trunc('day', ts)) >= ${MIN_RISK_DAYS})`;
}

/**
 * SQL (a SELECT) of riskStats() per wallet over a relation `returns` of (wallet_id, day, ret): the compounded index,
 * its drawdown, and the statistics. Shared by the one-statement build (walletRiskSql) and the live engine's
 * a_risk_daily (core/analytics/risk.ts).
 */
export function riskStatsOverSql(returns: string): string {
  return `WITH w AS (SELECT *, sum(ln(1 + greatest(ret, -0.9999))) OVER (PARTITION BY wallet_id ORDER BY day ROWS UNBOUNDED PRECEDING) AS lw FROM ${returns}),
    dd AS (SELECT *, lw - greatest(0, max(lw) OVER (PARTITION BY wallet_id ORDER BY day ROWS UNBOUNDED PRECEDING)) AS under FROM w)
    SELECT wallet_id, count(*)::INTEGER AS risk_days,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} AND stddev_samp(ret) > 0 THEN avg(ret) / stddev_samp(ret) * ${ANNUALIZE} END AS sharpe,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} AND avg(least(ret, 0) * least(ret, 0)) > 0 THEN avg(ret) / sqrt(avg(least(ret, 0) * least(ret, 0))) * ${ANNUALIZE} END AS sortino,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} THEN 1 - exp(least(0, min(under))) END AS max_drawdown,
      CASE WHEN count(*) >= ${MIN_RISK_DAYS} THEN avg(ret) END AS mean_daily_return
    FROM dd GROUP BY wallet_id`;
}

/** SQL (a SELECT): per wallet Sharpe, Sortino, max drawdown over the window, as riskStats() defines them. */
export function walletRiskSql(asOf: AsOf, windowDays = RISK_WINDOW_DAYS, slice?: WalletSlice): string {
  return riskStatsOverSql(`(SELECT wallet_id, day, ret FROM (${dailyReturnsSql(asOf, windowDays, slice)}) WHERE ret IS NOT NULL)`);
}

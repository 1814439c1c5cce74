import { MIN_CAPITAL_USD, RISK_WINDOW_DAYS, riskLegsSql } from '../../core/risk.ts';
import { tsLiteral, type AsOf } from '../../core/query.ts';

/**
 * The naive formulation of core/risk.ts dailyReturnsSql, kept as the tests' reference: every token held is expanded
 * to one row per day, its running shares and cash windowed, valued at the day-end mid (ASOF) or payout, and the day's
 * P&L is the change of the running mark-to-market; capital = yesterday's marked holdings + today's spend.
 */
export function dailyReturnsGridSql(asOf: AsOf, windowDays = RISK_WINDOW_DAYS): string {
  const T = tsLiteral(asOf);
  return `WITH bounds AS (SELECT date_trunc('day', ${T}) - INTERVAL ${windowDays} DAY AS d0, date_trunc('day', ${T}) AS d1),
    ${riskLegsSql(T)},
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


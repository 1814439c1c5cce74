/**
 * Risk-adjusted return (methodology "Risk-adjusted return"), over the completed UTC days of a trailing window
 * (default 90 days before T's day; T's own day is still moving and is not a return yet). Daily mark-to-market P&L
 * per wallet divided by the capital at work that day; annualized Sharpe and Sortino and the max drawdown of the
 * compounded return index. Fewer than 10 return days, or fewer than 10 days with token movements in the window:
 * null (unmeasured).
 *
 * A token's P&L on day d = cash_d + dq_d * v_{d-1} + shares_d * (v_d - v_{d-1}), where v is the token's value at the
 * day's end (the payout once resolved by then, else the latest mid, else 0) and shares_d the shares after the day's
 * movements; capital_d = USDC spent buying on d + max(shares_{d-1}, 0) * v_{d-1}. A token counts from its first day
 * to the day it resolves. A day with less than $1 at work carries no return.
 *
 * Maintenance: a completed day never changes (unless data stamped in it arrives late), so its per-wallet rows are
 * stored once in a_risk_daily — by the position stream for every day of a full build, by the day close (below)
 * when a refresh passes midnight — and the statistics are recomputed from the rows of the window.
 */
import type { WalletScope } from './wallets.ts';
import { scopeSql } from './wallets.ts';
import { DAY_US } from './position-stream.ts';
import { tableDdl, type TableColumns } from '../query.ts';
import { MIN_CAPITAL_USD, MIN_RISK_DAYS, RISK_WINDOW_DAYS, riskStatsOverSql } from '../risk.ts';

export { MIN_CAPITAL_USD, MIN_RISK_DAYS, RISK_WINDOW_DAYS, riskStats, type RiskStats } from '../risk.ts';

/** Per wallet and completed day: P&L, capital at work, and whether the wallet moved tokens that day. */
export const RISK_DAILY_COLUMNS = [['wallet_id', 'INTEGER'], ['day', 'TIMESTAMP'], ['pnl', 'DOUBLE'], ['capital', 'DOUBLE'], ['moved', 'BOOLEAN']] as const satisfies TableColumns;
export const RISK_DAILY_DDL = tableDdl('a_risk_daily', RISK_DAILY_COLUMNS, RISK_DAILY_COLUMNS.map(([n]) => n));

/** Per position: shares after every movement before T's day, and its first day; what the next day close continues. */
export const RISK_POSITIONS_COLUMNS = [['wallet_id', 'INTEGER'], ['market_id', 'INTEGER'], ['outcome_index', 'UTINYINT'], ['shares', 'DOUBLE'], ['first_day', 'TIMESTAMP']] as const satisfies TableColumns;
export const RISK_POSITIONS_DDL = tableDdl('a_risk_pos', RISK_POSITIONS_COLUMNS, RISK_POSITIONS_COLUMNS.map(([n]) => n));

/** A row of a_risk_daily is kept when it holds a return or a movement (nothing else is ever read). */
export const keepRiskDay = (capital: number, moved: boolean): boolean => capital >= MIN_CAPITAL_USD || moved;

/** The window as timestamps: [d0, d1) with d1 = T's day. */
export function riskWindow(tUs: number, days = RISK_WINDOW_DAYS): { d0: number; d1: number } {
  const d1 = Math.floor(tUs / DAY_US) * DAY_US;
  return { d0: d1 - days * DAY_US, d1 };
}

const tsUs = (us: number) => `make_timestamp(${Math.round(us)}::BIGINT)`;

/** SQL (a SELECT): per wallet Sharpe, Sortino, max drawdown over the window's rows, as riskStats() defines them. */
export function riskStatsSql(tUs: number, scope: WalletScope, days = RISK_WINDOW_DAYS): string {
  const { d0, d1 } = riskWindow(tUs, days);
  return `WITH win AS (SELECT * FROM a_risk_daily WHERE day >= ${tsUs(d0)} AND day < ${tsUs(d1)} AND ${scopeSql(scope)}),
    act AS (SELECT wallet_id FROM win WHERE moved GROUP BY wallet_id HAVING count(*) >= ${MIN_RISK_DAYS}),
    r AS (SELECT wallet_id, day, pnl / capital AS ret FROM win SEMI JOIN act USING (wallet_id) WHERE capital >= ${MIN_CAPITAL_USD})
    SELECT * FROM (${riskStatsOverSql('r')})`;
}

/** Token day-end values the day close needs, written by the engine from its MidIndex: v_prev (day before), v_cur. */
export const DAY_VALUES_DDL = `CREATE OR REPLACE TEMP TABLE day_values (market_id INTEGER, outcome_index UTINYINT, v_prev DOUBLE, v_cur DOUBLE)`;

/**
 * The day close of completed day [day, day + 1): per wallet P&L and capital from every position alive that day (its
 * first day is at or before it, and its market had not resolved before it) — the held shares from a_risk_pos, the
 * day's legs from a_legs, day-end values from day_values — inserted into a_risk_daily; then a_risk_pos moves on by
 * the day's legs. Statements in order.
 */
export function dayCloseSql(dayUs: number, T: string): string[] {
  const D = tsUs(dayUs);
  const N = tsUs(dayUs + DAY_US);
  return [
    `CREATE OR REPLACE TEMP TABLE day_legs AS
      SELECT wallet_id, market_id, outcome_index, sum(q) AS dq,
        sum(CASE WHEN kind IN (1, 2) THEN (CASE WHEN q > 0 THEN -(size_usdc + fee_usdc) ELSE size_usdc - fee_usdc END) ELSE usdc END) AS cash,
        sum(CASE WHEN kind IN (1, 2) THEN (CASE WHEN q > 0 THEN size_usdc + fee_usdc ELSE 0 END) ELSE greatest(-usdc, 0) END) AS spent
      FROM a_legs WHERE ts >= ${D} AND ts < ${N} AND ts <= ${T} GROUP BY ALL`,
    `INSERT INTO a_risk_daily
      WITH res AS (SELECT market_id, date_trunc('day', resolved_at) AS rday FROM resolutions WHERE resolved_at <= ${T}),
      pos AS (
        SELECT coalesce(p.wallet_id, l.wallet_id) AS wallet_id, coalesce(p.market_id, l.market_id) AS market_id,
          coalesce(p.outcome_index, l.outcome_index) AS outcome_index, coalesce(p.shares, 0) AS s_prev, coalesce(p.first_day, ${D}) AS first_day,
          coalesce(l.dq, 0) AS dq, coalesce(l.cash, 0) AS cash, coalesce(l.spent, 0) AS spent, l.wallet_id IS NOT NULL AS moved
        FROM (SELECT * FROM a_risk_pos WHERE shares <> 0
              UNION ALL SELECT p.* FROM a_risk_pos p SEMI JOIN day_legs l USING (wallet_id, market_id, outcome_index) WHERE p.shares = 0) p
          FULL JOIN day_legs l USING (wallet_id, market_id, outcome_index)),
      alive AS (
        SELECT pos.*, coalesce(v.v_prev, 0) AS v_prev, coalesce(v.v_cur, 0) AS v_cur,
          (r.rday IS NULL OR r.rday >= ${D} OR pos.first_day >= ${D}) AS live,
          (pos.first_day < ${D} AND (r.rday IS NULL OR r.rday >= ${D})) AS exposed
        FROM pos LEFT JOIN res r USING (market_id) LEFT JOIN day_values v USING (market_id, outcome_index)),
      per_wallet AS (
        SELECT wallet_id,
          sum(CASE WHEN live THEN cash + dq * v_prev + (s_prev + dq) * (v_cur - v_prev) ELSE 0 END) AS pnl,
          sum(CASE WHEN live THEN spent ELSE 0 END) + sum(CASE WHEN exposed AND s_prev <> 0 THEN greatest(s_prev, 0) * v_prev ELSE 0 END) AS capital,
          bool_or(moved) AS moved
        FROM alive GROUP BY wallet_id)
      SELECT wallet_id, ${D}, pnl, capital, moved FROM per_wallet WHERE capital >= ${MIN_CAPITAL_USD} OR moved`,
    `INSERT INTO a_risk_pos SELECT l.wallet_id, l.market_id, l.outcome_index, 0, ${D} FROM day_legs l
      ANTI JOIN a_risk_pos p USING (wallet_id, market_id, outcome_index)`,
    `UPDATE a_risk_pos p SET shares = p.shares + l.dq FROM day_legs l
      WHERE p.wallet_id = l.wallet_id AND p.market_id = l.market_id AND p.outcome_index = l.outcome_index`,
  ];
}

/** Tokens whose day-end values a day close reads: those held (a_risk_pos) or moved that day. */
export function dayCloseTokensSql(dayUs: number): string {
  return `SELECT DISTINCT market_id, outcome_index FROM a_risk_pos WHERE shares <> 0
    UNION SELECT DISTINCT market_id, outcome_index FROM a_legs WHERE ts >= ${tsUs(dayUs)} AND ts < ${tsUs(dayUs + DAY_US)}`;
}

/** Rows older than the window are never read again. */
export function pruneRiskDailySql(tUs: number, days = RISK_WINDOW_DAYS): string {
  return `DELETE FROM a_risk_daily WHERE day < ${tsUs(riskWindow(tUs, days).d0)}`;
}

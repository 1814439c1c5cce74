/**
 * Per-wallet analytics from the positions, holds and legs of each wallet: one SELECT per table, each restricted to a
 * wallet scope (`true` in a full build; the changed wallets in a refresh), so a refreshed wallet is computed by the
 * very statement that built it. Cohort-wide columns (percentiles, the sharp cutoff, tags) are not here: cohort.ts
 * computes them over every wallet after the per-wallet rows are in place.
 *
 * Tables (all keyed by wallet_id):
 * - a_features: volume, fill count, markets, first/last fill, median fill, buys, taker share, entry timing,
 *   contrarian entries (methodology "Smart-money tags"; the position stream counts contrarian buys).
 * - a_alpha: size-weighted mean alpha at 1 h, 24 h and to resolution, in cents, with counts (partial sums per
 *   position from the stream, so a refresh re-adds only the positions it restreamed).
 * - a_pnl: realized, unrealized and total P&L, resolved / won / lost / redeemable / open position counts.
 * - a_calibration: calibration.ts's per-wallet summary over resolved, non-void bought positions (no percentile).
 * - a_style: the copy-style inputs of verdictFor (core/trader/verdict.ts): fills, taker share, median clip, two-sided and
 *   thin-market shares, closed holds and their median length.
 * - a_category: calibration per (wallet, category) and the wallet's best category (wallet-style.ts's rule).
 */
import { CALIBRATION_AGGREGATES_SQL, MIN_RESOLVED_MARKETS, SKILL_DEVIATE_SQL, calibrationInputsSql } from '../calibration.ts';
import { roundedSql, tsLiteral, type AsOf } from '../query.ts';
import { COPY_RULES } from '../copy-rules.ts';
import { BEST_CATEGORY_MIN_MARKETS, bestCategorySql } from '../wallet-style.ts';

/**
 * A wallet scope: every wallet, or the wallets listed in a table with a wallet_id column. A scope may name copies of
 * a_positions, a_legs' fill legs and a_holds already narrowed to its wallets (a refresh materializes them once, so
 * the statements below do not each scan the whole tables).
 */
export type WalletScope = (
  | { all: true }
  /** the wallets in [lo, hi): a full build goes range by range (the tables are in wallet order: each range's scans
   * read its row groups only, and the medians' per-wallet states, which DuckDB's memory limit does not cover, hold
   * one range's values) */
  | { range: readonly [number, number] }
  | { table: string; positions?: string; fillLegs?: string; holds?: string }
) & {
  /** a table of medianFillSql's rows for the scope, computed once (a_features and a_style both read it) */
  medianFill?: string;
};

export const scopeSql = (s: WalletScope, col = 'wallet_id'): string =>
  'all' in s ? 'true' : 'range' in s ? `(${col} >= ${s.range[0]} AND ${col} < ${s.range[1]})` : `${col} IN (SELECT wallet_id FROM ${s.table})`;

/**
 * `table` (a per-wallet table) narrowed to a table scope's wallets before it is joined (a subquery), else `table`: a
 * join on wallet_id with a refresh's few wallets otherwise builds its hash table over all 2.8M rows at full scale.
 */
export const narrowedTo = (table: string, s: WalletScope): string => ('table' in s ? `(SELECT * FROM ${table} WHERE ${scopeSql(s)})` : table);

const positionsOf = (s: WalletScope) => ('table' in s ? (s.positions ?? 'a_positions') : 'a_positions');
const fillLegsOf = (s: WalletScope) => ('table' in s ? (s.fillLegs ?? 'a_legs') : 'a_legs');
const holdsOf = (s: WalletScope) => ('table' in s ? (s.holds ?? 'a_holds') : 'a_holds');
/** The a_holds columns the statements below read: a scope's copy of a_holds needs no others (a_holds has ten). */
export const HOLDS_READ_COLUMNS = 'wallet_id, end_ts, hold_hours';

/**
 * Median fill notional per wallet, over fill legs (the one per-wallet figure that needs every leg): a sort of every
 * fill leg of the scope, so a build or refresh computes it once into a table both readers name (scope.medianFill).
 */
export function medianFillSql(scope: WalletScope, T: string): string {
  if (scope.medianFill) return `SELECT * FROM ${scope.medianFill}`;
  return `SELECT wallet_id, median(size_usdc) AS median_fill_usdc FROM ${visibleFillSizes(scopeSql(scope), T, fillLegsOf(scope))} GROUP BY wallet_id`;
}

/**
 * The fill sizes (wallet_id, size_usdc) of the fill legs in `legs` (a_legs or a copy of some wallets' fill legs) stamped
 * at or before T whose wallet meets `where`: what a median fill is taken over.
 */
export function visibleFillSizes(where: string, T: string, legs = 'a_legs'): string {
  return `(SELECT wallet_id, size_usdc FROM ${legs} WHERE kind IN (1, 2) AND ts <= ${T} AND ${where})`;
}

export function featuresSql(asOf: AsOf, scope: WalletScope): string {
  const T = tsLiteral(asOf);
  return `WITH p AS (SELECT * FROM ${positionsOf(scope)} WHERE trades > 0 AND ${scopeSql(scope)}),
    f AS (
      SELECT wallet_id, ${roundedSql('sum(volume_usdc)', 6)} AS lifetime_volume_usdc, sum(trades)::INTEGER AS trade_count,
        count(DISTINCT market_id)::INTEGER AS markets_traded, min(first_fill_ts) AS first_trade_at, max(last_fill_ts) AS last_trade_at,
        sum(n_buys)::INTEGER AS n_buys, sum(n_taker) / sum(trades) AS taker_share,
        sum(n_contra) / nullif(sum(n_buys), 0) AS contrarian_buy_share
      FROM p GROUP BY wallet_id),
    med AS (${medianFillSql(scope, T)}),
    entries AS (SELECT wallet_id, market_id, min(first_buy_ts) AS first_buy FROM p WHERE first_buy_ts IS NOT NULL GROUP BY ALL),
    ages AS (
      SELECT e.wallet_id, count(*)::INTEGER AS n_entry_positions,
        median(greatest(0, epoch(e.first_buy) - epoch(m.trading_opens_at)) / nullif(epoch(m.end_date) - epoch(m.trading_opens_at), 0)) AS median_entry_age
      FROM entries e JOIN markets m USING (market_id) GROUP BY 1)
    SELECT f.wallet_id, f.lifetime_volume_usdc, f.trade_count, f.markets_traded, f.first_trade_at, f.last_trade_at,
      md.median_fill_usdc, f.n_buys, f.taker_share::DOUBLE AS taker_share,
      coalesce(a.n_entry_positions, 0) AS n_entry_positions, a.median_entry_age, f.contrarian_buy_share::DOUBLE AS contrarian_buy_share
    FROM f LEFT JOIN med md USING (wallet_id) LEFT JOIN ages a USING (wallet_id)`;
}

export function alphaSql(scope: WalletScope): string {
  return `SELECT wallet_id,
      round(100 * sum(a1_num) / nullif(sum(a1_den), 0), 9) AS alpha_1h_cents, sum(a1_n)::BIGINT AS n_alpha_1h,
      round(100 * sum(a24_num) / nullif(sum(a24_den), 0), 9) AS alpha_24h_cents, sum(a24_n)::BIGINT AS n_alpha_24h,
      round(100 * sum(ares_num) / nullif(sum(ares_den), 0), 9) AS alpha_res_cents, sum(ares_n)::BIGINT AS n_alpha_res
    FROM ${positionsOf(scope)} WHERE trades > 0 AND ${scopeSql(scope)} GROUP BY wallet_id`;
}

/** Money sums are rounded to micro-USDC (the venue's unit, roundedSql): another summation order must not break a tie. */
export function pnlSql(scope: WalletScope): string {
  return `SELECT wallet_id, ${roundedSql('sum(realized_pnl)', 6)} AS realized_pnl, ${roundedSql('sum(unrealized_pnl)', 6)} AS unrealized_pnl, ${roundedSql('sum(total_pnl)', 6)} AS total_pnl,
      count(*) FILTER (WHERE resolved)::INTEGER AS n_resolved_positions,
      count(*) FILTER (WHERE pnl_label = 'WON')::INTEGER AS won, count(*) FILTER (WHERE pnl_label = 'LOST')::INTEGER AS lost,
      count(*) FILTER (WHERE status = 'REDEEMABLE')::INTEGER AS redeemable_positions,
      count(*) FILTER (WHERE NOT resolved AND shares > 0)::INTEGER AS open_positions
    FROM ${positionsOf(scope)} WHERE ${scopeSql(scope)} GROUP BY wallet_id`;
}

/**
 * Per-wallet calibration over resolved, non-void positions the wallet bought (calibration.ts defines the figures);
 * the percentile among ranked wallets is cohort-wide and added by cohort.ts.
 */
export function calibrationSql(scope: WalletScope): string {
  return `WITH c AS (
      SELECT wallet_id, count(*) AS n_positions, count(DISTINCT market_id) AS n_markets,
        ${CALIBRATION_AGGREGATES_SQL},
        sum(p * (1 - p)) AS calibration_variance
      FROM (${calibrationInputsSql(`(SELECT * FROM ${positionsOf(scope)} WHERE ${scopeSql(scope)})`)}) GROUP BY wallet_id)
    SELECT *, ${SKILL_DEVIATE_SQL} AS skill_deviate,
      n_markets >= ${MIN_RESOLVED_MARKETS} AS calibration_ranked
    FROM c`;
}

export function styleSql(asOf: AsOf, scope: WalletScope): string {
  const T = tsLiteral(asOf);
  const thin = COPY_RULES.thinLiquidityUsd;
  return `WITH p AS (SELECT * FROM ${positionsOf(scope)} WHERE trades > 0 AND ${scopeSql(scope)}),
    med AS (${medianFillSql(scope, T)}),
    fills AS (
      SELECT p.wallet_id, sum(p.trades)::INTEGER AS n_fills, sum(p.n_taker) / sum(p.trades) AS taker_share,
        sum(CASE WHEN m.liquidity_usdc < ${thin} THEN p.trades ELSE 0 END) / nullif(sum(p.trades) FILTER (WHERE m.liquidity_usdc IS NOT NULL), 0) AS thin_fill_share
      FROM p JOIN markets m USING (market_id) GROUP BY p.wallet_id),
    splits AS (SELECT DISTINCT wallet_id, market_id FROM inventory_events WHERE ts <= ${T} AND kind = 'SPLIT' AND ${scopeSql(scope)}),
    markets AS (SELECT wallet_id, market_id, count(*) FILTER (WHERE n_buys > 0) AS sides_bought FROM p GROUP BY ALL),
    two_sided AS (
      SELECT mk.wallet_id, avg(CASE WHEN mk.sides_bought = 2 OR s.market_id IS NOT NULL THEN 1.0 ELSE 0.0 END) AS two_sided_share
      FROM markets mk LEFT JOIN splits s USING (wallet_id, market_id) GROUP BY mk.wallet_id),
    holds AS (
      SELECT wallet_id, count(*)::INTEGER AS n_closed_holds, quantile_cont(hold_hours, 0.5) AS median_hold_hours
      FROM ${holdsOf(scope)} WHERE end_ts IS NOT NULL AND ${scopeSql(scope)} GROUP BY wallet_id)
    SELECT f.wallet_id, f.n_fills, f.taker_share::DOUBLE AS taker_share, md.median_fill_usdc::DOUBLE AS median_clip_usd,
      t.two_sided_share::DOUBLE AS two_sided_share, f.thin_fill_share::DOUBLE AS thin_fill_share,
      coalesce(h.n_closed_holds, 0)::INTEGER AS n_closed_holds, h.median_hold_hours::DOUBLE AS median_hold_hours
    FROM fills f LEFT JOIN med md USING (wallet_id) LEFT JOIN two_sided t USING (wallet_id) LEFT JOIN holds h USING (wallet_id)`;
}

/**
 * Calibration per (wallet, category) and each wallet's best category: the most negative z among categories with
 * at least BEST_CATEGORY_MIN_MARKETS resolved markets (ties: more markets, then the name).
 */
export function categorySql(asOf: AsOf, scope: WalletScope): string {
  const T = tsLiteral(asOf);
  return `WITH cat_inputs AS (
      SELECT wallet_id, category, market_id, p, o
      FROM (${calibrationInputsSql(`(SELECT * FROM ${positionsOf(scope)} WHERE ${scopeSql(scope)})`)}) WHERE category IS NOT NULL AND resolved_at <= ${T}),
    cat_cal AS (
      SELECT wallet_id, category, count(*)::INTEGER AS n_positions, count(DISTINCT market_id)::INTEGER AS n_markets,
        ${CALIBRATION_AGGREGATES_SQL}
      FROM cat_inputs GROUP BY wallet_id, category),
    cat_rows AS (
      SELECT *, ${SKILL_DEVIATE_SQL} AS skill_deviate,
        (n_markets >= ${BEST_CATEGORY_MIN_MARKETS} AND calibration_excess_z IS NOT NULL) AS eligible
      FROM cat_cal),
    ${bestCategorySql('cat_rows')}`;
}

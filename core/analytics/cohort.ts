/**
 * The cohort step after the per-wallet tables.
 * - a_wallet_metrics: one row per wallet with a fill (readers' one-stop table): the per-wallet figures joined, and the
 *   smart-money tags. A row depends on the wallet's own rows and on the sharp cutoff (Benjamini-Hochberg over every
 *   ranked wallet's skill deviate, tags.ts) only, so a refresh rewrites the rows of the wallets it recomputed and of
 *   those whose sharp tag the moved cutoff turns on or off (walletMetricsSql with a scope).
 * - a_wallet_pctiles: every percentile among wallets. These move whenever any wallet's figures move, so the narrow
 *   table is rewritten whole by every build and refresh (a few window sorts over five columns, instead of the whole
 *   wide table).
 */
import { MIN_RESOLVED_MARKETS } from '../calibration.ts';
import { tagsSql } from '../tags.ts';
import { narrowedTo, scopeSql, type WalletScope } from './wallets.ts';

/** SQL (a SELECT) of a_wallet_metrics rows from a_features, a_pnl, a_calibration, a_alpha and a_risk, for `scope`. */
export function walletMetricsSql(sharpMinDeviate: number, scope: WalletScope = { all: true }): string {
  return `WITH m AS (
      SELECT f.*, p.realized_pnl, p.unrealized_pnl, p.total_pnl, p.n_resolved_positions, p.won, p.lost,
        p.redeemable_positions, p.open_positions,
        CASE WHEN p.won + p.lost > 0 THEN 100.0 * p.won / (p.won + p.lost) END AS win_rate_pct,
        c.brier, c.calibration_excess, c.calibration_excess_z, c.calibration_skew, c.skill_deviate, coalesce(c.n_markets, 0) AS n_resolved_markets,
        coalesce(c.calibration_ranked, false) AS calibration_ranked,
        a.alpha_1h_cents, coalesce(a.n_alpha_1h, 0) AS n_alpha_1h, a.alpha_24h_cents, coalesce(a.n_alpha_24h, 0) AS n_alpha_24h,
        a.alpha_res_cents, coalesce(a.n_alpha_res, 0) AS n_alpha_res,
        coalesce(k.risk_days, 0) AS risk_days, k.sharpe, k.sortino, k.max_drawdown
      FROM a_features f LEFT JOIN ${narrowedTo('a_pnl', scope)} p USING (wallet_id) LEFT JOIN ${narrowedTo('a_calibration', scope)} c USING (wallet_id)
        LEFT JOIN ${narrowedTo('a_alpha', scope)} a USING (wallet_id) LEFT JOIN ${narrowedTo('a_risk', scope)} k USING (wallet_id)
      WHERE ${scopeSql(scope, 'f.wallet_id')})
    SELECT *, ${tagsSql(sharpMinDeviate)} AS smart_money_tags FROM m`;
}

/** The percentile columns of a_wallet_pctiles, each among every wallet of a_wallet_metrics. */
export const WALLET_PCTILE_COLUMNS = ['calibration_excess_z_pctile', 'total_pnl_pctile', 'realized_pnl_pctile', 'lifetime_volume_usdc_pctile', 'win_rate_pct_pctile'] as const;

/**
 * SQL (a SELECT) of a_wallet_pctiles over a_wallet_metrics, in wallet order: the calibration z percentile among ranked
 * wallets (100 = the most negative z), P&L and volume among all wallets, win rate among wallets with one.
 */
export const WALLET_PCTILES_SQL = `SELECT wallet_id,
      CASE WHEN n_resolved_markets >= ${MIN_RESOLVED_MARKETS} AND calibration_excess_z IS NOT NULL
        THEN 100 * (1 - percent_rank() OVER (PARTITION BY (n_resolved_markets >= ${MIN_RESOLVED_MARKETS} AND calibration_excess_z IS NOT NULL)
                                             ORDER BY calibration_excess_z ASC)) END AS calibration_excess_z_pctile,
      100 * percent_rank() OVER (ORDER BY total_pnl) AS total_pnl_pctile,
      100 * percent_rank() OVER (ORDER BY realized_pnl) AS realized_pnl_pctile,
      100 * percent_rank() OVER (ORDER BY lifetime_volume_usdc) AS lifetime_volume_usdc_pctile,
      CASE WHEN win_rate_pct IS NOT NULL THEN 100 * percent_rank() OVER (PARTITION BY win_rate_pct IS NOT NULL ORDER BY win_rate_pct) END AS win_rate_pct_pctile
    FROM a_wallet_metrics ORDER BY wallet_id`;

/** (Re)write the cohort tables whole: a_wallet_metrics (indexed on wallet_id: a refresh replaces rows) and the percentiles. */
export function writeCohortSql(sharpMinDeviate: number): string[] {
  return [
    `CREATE OR REPLACE TABLE a_wallet_metrics AS SELECT * FROM (${walletMetricsSql(sharpMinDeviate)}) ORDER BY wallet_id`,
    `CREATE INDEX a_wallet_metrics_wallet ON a_wallet_metrics (wallet_id)`,
    `CREATE OR REPLACE TABLE a_wallet_pctiles AS ${WALLET_PCTILES_SQL}`,
  ];
}

/**
 * The rows of the wallets listed in `table` again (a refresh); the P&L sums of those listed in `pnlMoved`, whose only
 * change is those sums (pnlSumsUpdateSql); then the percentiles whole.
 */
export function refreshCohortSql(sharpMinDeviate: number, table: string, pnlMoved?: string): string[] {
  return [
    `DELETE FROM a_wallet_metrics WHERE wallet_id IN (SELECT wallet_id FROM ${table})`,
    `INSERT INTO a_wallet_metrics SELECT * FROM (${walletMetricsSql(sharpMinDeviate, { table })})`,
    ...(pnlMoved ? [pnlSumsUpdateSql('a_wallet_metrics', pnlMoved)] : []),
    `CREATE OR REPLACE TABLE a_wallet_pctiles AS ${WALLET_PCTILES_SQL}`,
  ];
}

/**
 * SQL updating the P&L sums that marks move (unrealized and total, from a_pnl) in `target` (a_wallet_metrics or the
 * rank base, which hold them as walletMetricsSql joins them) for the wallets listed in `wallets`: those whose only
 * change is their marks, and whose every other column is therefore what it was. Two columns updated, not ~50 written
 * again: the hour's mids move the marks of 1.86M wallets at full scale. A row also rewritten whole is set to what it
 * already holds.
 */
export function pnlSumsUpdateSql(target: string, wallets: string): string {
  return `UPDATE ${target} t SET unrealized_pnl = p.unrealized_pnl, total_pnl = p.total_pnl
    FROM a_pnl p WHERE t.wallet_id = p.wallet_id AND p.wallet_id IN (SELECT wallet_id FROM ${wallets})`;
}

/** The ranked wallets' skill deviates, whose Benjamini-Hochberg cut gives the sharp tag's threshold. */
export const RANKED_DEVIATES_SQL = `SELECT skill_deviate AS w FROM a_calibration WHERE calibration_ranked AND skill_deviate IS NOT NULL`;

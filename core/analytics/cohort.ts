/**
 * The cohort-wide step after the per-wallet tables: the sharp cutoff (Benjamini-Hochberg over every ranked wallet's
 * skill deviate, tags.ts), the smart-money tags, and every percentile among wallets — all of which move whenever
 * any wallet's figures move, so they are recomputed over the whole cohort on every build and refresh. The result is
 * a_wallet_metrics, one row per wallet with a fill (readers' one-stop table).
 */
import { MIN_RESOLVED_MARKETS } from '../calibration.ts';
import { tagsSql } from '../tags.ts';

/** SQL (a SELECT) of a_wallet_metrics from a_features, a_pnl, a_calibration, a_alpha and a_risk. */
export function walletMetricsSql(sharpMinDeviate: number): string {
  return `WITH m AS (
      SELECT f.*, p.realized_pnl, p.unrealized_pnl, p.total_pnl, p.n_resolved_positions, p.won, p.lost,
        p.redeemable_positions, p.open_positions,
        CASE WHEN p.won + p.lost > 0 THEN 100.0 * p.won / (p.won + p.lost) END AS win_rate_pct,
        c.brier, c.calibration_excess, c.calibration_excess_z, c.calibration_skew, c.skill_deviate, coalesce(c.n_markets, 0) AS n_resolved_markets,
        coalesce(c.calibration_ranked, false) AS calibration_ranked,
        a.alpha_1h_cents, coalesce(a.n_alpha_1h, 0) AS n_alpha_1h, a.alpha_24h_cents, coalesce(a.n_alpha_24h, 0) AS n_alpha_24h,
        a.alpha_res_cents, coalesce(a.n_alpha_res, 0) AS n_alpha_res,
        coalesce(k.risk_days, 0) AS risk_days, k.sharpe, k.sortino, k.max_drawdown
      FROM a_features f LEFT JOIN a_pnl p USING (wallet_id) LEFT JOIN a_calibration c USING (wallet_id) LEFT JOIN a_alpha a USING (wallet_id)
        LEFT JOIN a_risk k USING (wallet_id))
    SELECT *,
      CASE WHEN n_resolved_markets >= ${MIN_RESOLVED_MARKETS} AND calibration_excess_z IS NOT NULL
        THEN 100 * (1 - percent_rank() OVER (PARTITION BY (n_resolved_markets >= ${MIN_RESOLVED_MARKETS} AND calibration_excess_z IS NOT NULL)
                                             ORDER BY calibration_excess_z ASC)) END AS calibration_excess_z_pctile,
      ${tagsSql(sharpMinDeviate)} AS smart_money_tags,
      100 * percent_rank() OVER (ORDER BY total_pnl) AS total_pnl_pctile,
      100 * percent_rank() OVER (ORDER BY realized_pnl) AS realized_pnl_pctile,
      100 * percent_rank() OVER (ORDER BY lifetime_volume_usdc) AS lifetime_volume_usdc_pctile,
      CASE WHEN win_rate_pct IS NOT NULL THEN 100 * percent_rank() OVER (PARTITION BY win_rate_pct IS NOT NULL ORDER BY win_rate_pct) END AS win_rate_pct_pctile
    FROM m`;
}

/** The ranked wallets' skill deviates, whose Benjamini-Hochberg cut gives the sharp tag's threshold. */
export const RANKED_DEVIATES_SQL = `SELECT skill_deviate AS w FROM a_calibration WHERE calibration_ranked AND skill_deviate IS NOT NULL`;

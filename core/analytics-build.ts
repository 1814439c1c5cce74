/**
 * The analytics build: materializes per-position and per-wallet metrics for the whole venue as of T, in DuckDB
 * tables prefixed a_ (a_positions, a_calibration, a_alpha, a_features, a_wallet_metrics, a_meta). Each step is one
 * SQL statement over the venue tables; only rows stamped <= T are read, so a build "as of T" is what the venue
 * looked like then (snapshots rely on it).
 */
import { calibrationInputsSql, walletCalibrationSql } from './calibration.ts';
import { walletAlphaSql } from './alpha.ts';
import { walletRiskSql } from './risk.ts';
import { positionsSql } from './positions.ts';
import { runRankingBuild } from './rankings-build.ts';
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';
import { TAG_RULES, sharpCutoff, tagsSql } from './tags.ts';

export interface BuildStep {
  name: string;
  sql: string;
  /** further statements of the same step (e.g. the other wallet slices of a sliced step) */
  more?: string[];
}

export interface BuildOptions {
  /** compute the risk step in this many wallet slices (1 = one statement); big venues use more to avoid spilling */
  riskSlices?: number;
  /** run the ranking steps (core/rankings-build.ts) after the wallet metrics */
  rankings?: boolean;
}

/** Wallet behaviour features: activity, clip sizes, entry timing, contrarian entries. */
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

export function walletMetricsSql(sharpMinDeviate: number): string {
  return `WITH pos AS (
      SELECT wallet_id, sum(realized_pnl) AS realized_pnl, sum(unrealized_pnl) AS unrealized_pnl, sum(total_pnl) AS total_pnl,
        count(*) FILTER (WHERE resolved)::INTEGER AS n_resolved_positions,
        count(*) FILTER (WHERE pnl_label = 'WON')::INTEGER AS won, count(*) FILTER (WHERE pnl_label = 'LOST')::INTEGER AS lost,
        count(*) FILTER (WHERE status = 'REDEEMABLE')::INTEGER AS redeemable_positions,
        count(*) FILTER (WHERE NOT resolved AND shares > 0)::INTEGER AS open_positions
      FROM a_positions GROUP BY 1),
    m AS (
      SELECT f.*, p.realized_pnl, p.unrealized_pnl, p.total_pnl, p.n_resolved_positions, p.won, p.lost,
        p.redeemable_positions, p.open_positions,
        CASE WHEN p.won + p.lost > 0 THEN 100.0 * p.won / (p.won + p.lost) END AS win_rate_pct,
        c.brier, c.calibration_excess, c.calibration_excess_z, c.calibration_skew, c.skill_deviate, coalesce(c.n_markets, 0) AS n_resolved_markets,
        coalesce(c.calibration_ranked, false) AS calibration_ranked, c.calibration_excess_z_pctile,
        a.alpha_1h_cents, a.n_alpha_1h, a.alpha_24h_cents, a.n_alpha_24h, a.alpha_res_cents, a.n_alpha_res,
        coalesce(k.risk_days, 0) AS risk_days, k.sharpe, k.sortino, k.max_drawdown
      FROM a_features f LEFT JOIN pos p USING (wallet_id) LEFT JOIN a_calibration c USING (wallet_id) LEFT JOIN a_alpha a USING (wallet_id)
        LEFT JOIN a_risk k USING (wallet_id))
    SELECT *, ${tagsSql(sharpMinDeviate)} AS smart_money_tags,
      100 * percent_rank() OVER (ORDER BY total_pnl) AS total_pnl_pctile,
      100 * percent_rank() OVER (ORDER BY realized_pnl) AS realized_pnl_pctile,
      100 * percent_rank() OVER (ORDER BY lifetime_volume_usdc) AS lifetime_volume_usdc_pctile,
      CASE WHEN win_rate_pct IS NOT NULL THEN 100 * percent_rank() OVER (PARTITION BY win_rate_pct IS NOT NULL ORDER BY win_rate_pct) END AS win_rate_pct_pctile
    FROM m`;
}

/** Steps before the cohort-wide sharp cutoff is known, then the wallet metrics that use it. */
export function analyticsBuildSteps(asOf: AsOf, opts: BuildOptions = {}): BuildStep[] {
  const slices = Math.max(1, Math.floor(opts.riskSlices ?? 1));
  const risk = (k: number) => walletRiskSql(asOf, undefined, { of: slices, k });
  return [
    { name: 'positions', sql: `CREATE OR REPLACE TABLE a_positions AS SELECT * FROM (${positionsSql(asOf)}) ORDER BY wallet_id, market_id, outcome_index` },
    { name: 'calibration', sql: `CREATE OR REPLACE TABLE a_calibration AS ${walletCalibrationSql(`(${calibrationInputsSql('a_positions')})`)}` },
    { name: 'alpha', sql: `CREATE OR REPLACE TABLE a_alpha AS ${walletAlphaSql(asOf)}` },
    { name: 'features', sql: `CREATE OR REPLACE TABLE a_features AS ${walletFeaturesSql(asOf)}` },
    {
      name: 'risk',
      sql: `CREATE OR REPLACE TABLE a_risk AS ${risk(0)}`,
      more: Array.from({ length: slices - 1 }, (_, i) => `INSERT INTO a_risk ${risk(i + 1)}`),
    },
  ];
}

export function walletMetricsStep(sharpMinDeviate: number): BuildStep {
  return { name: 'wallet_metrics', sql: `CREATE OR REPLACE TABLE a_wallet_metrics AS SELECT * FROM (${walletMetricsSql(sharpMinDeviate)}) ORDER BY wallet_id` };
}

export interface BuildReport {
  as_of: string;
  seconds: Record<string, number>;
  total_seconds: number;
  wallets: number;
  positions: number;
}

/** Steps of the ranking build (core/rankings-build.ts), counted for progress. */
const RANKING_STEPS = 6;

export async function runAnalyticsBuild(
  db: QueryRunner,
  asOf: AsOf,
  onStep: (name: string, i: number, n: number) => void = () => {},
  opts: BuildOptions = {},
): Promise<BuildReport> {
  const steps = analyticsBuildSteps(asOf, opts);
  const rankings = opts.rankings ?? true;
  const n = steps.length + 1 + (rankings ? RANKING_STEPS : 0);
  const seconds: Record<string, number> = {};
  const t0 = performance.now();
  const timed = async (step: BuildStep, i: number) => {
    onStep(step.name, i, n);
    const t = performance.now();
    await db.run(step.sql);
    for (const sql of step.more ?? []) await db.run(sql);
    seconds[step.name] = Number(((performance.now() - t) / 1000).toFixed(2));
  };
  for (const [i, step] of steps.entries()) await timed(step, i);
  const deviates = await db.all<{ w: number }>(`SELECT skill_deviate AS w FROM a_calibration WHERE calibration_ranked AND skill_deviate IS NOT NULL`);
  const sharpMinDeviate = sharpCutoff(deviates.map((d) => d.w));
  await timed(walletMetricsStep(sharpMinDeviate), steps.length);
  if (rankings) {
    let i = steps.length + 1;
    Object.assign(seconds, await runRankingBuild(db, asOf, (name) => onStep(name, i++, n)));
  }
  onStep('done', n, n);
  const total = Number(((performance.now() - t0) / 1000).toFixed(2));
  const cutoff = Number.isFinite(sharpMinDeviate) ? String(sharpMinDeviate) : 'NULL';
  await db.run(`CREATE OR REPLACE TABLE a_meta AS SELECT ${tsLiteral(asOf)} AS as_of, now() AS built_at, ${total}::DOUBLE AS build_seconds,
    ${cutoff}::DOUBLE AS sharp_min_deviate, ${deviates.length}::INTEGER AS ranked_wallets`);
  const [counts] = await db.all<{ wallets: number; positions: number }>(`SELECT (SELECT count(*) FROM a_wallet_metrics) AS wallets, (SELECT count(*) FROM a_positions) AS positions`);
  return { as_of: asOf.toISOString(), seconds, total_seconds: total, wallets: counts!.wallets, positions: counts!.positions };
}

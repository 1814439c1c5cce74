/**
 * Calibration: forecasts implied by entries (methodology "Calibration"). For each resolved, non-void position on
 * an outcome token that the wallet bought: p = share-weighted average price paid on its buys, o = 1 if that token
 * won. Raw Brier = mean (p - o)^2 (reported, never ranked on); calibration excess = mean (p - o) (negative = better
 * than the price implied); z = sum(p - o) / sqrt(sum p(1 - p)), the excess in standard errors under the null that
 * outcomes follow entry prices. Fewer than 30 resolved markets: unranked (score shown, no percentile).
 */
import { z } from 'zod';
import { roundedSql } from './query.ts';

export const MIN_RESOLVED_MARKETS = 30;
export const CALIBRATION_BINS = 10;

/** scope: all time, a trailing window of resolutions (as of T), or one market category. */
export const CalibrationScope = z
  .string()
  .trim()
  .toLowerCase()
  .default('all')
  .pipe(
    z.union([
      z.enum(['all', '30d', '90d', '365d']),
      z.string().regex(/^category:[a-z][a-z0-9_]{0,39}$/, 'scope must be all, 30d, 90d, 365d or category:<name>'),
    ]),
  );
export type CalibrationScope = z.infer<typeof CalibrationScope>;

export const TRAILING_DAYS: Record<string, number> = { '30d': 30, '90d': 90, '365d': 365 };

/** SQL predicate over a positions relation `p` joined to markets `m` (and resolutions `r`) for a scope. */
export function scopePredicate(scope: CalibrationScope, asOfLiteral: string): string {
  if (scope === 'all') return 'true';
  const days = TRAILING_DAYS[scope];
  if (days) return `r.resolved_at > ${asOfLiteral} - INTERVAL ${days} DAY`;
  const category = scope.slice('category:'.length).replace(/[^a-z0-9_]/g, '');
  return `m.category = '${category}'`;
}

export interface CalibrationInput {
  /** entry price p in (0,1) */
  p: number;
  /** 1 if the bought token won */
  o: 0 | 1;
  market_id: number;
}

export interface CalibrationBin {
  bin_idx: number;
  bin_label: string;
  predicted_mean: number | null;
  observed_rate: number | null;
  n: number;
}

export interface CalibrationSummary {
  /** skewness of sum(o - p) under the null: sum p(1-p)(1-2p) / (sum p(1-p))^1.5 (longshot-heavy books are right-skewed) */
  calibration_skew: number | null;
  n_positions: number;
  n_markets: number;
  brier: number | null;
  calibration_excess: number | null;
  calibration_excess_z: number | null;
  ranked: boolean;
  bins: CalibrationBin[];
}

/** Bin of p: [0,0.1) ... [0.9,1.0]. The 1e-9 nudge keeps averages like 0.7 computed as 0.6999999999999998 in bin 7. */
export function binIndex(p: number): number {
  return Math.min(CALIBRATION_BINS - 1, Math.max(0, Math.floor(p * CALIBRATION_BINS + 1e-9)));
}

export function binLabel(i: number): string {
  return `${i * 10}-${(i + 1) * 10}%`;
}

/** Reference computation over rows (used for single wallets and as the tests' oracle for the SQL). */
export function calibrationSummary(rows: readonly CalibrationInput[]): CalibrationSummary {
  const bins = Array.from({ length: CALIBRATION_BINS }, (_, i) => ({ i, n: 0, p: 0, o: 0 }));
  let sumSq = 0;
  let sumDiff = 0;
  let sumVar = 0;
  let sumThird = 0;
  const markets = new Set<number>();
  for (const r of rows) {
    const b = bins[binIndex(r.p)]!;
    b.n++;
    b.p += r.p;
    b.o += r.o;
    sumSq += (r.p - r.o) ** 2;
    sumDiff += r.p - r.o;
    sumVar += r.p * (1 - r.p);
    sumThird += r.p * (1 - r.p) * (1 - 2 * r.p);
    markets.add(r.market_id);
  }
  const n = rows.length;
  return {
    n_positions: n,
    n_markets: markets.size,
    brier: n ? sumSq / n : null,
    calibration_excess: n ? sumDiff / n : null,
    calibration_excess_z: n && sumVar > 0 ? sumDiff / Math.sqrt(sumVar) : null,
    calibration_skew: n && sumVar > 0 ? sumThird / Math.pow(sumVar, 1.5) : null,
    ranked: markets.size >= MIN_RESOLVED_MARKETS,
    bins: bins.map((b) => ({
      bin_idx: b.i,
      bin_label: binLabel(b.i),
      predicted_mean: b.n ? b.p / b.n : null,
      observed_rate: b.n ? b.o / b.n : null,
      n: b.n,
    })),
  };
}

/** SQL: the calibration inputs (wallet_id, market_id, p, o, category, resolved_at) from a positions relation. */
export function calibrationInputsSql(positions: string): string {
  return `SELECT p.wallet_id, p.market_id, p.outcome_index, p.entry_price AS p,
      (p.outcome_index = p.winner_index)::INTEGER AS o, m.category, r.resolved_at
    FROM ${positions} p JOIN markets m USING (market_id) JOIN resolutions r USING (market_id)
    WHERE p.resolved AND NOT p.is_void AND p.bought_shares > 0 AND p.entry_price IS NOT NULL`;
}

/**
 * Skew-corrected evidence that a wallet beat the price: s = -z is the excess in standard errors (positive = better
 * than the price); under the null it is not normal for a book of longshots (rare, large wins), so it is mapped to a
 * normal deviate with the Cornish-Fisher correction w = s - skew (s^2 - 1) / 6. One-sided p-value = 1 - Phi(w).
 */
export function skillDeviate(z: number | null, skew: number | null): number | null {
  if (z === null) return null;
  const s = -z;
  return s - ((skew ?? 0) * (s * s - 1)) / 6;
}

/**
 * SQL aggregate columns of a calibration summary over calibration inputs (p, o), for the caller's GROUP BY: brier,
 * calibration_excess, calibration_excess_z, calibration_skew (as calibrationSummary defines them). Rounded to 1e-12
 * (roundedSql): sums over the same positions in another row order (a refresh vs a rebuild) differ in the last bits,
 * and equal figures must stay equal for the percentiles' and rankings' ties.
 */
export const CALIBRATION_AGGREGATES_SQL = `${roundedSql('avg((p - o) * (p - o))', 12)} AS brier, ${roundedSql('avg(p - o)', 12)} AS calibration_excess,
        CASE WHEN sum(p * (1 - p)) > 0 THEN ${roundedSql('sum(p - o) / sqrt(sum(p * (1 - p)))', 12)} END AS calibration_excess_z,
        CASE WHEN sum(p * (1 - p)) > 0 THEN ${roundedSql('sum(p * (1 - p) * (1 - 2 * p)) / pow(sum(p * (1 - p)), 1.5)', 12)} END AS calibration_skew`;

/** skillDeviate() in SQL over the columns calibration_excess_z and calibration_skew. */
export const SKILL_DEVIATE_SQL = `-calibration_excess_z - coalesce(calibration_skew, 0) * (calibration_excess_z * calibration_excess_z - 1) / 6`;

/**
 * SQL: per-wallet calibration summary over calibration inputs, with calibration_excess_z_pctile among ranked
 * wallets: 100 * (1 - percent_rank by z ascending), so the most negative z reads 100, the worst 0, a lone wallet 100.
 */
export function walletCalibrationSql(inputs: string): string {
  return `WITH c AS (
      SELECT wallet_id, count(*) AS n_positions, count(DISTINCT market_id) AS n_markets,
        ${CALIBRATION_AGGREGATES_SQL},
        sum(p * (1 - p)) AS calibration_variance
      FROM ${inputs} GROUP BY wallet_id)
    SELECT *, ${SKILL_DEVIATE_SQL} AS skill_deviate,
      n_markets >= ${MIN_RESOLVED_MARKETS} AS calibration_ranked,
      CASE WHEN n_markets >= ${MIN_RESOLVED_MARKETS} AND calibration_excess_z IS NOT NULL
        THEN 100 * (1 - percent_rank() OVER (PARTITION BY (n_markets >= ${MIN_RESOLVED_MARKETS} AND calibration_excess_z IS NOT NULL)
                                             ORDER BY calibration_excess_z ASC)) END AS calibration_excess_z_pctile
    FROM c`;
}

/**
 * Wallet style and best category for the whole venue, as of T: the per-wallet inputs of the copy verdict
 * (verdictFor in core/trader/verdict.ts) precomputed in the analytics build, so that a ranking of thousands of rows gives
 * every row the same verdict copyFitness() gives one wallet, without per-wallet queries.
 *
 * - a_style: one row per wallet with a fill leg <= T: n_fills, taker_share, median_clip_usd, two_sided_share,
 *   thin_fill_share (the definitions of fillStats in core/trader/profile.ts) and n_closed_holds, median_hold_hours (the
 *   episodes of holdEpisodesSql, the very SQL copyFitness runs for one wallet, here without the wallet filter).
 * - a_category: one row per (wallet, category) with resolved calibration inputs: walletCalibrationSql over the
 *   wallet's resolved positions in that category, and the wallet's best category on every row.
 * - a_best_category: per wallet, the category with the most negative calibration_excess_z among its categories with
 *   at least BEST_CATEGORY_MIN_MARKETS resolved markets (ties: more markets, then the name). Wallets without such a
 *   category have no row.
 *
 * Pure: SQL strings over the venue tables and the build's a_positions; docs/methodology.md "Wallet style and best
 * category".
 */
import { calibrationInputsSql, walletCalibrationSql } from './calibration.ts';
import { tsLiteral, type AsOf } from './query.ts';
import { SMART_MONEY_TAGS, type SmartMoneyTag } from './tags.ts';
import { COPY_RULES, holdEpisodesSql, type VerdictInputs } from './trader/index.ts';

/** One named statement of a build (a_style, a_category, a_best_category below). */
export interface BuildStep {
  name: string;
  sql: string;
}

/** A category can be a wallet's best from this many distinct resolved markets in it (as the playbook's categories). */
export const BEST_CATEGORY_MIN_MARKETS = 10;

/**
 * SQL (a SELECT) of every wallet's copy style as of T, set-based (one GROUP BY wallet for the fills, one for the
 * hold episodes). Columns: wallet_id, n_fills, taker_share, median_clip_usd, two_sided_share, thin_fill_share,
 * n_closed_holds, median_hold_hours. Rows: every wallet with a fill leg at or before T.
 */
export function walletStyleSql(asOf: AsOf): string {
  const T = tsLiteral(asOf);
  const thin = COPY_RULES.thinLiquidityUsd;
  // CTE names are prefixed: holdEpisodesSql brings its own (fill_ev, ev, k, seq, epi, eps, res, ends, hold_episodes)
  return `WITH style_legs AS (
      SELECT l.wallet_id, l.market_id, l.outcome_index, l.role, l.side, l.size_usdc, m.liquidity_usdc
      FROM fill_legs l JOIN markets m USING (market_id) WHERE l.ts <= ${T}),
    style_fills AS (
      SELECT wallet_id, count(*)::INTEGER AS n_fills,
        avg(CASE WHEN role = 'taker' THEN 1.0 ELSE 0.0 END) AS taker_share,
        quantile_cont(size_usdc, 0.5) AS median_clip_usd,
        avg(CASE WHEN liquidity_usdc < ${thin} THEN 1.0 ELSE 0.0 END) FILTER (WHERE liquidity_usdc IS NOT NULL) AS thin_fill_share
      FROM style_legs GROUP BY wallet_id),
    style_splits AS (SELECT DISTINCT wallet_id, market_id FROM inventory_events WHERE ts <= ${T} AND kind = 'SPLIT'),
    style_markets AS (
      SELECT wallet_id, market_id, count(DISTINCT outcome_index) FILTER (WHERE side = 'BUY') AS sides_bought
      FROM style_legs GROUP BY wallet_id, market_id),
    style_two_sided AS (
      SELECT mk.wallet_id, avg(CASE WHEN mk.sides_bought = 2 OR s.market_id IS NOT NULL THEN 1.0 ELSE 0.0 END) AS two_sided_share
      FROM style_markets mk LEFT JOIN style_splits s USING (wallet_id, market_id) GROUP BY mk.wallet_id),
    ${holdEpisodesSql(asOf)},
    style_holds AS (
      SELECT wallet_id, count(*)::INTEGER AS n_closed_holds, quantile_cont(hold_hours, 0.5) AS median_hold_hours
      FROM hold_episodes WHERE end_ts IS NOT NULL GROUP BY wallet_id)
    SELECT f.wallet_id, f.n_fills, f.taker_share::DOUBLE AS taker_share, f.median_clip_usd::DOUBLE AS median_clip_usd,
      t.two_sided_share::DOUBLE AS two_sided_share, f.thin_fill_share::DOUBLE AS thin_fill_share,
      coalesce(h.n_closed_holds, 0)::INTEGER AS n_closed_holds, h.median_hold_hours::DOUBLE AS median_hold_hours
    FROM style_fills f LEFT JOIN style_two_sided t USING (wallet_id) LEFT JOIN style_holds h USING (wallet_id)`;
}

/**
 * SQL (a SELECT) of calibration per (wallet, category) over the build's resolved positions (a relation named
 * `positions`, default a_positions, built as of T; inputs resolved after T are left out as a guard). Columns:
 * wallet_id, category, n_positions, n_markets, brier, calibration_excess, calibration_excess_z, calibration_skew,
 * skill_deviate (walletCalibrationSql's definitions), eligible (n_markets >= BEST_CATEGORY_MIN_MARKETS and a z),
 * category_rank (1 = the wallet's best among eligible categories: z ascending, then more markets, then the name;
 * null when not eligible), and the wallet's best_category, best_category_z, best_category_markets on every row
 * (null when no category is eligible). Markets without a category are left out.
 */
export function walletCategorySql(asOf: AsOf, positions = 'a_positions'): string {
  const T = tsLiteral(asOf);
  // walletCalibrationSql groups by wallet_id: a struct key (wallet, category) makes it group per category
  return `WITH cat_inputs AS (
      SELECT {'w': wallet_id, 'c': category} AS wallet_id, market_id, p, o
      FROM (${calibrationInputsSql(positions)}) WHERE category IS NOT NULL AND resolved_at <= ${T}),
    cat_cal AS (${walletCalibrationSql('cat_inputs')}),
    cat_rows AS (
      SELECT struct_extract(wallet_id, 'w') AS wallet_id, struct_extract(wallet_id, 'c') AS category,
        n_positions::INTEGER AS n_positions, n_markets::INTEGER AS n_markets, brier, calibration_excess, calibration_excess_z,
        calibration_skew, skill_deviate,
        (n_markets >= ${BEST_CATEGORY_MIN_MARKETS} AND calibration_excess_z IS NOT NULL) AS eligible
      FROM cat_cal),
    ${bestCategorySql('cat_rows')}`;
}

/**
 * The tail of a WITH over `rows` (wallet_id, category, n_markets, calibration_excess_z, eligible, ...): every row
 * with its category_rank among the wallet's eligible categories and the wallet's best category on every row.
 */
export function bestCategorySql(rows: string): string {
  return `cat_ranked AS (
      SELECT *, CASE WHEN eligible THEN row_number() OVER (PARTITION BY wallet_id, eligible
        ORDER BY calibration_excess_z ASC, n_markets DESC, category ASC) END AS category_rank
      FROM ${rows})
    SELECT r.*, b.category AS best_category, b.calibration_excess_z AS best_category_z, b.n_markets AS best_category_markets
    FROM cat_ranked r LEFT JOIN cat_ranked b ON b.wallet_id = r.wallet_id AND b.category_rank = 1`;
}

export function styleStep(asOf: AsOf): BuildStep {
  return { name: 'style', sql: `CREATE OR REPLACE TABLE a_style AS SELECT * FROM (${walletStyleSql(asOf)}) ORDER BY wallet_id` };
}

/** Needs a_positions (the build's first step). */
export function categoryStep(asOf: AsOf): BuildStep {
  return { name: 'category', sql: `CREATE OR REPLACE TABLE a_category AS SELECT * FROM (${walletCategorySql(asOf)}) ORDER BY wallet_id, category` };
}

/** Needs a_category. */
export function bestCategoryStep(): BuildStep {
  return {
    name: 'best_category',
    sql: `CREATE OR REPLACE TABLE a_best_category AS
      SELECT wallet_id, best_category, best_category_z, best_category_markets FROM a_category WHERE category_rank = 1 ORDER BY wallet_id`,
  };
}

/** The steps in order (after the build's positions step; a_style reads only the venue tables). */
export function styleBuildSteps(asOf: AsOf): BuildStep[] {
  return [styleStep(asOf), categoryStep(asOf), bestCategoryStep()];
}

/**
 * The columns verdictInputsFromRow reads: from a_style (n_fills, taker_share, median_clip_usd, two_sided_share,
 * thin_fill_share, n_closed_holds, median_hold_hours) and from a_wallet_metrics (calibration_ranked,
 * n_resolved_markets, calibration_excess_z, skill_deviate, alpha_24h_cents, smart_money_tags). a_wallet_metrics has
 * its own taker_share (the same definition); either serves.
 */
export const VERDICT_ROW_COLUMNS = [
  'n_fills',
  'taker_share',
  'median_clip_usd',
  'two_sided_share',
  'thin_fill_share',
  'n_closed_holds',
  'median_hold_hours',
  'calibration_ranked',
  'n_resolved_markets',
  'calibration_excess_z',
  'skill_deviate',
  'alpha_24h_cents',
  'smart_money_tags',
] as const;

/** A row carrying (at least) VERDICT_ROW_COLUMNS; any other columns are ignored. */
export type VerdictRow = Readonly<Partial<Record<(typeof VERDICT_ROW_COLUMNS)[number], unknown>> & Record<string, unknown>>;

function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

function tagList(v: unknown): SmartMoneyTag[] {
  const arr: unknown[] = Array.isArray(v) ? v : v && typeof v === 'object' && 'items' in v && Array.isArray(v.items) ? v.items : [];
  return arr.filter((t): t is SmartMoneyTag => typeof t === 'string' && (SMART_MONEY_TAGS as readonly string[]).includes(t));
}

/**
 * VerdictInputs from one ranking row (a_wallet_metrics LEFT JOIN a_style USING (wallet_id)), so that
 * verdictFor(verdictInputsFromRow(row)) is the verdict copyFitness() gives the wallet at the build's T. Missing style
 * (no fill leg) reads as no fills and no holds, as fillStats/holdStats report such a wallet.
 */
export function verdictInputsFromRow(row: VerdictRow): VerdictInputs {
  const tags = tagList(row.smart_money_tags);
  return {
    n_fills: num(row.n_fills) ?? 0,
    ranked: row.calibration_ranked === true,
    n_resolved_markets: num(row.n_resolved_markets) ?? 0,
    calibration_excess_z: num(row.calibration_excess_z),
    skill_deviate: num(row.skill_deviate),
    sharp: tags.includes('sharp'),
    alpha_24h_cents: num(row.alpha_24h_cents),
    median_hold_hours: num(row.median_hold_hours),
    n_closed_holds: num(row.n_closed_holds) ?? 0,
    taker_share: num(row.taker_share),
    median_clip_usd: num(row.median_clip_usd),
    two_sided_share: num(row.two_sided_share),
    thin_fill_share: num(row.thin_fill_share),
    tags,
  };
}

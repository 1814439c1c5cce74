import { walletAlphaSql } from '../alpha.ts';
import { calibrationSummary, skillDeviate } from '../calibration.ts';
import { COPY_RULES } from '../copy-rules.ts';
import { DUST_SHARES, positionEventsSql } from '../positions.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { smartMoneyTags, type SmartMoneyTag } from '../tags.ts';
import { walletFeaturesSql } from '../wallet-features.ts';
import { walletCalibrationInputs, type CalibrationRow } from './calibration.ts';
import { EVENT_ORDER, PK_MARKET, PK_WALLET, walletScopeSql } from './identity.ts';
import { BUDGET_RULES } from './rules.ts';
import { HOUR_MS, WEEK_MS, num, num0, quantileList } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Wallet profile: the figures copy-fitness and the playbook share
// ---------------------------------------------------------------------------------------------------------------

interface FillStats {
  n_fills: number;
  n_buys: number;
  n_markets: number;
  volume_usdc: number;
  taker_share: number | null;
  taker_share_usd: number | null;
  clip: (number | null)[]; // p25 p50 p75 p95
  entry: (number | null)[]; // p10 p25 p50 p75 p90
  thin_fill_share: number | null;
  thin_usd_share: number | null;
  median_market_liquidity: number | null;
  two_sided_share: number | null;
  first_us: number | null;
  last_us: number | null;
  active_days: number;
}

export async function fillStats(db: QueryRunner, walletId: number, asOf: AsOf): Promise<FillStats> {
  const T = tsLiteral(asOf);
  const thin = COPY_RULES.thinLiquidityUsd;
  const [r] = await db.all<Record<string, unknown>>(
    `WITH legs AS (
      SELECT l.*, m.liquidity_usdc FROM fill_legs l JOIN markets m USING (market_id) WHERE l.wallet_id = ${walletId} AND l.ts <= ${T}),
    splits AS (SELECT DISTINCT market_id FROM inventory_events WHERE wallet_id = ${walletId} AND ts <= ${T} AND kind = 'SPLIT'),
    mk AS (
      SELECT market_id, count(DISTINCT outcome_index) FILTER (WHERE side = 'BUY') AS sides_bought FROM legs GROUP BY 1)
    SELECT count(*) AS n_fills, count(*) FILTER (WHERE side = 'BUY') AS n_buys, count(DISTINCT market_id) AS n_markets,
      coalesce(sum(size_usdc), 0)::DOUBLE AS volume_usdc,
      avg(CASE WHEN role = 'taker' THEN 1.0 ELSE 0.0 END) AS taker_share,
      sum(CASE WHEN role = 'taker' THEN size_usdc ELSE 0 END) / nullif(sum(size_usdc), 0) AS taker_share_usd,
      quantile_cont(size_usdc, [0.25, 0.5, 0.75, 0.95]) AS clip,
      quantile_cont(price, [0.1, 0.25, 0.5, 0.75, 0.9]) FILTER (WHERE side = 'BUY') AS entry,
      avg(CASE WHEN liquidity_usdc < ${thin} THEN 1.0 ELSE 0.0 END) FILTER (WHERE liquidity_usdc IS NOT NULL) AS thin_fill_share,
      sum(CASE WHEN liquidity_usdc < ${thin} THEN size_usdc ELSE 0 END) FILTER (WHERE liquidity_usdc IS NOT NULL)
        / nullif(sum(size_usdc) FILTER (WHERE liquidity_usdc IS NOT NULL), 0) AS thin_usd_share,
      (SELECT median(liquidity_usdc) FROM markets WHERE market_id IN (SELECT market_id FROM legs)) AS median_market_liquidity,
      (SELECT avg(CASE WHEN sides_bought = 2 OR market_id IN (SELECT market_id FROM splits) THEN 1.0 ELSE 0.0 END) FROM mk) AS two_sided_share,
      epoch_us(min(ts)) AS first_us, epoch_us(max(ts)) AS last_us, count(DISTINCT ts::DATE) AS active_days
    FROM legs`,
  );
  const row = r ?? {};
  return {
    n_fills: num0(row.n_fills),
    n_buys: num0(row.n_buys),
    n_markets: num0(row.n_markets),
    volume_usdc: num0(row.volume_usdc),
    taker_share: num(row.taker_share),
    taker_share_usd: num(row.taker_share_usd),
    clip: quantileList(row.clip, 4),
    entry: quantileList(row.entry, 5),
    thin_fill_share: num(row.thin_fill_share),
    thin_usd_share: num(row.thin_usd_share),
    median_market_liquidity: num(row.median_market_liquidity),
    two_sided_share: num(row.two_sided_share),
    first_us: num(row.first_us),
    last_us: num(row.last_us),
    active_days: num0(row.active_days),
  };
}

interface HoldStats {
  n_closed: number;
  n_open: number;
  /** p25 p50 p75 in hours */
  hours: (number | null)[];
  share_to_resolution: number | null;
  typical_capital_usd: number | null;
  capital_days: number;
}

/**
 * CTEs (without the WITH keyword) of position hold episodes as of T, ending in `hold_episodes` (wallet_id,
 * market_id, start_ts, exit_ts, cost_in, end_ts, to_resolution, hold_hours). An episode of (wallet, token) starts
 * with the acquisition that finds the position empty (a buy fill, split or conversion) and ends at the event that
 * empties it (sell, merge, conversion) or at the market's resolution, whichever is first; one still open and
 * unresolved at T has a null end_ts and hold_hours (censored). cost_in = the gross cost of its acquisitions.
 * With `walletId`, only that wallet's positions (put walletScopeSql first so the scan is narrowed too); without it,
 * every wallet of the venue at once (the analytics build's a_style, core/wallet-style.ts): one SQL for both, so a
 * ranking row and copyFitness() can never disagree on a hold.
 */
export function holdEpisodesSql(asOf: AsOf, walletId?: number): string {
  if (walletId !== undefined && !Number.isSafeInteger(walletId)) throw new Error('wallet id must be an integer');
  const T = tsLiteral(asOf);
  return `${positionEventsSql(asOf)},
    k AS (SELECT *, ${PK_MARKET} AS market_id FROM ev${walletId === undefined ? '' : ` WHERE ${PK_WALLET} = ${walletId}`}),
    seq AS (
      SELECT *, sum(q) OVER w AS held_after, row_number() OVER w AS n
      FROM k WINDOW w AS (PARTITION BY pk ORDER BY ${EVENT_ORDER} ROWS UNBOUNDED PRECEDING)),
    epi AS (
      SELECT *, sum(CASE WHEN held_after - q <= ${DUST_SHARES} THEN 1 ELSE 0 END) OVER (PARTITION BY pk ORDER BY n ROWS UNBOUNDED PRECEDING) AS episode
      FROM seq),
    eps AS (
      SELECT ${PK_WALLET} AS wallet_id, any_value(market_id) AS market_id, min(ts) AS start_ts,
        min(ts) FILTER (WHERE held_after <= ${DUST_SHARES}) AS exit_ts, coalesce(sum(q * px) FILTER (WHERE q > 0), 0) AS cost_in
      FROM epi GROUP BY pk, episode),
    res AS (SELECT market_id, resolved_at FROM resolutions WHERE resolved_at <= ${T}),
    ends AS (
      SELECT eps.*, least(exit_ts, res.resolved_at) AS end_ts,
        (res.resolved_at IS NOT NULL AND (exit_ts IS NULL OR res.resolved_at <= exit_ts)) AS to_resolution
      FROM eps LEFT JOIN res USING (market_id)),
    hold_episodes AS (
      SELECT *, greatest(0, epoch_ms(end_ts) - epoch_ms(start_ts)) / ${HOUR_MS}.0 AS hold_hours FROM ends)`;
}

/**
 * Holds and capital at work from position episodes (holdEpisodesSql). Episodes still open and unresolved at T are
 * counted in n_open and left out of the quantiles. Capital at work on a day = the gross cost of acquisitions of the
 * episodes open at that moment (sampled at T and every 24 h before it over BUDGET_RULES.windowDays); the typical
 * capital is the median over the sampled days on which it was positive.
 */
export async function holdStats(db: QueryRunner, schema: string, walletId: number, asOf: AsOf): Promise<HoldStats> {
  const T = tsLiteral(asOf);
  const [r] = await db.all<Record<string, unknown>>(
    `WITH ${walletScopeSql(schema, walletId)},
    ${holdEpisodesSql(asOf, walletId)},
    days AS (SELECT ${T} - to_days(i::INTEGER) AS d FROM range(${BUDGET_RULES.windowDays}) t(i)),
    cap AS (
      SELECT d, sum(cost_in) AS capital FROM days JOIN hold_episodes e ON e.start_ts <= d AND (e.end_ts IS NULL OR e.end_ts > d)
      GROUP BY d HAVING sum(cost_in) > 0)
    SELECT
      (SELECT count(*) FROM hold_episodes WHERE end_ts IS NOT NULL) AS n_closed,
      (SELECT count(*) FROM hold_episodes WHERE end_ts IS NULL) AS n_open,
      (SELECT quantile_cont(hold_hours, [0.25, 0.5, 0.75]) FROM hold_episodes WHERE end_ts IS NOT NULL) AS hours,
      (SELECT avg(CASE WHEN to_resolution THEN 1.0 ELSE 0.0 END) FROM hold_episodes WHERE end_ts IS NOT NULL) AS share_to_resolution,
      (SELECT median(capital) FROM cap) AS typical_capital_usd,
      (SELECT count(*) FROM cap) AS capital_days`,
  );
  const row = r ?? {};
  return {
    n_closed: num0(row.n_closed),
    n_open: num0(row.n_open),
    hours: quantileList(row.hours, 3),
    share_to_resolution: num(row.share_to_resolution),
    typical_capital_usd: num(row.typical_capital_usd),
    capital_days: num0(row.capital_days),
  };
}

interface Edge {
  n_resolved_markets: number;
  ranked: boolean;
  calibration_excess_z: number | null;
  calibration_excess_z_pctile: number | null;
  skill_deviate: number | null;
  alpha_1h_cents: number | null;
  alpha_24h_cents: number | null;
  tags: SmartMoneyTag[];
  /** as_of of the analytics build that supplied the cohort figures (percentile, sharp cutoff); null: none <= T */
  cohort_as_of: string | null;
  inputs: CalibrationRow[];
}

/** The latest analytics build usable at T (as_of <= T): its as_of and sharp cutoff. */
async function cohortAt(db: QueryRunner, schema: string, asOf: AsOf): Promise<{ as_of: Date; sharp_min_deviate: number | null } | null> {
  const unquoted = schema.slice(1, -1).replaceAll('""', '"');
  const [t] = await db.all<{ n: number }>(
    `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('a_meta', 'a_wallet_metrics')`,
    [unquoted],
  );
  if (num0(t?.n) < 2) return null;
  const [m] = await db.all<{ as_of_us: number; sharp_min_deviate: number | null }>(
    `SELECT epoch_us(as_of) AS as_of_us, sharp_min_deviate FROM ${schema}.a_meta ORDER BY as_of DESC LIMIT 1`,
  );
  if (!m || num0(m.as_of_us) / 1000 > asOf.getTime()) return null;
  return { as_of: new Date(Math.floor(num0(m.as_of_us) / 1000)), sharp_min_deviate: num(m.sharp_min_deviate) };
}

export async function walletEdge(db: QueryRunner, schema: string, walletId: number, asOf: AsOf): Promise<Edge> {
  const inputs = await walletCalibrationInputs(db, schema, walletId, asOf, 'all');
  const s = calibrationSummary(inputs);
  const deviate = skillDeviate(s.calibration_excess_z, s.calibration_skew);
  const [alpha] = await db.all<Record<string, unknown>>(
    `WITH ${walletScopeSql(schema, walletId)} SELECT * FROM (${walletAlphaSql(asOf)}) wa WHERE wallet_id = ${walletId}`,
  );
  const [feat] = await db.all<Record<string, unknown>>(
    `WITH ${walletScopeSql(schema, walletId)} SELECT * FROM (${walletFeaturesSql(asOf)}) wf WHERE wallet_id = ${walletId}`,
  );
  const cohort = await cohortAt(db, schema, asOf);
  let pctile: number | null = null;
  if (cohort && s.ranked && s.calibration_excess_z !== null) {
    // the wallet's z (as of T) placed among the other ranked wallets of the build: 100 * (1 - share with a lower z);
    // equal to the build's own percentile when the build is as of T
    const [c] = await db.all<{ below: number; n: number }>(
      `SELECT count(*) FILTER (WHERE calibration_excess_z < $1::DOUBLE) AS below, count(*) AS n
      FROM ${schema}.a_wallet_metrics WHERE calibration_ranked AND calibration_excess_z IS NOT NULL AND wallet_id <> ${walletId}`,
      [s.calibration_excess_z],
    );
    const n = num0(c?.n);
    pctile = n === 0 ? 100 : 100 * (1 - num0(c?.below) / n);
  }
  const tags = feat
    ? smartMoneyTags(
        {
          trade_count: num0(feat.trade_count),
          median_fill_usdc: num(feat.median_fill_usdc),
          lifetime_volume_usdc: num0(feat.lifetime_volume_usdc),
          calibration_ranked: s.ranked,
          skill_deviate: deviate,
          n_entry_positions: num0(feat.n_entry_positions),
          taker_share: num(feat.taker_share),
          median_entry_age: num(feat.median_entry_age),
          n_buys: num0(feat.n_buys),
          contrarian_buy_share: num(feat.contrarian_buy_share),
        },
        // without a build <= T there is no cohort cutoff: the sharp tag is not given
        cohort?.sharp_min_deviate ?? Number.POSITIVE_INFINITY,
      )
    : [];
  return {
    n_resolved_markets: s.n_markets,
    ranked: s.ranked,
    calibration_excess_z: s.calibration_excess_z,
    calibration_excess_z_pctile: pctile,
    skill_deviate: deviate,
    alpha_1h_cents: num(alpha?.alpha_1h_cents),
    alpha_24h_cents: num(alpha?.alpha_24h_cents),
    tags,
    cohort_as_of: cohort ? cohort.as_of.toISOString() : null,
    inputs,
  };
}

/** Weeks the wallet has been active: first fill to T, at least one. */
export function activeWeeks(f: FillStats, asOf: AsOf): number {
  if (f.first_us === null) return 1;
  return Math.max(1, (asOf.getTime() - f.first_us / 1000) / WEEK_MS);
}

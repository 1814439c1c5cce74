/**
 * Markets: the service's consensus (methodology "Consensus on a market"), top holders, net flow by cohort and the
 * public teaser's counts, all as of T: only rows stamped <= T are read (fills, inventory, mids, resolutions), and
 * wallet labels (Brier, tags, taker share) come from an analytics build whose as_of is <= T, never a later one.
 *
 * Positions as of T: when T equals the build's as_of they are read from a_positions (the build materialized exactly
 * positionsSql(T)); otherwise positionsSql(T) is run for the one market (marketPositionsSql): the venue tables it
 * reads are narrowed to the market by CTEs of the same names, and the result is filtered on market_id as well, so
 * the narrowing only ever saves time, it never decides a figure.
 *
 * docs/methodology.md "Markets: consensus, holders, flow" records every choice made here.
 */
import { outcomeLabelSql } from './outcomes.ts';
import { z } from 'zod';
import { DUST_SHARES, positionsSql } from './positions.ts';
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';
import { MIN_RESOLVED_MARKETS } from './calibration.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rules (documented in docs/methodology.md)
// ---------------------------------------------------------------------------------------------------------------

export const CONSENSUS_RULE = {
  /** Brier of a coin flip: what a holder with no resolved market is assumed to score. */
  priorBrier: 0.25,
  /** Pseudo-markets of the prior: a holder's Brier is shrunk as (n * brier + k * 0.25) / (n + k). */
  priorMarkets: MIN_RESOLVED_MARKETS,
  /** w = 1 / (brier + floor): a perfect record weighs 20, a coin flip 3.33, the worst possible (1) 0.95. */
  brierFloor: 0.05,
} as const;

/** Liquidity providers: wallets that mostly fill others' orders, many times (no market-maker label exists). */
export const LIQUIDITY_PROVIDER_RULE = { minMakerShare: 0.7, minFills: 1000 } as const;

/** Flow cohorts: a partition of wallets, assigned in this order (first match wins). */
export const FLOW_COHORTS = ['liquidity_provider', 'sharp', 'whale', 'other_smart_money', 'everyone_else'] as const;
export type FlowCohortName = (typeof FLOW_COHORTS)[number];
/** Smart money = any smart-money tag, unless the wallet is a liquidity provider: the three tag cohorts. */
export const SMART_MONEY_COHORTS: readonly FlowCohortName[] = ['sharp', 'whale', 'other_smart_money'];

export const DEFAULT_FLOW_WINDOW_HOURS = 24;
export const MAX_FLOW_WINDOW_HOURS = 24 * 30;
export const MAX_TOP_HOLDERS = 100;

/** A holder's effective Brier (shrunk toward the coin flip by its number of resolved markets). */
export function effectiveBrier(brier: number | null, nResolvedMarkets: number): number {
  const { priorBrier, priorMarkets } = CONSENSUS_RULE;
  const n = brier === null ? 0 : Math.max(0, nResolvedMarkets);
  return (n * (brier ?? 0) + priorMarkets * priorBrier) / (n + priorMarkets);
}

/** A holder's weight in the consensus: grows as its (effective) Brier falls; independent of position size. */
export function consensusWeight(brier: number | null, nResolvedMarkets: number): number {
  return 1 / (effectiveBrier(brier, nResolvedMarkets) + CONSENSUS_RULE.brierFloor);
}

// ---------------------------------------------------------------------------------------------------------------
// Output schemas (the API layers validate and document with these)
// ---------------------------------------------------------------------------------------------------------------

const usd = z.number();
const count = z.number().int().nonnegative();
const price = z.number().min(0).max(1);

export const MarketConsensus = z.object({
  /** Brier-weighted mean of the current holders' YES cost basis: a cost basis, not a forecast. Null: no holder. */
  service_consensus_yes: price.nullable(),
  /** Latest YES mid stamped <= T (null when the token has none). */
  market_mid: price.nullable(),
  /** Wallets holding shares of either token as of T. */
  n_positioners: count,
});
export type MarketConsensus = z.infer<typeof MarketConsensus>;

/** YES | NO, or the venue's name of the outcome (Up, Down, a team): core/outcomes.ts */
export const OutcomeSide = z.string().min(1);
export type OutcomeSide = z.infer<typeof OutcomeSide>;

/** A top holder for internal use (the wallet id lets an authorized surface link the wallet). */
export const TopHolder = z.object({
  wallet_id: z.number().int().nonnegative(),
  pseudonym: z.string(),
  outcome_side: OutcomeSide,
  shares_held: z.number().positive(),
});
export type TopHolder = z.infer<typeof TopHolder>;

/** A top holder as the public teaser shows it: the venue's pseudonym only, never an address or id. */
export const PublicTopHolder = z.strictObject({
  pseudonym: z.string(),
  outcome_side: OutcomeSide,
  shares_held: z.number().positive(),
});
export type PublicTopHolder = z.infer<typeof PublicTopHolder>;

export function toPublicTopHolders(rows: readonly TopHolder[]): PublicTopHolder[] {
  return rows.map((r) => ({ pseudonym: r.pseudonym, outcome_side: r.outcome_side, shares_held: r.shares_held }));
}

/** One cohort's trading in one token over the window (fill legs: each fill has a taker leg and a maker leg). */
export const FlowSide = z.object({
  buy_usdc: usd.nonnegative(),
  sell_usdc: usd.nonnegative(),
  /** buy_usdc - sell_usdc */
  net_usdc: usd,
  /** shares bought - shares sold */
  net_shares: z.number(),
  n_wallets: count,
  n_fills: count,
});
export type FlowSide = z.infer<typeof FlowSide>;

export const FlowCohort = z.object({
  cohort: z.enum([...FLOW_COHORTS, 'smart_money', 'all']),
  yes: FlowSide,
  no: FlowSide,
  /** yes.net_shares - no.net_shares: > 0 means the cohort moved toward YES (buying NO is selling YES exposure). */
  net_yes_shares: z.number(),
  n_wallets: count,
  n_fills: count,
});
export type FlowCohort = z.infer<typeof FlowCohort>;

export const MarketFlow = z.object({
  market_id: z.number().int().nonnegative(),
  condition_id: z.string(),
  as_of: z.string(),
  window_hours: z.number().positive(),
  /** The window is (window_start, as_of]. */
  window_start: z.string(),
  /** as_of of the analytics build the cohorts come from (<= as_of). */
  labels_as_of: z.string(),
  /** Venue volume in the window: each fill once, at the taker's notional. */
  window_volume_usdc: usd.nonnegative(),
  window_fills: count,
  last_24h_volume_usdc: usd.nonnegative(),
  last_24h_fills: count,
  /** Latest YES mid <= window_start, <= as_of, and their difference (null when either is missing). */
  mid_yes_start: price.nullable(),
  mid_yes_end: price.nullable(),
  mid_yes_change: z.number().nullable(),
  /** A partition of the wallets, in FLOW_COHORTS order: every cohort always present, sums equal `totals`. */
  cohorts: z.array(FlowCohort),
  /** sharp + whale + other_smart_money. */
  smart_money: FlowCohort,
  totals: FlowCohort,
});
export type MarketFlow = z.infer<typeof MarketFlow>;

export const MarketFlowQuery = z.object({
  window_hours: z.coerce.number().positive().max(MAX_FLOW_WINDOW_HOURS).default(DEFAULT_FLOW_WINDOW_HOURS),
});

export const MarketTeaserStats = z.object({
  last_24h_volume_usdc: usd.nonnegative(),
  last_24h_fills: count,
  positioner_count: count,
  smart_money_positioner_count: count,
  current_mid: price.nullable(),
  mid_age_seconds: count.nullable(),
});
export type MarketTeaserStats = z.infer<typeof MarketTeaserStats>;

// ---------------------------------------------------------------------------------------------------------------
// Errors and context
// ---------------------------------------------------------------------------------------------------------------

export type MarketErrorCode = 'not_found' | 'analytics_missing' | 'analytics_after_as_of';

export class MarketError extends Error {
  constructor(
    readonly code: MarketErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'MarketError';
  }
}

interface Context {
  marketId: number;
  conditionId: string;
  /** the analytics build's as_of, when one exists */
  labelsAsOf: Date | null;
  /** the build is as of exactly T: read a_positions */
  snapshot: boolean;
  /** the build is as of T or earlier: its labels may be used */
  labelsUsable: boolean;
}

function checkMarketId(marketId: number): void {
  if (!Number.isSafeInteger(marketId) || marketId < 0) throw new RangeError(`market id must be a non-negative integer, got ${marketId}`);
}

async function context(db: QueryRunner, marketId: number, asOf: AsOf): Promise<Context> {
  checkMarketId(marketId);
  const T = tsLiteral(asOf);
  const [m] = await db.all<{ condition_id: string }>(`SELECT condition_id FROM markets WHERE market_id = ${marketId}`);
  if (!m) throw new MarketError('not_found', `no market ${marketId}`);
  const [hasMeta] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM information_schema.tables WHERE table_name = 'a_meta'`);
  if (!hasMeta?.n) return { marketId, conditionId: m.condition_id, labelsAsOf: null, snapshot: false, labelsUsable: false };
  const [meta] = await db.all<{ as_of: Date; same: boolean; usable: boolean }>(
    `SELECT as_of, as_of = ${T} AS same, as_of <= ${T} AS usable FROM a_meta LIMIT 1`,
  );
  if (!meta) return { marketId, conditionId: m.condition_id, labelsAsOf: null, snapshot: false, labelsUsable: false };
  return { marketId, conditionId: m.condition_id, labelsAsOf: meta.as_of, snapshot: meta.same, labelsUsable: meta.usable };
}

function requireLabels(ctx: Context, asOf: AsOf): void {
  if (ctx.labelsAsOf === null) throw new MarketError('analytics_missing', 'no analytics build (a_meta) to read wallet labels from');
  if (!ctx.labelsUsable) {
    throw new MarketError(
      'analytics_after_as_of',
      `the analytics build is as of ${ctx.labelsAsOf.toISOString()}, after ${asOf.toISOString()}: its labels would look ahead`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------------
// SQL
// ---------------------------------------------------------------------------------------------------------------

/**
 * positionsSql(T) for one market: CTEs named like the venue relations it reads shadow them with the rows that can
 * touch the market (its fill legs; every leg of an inventory event with a leg in it, since a conversion is valued
 * over all its legs; mids of the markets those legs touch), and the result is filtered on market_id too.
 */
export function marketPositionsSql(marketId: number, asOf: AsOf): string {
  checkMarketId(marketId);
  return `WITH inv_keys AS (SELECT DISTINCT tx_hash, log_index FROM inventory_legs WHERE market_id = ${marketId}),
    inventory_legs AS (SELECT l.* FROM inventory_legs l SEMI JOIN inv_keys k USING (tx_hash, log_index)),
    fill_legs AS (SELECT * FROM fill_legs WHERE market_id = ${marketId}),
    mids AS (SELECT * FROM mids WHERE market_id = ${marketId} OR market_id IN (SELECT market_id FROM inventory_legs))
  SELECT * FROM (${positionsSql(asOf)}) WHERE market_id = ${marketId}`;
}

/** Positions of the market as of T, from a_positions when the build is as of T. */
function positionsOf(ctx: Context, asOf: AsOf): string {
  return ctx.snapshot ? `(SELECT * FROM a_positions WHERE market_id = ${ctx.marketId})` : `(${marketPositionsSql(ctx.marketId, asOf)})`;
}

/** Held positions: shares not yet redeemed above the dust threshold, with the average cost per share. */
function holdingsSql(ctx: Context, asOf: AsOf): string {
  return `SELECT wallet_id, outcome_index, shares - redeemed_shares AS held, cost_basis / nullif(shares, 0) AS avg_cost
    FROM ${positionsOf(ctx, asOf)} WHERE shares - redeemed_shares > ${DUST_SHARES}`;
}

/** wallet_id -> cohort for every wallet in a_wallet_metrics (a wallet without a row is everyone_else). */
export function walletCohortSql(): string {
  const lp = LIQUIDITY_PROVIDER_RULE;
  return `SELECT wallet_id,
      CASE WHEN taker_share IS NOT NULL AND 1 - taker_share >= ${lp.minMakerShare} AND trade_count >= ${lp.minFills} THEN 'liquidity_provider'
           WHEN list_contains(smart_money_tags, 'sharp') THEN 'sharp'
           WHEN list_contains(smart_money_tags, 'whale') THEN 'whale'
           WHEN len(smart_money_tags) > 0 THEN 'other_smart_money'
           ELSE 'everyone_else' END AS cohort
    FROM a_wallet_metrics`;
}

const inList = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(', ');

async function latestYesMid(db: QueryRunner, marketId: number, t: AsOf): Promise<{ mid: number; ts: Date } | null> {
  const [r] = await db.all<{ mid: number; ts: Date }>(
    `SELECT mid, ts FROM mids WHERE market_id = ${marketId} AND outcome_index = 0 AND ts <= ${tsLiteral(t)} ORDER BY ts DESC LIMIT 1`,
  );
  return r ?? null;
}

async function venueVolume(db: QueryRunner, marketId: number, from: AsOf, to: AsOf): Promise<{ volume_usdc: number; fills: number }> {
  const [r] = await db.all<{ volume_usdc: number; fills: number }>(
    `SELECT coalesce(sum(size_usdc), 0)::DOUBLE AS volume_usdc, count(*)::INTEGER AS fills FROM fills
     WHERE market_id = ${marketId} AND ts > ${tsLiteral(from)} AND ts <= ${tsLiteral(to)}`,
  );
  return r ?? { volume_usdc: 0, fills: 0 };
}

const hoursBefore = (t: AsOf, h: number) => new Date(t.getTime() - h * 3_600_000);

// ---------------------------------------------------------------------------------------------------------------
// 1. Consensus
// ---------------------------------------------------------------------------------------------------------------

/** One holder's part in the consensus (for explanations and tests). */
export const ConsensusHolder = z.object({
  wallet_id: z.number().int().nonnegative(),
  /** unredeemed shares of YES and NO held as of T */
  yes_shares: z.number().nonnegative(),
  no_shares: z.number().nonnegative(),
  /** YES holding: its average cost; NO holding: 1 - its average cost; both: their share-weighted mean */
  yes_cost_basis: price,
  /** from the analytics build (as of <= T); null: unmeasured */
  brier: z.number().nullable(),
  n_resolved_markets: count,
  weight: z.number().positive(),
});
export type ConsensusHolder = z.infer<typeof ConsensusHolder>;

/** Per holder: YES cost basis and weight (consensusWeight, computed in SQL from the same constants). */
function consensusInputsSql(ctx: Context, asOf: AsOf): string {
  const { priorBrier, priorMarkets, brierFloor } = CONSENSUS_RULE;
  // each position's average cost clamped to [0, 1] (a taker fee can lift it just above 1)
  const cost = 'least(greatest(coalesce(avg_cost, 0), 0), 1)';
  return `WITH h AS (${holdingsSql(ctx, asOf)}),
    wallet_yes AS (
      SELECT wallet_id,
        coalesce(sum(held) FILTER (WHERE outcome_index = 0), 0) AS yes_shares,
        coalesce(sum(held) FILTER (WHERE outcome_index = 1), 0) AS no_shares,
        sum(held * CASE WHEN outcome_index = 0 THEN ${cost} ELSE 1 - ${cost} END) / sum(held) AS yes_cost_basis
      FROM h GROUP BY wallet_id),
    measured AS (
      SELECT y.*, m.brier, CASE WHEN m.brier IS NULL THEN 0 ELSE coalesce(m.n_resolved_markets, 0) END::INTEGER AS n_resolved_markets
      FROM wallet_yes y LEFT JOIN a_wallet_metrics m USING (wallet_id))
    SELECT *, 1 / ((n_resolved_markets * coalesce(brier, 0) + ${priorMarkets} * ${priorBrier}) / (n_resolved_markets + ${priorMarkets}) + ${brierFloor}) AS weight
    FROM measured`;
}

/** Every current holder's YES cost basis and consensus weight, by wallet id. */
export async function consensusHolders(db: QueryRunner, marketId: number, asOf: AsOf): Promise<ConsensusHolder[]> {
  const ctx = await context(db, marketId, asOf);
  requireLabels(ctx, asOf);
  return db.all<ConsensusHolder>(`SELECT * FROM (${consensusInputsSql(ctx, asOf)}) ORDER BY wallet_id`);
}

/**
 * Among wallets holding either token as of T: each wallet's YES cost basis (a YES position's average cost; a NO
 * position's 1 - average cost; each clamped to [0, 1]; a wallet holding both: their share-weighted mean), averaged
 * with weight consensusWeight(brier, n_resolved_markets) from the analytics build (as of <= T).
 */
export async function marketConsensus(db: QueryRunner, marketId: number, asOf: AsOf): Promise<MarketConsensus> {
  const ctx = await context(db, marketId, asOf);
  requireLabels(ctx, asOf);
  const [r] = await db.all<{ n: number; consensus: number | null }>(
    `SELECT count(*)::INTEGER AS n, sum(weight * yes_cost_basis) / nullif(sum(weight), 0) AS consensus FROM (${consensusInputsSql(ctx, asOf)})`,
  );
  const mid = await latestYesMid(db, marketId, asOf);
  return {
    service_consensus_yes: r?.consensus === null || r?.consensus === undefined ? null : clamp01(r.consensus),
    market_mid: mid?.mid ?? null,
    n_positioners: r?.n ?? 0,
  };
}

/** Guards the schema's [0, 1] against rounding in the weighted mean (each input is already in [0, 1]). */
function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Top holders
// ---------------------------------------------------------------------------------------------------------------

/** The largest positions (wallet, token) by unredeemed shares as of T; ties broken by wallet id, then YES first. */
export async function topHolders(db: QueryRunner, marketId: number, asOf: AsOf, limit = 5): Promise<TopHolder[]> {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_TOP_HOLDERS) throw new RangeError(`limit must be an integer in [1, ${MAX_TOP_HOLDERS}]`);
  const ctx = await context(db, marketId, asOf);
  return db.all<TopHolder>(`SELECT h.wallet_id, coalesce(w.pseudonym, 'wallet #' || h.wallet_id) AS pseudonym,
      ${outcomeLabelSql('m', 'h.outcome_index')} AS outcome_side, h.held AS shares_held
    FROM (${holdingsSql(ctx, asOf)}) h LEFT JOIN wallets w USING (wallet_id) LEFT JOIN markets m ON m.market_id = ${marketId}
    ORDER BY h.held DESC, h.wallet_id, h.outcome_index LIMIT ${limit}`);
}

// ---------------------------------------------------------------------------------------------------------------
// 3. Flow by cohort
// ---------------------------------------------------------------------------------------------------------------

interface FlowRow {
  cohort: string | null;
  outcome_index: number | null;
  buy_usdc: number;
  sell_usdc: number;
  net_shares: number;
  n_wallets: number;
  n_fills: number;
}

const emptySide = (): FlowSide => ({ buy_usdc: 0, sell_usdc: 0, net_usdc: 0, net_shares: 0, n_wallets: 0, n_fills: 0 });

/**
 * Net flow over (T - windowHours, T] by cohort and token, over fill legs (the taker's leg as recorded, the maker's
 * per match type), at notional (fees excluded). Cohorts partition wallets (FLOW_COHORTS, first match wins), so every
 * figure of `totals` (computed separately) is the sum of the cohorts' figures.
 */
export async function marketFlow(db: QueryRunner, marketId: number, asOf: AsOf, windowHours = DEFAULT_FLOW_WINDOW_HOURS): Promise<MarketFlow> {
  if (!Number.isFinite(windowHours) || windowHours <= 0 || windowHours > MAX_FLOW_WINDOW_HOURS) {
    throw new RangeError(`window must be in (0, ${MAX_FLOW_WINDOW_HOURS}] hours`);
  }
  const ctx = await context(db, marketId, asOf);
  requireLabels(ctx, asOf);
  const start = hoursBefore(asOf, windowHours);
  const rows = await db.all<FlowRow>(`WITH legs AS (
      SELECT wallet_id, outcome_index, side, shares, size_usdc FROM fill_legs
      WHERE market_id = ${marketId} AND ts > ${tsLiteral(start)} AND ts <= ${tsLiteral(asOf)}),
    c AS (${walletCohortSql()}),
    lc AS (SELECT l.*, coalesce(c.cohort, 'everyone_else') AS cohort FROM legs l LEFT JOIN c USING (wallet_id))
    SELECT cohort, outcome_index::INTEGER AS outcome_index,
      coalesce(sum(size_usdc) FILTER (WHERE side = 'BUY'), 0)::DOUBLE AS buy_usdc,
      coalesce(sum(size_usdc) FILTER (WHERE side = 'SELL'), 0)::DOUBLE AS sell_usdc,
      coalesce(sum(CASE side WHEN 'BUY' THEN shares ELSE -shares END), 0)::DOUBLE AS net_shares,
      count(DISTINCT wallet_id)::INTEGER AS n_wallets, count(*)::INTEGER AS n_fills
    FROM lc GROUP BY GROUPING SETS ((cohort, outcome_index), (cohort), (outcome_index), ())`);

  const side = (cohort: string | null, outcome: number | null): FlowRow | undefined =>
    rows.find((r) => r.cohort === cohort && r.outcome_index === outcome);
  const toSide = (r: FlowRow | undefined): FlowSide =>
    r ? { buy_usdc: r.buy_usdc, sell_usdc: r.sell_usdc, net_usdc: r.buy_usdc - r.sell_usdc, net_shares: r.net_shares, n_wallets: r.n_wallets, n_fills: r.n_fills } : emptySide();
  const cohortOf = (name: FlowCohort['cohort'], key: string | null): FlowCohort => {
    const yes = toSide(side(key, 0));
    const no = toSide(side(key, 1));
    const all = side(key, null);
    return { cohort: name, yes, no, net_yes_shares: yes.net_shares - no.net_shares, n_wallets: all?.n_wallets ?? 0, n_fills: all?.n_fills ?? 0 };
  };
  const cohorts = FLOW_COHORTS.map((c) => cohortOf(c, c));
  const totals = cohortOf('all', null);
  const smart = cohorts.filter((c) => SMART_MONEY_COHORTS.includes(c.cohort as FlowCohortName));
  const sumSide = (pick: (c: FlowCohort) => FlowSide): FlowSide =>
    smart.map(pick).reduce(
      (a, s) => ({
        buy_usdc: a.buy_usdc + s.buy_usdc,
        sell_usdc: a.sell_usdc + s.sell_usdc,
        net_usdc: a.net_usdc + s.net_usdc,
        net_shares: a.net_shares + s.net_shares,
        n_wallets: a.n_wallets + s.n_wallets,
        n_fills: a.n_fills + s.n_fills,
      }),
      emptySide(),
    );
  const smartYes = sumSide((c) => c.yes);
  const smartNo = sumSide((c) => c.no);
  const smart_money: FlowCohort = {
    cohort: 'smart_money',
    yes: smartYes,
    no: smartNo,
    net_yes_shares: smartYes.net_shares - smartNo.net_shares,
    n_wallets: smart.reduce((a, c) => a + c.n_wallets, 0),
    n_fills: smart.reduce((a, c) => a + c.n_fills, 0),
  };

  // one query at a time: a runner may wrap a single connection
  const window = await venueVolume(db, marketId, start, asOf);
  const last24 = await venueVolume(db, marketId, hoursBefore(asOf, 24), asOf);
  const midStart = await latestYesMid(db, marketId, start);
  const midEnd = await latestYesMid(db, marketId, asOf);
  return {
    market_id: marketId,
    condition_id: ctx.conditionId,
    as_of: asOf.toISOString(),
    window_hours: windowHours,
    window_start: start.toISOString(),
    labels_as_of: ctx.labelsAsOf!.toISOString(),
    window_volume_usdc: window.volume_usdc,
    window_fills: window.fills,
    last_24h_volume_usdc: last24.volume_usdc,
    last_24h_fills: last24.fills,
    mid_yes_start: midStart?.mid ?? null,
    mid_yes_end: midEnd?.mid ?? null,
    mid_yes_change: midStart && midEnd ? midEnd.mid - midStart.mid : null,
    cohorts,
    smart_money,
    totals,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 4. Teaser counts
// ---------------------------------------------------------------------------------------------------------------

/** The public teaser's counts as of T: 24 h venue volume and fills, holders, smart-money holders, the YES mid. */
export async function marketTeaserStats(db: QueryRunner, marketId: number, asOf: AsOf): Promise<MarketTeaserStats> {
  const ctx = await context(db, marketId, asOf);
  requireLabels(ctx, asOf);
  const [h] = await db.all<{ positioners: number; smart: number }>(`WITH h AS (SELECT DISTINCT wallet_id FROM (${holdingsSql(ctx, asOf)})),
      c AS (${walletCohortSql()})
    SELECT count(*)::INTEGER AS positioners, count(*) FILTER (WHERE c.cohort IN (${inList(SMART_MONEY_COHORTS)}))::INTEGER AS smart
    FROM h LEFT JOIN c USING (wallet_id)`);
  const v = await venueVolume(db, marketId, hoursBefore(asOf, 24), asOf);
  const mid = await latestYesMid(db, marketId, asOf);
  return {
    last_24h_volume_usdc: v.volume_usdc,
    last_24h_fills: v.fills,
    positioner_count: h?.positioners ?? 0,
    smart_money_positioner_count: h?.smart ?? 0,
    current_mid: mid?.mid ?? null,
    mid_age_seconds: mid ? Math.floor((asOf.getTime() - mid.ts.getTime()) / 1000) : null,
  };
}

/** The internal market id of a condition id (0x + 64 hex, any case), or null. */
export async function marketIdByConditionId(db: QueryRunner, conditionId: string): Promise<number | null> {
  if (!/^0x[0-9a-fA-F]{64}$/.test(conditionId)) return null;
  const [r] = await db.all<{ market_id: number }>(`SELECT market_id FROM markets WHERE condition_id = ?`, [conditionId.toLowerCase()]);
  return r?.market_id ?? null;
}

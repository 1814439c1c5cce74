import { z } from 'zod';
import { CALIBRATION_BINS, binLabel } from '../calibration.ts';
import { COPY_RULES } from '../copy-rules.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { SMART_MONEY_TAGS } from '../tags.ts';
import { resolveTrader, venueSchema } from './identity.ts';
import { activeWeeks, fillStats, holdStats, walletEdge } from './profile.ts';
import { BUDGET_RULES } from './rules.ts';
import { count, fmt, isoUs, num, num0, pct, quantileList, share, usd0 } from './shared.ts';
import { COPY_FLAGS, Verdict, copyFlags, flagTitle, verdictFor, type VerdictInputs } from './verdict.ts';

// ---------------------------------------------------------------------------------------------------------------
// 5. Copy fitness
// ---------------------------------------------------------------------------------------------------------------

export const CopyFitnessQuery = z.object({
  followerBudgetUsd: z.coerce.number().positive().max(1e9).default(BUDGET_RULES.defaultBudgetUsd),
});
export type CopyFitnessQueryInput = z.input<typeof CopyFitnessQuery>;

const nullableShare = share.nullable();
const q3 = z.object({ p25: z.number().nullable(), median: z.number().nullable(), p75: z.number().nullable() });

export const CopyFitness = z.object({
  proxy_wallet: z.string(),
  as_of: z.string(),
  cohort_as_of: z.string().nullable(),
  sample: z.object({
    n_fills: count,
    n_markets: count,
    n_resolved_markets: count,
    first_trade_at: z.string().nullable(),
    last_trade_at: z.string().nullable(),
  }),
  hold_time_hours: q3.extend({ n_closed: count, n_open: count, share_to_resolution: nullableShare }),
  entry_price: z.object({
    n_buys: count,
    p10: z.number().nullable(),
    p25: z.number().nullable(),
    median: z.number().nullable(),
    p75: z.number().nullable(),
    p90: z.number().nullable(),
    bins: z.array(z.object({ bin_idx: z.number().int(), bin_label: z.string(), n: count, usd_share: nullableShare })).length(CALIBRATION_BINS),
  }),
  taker_share: nullableShare,
  taker_share_usd: nullableShare,
  clip_usd: z.object({ p25: z.number().nullable(), p50: z.number().nullable(), p75: z.number().nullable(), p95: z.number().nullable() }),
  liquidity: z.object({
    median_market_liquidity_usdc: z.number().nullable(),
    thin_threshold_usdc: z.number(),
    thin_fill_share: nullableShare,
    thin_usd_share: nullableShare,
    two_sided_market_share: nullableShare,
  }),
  trades_per_week: z.number().nonnegative(),
  edge: z.object({
    ranked: z.boolean(),
    calibration_excess_z: z.number().nullable(),
    skill_deviate: z.number().nullable(),
    alpha_1h_cents: z.number().nullable(),
    alpha_24h_cents: z.number().nullable(),
    tags: z.array(z.enum(SMART_MONEY_TAGS)),
  }),
  verdict: Verdict,
  copy_flags: z.array(z.object({ flag: z.enum(COPY_FLAGS), title: z.string() })),
  budget_fit: z.object({
    follower_budget_usd: z.number().positive(),
    typical_capital_usd: z.number().nullable(),
    capital_days: count,
    scale_factor: z.number().nullable(),
    min_order_usd: z.number(),
    share_clips_below_min: nullableShare,
    scaled_clip_usd: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
    liquidity_cap_share: z.number(),
    share_fills_over_liquidity_cap: nullableShare,
    can_mirror_liquidity: z.boolean().nullable(),
    fit: z.enum(['ok', 'too_small', 'too_large', 'unknown']),
    note: z.string(),
  }),
});
export type CopyFitness = z.infer<typeof CopyFitness>;

/**
 * The copy-decision bundle for one wallet as of T and a follower budget: hold times, entry prices, taker share,
 * clip sizes, traded-market liquidity, activity, the verdict, and how the budget maps onto the trader's clips.
 */
export async function copyFitness(db: QueryRunner, wallet: number | string, asOf: AsOf, opts: CopyFitnessQueryInput = {}): Promise<CopyFitness | null> {
  const q = CopyFitnessQuery.parse(opts);
  const T = tsLiteral(asOf);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const schema = await venueSchema(db);
  const W = who.wallet_id;
  const f = await fillStats(db, W, asOf);
  const h = await holdStats(db, schema, W, asOf);
  const edge = await walletEdge(db, schema, W, asOf);
  const bins = await db.all<{ b: number; n: number; usd: number }>(
    `SELECT least(${CALIBRATION_BINS - 1}, greatest(0, floor(price * ${CALIBRATION_BINS} + 1e-9)))::INTEGER AS b, count(*) AS n, sum(size_usdc)::DOUBLE AS usd
    FROM fill_legs WHERE wallet_id = ${W} AND ts <= ${T} AND side = 'BUY' GROUP BY 1`,
  );
  const buyUsd = bins.reduce((s, b) => s + num0(b.usd), 0);
  const verdictInputs: VerdictInputs = {
    n_fills: f.n_fills,
    ranked: edge.ranked,
    n_resolved_markets: edge.n_resolved_markets,
    calibration_excess_z: edge.calibration_excess_z,
    skill_deviate: edge.skill_deviate,
    sharp: edge.tags.includes('sharp'),
    alpha_24h_cents: edge.alpha_24h_cents,
    median_hold_hours: h.hours[1] ?? null,
    n_closed_holds: h.n_closed,
    taker_share: f.taker_share,
    median_clip_usd: f.clip[1] ?? null,
    two_sided_share: f.two_sided_share,
    thin_fill_share: f.thin_fill_share,
    tags: edge.tags,
  };
  const verdict = verdictFor(verdictInputs);
  const flags = copyFlags(verdictInputs);

  // budget fit over the fills of the capital window
  const B = BUDGET_RULES;
  const scale = h.typical_capital_usd && h.typical_capital_usd > 0 ? q.followerBudgetUsd / h.typical_capital_usd : null;
  let below: number | null = null;
  let over: number | null = null;
  let scaled: (number | null)[] = [null, null];
  if (scale !== null) {
    const [b] = await db.all<Record<string, unknown>>(
      `SELECT avg(CASE WHEN l.size_usdc * $1::DOUBLE < ${B.minOrderUsd} THEN 1.0 ELSE 0.0 END) AS below,
        avg(CASE WHEN l.size_usdc * $1::DOUBLE > ${B.liquidityCapShare} * m.liquidity_usdc THEN 1.0 ELSE 0.0 END) FILTER (WHERE m.liquidity_usdc IS NOT NULL) AS over,
        quantile_cont(l.size_usdc * $1::DOUBLE, [0.5, 0.95]) AS scaled
      FROM fill_legs l JOIN markets m USING (market_id)
      WHERE l.wallet_id = ${W} AND l.ts <= ${T} AND l.ts > ${T} - INTERVAL ${B.windowDays} DAY`,
      [scale],
    );
    below = num(b?.below);
    over = num(b?.over);
    scaled = quantileList(b?.scaled, 2);
  }
  const canMirror = over === null ? null : over <= B.maxOverCapShare;
  const fit: CopyFitness['budget_fit']['fit'] =
    scale === null || below === null ? 'unknown' : below > B.maxBelowMinShare ? 'too_small' : canMirror === false ? 'too_large' : 'ok';
  const note = {
    unknown: `No capital at work in the last ${B.windowDays} days to scale against.`,
    too_small: `At ${fmt(scale, 3)}x the trader's size, ${pct(below)} of its clips fall under the ${usd0(B.minOrderUsd)} minimum order.`,
    too_large: `At ${fmt(scale, 3)}x the trader's size, ${pct(over)} of fills would exceed ${pct(B.liquidityCapShare)} of their market's liquidity.`,
    ok: `At ${fmt(scale, 3)}x the trader's size, ${pct(below)} of clips fall under the minimum and ${pct(over)} exceed the liquidity cap.`,
  }[fit];

  return {
    proxy_wallet: who.address,
    as_of: asOf.toISOString(),
    cohort_as_of: edge.cohort_as_of,
    sample: {
      n_fills: f.n_fills,
      n_markets: f.n_markets,
      n_resolved_markets: edge.n_resolved_markets,
      first_trade_at: f.first_us === null ? null : isoUs(f.first_us),
      last_trade_at: f.last_us === null ? null : isoUs(f.last_us),
    },
    hold_time_hours: {
      p25: h.hours[0] ?? null,
      median: h.hours[1] ?? null,
      p75: h.hours[2] ?? null,
      n_closed: h.n_closed,
      n_open: h.n_open,
      share_to_resolution: h.share_to_resolution,
    },
    entry_price: {
      n_buys: f.n_buys,
      p10: f.entry[0] ?? null,
      p25: f.entry[1] ?? null,
      median: f.entry[2] ?? null,
      p75: f.entry[3] ?? null,
      p90: f.entry[4] ?? null,
      bins: Array.from({ length: CALIBRATION_BINS }, (_, i) => {
        const b = bins.find((x) => num0(x.b) === i);
        return { bin_idx: i, bin_label: binLabel(i), n: num0(b?.n), usd_share: buyUsd > 0 ? num0(b?.usd) / buyUsd : null };
      }),
    },
    taker_share: f.taker_share,
    taker_share_usd: f.taker_share_usd,
    clip_usd: { p25: f.clip[0] ?? null, p50: f.clip[1] ?? null, p75: f.clip[2] ?? null, p95: f.clip[3] ?? null },
    liquidity: {
      median_market_liquidity_usdc: f.median_market_liquidity,
      thin_threshold_usdc: COPY_RULES.thinLiquidityUsd,
      thin_fill_share: f.thin_fill_share,
      thin_usd_share: f.thin_usd_share,
      two_sided_market_share: f.two_sided_share,
    },
    trades_per_week: f.n_fills / activeWeeks(f, asOf),
    edge: {
      ranked: edge.ranked,
      calibration_excess_z: edge.calibration_excess_z,
      skill_deviate: edge.skill_deviate,
      alpha_1h_cents: edge.alpha_1h_cents,
      alpha_24h_cents: edge.alpha_24h_cents,
      tags: edge.tags,
    },
    verdict,
    copy_flags: flags.map((fl) => ({ flag: fl, title: flagTitle(fl, verdictInputs) })),
    budget_fit: {
      follower_budget_usd: q.followerBudgetUsd,
      typical_capital_usd: h.typical_capital_usd,
      capital_days: h.capital_days,
      scale_factor: scale,
      min_order_usd: B.minOrderUsd,
      share_clips_below_min: below,
      scaled_clip_usd: { p50: scaled[0] ?? null, p95: scaled[1] ?? null },
      liquidity_cap_share: B.liquidityCapShare,
      share_fills_over_liquidity_cap: over,
      can_mirror_liquidity: canMirror,
      fit,
      note,
    },
  };
}

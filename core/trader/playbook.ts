import { z } from 'zod';
import { MIN_RESOLVED_MARKETS, calibrationSummary, type CalibrationInput } from '../calibration.ts';
import { COPY_RULES } from '../copy-rules.ts';
import { DUST_SHARES } from '../positions.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { SMART_MONEY_TAGS } from '../tags.ts';
import { resolveTrader, venueSchema, walletPositionsSql } from './identity.ts';
import { activeWeeks, fillStats, holdStats, walletEdge } from './profile.ts';
import { PLAYBOOK_RULES } from './rules.ts';
import { count, fmt, isoUs, num0, pct, share, sig, usd0 } from './shared.ts';
import { verdictFor } from './verdict.ts';

// ---------------------------------------------------------------------------------------------------------------
// 6. Playbook
// ---------------------------------------------------------------------------------------------------------------

const n4 = z.number().nullable();

export const TraderPlaybook = z.object({
  proxy_wallet: z.string(),
  label: z.string(),
  as_of: z.string(),
  categories: z
    .array(
      z.object({
        category: z.string(),
        volume_share: share,
        n_resolved_markets: count,
        /** the wallet's calibration z in this category; null below PLAYBOOK_RULES.minCategoryMarkets */
        calibration_excess_z: n4,
      }),
    )
    .max(PLAYBOOK_RULES.maxCategories),
  entry_price_band: z.object({ p25: n4, median: n4, p75: n4 }),
  hold_hours: z.object({ p25: n4, median: n4, p75: n4, share_to_resolution: n4 }),
  style: z.object({ taker_share: n4, kind: z.enum(['taker', 'maker', 'mixed', 'unknown']) }),
  clip_usd: z.object({ p25: n4, median: n4, p75: n4 }),
  rhythm: z.object({
    active_days_per_week: n4,
    trades_per_week: n4,
    peak_hour_utc: z.number().int().min(0).max(23).nullable(),
    peak_hour_share: n4,
    last_active_at: z.string().nullable(),
  }),
  edge: z.object({
    ranked: z.boolean(),
    n_resolved_markets: count,
    calibration_excess_z: n4,
    calibration_excess_z_pctile: n4,
    skill_deviate: n4,
    alpha_1h_cents: n4,
    alpha_24h_cents: n4,
  }),
  tags: z.array(z.enum(SMART_MONEY_TAGS)),
  open: z.object({ positions: count, cost_usdc: z.number(), mark_value_usdc: z.number() }),
  copy: z.object({ copyRecommended: z.boolean(), copiesBadly: z.boolean(), title: z.string() }),
  rules: z.array(z.string()).min(3).max(5),
});
export type TraderPlaybook = z.infer<typeof TraderPlaybook>;

function holdText(hours: number): string {
  if (hours < 1) return `${Math.round(hours * 60)} min`;
  if (hours < 48) return `${fmt(hours, hours < 10 ? 1 : 0)} h`;
  return `${fmt(hours / 24, 1)} days`;
}

/** The templated 'rules' of a playbook (no model): 3 to 5 sentences from the numbers, in a fixed order. */
export function playbookRules(p: Omit<TraderPlaybook, 'rules'>): string[] {
  const R = PLAYBOOK_RULES;
  const e = p.edge;
  const out: string[] = [];
  // 1. edge
  const alpha = e.alpha_24h_cents === null ? '' : `; its fills ${e.alpha_24h_cents >= 0 ? 'gain' : 'lose'} ${fmt(Math.abs(e.alpha_24h_cents), 1)}¢ on average within 24 h`;
  if (e.ranked && e.skill_deviate !== null && (e.skill_deviate > COPY_RULES.recommendMinDeviate || p.tags.includes('sharp'))) {
    const pc = e.calibration_excess_z_pctile === null ? '' : ` (better than ${Math.round(e.calibration_excess_z_pctile)}% of ranked traders)`;
    out.push(`Beats the entry price: calibration z ${fmt(e.calibration_excess_z, 2)} over ${e.n_resolved_markets} resolved markets${pc}${alpha}.`);
  } else if (e.ranked) {
    out.push(`No proven edge: over ${e.n_resolved_markets} resolved markets its picks won about as often as their prices implied (z ${fmt(e.calibration_excess_z, 2)})${alpha}.`);
  } else {
    out.push(`Not yet measurable: ${e.n_resolved_markets} resolved markets, ${MIN_RESOLVED_MARKETS} needed to rank its calibration${alpha}.`);
  }
  if (p.style.taker_share === null) {
    out.push(`No trades as of ${p.as_of.slice(0, 10)}.`);
    out.push(p.open.positions > 0 ? `Holds ${p.open.positions} open positions costing ${usd0(p.open.cost_usdc)}.` : 'Holds no open position.');
    return out;
  }
  // 2. categories
  const top = p.categories[0];
  if (top) {
    const calib = top.calibration_excess_z === null ? '' : `, calibration z ${fmt(top.calibration_excess_z, 2)} there over ${top.n_resolved_markets} markets`;
    out.push(
      top.volume_share >= R.focusShare
        ? `Concentrates on ${top.category} (${pct(top.volume_share)} of volume${calib}).`
        : `Spreads volume across ${p.categories.length} categories; the largest is ${top.category} (${pct(top.volume_share)}${calib}).`,
    );
  }
  // 3. entries and clips
  if (p.entry_price_band.p25 !== null && p.entry_price_band.p75 !== null) {
    out.push(`Buys mostly between ${fmt(p.entry_price_band.p25, 2)} and ${fmt(p.entry_price_band.p75, 2)} (middle half of entries) in clips around ${usd0(p.clip_usd.median)}.`);
  }
  // 4. holds
  if (p.hold_hours.median !== null && out.length < 5) {
    const res = p.hold_hours.share_to_resolution === null ? '' : ` (${pct(p.hold_hours.share_to_resolution)} of holds ride to resolution)`;
    out.push(`Holds a position a median ${holdText(p.hold_hours.median)}${res}.`);
  }
  // 5. style
  if (out.length < 5) {
    const t = p.style.taker_share;
    out.push(
      p.style.kind === 'taker'
        ? `Takes liquidity on ${pct(t)} of fills: a follower can mirror it with market orders.`
        : p.style.kind === 'maker'
          ? `Provides liquidity on ${pct(1 - t)} of fills: copying it with market orders pays the spread it earns.`
          : `Mixes taking (${pct(t)} of fills) and providing liquidity: mirror its taker fills, not its resting orders.`,
    );
  }
  while (out.length < 3) out.push(p.open.positions > 0 ? `Holds ${p.open.positions} open positions costing ${usd0(p.open.cost_usdc)}.` : 'Holds no open position.');
  return out.slice(0, 5);
}

/**
 * A compact style summary an agent can act on (well under 2,000 tokens of JSON): categories, entry band, holds,
 * taker/maker, clips, rhythm, edge, tags, open exposure, and 3-5 templated rules. Numbers are rounded to 4
 * significant digits.
 */
export async function traderPlaybook(db: QueryRunner, wallet: number | string, asOf: AsOf): Promise<TraderPlaybook | null> {
  const T = tsLiteral(asOf);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const schema = await venueSchema(db);
  const W = who.wallet_id;
  const f = await fillStats(db, W, asOf);
  const h = await holdStats(db, schema, W, asOf);
  const edge = await walletEdge(db, schema, W, asOf);
  const cats = await db.all<{ category: string; usd: number }>(
    `SELECT m.category, sum(l.size_usdc)::DOUBLE AS usd FROM fill_legs l JOIN markets m USING (market_id)
    WHERE l.wallet_id = ${W} AND l.ts <= ${T} GROUP BY 1 ORDER BY usd DESC, m.category LIMIT ${PLAYBOOK_RULES.maxCategories}`,
  );
  const [peak] = await db.all<{ h: number; n: number }>(
    `SELECT hour(ts) AS h, count(*) AS n FROM fill_legs WHERE wallet_id = ${W} AND ts <= ${T} GROUP BY 1 ORDER BY n DESC, h LIMIT 1`,
  );
  const [open] = await db.all<{ n: number; cost: number; value: number }>(
    `SELECT count(*) AS n, coalesce(sum(cost_basis), 0)::DOUBLE AS cost, coalesce(sum(shares * coalesce(mark, avg_price, 0)), 0)::DOUBLE AS value
    FROM (${walletPositionsSql(schema, W, asOf)}) p WHERE status = 'OPEN' AND shares > ${DUST_SHARES}`,
  );
  const verdict = verdictFor({
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
  });
  const byCat = new Map<string, CalibrationInput[]>();
  for (const r of edge.inputs) byCat.set(r.category, [...(byCat.get(r.category) ?? []), r]);
  const weeks = activeWeeks(f, asOf);
  const t = f.taker_share;
  const R = PLAYBOOK_RULES;
  const body: Omit<TraderPlaybook, 'rules'> = {
    proxy_wallet: who.address,
    label: who.username ?? who.pseudonym,
    as_of: asOf.toISOString(),
    categories: cats.map((c) => {
      const s = calibrationSummary(byCat.get(c.category) ?? []);
      return {
        category: c.category,
        volume_share: f.volume_usdc > 0 ? (sig(num0(c.usd) / f.volume_usdc) ?? 0) : 0,
        n_resolved_markets: s.n_markets,
        calibration_excess_z: s.n_markets >= R.minCategoryMarkets ? sig(s.calibration_excess_z) : null,
      };
    }),
    entry_price_band: { p25: sig(f.entry[1] ?? null), median: sig(f.entry[2] ?? null), p75: sig(f.entry[3] ?? null) },
    hold_hours: { p25: sig(h.hours[0] ?? null), median: sig(h.hours[1] ?? null), p75: sig(h.hours[2] ?? null), share_to_resolution: sig(h.share_to_resolution) },
    style: { taker_share: sig(t), kind: t === null ? 'unknown' : t >= R.takerStyleMin ? 'taker' : t <= R.makerStyleMax ? 'maker' : 'mixed' },
    clip_usd: { p25: sig(f.clip[0] ?? null), median: sig(f.clip[1] ?? null), p75: sig(f.clip[2] ?? null) },
    rhythm: {
      active_days_per_week: f.n_fills ? sig(Math.min(7, f.active_days / weeks)) : null,
      trades_per_week: f.n_fills ? sig(f.n_fills / weeks) : null,
      peak_hour_utc: peak ? num0(peak.h) : null,
      peak_hour_share: peak && f.n_fills ? sig(num0(peak.n) / f.n_fills) : null,
      last_active_at: f.last_us === null ? null : isoUs(f.last_us),
    },
    edge: {
      ranked: edge.ranked,
      n_resolved_markets: edge.n_resolved_markets,
      calibration_excess_z: sig(edge.calibration_excess_z),
      calibration_excess_z_pctile: sig(edge.calibration_excess_z_pctile),
      skill_deviate: sig(edge.skill_deviate),
      alpha_1h_cents: sig(edge.alpha_1h_cents),
      alpha_24h_cents: sig(edge.alpha_24h_cents),
    },
    tags: edge.tags,
    open: { positions: num0(open?.n), cost_usdc: Math.round(num0(open?.cost) * 100) / 100, mark_value_usdc: Math.round(num0(open?.value) * 100) / 100 },
    copy: { copyRecommended: verdict.copyRecommended, copiesBadly: verdict.copiesBadly, title: verdict.title },
  };
  return { ...body, rules: playbookRules(body) };
}

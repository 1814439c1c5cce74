import { z } from 'zod';
import { MIN_RESOLVED_MARKETS } from '../calibration.ts';
import { COPY_RULES } from '../copy-rules.ts';
import type { SmartMoneyTag } from '../tags.ts';
import { clamp01, fmt, pct, usd0 } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Verdict: the copy flags and the verdict of copy fitness (ranking rows carry the same verdict)
// ---------------------------------------------------------------------------------------------------------------

export const Tone = z.enum(['good', 'caution', 'bad']);
export type Tone = z.infer<typeof Tone>;

/** The spec's verdict object (ranking rows carry the same shape). */
export const Verdict = z.object({
  overall: z.number().min(0).max(100),
  tone: Tone,
  title: z.string(),
  topTag: z.object({ label: z.string(), tone: Tone, title: z.string() }),
  copyRecommended: z.boolean(),
  copiesBadly: z.boolean(),
});
export type Verdict = z.infer<typeof Verdict>;

export const COPY_FLAGS = ['scalper', 'market_maker', 'thin_markets'] as const;
export type CopyFlag = (typeof COPY_FLAGS)[number];

export interface VerdictInputs {
  n_fills: number;
  ranked: boolean;
  n_resolved_markets: number;
  calibration_excess_z: number | null;
  skill_deviate: number | null;
  sharp: boolean;
  alpha_24h_cents: number | null;
  median_hold_hours: number | null;
  n_closed_holds: number;
  taker_share: number | null;
  median_clip_usd: number | null;
  two_sided_share: number | null;
  thin_fill_share: number | null;
  tags: readonly SmartMoneyTag[];
}

/** The behaviour flags that make a wallet copy badly (COPY_RULES; each needs COPY_RULES.minFillsForStyle fills). */
export function copyFlags(v: VerdictInputs): CopyFlag[] {
  const r = COPY_RULES;
  if (v.n_fills < r.minFillsForStyle) return [];
  const flags: CopyFlag[] = [];
  if (v.n_closed_holds >= r.minClosedHolds && v.median_hold_hours !== null && v.median_hold_hours < r.scalperMaxMedianHoldHours) flags.push('scalper');
  if (
    v.taker_share !== null &&
    v.taker_share < r.makerMaxTakerShare &&
    ((v.two_sided_share ?? 0) >= r.makerMinTwoSidedShare || (v.median_clip_usd !== null && v.median_clip_usd < r.tinyClipUsd))
  ) {
    flags.push('market_maker');
  }
  if (v.thin_fill_share !== null && v.thin_fill_share >= r.thinMaxFillShare) flags.push('thin_markets');
  return flags;
}

export function flagTitle(f: CopyFlag, v: VerdictInputs): string {
  switch (f) {
    case 'scalper':
      return `Median hold ${fmt((v.median_hold_hours ?? 0) * 60, 0)} min: gone before a follower can react`;
    case 'market_maker':
      return `Provides liquidity on ${pct(1 - (v.taker_share ?? 0))} of fills and quotes both sides: earns the spread a copier pays`;
    case 'thin_markets':
      return `${pct(v.thin_fill_share)} of fills in markets under ${usd0(COPY_RULES.thinLiquidityUsd)} liquidity: a copier moves the price`;
  }
}

/**
 * The verdict: copiesBadly = any copy flag; copyRecommended = ranked AND (sharp OR skill_deviate > 1) AND 24 h
 * alpha > 0 AND NOT copiesBadly. overall = 100 * (0.45 S + 0.25 A + 0.30 C) with S = clamp(deviate / 3) when ranked
 * (0 otherwise), A = clamp(alpha_24h / 5 cents), C = 0 when copiesBadly else 1. tone: good when recommended, bad
 * when copiesBadly, caution otherwise. topTag: the first copy flag, else sharp, else the evidence state.
 */
export function verdictFor(v: VerdictInputs): Verdict {
  const r = COPY_RULES;
  const flags = copyFlags(v);
  const copiesBadly = flags.length > 0;
  const skilled = v.ranked && (v.sharp || (v.skill_deviate !== null && v.skill_deviate > r.recommendMinDeviate));
  const copyRecommended = skilled && v.alpha_24h_cents !== null && v.alpha_24h_cents > 0 && !copiesBadly;
  const S = v.ranked && v.skill_deviate !== null ? clamp01(v.skill_deviate / r.skillDeviateFull) : 0;
  const A = v.alpha_24h_cents !== null ? clamp01(v.alpha_24h_cents / r.alphaCentsFull) : 0;
  const C = copiesBadly ? 0 : 1;
  const overall = Math.round(100 * (r.weights.skill * S + r.weights.alpha * A + r.weights.copyable * C));
  const tone: Tone = copyRecommended ? 'good' : copiesBadly ? 'bad' : 'caution';
  const zTxt = `z ${fmt(v.calibration_excess_z, 2)} over ${v.n_resolved_markets} resolved markets`;
  let title: string;
  if (copyRecommended) title = 'Copyable edge';
  else if (copiesBadly) title = { scalper: 'Scalper: copies badly', market_maker: 'Market maker: copies badly', thin_markets: 'Thin markets: copies badly' }[flags[0]!];
  else if (v.n_resolved_markets === 0) title = 'No resolved markets yet';
  else if (!v.ranked) title = 'Not enough resolved markets';
  else if (!skilled) title = 'No proven edge over the price';
  else title = 'Edge at resolution, not within 24 h';
  let topTag: Verdict['topTag'];
  if (copiesBadly) topTag = { label: flags[0]!, tone: 'bad', title: flagTitle(flags[0]!, v) };
  else if (v.sharp) topTag = { label: 'sharp', tone: 'good', title: `Beats the price: ${zTxt}` };
  else if (skilled) topTag = { label: 'skilled', tone: 'good', title: `Beats the price: ${zTxt}` };
  else if (!v.ranked) topTag = { label: 'unranked', tone: 'caution', title: `${v.n_resolved_markets} of ${MIN_RESOLVED_MARKETS} resolved markets needed to rank` };
  else topTag = { label: 'no_edge', tone: 'caution', title: `Picks won about as often as their prices implied: ${zTxt}` };
  return { overall, tone, title, topTag, copyRecommended, copiesBadly };
}

/**
 * Smart-money tags (signal.smart_money): documented rules over the wallet metrics. Each rule names the metrics it
 * reads, so the tag can be explained to a user ("sharp: 212 resolved markets, z = -4.1").
 */
import { MIN_RESOLVED_MARKETS } from './calibration.ts';
import { benjaminiHochbergCutoff, normalCdf } from './stats.ts';
import { drain } from './steps.ts';

export const SMART_MONEY_TAGS = ['whale', 'sharp', 'early_bird', 'contrarian'] as const;
export type SmartMoneyTag = (typeof SMART_MONEY_TAGS)[number];

export const TAG_RULES = {
  /**
   * Ranked wallets whose skew-corrected evidence of beating the price (skill_deviate) survives a Benjamini-Hochberg
   * test at a 10% false-discovery rate across all ranked wallets (thousands are tested at once: a plain z <= -2
   * would tag ~2% of skill-less wallets by luck), and never below 2 standard errors.
   */
  sharp: { minResolvedMarkets: MIN_RESOLVED_MARKETS, falseDiscoveryRate: 0.1, minDeviate: 2 },
  whale: { minTrades: 10, minMedianFillUsd: 2_500, minVolumeUsd: 50_000 },
  /** liquidity providers quote every new market from its first minute: their passive fills are not early conviction */
  early_bird: { minPositions: 20, maxMedianEntryAge: 0.1, minTakerShare: 0.3 },
  contrarian: { minBuys: 20, minContrarianShare: 0.5, dropCents: 5 },
} as const;

/**
 * The same rules in SQL over a wallet-metrics relation (columns named as in a_wallet_metrics); `sharpMinDeviate` is
 * the cohort's cutoff from sharpCutoff(). It is rendered as a DOUBLE from its string form: exact (a bare literal
 * would be parsed as a DECIMAL), and +infinity (no discovery) reads 'Infinity'::DOUBLE instead of a column name.
 */
export function tagsSql(sharpMinDeviate: number): string {
  const r = TAG_RULES;
  return `list_filter([
      CASE WHEN trade_count >= ${r.whale.minTrades} AND median_fill_usdc >= ${r.whale.minMedianFillUsd} AND lifetime_volume_usdc >= ${r.whale.minVolumeUsd} THEN 'whale' END,
      CASE WHEN calibration_ranked AND skill_deviate >= '${sharpMinDeviate}'::DOUBLE THEN 'sharp' END,
      CASE WHEN n_entry_positions >= ${r.early_bird.minPositions} AND median_entry_age <= ${r.early_bird.maxMedianEntryAge} AND taker_share >= ${r.early_bird.minTakerShare} THEN 'early_bird' END,
      CASE WHEN n_buys >= ${r.contrarian.minBuys} AND contrarian_buy_share >= ${r.contrarian.minContrarianShare} THEN 'contrarian' END
    ], x -> x IS NOT NULL)`;
}

export interface TagInputs {
  trade_count: number;
  median_fill_usdc: number | null;
  lifetime_volume_usdc: number;
  calibration_ranked: boolean;
  skill_deviate: number | null;
  n_entry_positions: number;
  taker_share: number | null;
  median_entry_age: number | null;
  n_buys: number;
  contrarian_buy_share: number | null;
}

/** Deviates per step of sharpCutoffSteps (~50 ms on a slow day) */
const SHARP_SLICE = 1 << 18;

/** The sharp cutoff on skill_deviate for a cohort: BH at the rule's FDR over the ranked wallets' deviates. */
export function sharpCutoff(rankedDeviates: ArrayLike<number>): number {
  return drain(sharpCutoffSteps(rankedDeviates));
}

/**
 * sharpCutoff in steps: the p-values a slice at a time, their sort, the smallest discovery a slice at a time (in one
 * piece it held a full-scale service's event loop ~0.5 s per refresh).
 */
export function* sharpCutoffSteps(rankedDeviates: ArrayLike<number>, slice = SHARP_SLICE): Generator<void, number> {
  const { falseDiscoveryRate, minDeviate } = TAG_RULES.sharp;
  const n = rankedDeviates.length;
  const p = new Float64Array(n);
  for (let a = 0; a < n; a += slice) {
    for (let i = a; i < Math.min(n, a + slice); i++) p[i] = 1 - normalCdf(rankedDeviates[i]!);
    yield;
  }
  const cutoffP = benjaminiHochbergCutoff(p, falseDiscoveryRate);
  if (cutoffP === null) return Number.POSITIVE_INFINITY;
  yield;
  // the smallest deviate whose p-value is still a discovery
  let w = Number.POSITIVE_INFINITY;
  for (let a = 0; a < n; a += slice) {
    for (let i = a; i < Math.min(n, a + slice); i++) if (p[i]! <= cutoffP && rankedDeviates[i]! < w) w = rankedDeviates[i]!;
    yield;
  }
  return Math.max(minDeviate, w);
}

export function smartMoneyTags(m: TagInputs, sharpMinDeviate: number): SmartMoneyTag[] {
  const r = TAG_RULES;
  const tags: SmartMoneyTag[] = [];
  if (m.trade_count >= r.whale.minTrades && (m.median_fill_usdc ?? 0) >= r.whale.minMedianFillUsd && m.lifetime_volume_usdc >= r.whale.minVolumeUsd) tags.push('whale');
  if (m.calibration_ranked && m.skill_deviate !== null && m.skill_deviate >= sharpMinDeviate) tags.push('sharp');
  if (m.n_entry_positions >= r.early_bird.minPositions && m.median_entry_age !== null && m.median_entry_age <= r.early_bird.maxMedianEntryAge && (m.taker_share ?? 0) >= r.early_bird.minTakerShare) tags.push('early_bird');
  if (m.n_buys >= r.contrarian.minBuys && (m.contrarian_buy_share ?? 0) >= r.contrarian.minContrarianShare) tags.push('contrarian');
  return tags;
}

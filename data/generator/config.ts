/** Scale and behaviour parameters of the synthetic venue, derived from (wallets, days, seed). */
export interface VenueOptions {
  wallets: number;
  days: number;
  seed: number;
  /** Venue end (exclusive), ISO; fixed so that output never depends on the wall clock. */
  end: string;
  /** Path of the real-market CSV that shapes questions, categories, volumes and lifetimes. */
  realMarketsCsv: string;
}

export const DEFAULT_END = '2026-11-01T00:00:00Z';

export const ARCHETYPES = [
  'noise',
  'sharp',
  'favourite_buyer',
  'longshot_buyer',
  'whale',
  'early_bird',
  'contrarian',
  'market_maker',
  'copy_trader',
  'sybil',
] as const;
export type Archetype = (typeof ARCHETYPES)[number];
export const ARCHETYPE_CODE: Record<Archetype, number> = Object.fromEntries(ARCHETYPES.map((a, i) => [a, i])) as Record<Archetype, number>;

/** Share of wallets per archetype (market makers and sybils are counted separately). */
export const ARCHETYPE_SHARE: Record<Exclude<Archetype, 'market_maker' | 'sybil'>, number> = {
  noise: 0.82,
  sharp: 0.03,
  favourite_buyer: 0.035,
  longshot_buyer: 0.035,
  whale: 0.006,
  early_bird: 0.025,
  contrarian: 0.025,
  copy_trader: 0.024,
};

/** Per-archetype trading style. Sizes are USDC per clip; counts are positions per wallet. */
export interface Style {
  clipMedianUsd: number;
  clipSigma: number;
  takerShare: number;
  exitProb: number;
  /** positions: min, tail exponent, cap (a Pareto draw) */
  positions: [number, number, number];
  clipsPerEntry: number;
}

export const STYLE: Record<Archetype, Style> = {
  noise: { clipMedianUsd: 25, clipSigma: 1.3, takerShare: 0.95, exitProb: 0.3, positions: [1, 1.15, 4000], clipsPerEntry: 1.3 },
  sharp: { clipMedianUsd: 350, clipSigma: 0.9, takerShare: 0.75, exitProb: 0.15, positions: [60, 1.6, 3000], clipsPerEntry: 2.2 },
  favourite_buyer: { clipMedianUsd: 600, clipSigma: 1.0, takerShare: 0.9, exitProb: 0.05, positions: [40, 1.6, 2000], clipsPerEntry: 1.5 },
  longshot_buyer: { clipMedianUsd: 15, clipSigma: 1.0, takerShare: 0.9, exitProb: 0.1, positions: [40, 1.6, 2000], clipsPerEntry: 1.2 },
  whale: { clipMedianUsd: 9000, clipSigma: 0.7, takerShare: 0.6, exitProb: 0.25, positions: [30, 1.6, 1000], clipsPerEntry: 2.5 },
  early_bird: { clipMedianUsd: 200, clipSigma: 1.0, takerShare: 0.6, exitProb: 0.3, positions: [40, 1.6, 2000], clipsPerEntry: 1.5 },
  contrarian: { clipMedianUsd: 150, clipSigma: 1.0, takerShare: 0.5, exitProb: 0.35, positions: [40, 1.6, 2000], clipsPerEntry: 1.5 },
  market_maker: { clipMedianUsd: 0, clipSigma: 0, takerShare: 0.05, exitProb: 0, positions: [0, 1, 0], clipsPerEntry: 1 },
  copy_trader: { clipMedianUsd: 60, clipSigma: 0.8, takerShare: 1.0, exitProb: 0.2, positions: [0, 1, 0], clipsPerEntry: 1 },
  sybil: { clipMedianUsd: 300, clipSigma: 0.6, takerShare: 0.9, exitProb: 0.2, positions: [60, 1.6, 1500], clipsPerEntry: 1 },
};

export const SECONDS_PER_HOUR = 3600;
export const SECONDS_PER_DAY = 86400;

/** Markets opened per venue day, scaled with the wallet count (a bigger crowd trades more questions). */
export function marketsPerDay(wallets: number): number {
  return Math.max(4, Math.min(250, Math.round(wallets / 4000)));
}

export function marketMakerCount(wallets: number): number {
  return Math.max(3, Math.round(wallets / 20000));
}

/** Fraction of wallets in sybil clusters, and of (non-cluster) wallets sharing an owner. */
export const SYBIL_SHARE = 0.004;
export const MULTI_OWNER_SHARE = 0.02;
export const NEVER_REDEEM_SHARE = 0.08;
/** Share of standard (non-neg-risk) markets that resolve INVALID. */
export const INVALID_SHARE = 0.01;

/** Thresholds of the copy-fitness verdict and its style flags (core/trader/verdict.ts verdictFor, wallet-style.ts, rankings). */
export const COPY_RULES = {
  /** Behaviour flags need at least this many fill legs (a handful of fills says nothing about a style). */
  minFillsForStyle: 10,
  /** scalper: median hold below this many hours over at least `minClosedHolds` finished holds. */
  scalperMaxMedianHoldHours: 1,
  minClosedHolds: 5,
  /** market maker: taker share below this, and either a two-sided book or tiny clips. */
  makerMaxTakerShare: 0.3,
  makerMinTwoSidedShare: 0.5,
  tinyClipUsd: 20,
  /** thin markets: a market is thin below this venue-reported liquidity; "mostly" is this share of fills. */
  thinLiquidityUsd: 10_000,
  thinMaxFillShare: 0.5,
  /** copyRecommended: ranked, and sharp or skill_deviate above this, and positive 24 h alpha, and no flag. */
  recommendMinDeviate: 1,
  /** verdict.overall = 100 * (w.skill * S + w.alpha * A + w.copyable * C); see verdictFor(). */
  weights: { skill: 0.45, alpha: 0.25, copyable: 0.3 },
  /** S saturates at this skill_deviate, A at this 24 h alpha in cents. */
  skillDeviateFull: 3,
  alphaCentsFull: 5,
} as const;

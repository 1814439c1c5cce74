import { COPY_RULES } from '../copy-rules.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rules and bounds (documented in docs/methodology.md)
// ---------------------------------------------------------------------------------------------------------------

/** Page sizes of the positions and activity feeds. */
export const FEED_LIMIT = { min: 1, max: 200, default: 50 } as const;

export const TOP_ROI_RULE = {
  /** A position must have cost at least this much (buy notional + taker fees) so that dust does not dominate. */
  minCostUsd: 50,
  limit: { min: 1, max: 100, default: 20 },
  sinceDays: { min: 1, max: 365, default: 30 },
} as const;

export { COPY_RULES };

export const BUDGET_RULES = {
  /** Capital at work is sampled at T and every 24 h before it over this many days. */
  windowDays: 90,
  /** The venue's smallest order. */
  minOrderUsd: 1,
  /** A scaled fill fits a market when it is at most this share of the market's liquidity. */
  liquidityCapShare: 0.02,
  /** The follower can mirror within liquidity when at most this share of scaled fills exceed the cap. */
  maxOverCapShare: 0.1,
  /** Budget too small when more than this share of scaled clips fall below the minimum order. */
  maxBelowMinShare: 0.25,
  defaultBudgetUsd: 1_000,
} as const;

export const PLAYBOOK_RULES = {
  maxCategories: 5,
  /** A category's own calibration is shown from this many resolved markets in it. */
  minCategoryMarkets: 10,
  /** taker / maker style thresholds on the taker share of fills */
  takerStyleMin: 0.7,
  makerStyleMax: 0.3,
  /** one category is a "focus" when it has at least this share of volume */
  focusShare: 0.4,
} as const;

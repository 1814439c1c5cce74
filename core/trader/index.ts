/**
 * Traders: one wallet's calibration record, positions feed, activity feed, copy-fitness bundle and agent playbook,
 * plus the venue-wide top-ROI trades. Everything is "as of T": only rows stamped <= T are read (fills, inventory,
 * mids, resolutions), and cohort-relative figures (the calibration percentile, the sharp cutoff) come from an
 * analytics build whose as_of is <= T, never a later one.
 *
 * Per-wallet figures are computed from the venue tables, not read from a build, so that they are exact at any T. To
 * keep that cheap, positionsSql / walletAlphaSql / walletFeaturesSql are run with the venue relations they read
 * (fill_legs, inventory_legs, inventory_events, mids) narrowed to the wallet by CTEs of the same names (walletScope);
 * every result is still filtered on wallet_id, so the narrowing only ever saves time, it never decides a figure.
 *
 * Unknown wallets (no row in `wallets`) give null; the surfaces map that to not_found. Invalid options (limits,
 * cursors, scopes) throw a ZodError from the exported query schemas; the surfaces map that to a 400.
 *
 * docs/methodology.md "Traders: feeds, copy-fitness, playbook" records every rule and threshold used here.
 */

export { BUDGET_RULES, COPY_RULES, FEED_LIMIT, PLAYBOOK_RULES, TOP_ROI_RULE } from './rules.ts';
export { resolveTrader, walletPositionsSql, walletScopeSql, type TraderIdentity } from './identity.ts';
export { Tone, Verdict, COPY_FLAGS, copyFlags, verdictFor, type CopyFlag, type VerdictInputs } from './verdict.ts';
export { TraderCalibration, TraderCalibrationBin, traderCalibration } from './calibration.ts';
export { TraderPerformance, traderPerformance } from './performance.ts';
export {
  POSITION_STATUSES,
  TraderPosition,
  TraderPositions,
  TraderPositionsQuery,
  traderPositions,
  type TraderPositionsQueryInput,
} from './positions.ts';
export {
  ACTIVITY_TYPES,
  ActivityInventory,
  ActivityItem,
  ActivityTrade,
  MAX_ACTIVITY_LEGS,
  TraderActivity,
  TraderActivityQuery,
  traderActivity,
  type ActivityType,
  type TraderActivityQueryInput,
} from './activity.ts';
export { TopRoiQuery, TopRoiTrade, TopRoiTrades, topRoiTrades, traderTid, type TopRoiQueryInput } from './top-roi.ts';
export { holdEpisodesSql } from './profile.ts';
export { CopyFitness, CopyFitnessQuery, copyFitness, type CopyFitnessQueryInput } from './copy-fitness.ts';
export { TraderPlaybook, playbookRules, traderPlaybook } from './playbook.ts';

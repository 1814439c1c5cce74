/**
 * The anonymous namespace /v1/public/*: teaser views with masked identity and gated deep metrics. Pure queries over a
 * QueryRunner, "as of T" like the rest of the core, with the zod schemas the web layer validates and documents with.
 *
 * Identity: list surfaces (search, leaderboard, top-ROI) never carry a proxy wallet; a trader appears by its opaque
 * tid (core/trader/top-roi.ts traderTid, a keyed HMAC). A tid is resolved back to its wallet by TidIndex: tids this process
 * emitted are remembered (bounded), any other is found by recomputing the HMAC inside DuckDB over `wallets`.
 *
 * Fields the venue has no data for (sports metadata, venue-reported open interest, comment counts...) keep their
 * place with honest empty values: "" for a string, [] for an array, null for a number. A number is never 0 because
 * it is unknown (spec rule 6 generalized); docs/api-public.md lists every such field.
 *
 * Reused, not re-derived: 24 h market volume / holders / mids (core/market.ts marketTeaserStats), consensus and top
 * holders (core/market.ts), smart-money cohorts (walletCohortSql), top-ROI (core/trader/top-roi.ts topRoiTrades), the tid
 * (traderTid), wallet lookup (resolveTrader), percentiles (a_wallet_metrics *_pctile of the analytics build), ranks
 * and composites (the stored preset board a_board), metric catalogue (METRICS).
 */

export {
  MARKET_STATES,
  NoQuery,
  PUBLIC_BOARD,
  PublicError,
  buildAsOf,
  marketStateSql,
  publicT,
  winnerSql,
  type MarketState,
} from './shared.ts';
export { ADDRESS_RE, TID_RE, TidIndex } from './tids.ts';
export {
  NO_CLAIMS,
  PublicFounding,
  PublicReferrer,
  ReferrerQuery,
  publicFounding,
  publicReferrer,
  type ClaimLookup,
  type PublicClaim,
} from './directory.ts';
export { MID_FRESHNESS, MID_SOURCE, MidFreshness, PublicEvent, PublicQuestion, SlugParam, publicEvent } from './events.ts';
export { MarketIdParam, PUBLIC_TOP_HOLDERS, PublicMarketTeaser, marketIdByPublicId, publicMarketTeaser } from './markets.ts';
export {
  EmptyTraderTeaser,
  LOCKED_METRICS,
  PublicTraderDisplay,
  PublicTraderResponse,
  PublicTraderTeaser,
  TEASER_METRICS,
  TraderRefParam,
  publicTraderTeaser,
  traderRef,
  type TraderRef,
} from './traders.ts';
export { PublicTopRoiQuery, PublicTopRoiTrade, PublicTopRoiTrades, publicTopRoi, rememberTopRoiTids } from './top-roi.ts';
export { PublicTopEvents, TOP_EVENTS_LIMIT, TopEventsQuery, publicTopEvents } from './top-events.ts';
export {
  EventSearchResult,
  MarketSearchResult,
  PublicSearch,
  SEARCH_KINDS,
  SEARCH_LIMIT,
  SEARCH_QUERY_MAX,
  SearchQuery,
  SearchResult,
  TraderSearchResult,
  publicSearch,
  searchKindOf,
} from './search.ts';
export { LEADERBOARD_LIMIT, LeaderboardQuery, LeaderboardRow, PublicBoard, PublicBoards, PublicLeaderboard, publicBoard, publicBoards, publicLeaderboard } from './leaderboard.ts';
export { PublicPulse, publicPulse } from './pulse.ts';

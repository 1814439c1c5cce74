/**
 * The anonymous namespace /v1/public/*: teaser views with masked identity and gated deep metrics. Pure queries over a
 * QueryRunner, "as of T" like the rest of the core, with the zod schemas the web layer validates and documents with.
 *
 * Identity: list surfaces (search, leaderboard, top-ROI) never carry a proxy wallet; a trader appears by its opaque
 * tid (core/trader.ts traderTid, a keyed HMAC). A tid is resolved back to its wallet by TidIndex: tids this process
 * emitted are remembered (bounded), any other is found by recomputing the HMAC inside DuckDB over `wallets`.
 *
 * Fields the venue has no data for (sports metadata, venue-reported open interest, comment counts...) keep their
 * place with honest empty values: "" for a string, [] for an array, null for a number. A number is never 0 because
 * it is unknown (spec rule 6 generalized); docs/api-public.md lists every such field.
 *
 * Reused, not re-derived: 24 h market volume / holders / mids (core/market.ts marketTeaserStats), consensus and top
 * holders (core/market.ts), smart-money cohorts (walletCohortSql), top-ROI (core/trader.ts topRoiTrades), the tid
 * (traderTid), wallet lookup (resolveTrader), percentiles (a_wallet_metrics *_pctile of the analytics build), ranks
 * and composites (the stored preset board a_board), metric catalogue (METRICS).
 */
import { createHash } from 'node:crypto';
import { getAddress } from 'viem';
import { z } from 'zod';
import { MIN_RESOLVED_MARKETS } from './calibration.ts';
import {
  PublicTopHolder,
  SMART_MONEY_COHORTS,
  marketConsensus,
  marketIdByConditionId,
  marketTeaserStats,
  toPublicTopHolders,
  topHolders,
  walletCohortSql,
} from './market.ts';
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';
import { METRICS, presetBySlug, type MetricId } from './rankings.ts';
import { TopRoiQuery, resolveTrader, topRoiTrades, traderTid, type TopRoiQueryInput } from './trader.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rules and bounds (docs/api-public.md)
// ---------------------------------------------------------------------------------------------------------------

/** The default preset board of the public surfaces (trader teaser rank, leaderboard): every active wallet can enter it. */
export const PUBLIC_BOARD = 'top-pnl';
export const LEADERBOARD_LIMIT = { min: 1, max: 25, default: 25 } as const;
export const TOP_EVENTS_LIMIT = { min: 1, max: 50, default: 10 } as const;
export const SEARCH_LIMIT = { min: 1, max: 25, default: 10 } as const;
export const SEARCH_QUERY_MAX = 100;
export const PUBLIC_TOP_HOLDERS = 5;
/** Mid freshness classes by age: live up to 2 h (mids are sampled hourly), recent up to 24 h, then stale. */
export const MID_FRESHNESS = { liveMaxSeconds: 2 * 3600, recentMaxSeconds: 24 * 3600 } as const;
export const MID_SOURCE = 'mid_history';
/** Metrics the trader teaser shows; every other measured catalogue metric counts in locked_metric_count. */
export const TEASER_METRICS: readonly MetricId[] = ['realized_pnl', 'total_pnl', 'volume', 'trade_count', 'markets_traded', 'win_rate'];
export const MARKET_STATES = ['UPCOMING', 'LIVE', 'CLOSED', 'RESOLVED'] as const;
export type MarketState = (typeof MARKET_STATES)[number];

const DAY_MS = 86_400_000;

// ---------------------------------------------------------------------------------------------------------------
// Errors and small helpers
// ---------------------------------------------------------------------------------------------------------------

export class PublicError extends Error {
  constructor(
    readonly code: 'not_found' | 'analytics_missing',
    message: string,
  ) {
    super(message);
    this.name = 'PublicError';
  }
}

function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}
const num0 = (v: unknown): number => num(v) ?? 0;
const int0 = (v: unknown): number => Math.round(num0(v));
const str = (v: unknown): string => (v === null || v === undefined ? '' : String(v));
function isoOrEmpty(v: unknown): string {
  if (v === null || v === undefined) return '';
  const d = v instanceof Date ? v : new Date(typeof v === 'bigint' ? Number(v) : (v as string | number));
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}
const ageSeconds = (t: AsOf, then: Date) => Math.max(0, Math.floor((t.getTime() - then.getTime()) / 1000));
const sqlStr = (s: string) => `'${s.replaceAll("'", "''")}'`;
const WALLET_ADDRESS_IN_TEXT = /0x[0-9a-fA-F]{40}(?![0-9a-fA-F])/;
/** A name that would print a wallet address (e.g. a username set to one) is replaced by `fallback`. */
function safeLabel(s: string, fallback: string): string {
  return WALLET_ADDRESS_IN_TEXT.test(s) ? fallback : s;
}

/** The analytics build's as_of, or null when there is none. */
export async function buildAsOf(db: QueryRunner): Promise<Date | null> {
  const [t] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM information_schema.tables WHERE table_name = 'a_meta'`);
  if (!num0(t?.n)) return null;
  const [m] = await db.all<{ as_of: Date }>(`SELECT as_of FROM a_meta ORDER BY as_of DESC LIMIT 1`);
  return m ? new Date(m.as_of) : null;
}

/** The build's as_of; PublicError analytics_missing without a build (or, with `boards`, without its ranking tables). */
async function requireBuild(db: QueryRunner, boards = false): Promise<Date> {
  const b = await buildAsOf(db);
  if (!b) throw new PublicError('analytics_missing', 'no analytics build yet');
  if (boards) {
    const [t] = await db.all<{ n: number }>(`SELECT count(DISTINCT table_name)::INTEGER AS n FROM information_schema.tables WHERE table_name IN ('a_board', 'a_rank_base')`);
    if (num0(t?.n) < 2) throw new PublicError('analytics_missing', 'the analytics build has no ranking boards');
  }
  return b;
}

/** The T of a public request: the caller's clock, never before the build (a build is never read as of an earlier T). */
export function publicT(now: AsOf, build: Date | null): Date {
  return build && build.getTime() > now.getTime() ? build : now;
}

/**
 * SQL expression of a market's state at T over markets `m` LEFT JOIN resolutions `r`: RESOLVED once its resolution is
 * stamped <= T; CLOSED once trading ended (actual close <= T, or the scheduled close passed) and no resolution yet;
 * UPCOMING before trading opens; LIVE otherwise.
 */
export function marketStateSql(T: string, m = 'm', r = 'r'): string {
  return `CASE WHEN ${r}.resolved_at IS NOT NULL AND ${r}.resolved_at <= ${T} THEN 'RESOLVED'
    WHEN (${m}.closed_at IS NOT NULL AND ${m}.closed_at <= ${T}) OR ${m}.end_date <= ${T} THEN 'CLOSED'
    WHEN ${m}.trading_opens_at > ${T} THEN 'UPCOMING' ELSE 'LIVE' END`;
}

/** winner_outcome: YES / NO / INVALID once resolved by T; "" before, and for a tie or multi-outcome payout (no winner). */
export function winnerSql(T: string, r = 'r'): string {
  return `CASE WHEN ${r}.resolved_at IS NOT NULL AND ${r}.resolved_at <= ${T} THEN coalesce(${r}.winner, '') ELSE '' END`;
}

// ---------------------------------------------------------------------------------------------------------------
// Opaque trader ids
// ---------------------------------------------------------------------------------------------------------------

export const TID_RE = /^t_[A-Za-z0-9_-]{22}$/;
export const ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

/**
 * tid -> wallet address. traderTid is a keyed HMAC, so a tid cannot be decoded: the tids this process emitted are
 * remembered (most recent `capacity`), and any other is found by computing HMAC-SHA256 in SQL over every wallet
 * (sha256 of the RFC 2104 inner and outer pads; the same digest as node:crypto, checked by the tests).
 */
export class TidIndex {
  private readonly seen = new Map<string, string>();
  private readonly ipadHex: string;
  private readonly opadHex: string;

  constructor(
    readonly key: string | Uint8Array,
    private readonly capacity = 100_000,
  ) {
    traderTid(key, '0x'); // validates the key (>= 16 bytes)
    let k = typeof key === 'string' ? Buffer.from(key, 'utf8') : Buffer.from(key);
    if (k.length > 64) k = createHash('sha256').update(k).digest();
    const ipad = Buffer.alloc(64, 0x36);
    const opad = Buffer.alloc(64, 0x5c);
    for (let i = 0; i < k.length; i++) {
      ipad[i] = ipad[i]! ^ k[i]!;
      opad[i] = opad[i]! ^ k[i]!;
    }
    this.ipadHex = ipad.toString('hex');
    this.opadHex = opad.toString('hex');
  }

  /** The tid of an address, remembered for resolve(). */
  tid(address: string): string {
    const tid = traderTid(this.key, address);
    this.remember(tid, address);
    return tid;
  }

  remember(tid: string, address: string): void {
    const a = address.toLowerCase();
    this.seen.delete(tid);
    this.seen.set(tid, a);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }

  /** The parameters $1 and $2 of tidSql(): the key's HMAC inner and outer pads, hex. */
  sqlParams(): [string, string] {
    return [this.ipadHex, this.opadHex];
  }

  /** SQL computing the tid of `addressExpr` (lowercase 0x address); $1 = inner pad hex, $2 = outer pad hex. */
  static tidSql(addressExpr: string): string {
    const inner = `unhex(sha256(unhex($1) || encode('tid:v1:' || lower(${addressExpr}))))`;
    return `'t_' || replace(replace(left(to_base64(unhex(sha256(unhex($2) || ${inner}))), 22), '+', '-'), '/', '_')`;
  }

  /** The lowercase address of a tid, or null when no wallet has it. */
  async resolve(db: QueryRunner, tid: string): Promise<string | null> {
    if (!TID_RE.test(tid)) return null;
    const known = this.seen.get(tid);
    if (known) {
      this.remember(tid, known);
      return known;
    }
    // A tid this process never handed out: look it up in a tid → wallet table (built once, then extended with
    // wallets added since), so no request pays for hashing every wallet.
    await this.syncMap(db);
    const [r] = await db.all<{ address: string }>(`SELECT w.address FROM ${TID_MAP} m JOIN wallets w USING (wallet_id) WHERE m.tid = $1 LIMIT 1`, [tid]);
    if (!r) return null;
    this.remember(tid, r.address);
    return r.address.toLowerCase();
  }

  private mapLock: Promise<void> = Promise.resolve();
  private mappedUpTo: number | null = null;

  /** Build (first call) or extend the connection's tid map; calls are serialized. Also used to warm it at start. */
  syncMap(db: QueryRunner): Promise<void> {
    const run = this.mapLock.then(async () => {
      if (this.mappedUpTo === null) {
        await db.run(`CREATE OR REPLACE TEMP TABLE ${TID_MAP} AS SELECT wallet_id, ${TidIndex.tidSql('address')} AS tid FROM wallets`, this.sqlParams());
      } else {
        await db.run(`INSERT INTO ${TID_MAP} SELECT wallet_id, ${TidIndex.tidSql('address')} FROM wallets WHERE wallet_id > $3`, [...this.sqlParams(), this.mappedUpTo]);
      }
      const [m] = await db.all<{ m: number | null }>(`SELECT max(wallet_id) AS m FROM ${TID_MAP}`);
      this.mappedUpTo = m?.m === null || m?.m === undefined ? -1 : Number(m.m);
    });
    this.mapLock = run.catch(() => {});
    return run;
  }
}

/** per-connection temp table: tid → wallet_id under this process's key */
const TID_MAP = 'public_tid_map';

// ---------------------------------------------------------------------------------------------------------------
// Claims (what the account directory tells the public surfaces)
// ---------------------------------------------------------------------------------------------------------------

/** The public part of a proxy claim (web-api/directory.ts ProxyClaim has this shape). */
export interface PublicClaim {
  claimed: boolean;
  founding: boolean;
  eoa: string | null;
  x_username: string | null;
  display_name: string | null;
}
/** Claims for lowercase proxy addresses; unclaimed addresses are absent. */
export type ClaimLookup = (addresses: readonly string[]) => Map<string, PublicClaim>;
export const NO_CLAIMS: ClaimLookup = () => new Map();

// ---------------------------------------------------------------------------------------------------------------
// Output schemas
// ---------------------------------------------------------------------------------------------------------------

const count = z.number().int().nonnegative();
const usd = z.number();
const price = z.number().min(0).max(1);
/** A number the venue or the service may not have: null, never 0 (docs/api-public.md). */
const maybe = <T extends z.ZodNumber>(s: T) => s.nullable();

export const MidFreshness = z.strictObject({
  /** the mid's timestamp; "" when the token has no mid <= T */
  as_of: z.string(),
  age_seconds: maybe(z.number().nonnegative()),
  class: z.enum(['live', 'recent', 'stale', 'none']),
  source: z.string(),
});
export type MidFreshness = z.infer<typeof MidFreshness>;

export const PublicQuestion = z.strictObject({
  condition_id: z.string(),
  title: z.string(),
  label: z.string(),
  group: z.string(),
  sports_market_type: z.string(),
  line: maybe(z.number()),
  yes_mid: maybe(price),
  no_mid: maybe(price),
  yes_mid_as_of: z.string(),
  no_mid_as_of: z.string(),
  yes_token_id: z.string(),
  no_token_id: z.string(),
  volume_24h_usdc: usd.nonnegative(),
  fills_24h: count,
  resolved: z.boolean(),
  winner_outcome: z.string(),
  market_state: z.enum(MARKET_STATES),
  scheduled_close: z.string(),
  neg_risk_market_id: z.string(),
  yes_mid_freshness: MidFreshness,
  no_mid_freshness: MidFreshness,
});
export type PublicQuestion = z.infer<typeof PublicQuestion>;

export const PublicEvent = z.strictObject({
  slug: z.string(),
  canonical_slug: z.string(),
  event_id: z.number().int(),
  title: z.string(),
  category: z.string(),
  subcategory: z.string(),
  series_title: z.string(),
  series_slug: z.string(),
  series_recurrence: z.string(),
  sport_code: z.string(),
  sport_name: z.string(),
  sport_discipline: z.string(),
  team_names: z.array(z.string()),
  team_abbrs: z.array(z.string()),
  game_id: maybe(z.number().int()),
  live: z.boolean(),
  ended: z.boolean(),
  score: z.string(),
  period: z.string(),
  resolution_source: z.string(),
  neg_risk: z.boolean(),
  dates: z.strictObject({
    created: z.string(),
    trading_opens: z.string(),
    first_trade: z.string(),
    event_start: z.string(),
    scheduled_close: z.string(),
    actual_close: z.string(),
  }),
  totals: z.strictObject({
    questions: count,
    open_questions: count,
    resolved_questions: count,
    volume_24h_usdc: usd.nonnegative(),
    fills_24h: count,
    traders_24h: count,
  }),
  venue_reported: z.strictObject({
    open_interest: maybe(z.number()),
    volume_24h_shares: maybe(z.number()),
    liquidity: maybe(z.number()),
    comment_count: maybe(z.number().int()),
  }),
  fixture_events: z.array(z.strictObject({ event_id: z.number().int(), slug: z.string(), title: z.string(), market_count: count, is_current: z.boolean() })),
  questions: z.array(PublicQuestion),
  live_check: z.strictObject({ mode: z.string(), stale: count, refreshed: count, deferred: count, fetch_ms: count }),
  freshness: z.strictObject({ mids_as_of: z.string() }),
  neg_risk_groups: z.array(z.strictObject({ neg_risk_market_id: z.string(), n_questions: count, n_priced: count, sum_yes: maybe(z.number()) })),
  as_of: z.string(),
});
export type PublicEvent = z.infer<typeof PublicEvent>;

export const PublicMarketTeaser = z.strictObject({
  condition_id: z.string(),
  market_title: z.string(),
  market_category: z.string(),
  market_slug: z.string(),
  end_date: z.string(),
  resolved: z.boolean(),
  market_state: z.enum(MARKET_STATES),
  winner_outcome: z.string(),
  current_mid: maybe(price),
  last_24h_volume_usdc: usd.nonnegative(),
  last_24h_fills: count,
  positioner_count: count,
  smart_money_positioner_count: count,
  consensus_latest: z.strictObject({ service_consensus_yes: maybe(price), market_mid: maybe(price), n_positioners: count }),
  top_holders: z.array(PublicTopHolder).max(PUBLIC_TOP_HOLDERS),
  locked: z.strictObject({ positioning: z.boolean(), flow: z.boolean(), fills: z.boolean() }),
  mid_age_seconds: maybe(count),
  snapshot_age_seconds: count,
});
export type PublicMarketTeaser = z.infer<typeof PublicMarketTeaser>;

export const PublicTraderDisplay = z.strictObject({
  username: z.string(),
  pseudonym: z.string(),
  profile_image: z.string(),
  x_username: z.string(),
  verified: z.boolean(),
  eoa: z.string(),
  claimed: z.boolean(),
  founding: z.boolean(),
});

export const PublicTraderTeaser = z.strictObject({
  /** EIP-55 address when asked by address; the tid itself when asked by tid (a tid is never unmasked) */
  proxy_wallet: z.string(),
  /** rank on the public board (PUBLIC_BOARD); null: not on it (gated out), never a bottom rank */
  rank: maybe(z.number().int().positive()),
  composite_score: maybe(z.number()),
  total_pnl: usd,
  realized_pnl: usd,
  pnl_under_review: z.boolean(),
  lifetime_volume_usdc: usd.nonnegative(),
  trade_count: count,
  markets_traded: count,
  /** null: no resolved position (unmeasured), never 0 */
  win_rate_pct: maybe(z.number().min(0).max(100)),
  percentiles: z.strictObject({
    total_pnl: maybe(z.number().min(0).max(100)),
    realized_pnl: maybe(z.number().min(0).max(100)),
    lifetime_volume_usdc: maybe(z.number().min(0).max(100)),
    win_rate_pct: maybe(z.number().min(0).max(100)),
  }),
  display: PublicTraderDisplay,
  first_trade_at: z.string(),
  last_trade_at: z.string(),
  locked_metric_count: count,
  snapshot_age_seconds: count,
  wallet_count: count,
});
export type PublicTraderTeaser = z.infer<typeof PublicTraderTeaser>;
/** A known wallet without activity as of the build: the empty success body. */
export const EmptyTraderTeaser = z.strictObject({});
export const PublicTraderResponse = z.union([PublicTraderTeaser, EmptyTraderTeaser]);
export type PublicTraderResponse = z.infer<typeof PublicTraderResponse>;

export const PublicTopRoiTrade = z.strictObject({
  rank: z.number().int().positive(),
  tid: z.string(),
  wallet_label: z.string(),
  display: z.strictObject({ username: z.string(), pseudonym: z.string() }),
  market_title: z.string(),
  market_slug: z.string(),
  category: z.string(),
  cost_usdc: z.number().positive(),
  profit_usdc: z.number(),
  roi_x: z.number().nonnegative(),
  entry_price: price,
  resolved_at: z.string(),
});
export const PublicTopRoiTrades = z.strictObject({ trades: z.array(PublicTopRoiTrade) });
export type PublicTopRoiTrades = z.infer<typeof PublicTopRoiTrades>;
/** The public top-ROI query: core/trader.ts TopRoiQuery, strict (unknown parameters are a 400). */
export const PublicTopRoiQuery = TopRoiQuery.strict();

export const PublicTopEvents = z.strictObject({
  events: z.array(z.strictObject({ slug: z.string(), title: z.string(), volume_24h_usdc: usd.nonnegative(), questions: count })),
  as_of: z.string(),
});
export type PublicTopEvents = z.infer<typeof PublicTopEvents>;

export const SEARCH_KINDS = ['address', 'condition_id', 'token_id', 'username', 'text'] as const;
export const TraderSearchResult = z.strictObject({
  type: z.literal('trader'),
  tid: z.string(),
  wallet_label: z.string(),
  username: z.string(),
  pseudonym: z.string(),
  /** the claiming account's display name; "" when unclaimed or unset */
  display_name: z.string(),
  verified: z.boolean(),
  /** null when the wallet has no metrics (has_metrics false) */
  total_pnl: maybe(z.number()),
  volume: maybe(z.number().nonnegative()),
  has_metrics: z.boolean(),
});
export const MarketSearchResult = z.strictObject({
  type: z.literal('market'),
  condition_id: z.string(),
  title: z.string(),
  slug: z.string(),
  category: z.string(),
  market_state: z.enum(MARKET_STATES),
  event_slug: z.string(),
});
export const EventSearchResult = z.strictObject({
  type: z.literal('event'),
  slug: z.string(),
  canonical_slug: z.string(),
  title: z.string(),
  category: z.string(),
  questions: count,
});
export const SearchResult = z.discriminatedUnion('type', [TraderSearchResult, MarketSearchResult, EventSearchResult]);
export type SearchResult = z.infer<typeof SearchResult>;
export const PublicSearch = z.strictObject({ query: z.string(), kind: z.enum(SEARCH_KINDS), results: z.array(SearchResult) });
export type PublicSearch = z.infer<typeof PublicSearch>;

export const LeaderboardRow = z.strictObject({
  rank: z.number().int().positive(),
  tid: z.string(),
  wallet_label: z.string(),
  display: z.strictObject({ username: z.string(), pseudonym: z.string(), verified: z.boolean() }),
  composite_score: z.number(),
  realized_pnl: usd,
  lifetime_volume_usdc: usd.nonnegative(),
  trade_count: count,
  win_rate_pct: maybe(z.number().min(0).max(100)),
  n_resolved_markets: count,
  /** null: unmeasured (fewer than MIN_RESOLVED_MARKETS resolved markets); never 0 */
  calibration_excess_z: maybe(z.number()),
  calibration_excess_z_pctile: maybe(z.number().min(0).max(100)),
});
export type LeaderboardRow = z.infer<typeof LeaderboardRow>;
export const PublicLeaderboard = z.strictObject({
  preset: z.string(),
  title: z.string(),
  rows: z.array(LeaderboardRow).max(LEADERBOARD_LIMIT.max),
  total_rows: count,
  snapshot_age_seconds: count,
  as_of: z.string(),
});
export type PublicLeaderboard = z.infer<typeof PublicLeaderboard>;

export const PublicPulse = z.strictObject({
  window_hours: z.literal(24),
  volume_24h_usdc: usd.nonnegative(),
  fills_24h: count,
  traders_24h: count,
  markets_traded_24h: count,
  markets_resolved_24h: count,
  open_markets: count,
  /** share of the window's fill-leg notional traded by smart-money wallets (either side); null when nothing traded */
  smart_money_volume_share: maybe(z.number().min(0).max(1)),
  smart_money_traders_24h: count,
  labels_as_of: z.string(),
  snapshot_age_seconds: count,
  as_of: z.string(),
});
export type PublicPulse = z.infer<typeof PublicPulse>;

export const PublicFounding = z.strictObject({
  spots_total: count,
  spots_claimed: count,
  spots_remaining: count,
  open: z.boolean(),
  as_of: z.string(),
});
export type PublicFounding = z.infer<typeof PublicFounding>;

export const PublicReferrer = z.strictObject({ display_name: z.string(), x_username: z.string() });
export type PublicReferrer = z.infer<typeof PublicReferrer>;

// ---------------------------------------------------------------------------------------------------------------
// Query schemas (strict: an unknown parameter is a ZodError, which the surfaces map to 400)
// ---------------------------------------------------------------------------------------------------------------

const intParam = (b: { min: number; max: number; default: number }) => z.coerce.number().int().min(b.min).max(b.max).default(b.default);
export const TopEventsQuery = z.strictObject({ limit: intParam(TOP_EVENTS_LIMIT) });
export const SearchQuery = z.strictObject({ q: z.string().trim().min(1).max(SEARCH_QUERY_MAX), limit: intParam(SEARCH_LIMIT) });
export const LeaderboardQuery = z.strictObject({ limit: intParam(LEADERBOARD_LIMIT) });
export const NoQuery = z.strictObject({});
export const ReferrerQuery = z.strictObject({ code: z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/, 'an invite code: letters, digits, _ or -') });
/** Event slug, market id (condition id, token id or market slug) */
export const SlugParam = z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'a slug: letters, digits, -, _ or .');
export const MarketIdParam = SlugParam;
export const TraderRefParam = z
  .string()
  .refine((s) => ADDRESS_RE.test(s) || TID_RE.test(s), 'a proxy wallet (0x + 40 hex) or a tid (t_ + 22 characters)');

// ---------------------------------------------------------------------------------------------------------------
// Event (fixture) view
// ---------------------------------------------------------------------------------------------------------------

function freshness(ts: unknown, T: AsOf): MidFreshness {
  if (ts === null || ts === undefined) return { as_of: '', age_seconds: null, class: 'none', source: MID_SOURCE };
  const d = new Date(ts as Date);
  const age = ageSeconds(T, d);
  const cls = age <= MID_FRESHNESS.liveMaxSeconds ? 'live' : age <= MID_FRESHNESS.recentMaxSeconds ? 'recent' : 'stale';
  return { as_of: d.toISOString(), age_seconds: age, class: cls, source: MID_SOURCE };
}

/** The public view of one event (fixture) by its slug, as of T. PublicError not_found for an unknown slug. */
export async function publicEvent(db: QueryRunner, slug: string, now: AsOf): Promise<PublicEvent> {
  const T = publicT(now, await buildAsOf(db));
  const TL = tsLiteral(T);
  const [ev] = await db.all<Record<string, unknown>>(`SELECT * FROM events WHERE slug = $1 ORDER BY event_id LIMIT 1`, [slug]);
  if (!ev) throw new PublicError('not_found', `no event with slug ${slug}`);
  const eventId = num0(ev.event_id);
  const from = tsLiteral(new Date(T.getTime() - DAY_MS));
  const qs = await db.all<Record<string, unknown>>(
    `WITH q AS (SELECT m.*, r.winner, r.resolved_at FROM markets m LEFT JOIN resolutions r ON r.market_id = m.market_id AND r.resolved_at <= ${TL}
        WHERE m.event_id = ${eventId}),
      f AS (SELECT market_id, sum(size_usdc)::DOUBLE AS vol, count(*)::INTEGER AS n FROM fills
        WHERE market_id IN (SELECT market_id FROM q) AND ts > ${from} AND ts <= ${TL} GROUP BY 1),
      md AS (SELECT market_id, outcome_index, arg_max(mid, ts) AS mid, max(ts) AS ts FROM mids
        WHERE market_id IN (SELECT market_id FROM q) AND ts <= ${TL} GROUP BY 1, 2)
    SELECT q.market_id, q.condition_id, q.question, q.yes_token_id, q.no_token_id, q.end_date, q.closed_at, q.neg_risk_market_id,
      q.trading_opens_at, q.liquidity_usdc, ${marketStateSql(TL, 'q', 'q')} AS state, ${winnerSql(TL, 'q')} AS winner_outcome,
      coalesce(f.vol, 0) AS vol, coalesce(f.n, 0) AS n, y.mid AS yes_mid, y.ts AS yes_ts, n.mid AS no_mid, n.ts AS no_ts
    FROM q LEFT JOIN f USING (market_id)
      LEFT JOIN md y ON y.market_id = q.market_id AND y.outcome_index = 0
      LEFT JOIN md n ON n.market_id = q.market_id AND n.outcome_index = 1
    ORDER BY q.market_id`,
  );
  const [agg] = await db.all<{ traders: number; first_trade: Date | null }>(
    `WITH f AS (SELECT * FROM fills WHERE market_id IN (SELECT market_id FROM markets WHERE event_id = ${eventId}) AND ts <= ${TL})
    SELECT (SELECT count(DISTINCT w) FROM (SELECT taker_id AS w FROM f WHERE ts > ${from} UNION ALL SELECT maker_id FROM f WHERE ts > ${from})) AS traders,
      (SELECT min(ts) FROM f) AS first_trade`,
  );
  const fixture = await db.all<Record<string, unknown>>(
    `SELECT e.event_id, e.slug, e.title, (SELECT count(*) FROM markets m WHERE m.event_id = e.event_id)::INTEGER AS market_count
    FROM events e WHERE e.canonical_slug = $1 ORDER BY (e.slug = e.canonical_slug) DESC, e.event_id`,
    [str(ev.canonical_slug)],
  );

  const questions: PublicQuestion[] = qs.map((q) => {
    const state = String(q.state) as MarketState;
    return {
      condition_id: str(q.condition_id),
      title: str(q.question),
      label: '',
      group: '',
      sports_market_type: '',
      line: null,
      yes_mid: num(q.yes_mid),
      no_mid: num(q.no_mid),
      yes_mid_as_of: isoOrEmpty(q.yes_ts),
      no_mid_as_of: isoOrEmpty(q.no_ts),
      yes_token_id: str(q.yes_token_id),
      no_token_id: str(q.no_token_id),
      volume_24h_usdc: num0(q.vol),
      fills_24h: int0(q.n),
      resolved: state === 'RESOLVED',
      winner_outcome: str(q.winner_outcome),
      market_state: state,
      scheduled_close: isoOrEmpty(q.end_date),
      neg_risk_market_id: str(q.neg_risk_market_id),
      yes_mid_freshness: freshness(q.yes_ts, T),
      no_mid_freshness: freshness(q.no_ts, T),
    };
  });
  const open = questions.filter((q) => q.market_state === 'LIVE' || q.market_state === 'UPCOMING');
  const ended = questions.length > 0 && open.length === 0;
  const startAt = ev.start_at ?? null;
  const started = startAt === null ? qs.some((q) => new Date(q.trading_opens_at as Date).getTime() <= T.getTime()) : new Date(startAt as Date).getTime() <= T.getTime();
  const closes = qs.map((q) => (q.closed_at && new Date(q.closed_at as Date).getTime() <= T.getTime() ? new Date(q.closed_at as Date).getTime() : null));
  const actualClose = ended && closes.every((c) => c !== null) ? new Date(Math.max(...(closes as number[]))).toISOString() : '';
  const opens = qs.map((q) => new Date(q.trading_opens_at as Date).getTime());
  const midTimes = qs.flatMap((q) => [q.yes_ts, q.no_ts]).filter((t) => t !== null && t !== undefined).map((t) => new Date(t as Date).getTime());
  const liquidity = qs.map((q) => num(q.liquidity_usdc)).filter((x): x is number => x !== null);
  const groups = new Map<string, PublicQuestion[]>();
  for (const q of questions) if (q.neg_risk_market_id) groups.set(q.neg_risk_market_id, [...(groups.get(q.neg_risk_market_id) ?? []), q]);

  return {
    slug: str(ev.slug),
    canonical_slug: str(ev.canonical_slug),
    event_id: eventId,
    title: str(ev.title),
    category: str(ev.category),
    subcategory: str(ev.subcategory),
    series_title: '',
    series_slug: str(ev.series_slug),
    series_recurrence: '',
    sport_code: '',
    sport_name: '',
    sport_discipline: '',
    team_names: [],
    team_abbrs: [],
    game_id: null,
    live: started && !ended && open.some((q) => q.market_state === 'LIVE'),
    ended,
    score: '',
    period: '',
    resolution_source: '',
    neg_risk: Boolean(ev.neg_risk),
    dates: {
      created: isoOrEmpty(ev.created_at),
      trading_opens: opens.length ? new Date(Math.min(...opens)).toISOString() : '',
      first_trade: isoOrEmpty(agg?.first_trade),
      event_start: isoOrEmpty(ev.start_at),
      scheduled_close: isoOrEmpty(ev.end_at),
      actual_close: actualClose,
    },
    totals: {
      questions: questions.length,
      open_questions: open.length,
      resolved_questions: questions.filter((q) => q.resolved).length,
      volume_24h_usdc: questions.reduce((s, q) => s + q.volume_24h_usdc, 0),
      fills_24h: questions.reduce((s, q) => s + q.fills_24h, 0),
      traders_24h: int0(agg?.traders),
    },
    venue_reported: {
      open_interest: null,
      volume_24h_shares: null,
      liquidity: liquidity.length ? liquidity.reduce((s, x) => s + x, 0) : null,
      comment_count: null,
    },
    fixture_events: fixture.map((f) => ({
      event_id: num0(f.event_id),
      slug: str(f.slug),
      title: str(f.title),
      market_count: int0(f.market_count),
      is_current: num0(f.event_id) === eventId,
    })),
    questions,
    live_check: {
      mode: 'off',
      // mids of open questions that are not live (nothing is refreshed from the venue: mode off)
      stale: open.reduce((s, q) => s + (q.yes_mid_freshness.class !== 'live' ? 1 : 0) + (q.no_mid_freshness.class !== 'live' ? 1 : 0), 0),
      refreshed: 0,
      deferred: 0,
      fetch_ms: 0,
    },
    freshness: { mids_as_of: midTimes.length ? new Date(Math.max(...midTimes)).toISOString() : '' },
    neg_risk_groups: [...groups.entries()].map(([id, g]) => {
      const priced = g.filter((q) => q.yes_mid !== null);
      return { neg_risk_market_id: id, n_questions: g.length, n_priced: priced.length, sum_yes: priced.length ? priced.reduce((s, q) => s + (q.yes_mid ?? 0), 0) : null };
    }),
    as_of: T.toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Market teaser
// ---------------------------------------------------------------------------------------------------------------

/**
 * A market's internal id from a public id: a condition id (0x + 64 hex, any case), a token id (decimal uint256, of
 * either outcome) or a market slug. Null when nothing matches.
 */
export async function marketIdByPublicId(db: QueryRunner, id: string): Promise<number | null> {
  if (/^0x[0-9a-fA-F]{64}$/.test(id)) return marketIdByConditionId(db, id);
  if (/^[0-9]{1,78}$/.test(id)) {
    const tokenId = id.replace(/^0+(?=\d)/, '');
    const [r] = await db.all<{ market_id: number }>(`SELECT market_id FROM tokens WHERE token_id = $1 LIMIT 1`, [tokenId]);
    if (r) return num0(r.market_id);
  }
  const [r] = await db.all<{ market_id: number }>(`SELECT market_id FROM markets WHERE slug = $1 ORDER BY market_id LIMIT 1`, [id]);
  return r ? num0(r.market_id) : null;
}

/** The public market teaser; PublicError not_found for an unknown id, analytics_missing without a build. */
export async function publicMarketTeaser(db: QueryRunner, id: string, now: AsOf): Promise<PublicMarketTeaser> {
  const build = await requireBuild(db);
  const T = publicT(now, build);
  const TL = tsLiteral(T);
  const marketId = await marketIdByPublicId(db, id);
  if (marketId === null) throw new PublicError('not_found', `no market ${id}`);
  const [m] = await db.all<Record<string, unknown>>(
    `SELECT m.condition_id, m.question, m.category, m.slug, m.end_date, ${marketStateSql(TL)} AS state, ${winnerSql(TL)} AS winner_outcome
    FROM markets m LEFT JOIN resolutions r USING (market_id) WHERE m.market_id = ${marketId}`,
  );
  if (!m) throw new PublicError('not_found', `no market ${id}`);
  const stats = await marketTeaserStats(db, marketId, T);
  const consensus = await marketConsensus(db, marketId, T);
  const holders = toPublicTopHolders(await topHolders(db, marketId, T, PUBLIC_TOP_HOLDERS));
  const state = String(m.state) as MarketState;
  return {
    condition_id: str(m.condition_id),
    market_title: str(m.question),
    market_category: str(m.category),
    market_slug: str(m.slug),
    end_date: isoOrEmpty(m.end_date),
    resolved: state === 'RESOLVED',
    market_state: state,
    winner_outcome: str(m.winner_outcome),
    current_mid: stats.current_mid,
    last_24h_volume_usdc: stats.last_24h_volume_usdc,
    last_24h_fills: stats.last_24h_fills,
    positioner_count: stats.positioner_count,
    smart_money_positioner_count: stats.smart_money_positioner_count,
    consensus_latest: consensus,
    top_holders: holders,
    locked: { positioning: true, flow: true, fills: true },
    mid_age_seconds: stats.mid_age_seconds,
    snapshot_age_seconds: ageSeconds(T, build),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Trader teaser
// ---------------------------------------------------------------------------------------------------------------

export type TraderRef = { kind: 'address'; address: string } | { kind: 'tid'; tid: string };

export function traderRef(s: string): TraderRef {
  return TID_RE.test(s) ? { kind: 'tid', tid: s } : { kind: 'address', address: s };
}

/** Catalogue metrics the teaser hides (locked_metric_count counts those measured for the wallet). */
export const LOCKED_METRICS: readonly MetricId[] = (Object.keys(METRICS) as MetricId[]).filter((id) => !TEASER_METRICS.includes(id));

/**
 * The trader teaser: headline numbers and percentiles from the analytics build, rank and composite on PUBLIC_BOARD
 * (the board row of the wallet's user), claim flags from the account directory. By tid, the proxy wallet and the
 * claimer's EOA stay masked. PublicError not_found: no such wallet. The empty body {}: a known wallet with no fill
 * as of the build.
 */
export async function publicTraderTeaser(db: QueryRunner, ref: TraderRef, now: AsOf, tids: TidIndex, claims: ClaimLookup = NO_CLAIMS): Promise<PublicTraderResponse> {
  const build = await requireBuild(db, true);
  const T = publicT(now, build);
  const address = ref.kind === 'address' ? ref.address : await tids.resolve(db, ref.tid);
  const who = address ? await resolveTrader(db, address) : null;
  if (!who) throw new PublicError('not_found', ref.kind === 'tid' ? `no trader ${ref.tid}` : `no trader ${ref.address}`);
  const measured = LOCKED_METRICS.map((id) => `coalesce((${METRICS[id].measured}), false)::INTEGER`).join(' + ');
  const [r] = await db.all<Record<string, unknown>>(
    `WITH b AS (SELECT *, ${measured} AS locked_metric_count FROM a_rank_base WHERE wallet_id = ${who.wallet_id})
    SELECT b.*, bd.rank AS board_rank, bd.composite_score AS board_composite
    FROM b LEFT JOIN a_board bd ON bd.preset = ${sqlStr(PUBLIC_BOARD)} AND bd.user_key = b.user_key`,
  );
  if (!r) return {};
  const [pop] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_wallet_metrics`);
  const claim = claims([who.address]).get(who.address);
  const masked = ref.kind === 'tid';
  return {
    proxy_wallet: masked ? ref.tid : getAddress(who.address),
    rank: num(r.board_rank),
    composite_score: num(r.board_composite),
    total_pnl: num0(r.total_pnl),
    realized_pnl: num0(r.realized_pnl),
    pnl_under_review: num0(r.cluster_size) > 1,
    lifetime_volume_usdc: num0(r.lifetime_volume_usdc),
    trade_count: int0(r.trade_count),
    markets_traded: int0(r.markets_traded),
    win_rate_pct: num(r.win_rate_pct),
    percentiles: {
      total_pnl: num(r.total_pnl_pctile),
      realized_pnl: num(r.realized_pnl_pctile),
      lifetime_volume_usdc: num(r.lifetime_volume_usdc_pctile),
      win_rate_pct: num(r.win_rate_pct_pctile),
    },
    display: {
      username: safeLabel(str(r.username), ''),
      pseudonym: str(r.pseudonym),
      profile_image: str(r.profile_image),
      x_username: str(claim?.x_username),
      verified: Boolean(r.verified),
      eoa: masked ? '' : str(claim?.eoa),
      claimed: Boolean(claim?.claimed),
      founding: Boolean(claim?.founding),
    },
    first_trade_at: isoOrEmpty(r.first_trade_at),
    last_trade_at: isoOrEmpty(r.last_trade_at),
    locked_metric_count: int0(r.locked_metric_count),
    snapshot_age_seconds: ageSeconds(T, build),
    wallet_count: int0(pop?.n),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Top-ROI (core/trader.ts topRoiTrades, in the spec's public shape)
// ---------------------------------------------------------------------------------------------------------------

export async function publicTopRoi(db: QueryRunner, now: AsOf, opts: TopRoiQueryInput, tids: TidIndex): Promise<PublicTopRoiTrades> {
  const T = publicT(now, await buildAsOf(db));
  const r = await topRoiTrades(db, T, opts, tids.key);
  const body: PublicTopRoiTrades = {
    trades: r.trades.map((t) => {
      return {
        rank: t.rank,
        tid: t.tid,
        wallet_label: safeLabel(t.wallet_label, t.display.pseudonym),
        display: { username: safeLabel(t.display.username ?? '', ''), pseudonym: t.display.pseudonym },
        market_title: t.market_title,
        market_slug: t.market_slug,
        category: t.category,
        cost_usdc: t.cost_usdc,
        profit_usdc: t.profit_usdc,
        roi_x: t.roi_x,
        entry_price: t.entry_price,
        resolved_at: t.resolved_at,
      };
    }),
  };
  await rememberTopRoiTids(db, tids, body);
  return body;
}
/**
 * Remember the wallets behind the tids of a top-ROI answer, so that /trader/{tid} resolves them without a scan: the
 * candidates are the wallets with the row's pseudonym (a handful), and only the one whose tid matches is kept.
 */
export async function rememberTopRoiTids(db: QueryRunner, tids: TidIndex, body: PublicTopRoiTrades): Promise<void> {
  const pseudonyms = [...new Set(body.trades.map((t) => t.display.pseudonym))];
  if (!pseudonyms.length) return;
  const want = new Set(body.trades.map((t) => t.tid));
  const rows = await db.all<{ address: string }>(`SELECT address FROM wallets WHERE pseudonym IN (${pseudonyms.map(sqlStr).join(', ')})`);
  for (const r of rows) {
    const tid = traderTid(tids.key, r.address);
    if (want.has(tid)) tids.remember(tid, r.address);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Top events
// ---------------------------------------------------------------------------------------------------------------

/**
 * Fixtures (canonical slugs) with at least one LIVE question at T, ranked by the service's own 24 h USDC volume (the
 * taker notional of fills in (T - 24 h, T]) over every question of the fixture's events; fixtures with no volume are
 * left out. title: the canonical event's title; questions: every question of the fixture.
 */
export async function publicTopEvents(db: QueryRunner, now: AsOf, limit: number = TOP_EVENTS_LIMIT.default): Promise<PublicTopEvents> {
  const n = TopEventsQuery.parse({ limit }).limit;
  const T = publicT(now, await buildAsOf(db));
  const TL = tsLiteral(T);
  const rows = await db.all<{ slug: string; title: string; vol: number; questions: number }>(
    `WITH ms AS (
        SELECT m.market_id, e.canonical_slug, ${marketStateSql(TL)} AS state
        FROM markets m JOIN events e USING (event_id) LEFT JOIN resolutions r ON r.market_id = m.market_id),
      v AS (SELECT market_id, sum(size_usdc) AS vol FROM fills WHERE ts > ${TL} - INTERVAL 24 HOUR AND ts <= ${TL} GROUP BY 1),
      fx AS (
        SELECT canonical_slug, count(*)::INTEGER AS questions, coalesce(sum(v.vol), 0)::DOUBLE AS vol, bool_or(state = 'LIVE') AS open
        FROM ms LEFT JOIN v USING (market_id) GROUP BY 1)
    SELECT fx.canonical_slug AS slug,
      coalesce((SELECT min_by(title, event_id) FROM events e WHERE e.slug = fx.canonical_slug),
               (SELECT min_by(title, event_id) FROM events e WHERE e.canonical_slug = fx.canonical_slug)) AS title,
      fx.vol, fx.questions
    FROM fx WHERE fx.open AND fx.vol > 0 ORDER BY fx.vol DESC, fx.canonical_slug LIMIT ${n}`,
  );
  return { events: rows.map((r) => ({ slug: str(r.slug), title: str(r.title), volume_24h_usdc: num0(r.vol), questions: int0(r.questions) })), as_of: T.toISOString() };
}

// ---------------------------------------------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------------------------------------------

/** What a search string is: an address, a condition id, a token id, an exact username (checked later) or text. */
export function searchKindOf(q: string): 'address' | 'condition_id' | 'token_id' | 'text' {
  if (ADDRESS_RE.test(q)) return 'address';
  if (/^0x[0-9a-fA-F]{64}$/.test(q)) return 'condition_id';
  if (/^[0-9]{6,78}$/.test(q)) return 'token_id';
  return 'text';
}


/**
 * Search: exact lookups (an address, a condition id, a token id), else text over usernames (exact, prefix,
 * substring), event titles/slugs and market questions/slugs, case-insensitive. Traders come back by tid only; ordered
 * by match quality (exact, prefix, substring), then traders, events, markets, then by volume.
 */
export async function publicSearch(db: QueryRunner, qIn: string, limitIn: number | undefined, now: AsOf, tids: TidIndex, claims: ClaimLookup = NO_CLAIMS): Promise<PublicSearch> {
  const { q, limit } = SearchQuery.parse({ q: qIn, limit: limitIn });
  const build = await buildAsOf(db);
  const T = publicT(now, build);
  const TL = tsLiteral(T);
  const hasMetrics = build !== null;
  const metricsJoin = hasMetrics ? 'LEFT JOIN a_wallet_metrics am USING (wallet_id)' : '';
  const metricsCols = hasMetrics ? 'am.total_pnl, am.lifetime_volume_usdc, am.wallet_id IS NOT NULL AS has_metrics' : 'NULL AS total_pnl, NULL AS lifetime_volume_usdc, false AS has_metrics';
  const base = searchKindOf(q);
  type Scored = { rel: number; typ: number; vol: number; r: SearchResult };
  const out: Scored[] = [];

  const traders = async (where: string, params: unknown[], rel: string) => {
    const rows = await db.all<Record<string, unknown>>(
      `SELECT w.address, w.username, w.pseudonym, w.verified, ${metricsCols}, ${rel} AS rel
      FROM wallets w ${metricsJoin} WHERE ${where}
      ORDER BY rel, ${hasMetrics ? 'am.lifetime_volume_usdc DESC NULLS LAST,' : ''} w.wallet_id LIMIT ${limit}`,
      params,
    );
    const c = claims(rows.map((r) => String(r.address).toLowerCase()));
    for (const r of rows) {
      const address = String(r.address).toLowerCase();
      const pseudonym = str(r.pseudonym);
      const username = safeLabel(str(r.username), '');
      const has = Boolean(r.has_metrics);
      out.push({
        rel: num0(r.rel),
        typ: 0,
        vol: num0(r.lifetime_volume_usdc),
        r: {
          type: 'trader',
          tid: tids.tid(address),
          wallet_label: username || pseudonym,
          username,
          pseudonym,
          display_name: safeLabel(str(c.get(address)?.display_name), ''),
          verified: Boolean(r.verified),
          total_pnl: has ? num(r.total_pnl) : null,
          volume: has ? num(r.lifetime_volume_usdc) : null,
          has_metrics: has,
        },
      });
    }
  };
  const markets = async (where: string, params: unknown[], rel: string) => {
    const rows = await db.all<Record<string, unknown>>(
      `SELECT m.condition_id, m.question, m.slug, m.category, ${marketStateSql(TL)} AS state, coalesce(e.slug, '') AS event_slug, ${rel} AS rel, m.volume_usdc
      FROM markets m LEFT JOIN resolutions r USING (market_id) LEFT JOIN events e USING (event_id)
      WHERE ${where} ORDER BY rel, m.volume_usdc DESC NULLS LAST, m.market_id LIMIT ${limit}`,
      params,
    );
    for (const r of rows) {
      out.push({
        rel: num0(r.rel),
        typ: 2,
        vol: num0(r.volume_usdc),
        r: { type: 'market', condition_id: str(r.condition_id), title: str(r.question), slug: str(r.slug), category: str(r.category), market_state: String(r.state) as MarketState, event_slug: str(r.event_slug) },
      });
    }
  };
  const events = async (where: string, params: unknown[], rel: string) => {
    const rows = await db.all<Record<string, unknown>>(
      `SELECT e.slug, e.canonical_slug, e.title, e.category, ${rel} AS rel,
        (SELECT count(*) FROM markets m WHERE m.event_id = e.event_id)::INTEGER AS questions,
        (SELECT sum(volume_usdc) FROM markets m WHERE m.event_id = e.event_id) AS vol
      FROM events e WHERE ${where} ORDER BY rel, vol DESC NULLS LAST, e.event_id LIMIT ${limit}`,
      params,
    );
    for (const r of rows) {
      out.push({
        rel: num0(r.rel),
        typ: 1,
        vol: num0(r.vol),
        r: { type: 'event', slug: str(r.slug), canonical_slug: str(r.canonical_slug), title: str(r.title), category: str(r.category), questions: int0(r.questions) },
      });
    }
  };

  let kind: PublicSearch['kind'] = base;
  if (base === 'address') {
    await traders('w.address = $1', [q.toLowerCase()], '0');
  } else if (base === 'condition_id') {
    await markets('m.condition_id = $1', [q.toLowerCase()], '0');
  } else if (base === 'token_id') {
    await markets('m.yes_token_id = $1 OR m.no_token_id = $1', [q.replace(/^0+(?=\d)/, '')], '0');
  }
  if (base === 'text' || (base === 'token_id' && out.length === 0)) {
    kind = 'text';
    const needle = q.replace(/^@/, '').toLowerCase();
    const rel = (col: string) => `CASE WHEN lower(${col}) = $1 THEN 0 WHEN starts_with(lower(${col}), $1) THEN 1 ELSE 2 END`;
    if (needle) {
      await traders(`contains(lower(w.username), $1)`, [needle], rel('w.username'));
      if (out.some((o) => o.r.type === 'trader' && o.rel === 0)) kind = 'username';
    }
    const text = q.toLowerCase();
    await events(`contains(lower(e.title), $1) OR contains(lower(e.slug), $1)`, [text], `least(${rel('e.title')}, ${rel('e.slug')})`);
    await markets(`contains(lower(m.question), $1) OR contains(lower(m.slug), $1)`, [text], `least(${rel('m.question')}, ${rel('m.slug')})`);
  }
  out.sort((a, b) => a.rel - b.rel || a.typ - b.typ || b.vol - a.vol);
  // the echo never prints a wallet either: an address in q is echoed as its tid
  const query = q.replace(new RegExp(WALLET_ADDRESS_IN_TEXT.source, 'g'), (a) => traderTid(tids.key, a));
  return { query, kind, results: out.slice(0, limit).map((o) => o.r) };
}

// ---------------------------------------------------------------------------------------------------------------
// Leaderboard
// ---------------------------------------------------------------------------------------------------------------

/**
 * The anonymous top of PUBLIC_BOARD: masked identity (tid, username or pseudonym), headline numbers, and the
 * calibration z with its percentile, both null for a wallet under MIN_RESOLVED_MARKETS resolved markets (unmeasured:
 * never 0 and never a bottom rank).
 */
export async function publicLeaderboard(db: QueryRunner, now: AsOf, limitIn: number | undefined, tids: TidIndex): Promise<PublicLeaderboard> {
  const { limit } = LeaderboardQuery.parse({ limit: limitIn });
  const build = await requireBuild(db, true);
  const T = publicT(now, build);
  const preset = presetBySlug(PUBLIC_BOARD);
  const rows = await db.all<Record<string, unknown>>(
    `SELECT b.rank, b.address, b.username, b.pseudonym, b.verified, b.composite_score, b.realized_pnl, b.lifetime_volume_usdc,
      b.trade_count, b.win_rate_pct, b.n_resolved_markets, b.calibration_ranked, b.calibration_excess_z, m.calibration_excess_z_pctile
    FROM a_board b LEFT JOIN a_wallet_metrics m USING (wallet_id)
    WHERE b.preset = ${sqlStr(preset.slug)} AND b.rank <= ${limit} ORDER BY b.rank`,
  );
  const [t] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_board WHERE preset = ${sqlStr(preset.slug)}`);
  return {
    preset: preset.slug,
    title: preset.title,
    rows: rows.map((r) => {
      const measured = Boolean(r.calibration_ranked) && int0(r.n_resolved_markets) >= MIN_RESOLVED_MARKETS;
      const username = safeLabel(str(r.username), '');
      const pseudonym = str(r.pseudonym);
      return {
        rank: int0(r.rank),
        tid: tids.tid(String(r.address)),
        wallet_label: username || pseudonym,
        display: { username, pseudonym, verified: Boolean(r.verified) },
        composite_score: num0(r.composite_score),
        realized_pnl: num0(r.realized_pnl),
        lifetime_volume_usdc: num0(r.lifetime_volume_usdc),
        trade_count: int0(r.trade_count),
        win_rate_pct: num(r.win_rate_pct),
        n_resolved_markets: int0(r.n_resolved_markets),
        calibration_excess_z: measured ? num(r.calibration_excess_z) : null,
        calibration_excess_z_pctile: measured ? num(r.calibration_excess_z_pctile) : null,
      };
    }),
    total_rows: int0(t?.n),
    snapshot_age_seconds: ageSeconds(T, build),
    as_of: build.toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Pulse and founding
// ---------------------------------------------------------------------------------------------------------------

/**
 * Venue-wide activity over (T - 24 h, T]: taker notional and fills, distinct wallets on either side, markets traded,
 * markets resolved, markets LIVE at T, and the share of fill-leg notional (both parties) traded by smart-money wallets
 * (core/market.ts cohorts: sharp, whale, other tagged; liquidity providers excluded) labelled by the analytics build.
 */
export async function publicPulse(db: QueryRunner, now: AsOf): Promise<PublicPulse> {
  const build = await requireBuild(db);
  const T = publicT(now, build);
  const TL = tsLiteral(T);
  const from = `${TL} - INTERVAL 24 HOUR`;
  const smart = SMART_MONEY_COHORTS.map((c) => `'${c}'`).join(', ');
  const [r] = await db.all<Record<string, unknown>>(
    `WITH f AS (SELECT * FROM fills WHERE ts > ${from} AND ts <= ${TL}),
      legs AS (SELECT * FROM fill_legs WHERE ts > ${from} AND ts <= ${TL}),
      c AS (${walletCohortSql()}),
      lc AS (SELECT l.wallet_id, l.size_usdc, coalesce(c.cohort, 'everyone_else') IN (${smart}) AS smart FROM legs l LEFT JOIN c USING (wallet_id))
    SELECT (SELECT coalesce(sum(size_usdc), 0)::DOUBLE FROM f) AS volume,
      (SELECT count(*)::INTEGER FROM f) AS fills,
      (SELECT count(DISTINCT wallet_id)::INTEGER FROM lc) AS traders,
      (SELECT count(DISTINCT market_id)::INTEGER FROM f) AS markets_traded,
      (SELECT count(*)::INTEGER FROM resolutions WHERE resolved_at > ${from} AND resolved_at <= ${TL}) AS resolved,
      (SELECT count(*)::INTEGER FROM markets m LEFT JOIN resolutions r USING (market_id) WHERE ${marketStateSql(TL)} = 'LIVE') AS open_markets,
      (SELECT sum(size_usdc) FILTER (WHERE smart) / nullif(sum(size_usdc), 0) FROM lc) AS smart_share,
      (SELECT count(DISTINCT wallet_id) FILTER (WHERE smart)::INTEGER FROM lc) AS smart_traders`,
  );
  const share = num(r?.smart_share);
  return {
    window_hours: 24,
    volume_24h_usdc: num0(r?.volume),
    fills_24h: int0(r?.fills),
    traders_24h: int0(r?.traders),
    markets_traded_24h: int0(r?.markets_traded),
    markets_resolved_24h: int0(r?.resolved),
    open_markets: int0(r?.open_markets),
    smart_money_volume_share: share === null ? null : Math.min(1, Math.max(0, share)),
    smart_money_traders_24h: int0(r?.smart_traders),
    labels_as_of: build.toISOString(),
    snapshot_age_seconds: ageSeconds(T, build),
    as_of: T.toISOString(),
  };
}

/** Founding-member spots as the account directory reports them (whole, non-negative numbers). */
export function publicFounding(s: { spots_total: number; spots_claimed: number; spots_remaining: number; open: boolean }, now: AsOf): PublicFounding {
  const total = Math.max(0, Math.floor(s.spots_total));
  const claimed = Math.max(0, Math.floor(s.spots_claimed));
  const remaining = Math.max(0, Math.floor(s.spots_remaining));
  return { spots_total: total, spots_claimed: claimed, spots_remaining: remaining, open: Boolean(s.open), as_of: now.toISOString() };
}

/** The referrer of an invite code (null from the directory: PublicError not_found). */
export function publicReferrer(r: { display_name: string | null; x_username: string | null } | null, code: string): PublicReferrer {
  if (!r) throw new PublicError('not_found', `no invite code ${code}`);
  return { display_name: r.display_name ?? '', x_username: r.x_username ?? '' };
}

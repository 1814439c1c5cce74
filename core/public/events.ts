import { z } from 'zod';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import {
  MARKET_STATES,
  PublicError,
  ageSeconds,
  buildAsOf,
  count,
  int0,
  isoOrEmpty,
  marketStateSql,
  maybe,
  num,
  num0,
  price,
  publicT,
  str,
  usd,
  winnerSql,
  type MarketState,
} from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Event (fixture) view
// ---------------------------------------------------------------------------------------------------------------

/** Mid freshness classes by age: live up to 2 h (mids are sampled hourly), recent up to 24 h, then stale. */
export const MID_FRESHNESS = { liveMaxSeconds: 2 * 3600, recentMaxSeconds: 24 * 3600 } as const;
/** Where the mids come from: the venue's mid history (the demo, an export), or the last trade (a venue synced from
 * the chain, whose mids are derived from its fills: data/sync/mids.ts records it in sync_state). */
export const MID_SOURCE = 'mid_history';
export const MID_SOURCE_LAST_TRADE = 'last_trade';

/** The venue's mid source (one catalog read, and one row when the venue was synced). */
export async function midSource(db: QueryRunner): Promise<string> {
  const [t] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM information_schema.tables WHERE table_name = 'sync_state' AND table_schema = 'main'`);
  if (!Number(t?.n)) return MID_SOURCE;
  const [r] = await db.all<{ v: string }>(`SELECT value AS v FROM sync_state WHERE source = 'venue' AND key = 'mid_source'`);
  return r?.v === 'fills' ? MID_SOURCE_LAST_TRADE : MID_SOURCE;
}

const DAY_MS = 86_400_000;

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
  /** YES | NO, or the venue's name of the winner (Up, Down, a team: core/outcomes.ts) | INVALID; "" before */
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

/** Event slug, market id (condition id, token id or market slug) */
export const SlugParam = z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, 'a slug: letters, digits, -, _ or .');

function freshness(ts: unknown, T: AsOf, source: string): MidFreshness {
  if (ts === null || ts === undefined) return { as_of: '', age_seconds: null, class: 'none', source };
  const d = new Date(ts as Date);
  const age = ageSeconds(T, d);
  const cls = age <= MID_FRESHNESS.liveMaxSeconds ? 'live' : age <= MID_FRESHNESS.recentMaxSeconds ? 'recent' : 'stale';
  return { as_of: d.toISOString(), age_seconds: age, class: cls, source };
}

/** The public view of one event (fixture) by its slug, as of T. PublicError not_found for an unknown slug. */
export async function publicEvent(db: QueryRunner, slug: string, now: AsOf): Promise<PublicEvent> {
  const T = publicT(now, await buildAsOf(db));
  const TL = tsLiteral(T);
  const [ev] = await db.all<Record<string, unknown>>(`SELECT * FROM events WHERE slug = $1 ORDER BY event_id LIMIT 1`, [slug]);
  if (!ev) throw new PublicError('not_found', `no event with slug ${slug}`);
  const eventId = num0(ev.event_id);
  const source = await midSource(db);
  const from = tsLiteral(new Date(T.getTime() - DAY_MS));
  const qs = await db.all<Record<string, unknown>>(
    `WITH q AS (SELECT m.*, r.winner, r.resolved_at FROM markets m LEFT JOIN resolutions r ON r.market_id = m.market_id AND r.resolved_at <= ${TL}
        WHERE m.event_id = ${eventId}),
      f AS (SELECT market_id, sum(size_usdc)::DOUBLE AS vol, count(*)::INTEGER AS n FROM fills
        WHERE market_id IN (SELECT market_id FROM q) AND ts > ${from} AND ts <= ${TL} GROUP BY 1),
      md AS (SELECT market_id, outcome_index, arg_max(mid, ts) AS mid, max(ts) AS ts FROM mids
        WHERE market_id IN (SELECT market_id FROM q) AND ts <= ${TL} GROUP BY 1, 2)
    SELECT q.market_id, q.condition_id, q.question, q.yes_token_id, q.no_token_id, q.end_date, q.closed_at, q.neg_risk_market_id,
      q.trading_opens_at, q.liquidity_usdc, ${marketStateSql(TL, 'q', 'q')} AS state, ${winnerSql(TL, 'q', 'q')} AS winner_outcome,
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
      yes_mid_freshness: freshness(q.yes_ts, T, source),
      no_mid_freshness: freshness(q.no_ts, T, source),
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

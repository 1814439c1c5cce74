import { z } from 'zod';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { traderTid } from '../trader/index.ts';
import { NO_CLAIMS, type ClaimLookup } from './directory.ts';
import {
  MARKET_STATES,
  WALLET_ADDRESS_IN_TEXT,
  buildAsOf,
  count,
  int0,
  intParam,
  marketStateSql,
  maybe,
  num,
  num0,
  publicT,
  safeLabel,
  str,
  type MarketState,
} from './shared.ts';
import { ADDRESS_RE, type TidIndex } from './tids.ts';

// ---------------------------------------------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------------------------------------------

export const SEARCH_LIMIT = { min: 1, max: 25, default: 10 } as const;
export const SEARCH_QUERY_MAX = 100;

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

export const SearchQuery = z.strictObject({ q: z.string().trim().min(1).max(SEARCH_QUERY_MAX), limit: intParam(SEARCH_LIMIT) });

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
    const c = await claims(rows.map((r) => String(r.address).toLowerCase()));
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

/**
 * The anonymous namespace /v1/public/*: teaser data with masked identity (core/public/). Every path and query
 * parameter goes through a strict zod schema (an unknown parameter is a 400), unknown slugs, markets, traders and
 * invite codes are 404 not_found, and core errors are mapped here so that nothing a client sends can produce a 500.
 * Responses are cacheable by browsers and CDNs (Cache-Control per route, docs/api-public.md) and open to any origin.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import { errorResponses, jsonSchema, queryParam } from './openapi-parts.ts';
import { MarketError } from '../core/market.ts';
import {
  EventSearchResult,
  LEADERBOARD_LIMIT,
  LeaderboardQuery,
  LeaderboardRow,
  MarketIdParam,
  MarketSearchResult,
  NoQuery,
  PublicError,
  PublicEvent,
  PublicFounding,
  PublicLeaderboard,
  PublicMarketTeaser,
  PublicPulse,
  PublicReferrer,
  PublicSearch,
  PublicTopEvents,
  PublicTopRoiQuery,
  PublicTopRoiTrades,
  PublicTraderResponse,
  PublicTraderTeaser,
  ReferrerQuery,
  SEARCH_KINDS,
  SEARCH_LIMIT,
  SEARCH_QUERY_MAX,
  SearchQuery,
  SlugParam,
  TOP_EVENTS_LIMIT,
  TidIndex,
  TopEventsQuery,
  TraderRefParam,
  TraderSearchResult,
  publicEvent,
  publicFounding,
  publicLeaderboard,
  publicMarketTeaser,
  publicPulse,
  publicReferrer,
  publicSearch,
  publicTopEvents,
  publicTopRoi,
  publicTraderTeaser,
  traderRef,
  PublicBoard,
  PublicBoards,
  publicBoard,
  publicBoards,
} from '../core/public/index.ts';
import type { QueryRunner } from '../core/query.ts';
import { TOP_ROI_RULE } from '../core/trader/index.ts';
import type { AccountDirectory } from './directory.ts';
import { TtlCache, type SharedCache } from '../core/ttl-cache.ts';
import { ApiError } from './errors.ts';

export interface PublicDeps {
  db: QueryRunner;
  now: () => Date;
  /** the secret behind opaque trader ids (traderTid), at least 16 bytes */
  tidKey: string | Uint8Array;
  directory: AccountDirectory;
  /** the process's tid index (one per process: each builds a tid → wallet map); default: a new one for tidKey */
  tids?: TidIndex;
  /** keep heavy public answers server-side for their max-age (default true) */
  serverCache?: boolean;
  /** wall clock for the server-side cache (default Date.now) */
  wallNow?: () => Date;
  /** the server-side cache's level shared by API replicas */
  sharedCache?: SharedCache;
}

/** Cache-Control max-age per route, seconds (docs/api-public.md). */
export const PUBLIC_CACHE_SECONDS = {
  event: 30,
  referrer: 300,
  market: 30,
  trader: 60,
  topRoi: 300,
  topEvents: 60,
  search: 60,
  leaderboard: 300,
  pulse: 60,
  founding: 60,
} as const;

/** Core errors of the public queries as API errors (anything else goes to the shared error handler). */
function mapCoreError(err: unknown): unknown {
  if (err instanceof PublicError) {
    return err.code === 'not_found' ? new ApiError(404, 'not_found', err.message) : new ApiError(503, 'analytics_missing', err.message);
  }
  if (err instanceof MarketError) {
    if (err.code === 'not_found') return new ApiError(404, 'not_found', err.message);
    return new ApiError(503, 'analytics_missing', err.message);
  }
  return err;
}

type Handler = (req: Request, res: Response) => Promise<unknown>;
/** GET handler: the JSON body with the route's Cache-Control; core errors mapped. */
/**
 * A public GET: validated and computed by `f`, sent with Cache-Control max-age. With `cache`, the body is also kept
 * server-side for the same time under the exact URL (concurrent misses share one computation), so anonymous
 * traffic cannot make the service recompute heavy answers (top-ROI, pulse, boards) per request. Routes that show
 * account state (trader teaser, referrer, founding) are not cached server-side: a claim shows at once.
 */
function get(seconds: number, f: Handler, cache?: TtlCache<unknown>): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      let body: unknown;
      if (cache) {
        const r = await cache.getOrCompute(`${seconds}:${req.baseUrl}${req.url}`, () => Promise.resolve(f(req, res)));
        res.setHeader('X-Cache', r.hit ? 'hit' : 'miss');
        body = r.value;
      } else body = await f(req, res);
      res.setHeader('Cache-Control', `public, max-age=${seconds}`);
      res.json(body);
    } catch (err) {
      next(mapCoreError(err));
    }
  };
}

/** Express gives a path parameter as a string; its schema decides what it may be. */
const param = (req: Request, name: string): unknown => (req.params as Record<string, unknown>)[name];

export function publicRouter(deps: PublicDeps): Router {
  const router = express.Router();
  const tids = deps.tids ?? new TidIndex(deps.tidKey);
  // build the tid map in the background so the first lookup of an unseen tid does not pay for it
  tids.syncMap(deps.db).catch(() => {});
  const claims = (addresses: readonly string[]) => deps.directory.claimsFor(addresses);
  // one cache for every server-cached route: an entry lives as long as its route's max-age (the key carries it)
  const caches = new Map<number, TtlCache<unknown>>();
  const cached = (seconds: number) => {
    if (deps.serverCache === false) return undefined;
    let c = caches.get(seconds);
    if (!c) caches.set(seconds, (c = new TtlCache<unknown>(seconds * 1000, () => (deps.wallNow ?? (() => new Date()))().getTime(), 2000, deps.sharedCache)));
    return c;
  };

  router.use((_req, res, next) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', 'X-Trace-Id');
    next();
  });

  router.get(
    '/event/:slug',
    get(PUBLIC_CACHE_SECONDS.event, async (req) => {
      const slug = SlugParam.parse(param(req, 'slug'));
      NoQuery.parse(req.query);
      return publicEvent(deps.db, slug, deps.now());
    }, cached(PUBLIC_CACHE_SECONDS.event)),
  );

  router.get(
    '/referrer',
    get(PUBLIC_CACHE_SECONDS.referrer, async (req) => {
      const { code } = ReferrerQuery.parse(req.query);
      return publicReferrer(await deps.directory.referrer(code), code);
    }),
  );

  router.get(
    '/market/:id',
    get(PUBLIC_CACHE_SECONDS.market, async (req) => {
      const id = MarketIdParam.parse(param(req, 'id'));
      NoQuery.parse(req.query);
      return publicMarketTeaser(deps.db, id, deps.now());
    }, cached(PUBLIC_CACHE_SECONDS.market)),
  );

  router.get(
    '/trader/:proxy',
    get(PUBLIC_CACHE_SECONDS.trader, async (req) => {
      const proxy = TraderRefParam.parse(param(req, 'proxy'));
      NoQuery.parse(req.query);
      return publicTraderTeaser(deps.db, traderRef(proxy), deps.now(), tids, claims);
    }),
  );

  router.get(
    '/trades/top-roi',
    get(PUBLIC_CACHE_SECONDS.topRoi, async (req) => {
      const q = PublicTopRoiQuery.parse(req.query);
      return publicTopRoi(deps.db, deps.now(), q, tids);
    }, cached(PUBLIC_CACHE_SECONDS.topRoi)),
  );

  router.get(
    '/events/top',
    get(PUBLIC_CACHE_SECONDS.topEvents, async (req) => {
      const q = TopEventsQuery.parse(req.query);
      return publicTopEvents(deps.db, deps.now(), q.limit);
    }, cached(PUBLIC_CACHE_SECONDS.topEvents)),
  );

  router.get(
    '/search',
    get(PUBLIC_CACHE_SECONDS.search, async (req) => {
      const q = SearchQuery.parse(req.query);
      return publicSearch(deps.db, q.q, q.limit, deps.now(), tids, claims);
    }, cached(PUBLIC_CACHE_SECONDS.search)),
  );

  router.get(
    '/leaderboard',
    get(PUBLIC_CACHE_SECONDS.leaderboard, async (req) => {
      const q = LeaderboardQuery.parse(req.query);
      return publicLeaderboard(deps.db, deps.now(), q.limit, tids);
    }, cached(PUBLIC_CACHE_SECONDS.leaderboard)),
  );

  // every preset's board, anonymously, with its gates funnel (the web app's public preset pages)
  router.get(
    '/boards',
    get(PUBLIC_CACHE_SECONDS.leaderboard, async (req) => {
      NoQuery.parse(req.query);
      return publicBoards();
    }, cached(PUBLIC_CACHE_SECONDS.leaderboard)),
  );

  router.get(
    '/boards/:slug',
    get(PUBLIC_CACHE_SECONDS.leaderboard, async (req) => {
      const slug = SlugParam.parse(param(req, 'slug'));
      const q = LeaderboardQuery.parse(req.query);
      return publicBoard(deps.db, slug, deps.now(), q.limit, tids);
    }, cached(PUBLIC_CACHE_SECONDS.leaderboard)),
  );

  router.get(
    '/pulse',
    get(PUBLIC_CACHE_SECONDS.pulse, async (req) => {
      NoQuery.parse(req.query);
      return publicPulse(deps.db, deps.now());
    }, cached(PUBLIC_CACHE_SECONDS.pulse)),
  );

  router.get(
    '/founding',
    get(PUBLIC_CACHE_SECONDS.founding, async (req) => {
      NoQuery.parse(req.query);
      return publicFounding(await deps.directory.founding(), deps.now());
    }),
  );

  return router;
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAPI
// ---------------------------------------------------------------------------------------------------------------


/** Component schemas of the public routes (merge into components.schemas; `Error` is openapi.ts's). */
export function publicOpenApiSchemas(): Record<string, unknown> {
  return {
    PublicEvent: jsonSchema(PublicEvent),
    PublicMarketTeaser: jsonSchema(PublicMarketTeaser),
    PublicTraderTeaser: jsonSchema(PublicTraderTeaser),
    PublicTraderResponse: jsonSchema(PublicTraderResponse),
    PublicTopRoiTrades: jsonSchema(PublicTopRoiTrades),
    PublicTopEvents: jsonSchema(PublicTopEvents),
    PublicSearch: jsonSchema(PublicSearch),
    PublicTraderSearchResult: jsonSchema(TraderSearchResult),
    PublicMarketSearchResult: jsonSchema(MarketSearchResult),
    PublicEventSearchResult: jsonSchema(EventSearchResult),
    PublicLeaderboard: jsonSchema(PublicLeaderboard),
    PublicLeaderboardRow: jsonSchema(LeaderboardRow),
    PublicBoards: jsonSchema(PublicBoards),
    PublicBoard: jsonSchema(PublicBoard),
    PublicPulse: jsonSchema(PublicPulse),
    PublicFounding: jsonSchema(PublicFounding),
    PublicReferrer: jsonSchema(PublicReferrer),
  };
}

const errors = errorResponses;
const ok = (description: string, ref: string, maxAge: number) => ({
  '200': {
    description,
    headers: {
      'Cache-Control': { description: `public, max-age=${maxAge}`, schema: { type: 'string' } },
      'Access-Control-Allow-Origin': { description: '*', schema: { type: 'string' } },
    },
    content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } },
  },
});
const q = queryParam;
const path = (name: string, description: string, schema: Record<string, unknown> = { type: 'string' }) => ({ name, in: 'path', required: true, description, schema });
const intRange = (b: { min: number; max: number; default: number }) => ({ type: 'integer', minimum: b.min, maximum: b.max, default: b.default });
const C = PUBLIC_CACHE_SECONDS;
const PUBLIC = { tags: ['public'], security: [] as unknown[] };

/** OpenAPI 3.1 path items of the public routes (keys are full paths under /v1/public). */
export function publicOpenApiPaths(): Record<string, unknown> {
  return {
    '/v1/public/event/{slug}': {
      get: {
        ...PUBLIC,
        summary: 'Public event (fixture) view',
        parameters: [path('slug', 'event slug', { type: 'string', maxLength: 200 })],
        responses: { ...ok('public event view', 'PublicEvent', C.event), ...errors(400, 404, 500) },
      },
    },
    '/v1/public/referrer': {
      get: {
        ...PUBLIC,
        summary: 'The inviting user behind an invite code',
        parameters: [q('code', 'invite code', { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }, true)],
        responses: { ...ok('referrer', 'PublicReferrer', C.referrer), ...errors(400, 404, 500) },
      },
    },
    '/v1/public/market/{id}': {
      get: {
        ...PUBLIC,
        summary: 'Public market teaser',
        parameters: [path('id', 'condition id (0x + 64 hex), token id (decimal) or market slug', { type: 'string', maxLength: 200 })],
        responses: { ...ok('market teaser', 'PublicMarketTeaser', C.market), ...errors(400, 404, 500, 503) },
      },
    },
    '/v1/public/trader/{proxy}': {
      get: {
        ...PUBLIC,
        summary: 'Public trader teaser; {} for a known wallet without activity as of the analytics build',
        parameters: [path('proxy', 'proxy wallet (0x + 40 hex, any case) or an opaque tid (t_ + 22 characters) from search, leaderboard or top-ROI')],
        responses: { ...ok('trader teaser, or the empty object', 'PublicTraderResponse', C.trader), ...errors(400, 404, 500, 503) },
      },
    },
    '/v1/public/trades/top-roi': {
      get: {
        ...PUBLIC,
        summary: 'Best (or worst) closed trades by ROI or profit',
        parameters: [
          q('limit', 'trades', intRange(TOP_ROI_RULE.limit)),
          q('category', 'market category (lowercase)', { type: 'string', pattern: '^[a-z][a-z0-9_]{0,39}$' }),
          q('since_days', 'markets resolved in the last N days', intRange(TOP_ROI_RULE.sinceDays)),
          q('sort', 'roi or profit', { type: 'string', enum: ['roi', 'profit'], default: 'roi' }),
          q('dir', 'asc or desc', { type: 'string', enum: ['asc', 'desc'], default: 'desc' }),
        ],
        responses: { ...ok('top-ROI trades', 'PublicTopRoiTrades', C.topRoi), ...errors(400, 500) },
      },
    },
    '/v1/public/events/top': {
      get: {
        ...PUBLIC,
        summary: 'Open fixtures ranked by own 24 h USDC volume',
        parameters: [q('limit', 'fixtures', intRange(TOP_EVENTS_LIMIT))],
        responses: { ...ok('top events', 'PublicTopEvents', C.topEvents), ...errors(400, 500) },
      },
    },
    '/v1/public/search': {
      get: {
        ...PUBLIC,
        summary: 'Search traders (by tid only), events and markets',
        parameters: [
          q('q', `address, condition id, token id, username or text (1-${SEARCH_QUERY_MAX} characters); the answer's kind is one of ${SEARCH_KINDS.join(', ')}`, { type: 'string', minLength: 1, maxLength: SEARCH_QUERY_MAX }, true),
          q('limit', 'results', intRange(SEARCH_LIMIT)),
        ],
        responses: { ...ok('search response', 'PublicSearch', C.search), ...errors(400, 500) },
      },
    },
    '/v1/public/leaderboard': {
      get: {
        ...PUBLIC,
        summary: 'Anonymous top of the default preset board, with calibration_excess_z (null: unmeasured)',
        parameters: [q('limit', 'rows', intRange(LEADERBOARD_LIMIT))],
        responses: { ...ok('leaderboard', 'PublicLeaderboard', C.leaderboard), ...errors(400, 500, 503) },
      },
    },
    '/v1/public/boards': {
      get: { ...PUBLIC, summary: 'The preset boards (slug, title, purpose)', parameters: [], responses: { ...ok('presets', 'PublicBoards', C.leaderboard), ...errors(400, 500) } },
    },
    '/v1/public/boards/{slug}': {
      get: {
        ...PUBLIC,
        summary: "Anonymous top of a preset's board with its gates funnel (cohort → each gate → scored → one row per user)",
        parameters: [path('slug', 'a preset slug (GET /v1/public/boards)'), q('limit', 'rows', intRange(LEADERBOARD_LIMIT))],
        responses: { ...ok('board', 'PublicBoard', C.leaderboard), ...errors(400, 404, 500, 503) },
      },
    },
    '/v1/public/pulse': {
      get: { ...PUBLIC, summary: 'Venue-wide activity over the last 24 h', parameters: [], responses: { ...ok('pulse', 'PublicPulse', C.pulse), ...errors(400, 500, 503) } },
    },
    '/v1/public/founding': {
      get: { ...PUBLIC, summary: 'Founding-member spots', parameters: [], responses: { ...ok('founding status', 'PublicFounding', C.founding), ...errors(400, 500) } },
    },
  };
}

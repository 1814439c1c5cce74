/**
 * The REST API for humans (express 5): sign-in and the account area, the public namespace, traders, rankings and
 * the resolutions feed. Every non-2xx JSON body is the spec's error object (web-api/errors.ts). Anonymous callers
 * reach /v1/public/*, /v1/auth/* and the OpenAPI document; everything else needs a session cookie or an API key.
 */
import type { RankerSource } from '../core/rankings.ts';
import express, { type Express, type RequestHandler } from 'express';
import { z } from 'zod';
import type { TidIndex } from '../core/public/index.ts';
import type { QueryRunner } from '../core/query.ts';
import {
  GATE_FIELDS,
  METRIC_IDS,
  PresetOverrides,
  RankingConfig,
  customRanking,
  endOfDay,
  parseExtraMetrics,
  presetBySlug,
  presetList,
  type RankingResponse,
} from '../core/rankings.ts';
import { presetRanking } from '../core/preset-rankings.ts';
import { TtlCache, cacheKey, type SharedCache } from '../core/ttl-cache.ts';
import type { AccountStore } from '../data/account-store.ts';
import type { RateStore } from '../data/rate-limit.ts';
import type { ResolutionFeed } from '../data/resolution-feed.ts';
import type { SnapshotStore } from '../data/snapshot-store.ts';
import { accountRouter, authenticate, authRouter, type AuthConfig, type AuthDeps } from './auth.ts';
import { uiRouter } from './ui-build.ts';
import { ApiError, assignTraceId, errorHandler, notFound } from './errors.ts';
import { healthRouter, type HealthCheck } from './health.ts';
import { devMailer, type Mailer } from './mail.ts';
import { openApiDocument } from './openapi.ts';
import { requireAuth, requireFeature } from './principal.ts';
import { RateLimiter, type RuleOverrides } from './rate-limits.ts';
import { publicRouter } from './public.ts';
import { resolutionsRouter } from './resolutions.ts';
import { marketRouter } from './markets.ts';
import { traderRouter } from './traders.ts';
import { type PushApi, type WebhookApi, webhookRouter } from './webhooks.ts';

export interface AppDeps {
  db: QueryRunner;
  /** in-memory rankers of the latest analytics versions (jobs/analytics/rankers.ts); without them custom rankings run in SQL */
  rankers?: RankerSource;
  /**
   * Opens one read snapshot per request (data/snapshot-runner.ts, the `db`'s middleware): every statement of a
   * request, on any surface mounted here (REST, public, agent gateway, MCP), sees one analytics version.
   */
  dbScope?: RequestHandler;
  accounts: AccountStore;
  rates: RateStore;
  auth: AuthConfig;
  mailer?: Mailer;
  snapshots?: SnapshotStore;
  /** the webhook service (jobs/webhooks); without it /v1/webhooks is not served */
  webhooks?: WebhookApi;
  /** browser push (jobs/push.ts); served with the webhook routes */
  push?: PushApi;
  /** the resolutions pull feed's log; without it GET /v1/resolutions is not served */
  resolutionFeed?: ResolutionFeed;
  /** wall clock: sessions, nonces, rate windows, caches */
  now?: () => Date;
  /** the venue's clock, for "as of now" analytics (the demo venue runs behind the wall clock); default: now */
  venueNow?: () => Date;
  /** the response caches' level shared by API replicas (Redis), under their own keys */
  sharedCache?: SharedCache;
  /** preset ranking cache TTL (the spec's 60 s) */
  presetCacheMs?: number;
  /** secret (>= 16 bytes) keying the opaque trader ids (tid) of the public namespace; keep it stable across restarts */
  tidKey: string | Uint8Array;
  /** the process's shared tid index (the gateway and MCP use the same one) */
  tids?: TidIndex;
  /** tighter or looser limits than RULES (tests, operators) */
  rateRules?: RuleOverrides;
  /**
   * other surfaces served on this app (the x402 gateway at /v1/agent/* and /x402/info, MCP at /mcp): mounted
   * before the credential gate, behind their own per-IP limit, sharing the error object
   */
  mounts?: { path: string; router: express.RequestHandler }[];
  /** express "trust proxy" (TRUST_PROXY): set when a reverse proxy forwards X-Forwarded-For */
  trustProxy?: string | number | boolean;
  /** /healthz and /readyz: the process's role, readiness checks beyond the service database's, drain state */
  health?: { role: string; checks?: HealthCheck[]; draining?: () => boolean; version?: () => number | null };
}

const str = z.string().max(2000);
/** The query form of a custom ranking (GET /v1/rankings): see docs/api.md. */
const CustomQuery = z
  .object({
    weights: str,
    gates: str.optional(),
    active_within_days: str.optional(),
    best_category: str.optional(),
    min_trades: str.optional(),
    min_volume_usdc: str.optional(),
    tags_any: str.optional(),
    exclude_clusters: z.enum(['true', 'false']).optional(),
    sort_by: str.optional(),
    sort_dir: str.optional(),
    limit: str.optional(),
    offset: str.optional(),
    extra_metrics: str.optional(),
  })
  .strict();

const numOrUndef = (s: string | undefined) => (s === undefined ? undefined : s.trim() === '' ? Number.NaN : Number(s));

/** weights=calibration:0.6,alpha_24h:0.4 ; gates=calibration_ranked:eq:true,calibration_excess_z:lte:-1 */
export function customConfigFromQuery(query: unknown): z.input<typeof RankingConfig> {
  const q = CustomQuery.parse(query);
  const pairs = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);
  const weights = Object.fromEntries(
    pairs(q.weights).map((p) => {
      const [k, v, ...rest] = p.split(':');
      if (!k || v === undefined || rest.length) throw new ApiError(400, 'invalid_request', `weights entry "${p}" is not metric:weight`);
      return [k, Number(v)];
    }),
  );
  const gates = q.gates
    ? pairs(q.gates).map((p) => {
        const [field, op, value, ...rest] = p.split(':');
        if (!field || !op || value === undefined || rest.length) throw new ApiError(400, 'invalid_request', `gates entry "${p}" is not field:op:value`);
        return { field, op, value: value === 'true' ? true : value === 'false' ? false : Number(value) };
      })
    : [];
  const cohort: Record<string, unknown> = {};
  if (q.active_within_days !== undefined) cohort.active_within_days = numOrUndef(q.active_within_days);
  if (q.best_category !== undefined) cohort.best_category = q.best_category;
  if (q.min_trades !== undefined) cohort.min_trades = numOrUndef(q.min_trades);
  if (q.min_volume_usdc !== undefined) cohort.min_volume_usdc = numOrUndef(q.min_volume_usdc);
  if (q.tags_any !== undefined) cohort.tags_any = pairs(q.tags_any);
  if (q.exclude_clusters !== undefined) cohort.exclude_clusters = q.exclude_clusters === 'true';
  return {
    cohort,
    gates,
    weights,
    ...(q.sort_by !== undefined ? { sort_by: q.sort_by } : {}),
    ...(q.sort_dir !== undefined ? { sort_dir: q.sort_dir } : {}),
    ...(q.limit !== undefined ? { limit: numOrUndef(q.limit) } : {}),
    ...(q.offset !== undefined ? { offset: numOrUndef(q.offset) } : {}),
    extra_metrics: parseExtraMetrics(q.extra_metrics),
  } as z.input<typeof RankingConfig>;
}

const PresetQuery = z
  .object({
    active_within_days: str.optional(),
    best_category: str.optional(),
    sort_by: str.optional(),
    limit: str.optional(),
    offset: str.optional(),
    extra_metrics: str.optional(),
  })
  .strict();

const SnapshotQuery = z.object({ date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'date must be YYYY-MM-DD').optional() }).strict();
const Slug = z.string().max(64);

export function createApp(deps: AppDeps): Express {
  const now = deps.now ?? (() => new Date());
  const venueNow = deps.venueNow ?? now;
  const cache = new TtlCache<RankingResponse>(deps.presetCacheMs ?? 60_000, () => now().getTime(), 1000, deps.sharedCache);
  const limiter = new RateLimiter(deps.rates, now, deps.rateRules);
  const authDeps: AuthDeps = { store: deps.accounts, db: deps.db, mailer: deps.mailer ?? devMailer(), limiter, config: deps.auth, now };
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  if (deps.trustProxy !== undefined) app.set('trust proxy', deps.trustProxy);
  app.use(assignTraceId);
  // before the body parser and the read snapshot: a balancer's probe costs one SELECT 1
  app.use(
    healthRouter({
      role: deps.health?.role ?? 'all',
      checks: [{ name: 'service_db', check: async () => void (await deps.accounts.db.get('SELECT 1 AS one')) }, ...(deps.health?.checks ?? [])],
      draining: deps.health?.draining ?? (() => false),
      version: deps.health?.version,
    }),
  );
  app.use(express.json({ limit: '64kb' }));
  // after the body parser: the handlers that follow run inside the request's snapshot
  if (deps.dbScope) app.use(deps.dbScope);

  const openapi = openApiDocument();
  app.get('/v1/openapi.json', (_req, res) => {
    res.json(openapi);
  });

  // the public namespace: no credential, its own per-IP limit
  app.use('/v1/public', limiter.perIp('publicIp'), publicRouter({ db: deps.db, now: venueNow, wallNow: now, tidKey: deps.tidKey, tids: deps.tids, directory: deps.accounts, sharedCache: deps.sharedCache }));

  for (const m of deps.mounts ?? []) app.use(m.path, limiter.perIp('agentIp'), m.router);

  // everything below may carry a credential; /v1/auth/* also serves anonymous callers
  app.use('/v1', authenticate(authDeps));
  app.use('/v1/auth', limiter.apiTraffic(), authRouter(authDeps));
  // from here on a session or an API key is required
  const traffic = limiter.apiTraffic();
  app.use('/v1', (req, res, next) => {
    // an unknown public or agent route: the 404 below, not a 401
    if (req.path.startsWith('/public/') || req.path.startsWith('/agent/')) return next();
    requireAuth(res);
    return traffic(req, res, next);
  });
  app.use('/v1', accountRouter(authDeps));
  app.use('/v1/trader', traderRouter({ db: deps.db, now: venueNow }));
  app.use('/v1/market', marketRouter({ db: deps.db, now: venueNow }));
  if (deps.webhooks) app.use('/v1', webhookRouter(deps.webhooks, deps.push));
  if (deps.resolutionFeed) app.use('/v1/resolutions', resolutionsRouter({ db: deps.db, feed: deps.resolutionFeed, now: venueNow }));

  app.get('/v1/rankings/presets', (_req, res) => {
    // the gate fields and their types too: the web app's ranking builder offers exactly what a config may hold
    res.json({ presets: presetList(), metrics: METRIC_IDS, gate_fields: Object.fromEntries(Object.entries(GATE_FIELDS).map(([k, v]) => [k, v.type])) });
  });

  app.get('/v1/rankings/preset/:slug', async (req, res) => {
    const slug = Slug.parse(req.params.slug);
    presetBySlug(slug);
    const q = PresetQuery.parse(req.query);
    const extra = parseExtraMetrics(q.extra_metrics);
    if (extra.length) requireFeature(requireAuth(res), 'extra_metrics');
    const overrides = PresetOverrides.parse({
      active_within_days: q.active_within_days,
      best_category: q.best_category,
      sort_by: q.sort_by,
      limit: q.limit,
      offset: q.offset,
      extra_metrics: extra,
    });
    const { value, hit } = await cache.getOrCompute(cacheKey({ slug, overrides }), () => presetRanking(deps.db, slug, overrides, venueNow(), deps.rankers));
    res.setHeader('X-Cache', hit ? 'hit' : 'miss');
    res.setHeader('Cache-Control', 'public, max-age=60');
    res.json(value);
  });

  app.get('/v1/rankings/preset/:slug/snapshot', async (req, res) => {
    const slug = Slug.parse(req.params.slug);
    presetBySlug(slug);
    const q = SnapshotQuery.parse(req.query);
    if (q.date) endOfDay(q.date);
    if (!deps.snapshots) throw new ApiError(404, 'not_found', 'no snapshots are stored');
    const s = await (q.date ? deps.snapshots.get(slug, q.date) : deps.snapshots.latest(slug));
    if (!s) throw new ApiError(404, 'not_found', q.date ? `no snapshot of ${slug} for ${q.date}` : `no snapshot of ${slug} yet`);
    res.json(s);
  });

  app.get('/v1/rankings', async (req, res) => {
    const cfg = customConfigFromQuery(req.query);
    if ((cfg.extra_metrics ?? []).length) requireFeature(requireAuth(res), 'extra_metrics');
    res.json(await customRanking(deps.db, cfg, venueNow(), undefined, deps.rankers));
  });

  // the web app at / (its files, and index.html for the pages it routes); the API's JSON 404 for the rest
  app.use(uiRouter());
  app.use(notFound);
  app.use(errorHandler);
  return app;
}


/**
 * Trader routes, mounted at /v1/trader: one wallet's calibration record, positions feed, activity feed (paid:
 * metrics_full) and copy-fitness bundle (paid: metrics_full), all as of the request time, computed by core/trader/.
 * Every route needs a session or an API key (401 auth_required); proxy is 0x + 40 hex in any case (400
 * invalid_request otherwise, 404 not_found for a wallet the venue does not know). Query parameters are validated by
 * strict schemas: an unknown parameter is a 400. docs/api-traders.md records the shapes and choices.
 */
import express, { type Request } from 'express';
import { z } from 'zod';
import { errorResponses, jsonSchema, queryParam } from './openapi-parts.ts';
import { CalibrationScope } from '../core/calibration.ts';
import type { QueryRunner } from '../core/query.ts';
import {
  ACTIVITY_TYPES,
  BUDGET_RULES,
  CopyFitness,
  FEED_LIMIT,
  POSITION_STATUSES,
  TraderActivity,
  TraderCalibration,
  TraderPerformance,
  TraderPositions,
  copyFitness,
  traderActivity,
  traderCalibration,
  traderPerformance,
  traderPositions,
} from '../core/trader/index.ts';
import { ApiError } from './errors.ts';
import { requireAuth, requireFeature } from './principal.ts';

export interface TraderRouterDeps {
  db: QueryRunner;
  now: () => Date;
}

const ProxyParam = z.object({ proxy: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'proxy must be 0x followed by 40 hex digits') });

/** A list parameter: comma-separated, or repeated (?status=WON&status=LOST). */
const listParam = z.union([z.string().max(200), z.array(z.string().max(200)).max(10)]);
const limitParam = z.string().max(12);
const cursorParam = z.string().max(1024);

const CalibrationQuery = z.object({ scope: CalibrationScope }).strict();
const PositionsQuery = z.object({ status: listParam.optional(), limit: limitParam.optional(), cursor: cursorParam.optional() }).strict();
const ActivityQuery = z.object({ types: listParam.optional(), limit: limitParam.optional(), cursor: cursorParam.optional() }).strict();
const CopyFitnessRouteQuery = z.object({ follower_budget_usd: z.string().max(32).optional() }).strict();

function proxyOf(req: Request): string {
  return ProxyParam.parse({ proxy: req.params.proxy }).proxy;
}

function notFound(proxy: string): ApiError {
  return new ApiError(404, 'not_found', `unknown trader ${proxy.toLowerCase()}`, 'no wallet with this proxy address has traded on the venue');
}

export function traderRouter(deps: TraderRouterDeps): express.Router {
  const router = express.Router();

  router.get('/:proxy/calibration', async (req, res) => {
    requireAuth(res);
    const proxy = proxyOf(req);
    const q = CalibrationQuery.parse(req.query);
    const body = await traderCalibration(deps.db, proxy, deps.now(), q.scope);
    if (!body) throw notFound(proxy);
    res.json(body);
  });

  router.get('/:proxy/performance', async (req, res) => {
    requireAuth(res);
    const proxy = proxyOf(req);
    z.object({}).strict().parse(req.query);
    const body = await traderPerformance(deps.db, proxy, deps.now());
    if (!body) throw notFound(proxy);
    res.json(body);
  });

  router.get('/:proxy/positions', async (req, res) => {
    requireAuth(res);
    const proxy = proxyOf(req);
    const q = PositionsQuery.parse(req.query);
    const body = await traderPositions(deps.db, proxy, deps.now(), { status: q.status, limit: q.limit, cursor: q.cursor });
    if (!body) throw notFound(proxy);
    res.json(body);
  });

  router.get('/:proxy/activity', async (req, res) => {
    const p = requireAuth(res);
    requireFeature(p, 'metrics_full');
    const proxy = proxyOf(req);
    const q = ActivityQuery.parse(req.query);
    const body = await traderActivity(deps.db, proxy, deps.now(), { types: q.types, limit: q.limit, cursor: q.cursor });
    if (!body) throw notFound(proxy);
    res.json(body);
  });

  router.get('/:proxy/copy-fitness', async (req, res) => {
    const p = requireAuth(res);
    requireFeature(p, 'metrics_full');
    const proxy = proxyOf(req);
    const q = CopyFitnessRouteQuery.parse(req.query);
    const body = await copyFitness(deps.db, proxy, deps.now(), { followerBudgetUsd: q.follower_budget_usd });
    if (!body) throw notFound(proxy);
    res.json(body);
  });

  return router;
}

// ---------------------------------------------------------------------------------------------------------------
// OpenAPI 3.1 pieces (merged into web-api/openapi.ts's document)
// ---------------------------------------------------------------------------------------------------------------

const errorRefs = errorResponses;
const ok = (description: string, ref: string) => ({ '200': { description, content: { 'application/json': { schema: { $ref: `#/components/schemas/${ref}` } } } } });
const q = (name: string, description: string, schemaObj?: Record<string, unknown>) => queryParam(name, description, schemaObj);
const proxyParam = { name: 'proxy', in: 'path', required: true, description: 'proxy wallet, 0x + 40 hex (any case)', schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' } };
const limitDoc = q('limit', `rows per page (${FEED_LIMIT.min}-${FEED_LIMIT.max}, default ${FEED_LIMIT.default})`, {
  type: 'integer',
  minimum: FEED_LIMIT.min,
  maximum: FEED_LIMIT.max,
  default: FEED_LIMIT.default,
});
const cursorDoc = q('cursor', 'opaque next_cursor of the previous page (pins the first page\'s as-of time)', { type: 'string', maxLength: 1024 });

export function traderOpenApiPaths(): Record<string, unknown> {
  return {
    '/v1/trader/{proxy}/calibration': {
      get: {
        summary: "A trader's calibration record (10 bins of entry price vs outcome), as of now",
        description: 'API key or session.',
        parameters: [
          proxyParam,
          q('scope', 'all (default), 30d, 90d, 365d (trailing window of resolutions) or category:<name>', {
            type: 'string',
            pattern: '^(all|30d|90d|365d|category:[a-z][a-z0-9_]{0,39})$',
            default: 'all',
          }),
        ],
        responses: { ...ok('calibration record', 'TraderCalibration'), ...errorRefs(400, 401, 404, 500) },
      },
    },
    '/v1/trader/{proxy}/performance': {
      get: {
        summary: "A trader's daily P&L over the risk window (with its running sum), risk statistics, alpha and smart-money tags, from the analytics build",
        description: 'API key or session. Figures as of the build (`as_of`); null where unmeasured.',
        parameters: [proxyParam],
        responses: { ...ok('performance', 'TraderPerformance'), ...errorRefs(400, 401, 404, 500) },
      },
    },
    '/v1/trader/{proxy}/positions': {
      get: {
        summary: "A trader's positions with status and winner_outcome, newest activity first (cursor paging)",
        description: 'API key or session.',
        parameters: [proxyParam, q('status', `comma-separated subset of ${POSITION_STATUSES.join(', ')} (case-insensitive); all when omitted`), limitDoc, cursorDoc],
        responses: { ...ok('positions page', 'TraderPositions'), ...errorRefs(400, 401, 404, 500) },
      },
    },
    '/v1/trader/{proxy}/activity': {
      get: {
        summary: 'Unified feed of trades, redeems, splits, merges and conversions, newest first (paid: metrics_full)',
        description: 'API key or session; a plan with metrics_full (403 plan_required otherwise).',
        parameters: [proxyParam, q('types', `comma-separated subset of ${ACTIVITY_TYPES.join(', ')}; all when omitted`), limitDoc, cursorDoc],
        responses: { ...ok('activity page', 'TraderActivity'), ...errorRefs(400, 401, 403, 404, 500) },
      },
    },
    '/v1/trader/{proxy}/copy-fitness': {
      get: {
        summary: 'Copy-decision bundle and budget fit (paid: metrics_full)',
        description: 'API key or session; a plan with metrics_full (403 plan_required otherwise).',
        parameters: [
          proxyParam,
          q('follower_budget_usd', `the follower's budget in USD (> 0, at most 1e9; default ${BUDGET_RULES.defaultBudgetUsd})`, {
            type: 'number',
            exclusiveMinimum: 0,
            maximum: 1e9,
            default: BUDGET_RULES.defaultBudgetUsd,
          }),
        ],
        responses: { ...ok('copy-fitness bundle', 'TraderCopyFitness'), ...errorRefs(400, 401, 403, 404, 500) },
      },
    },
  };
}

export function traderOpenApiSchemas(): Record<string, unknown> {
  return {
    TraderCalibration: jsonSchema(TraderCalibration),
    TraderPerformance: jsonSchema(TraderPerformance),
    TraderPositions: jsonSchema(TraderPositions),
    TraderActivity: jsonSchema(TraderActivity),
    TraderCopyFitness: jsonSchema(CopyFitness),
  };
}

/**
 * Market routes, mounted at /v1/market: the gated part of the public market teaser (`locked.flow`) for a person or
 * script with a plan. GET /v1/market/{conditionId}/flow is the agent tier's market.flow (same query, same body, same
 * core/market.ts marketFlow), for a session or API key whose plan has metrics_full (403 plan_required otherwise).
 * docs/api-public.md records the choice.
 */
import express from 'express';
import { z } from 'zod';
import { DEFAULT_FLOW_WINDOW_HOURS, MAX_FLOW_WINDOW_HOURS, MarketFlow, MarketFlowQuery, marketFlow, marketIdByConditionId } from '../core/market.ts';
import type { QueryRunner } from '../core/query.ts';
import { ApiError } from './errors.ts';
import { errorResponses, jsonSchema, queryParam } from './openapi-parts.ts';
import { requireAuth, requireFeature } from './principal.ts';

export interface MarketRouterDeps {
  db: QueryRunner;
  now: () => Date;
}

const ConditionIdParam = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'a condition id is 0x + 64 hex digits');

export function marketRouter(deps: MarketRouterDeps): express.Router {
  const router = express.Router();
  router.get('/:conditionId/flow', async (req, res) => {
    const p = requireAuth(res);
    requireFeature(p, 'metrics_full');
    const cid = ConditionIdParam.parse(req.params.conditionId).toLowerCase();
    const q = MarketFlowQuery.strict().parse(req.query);
    const marketId = await marketIdByConditionId(deps.db, cid);
    if (marketId === null) throw new ApiError(404, 'not_found', `no market with condition id ${cid}`);
    res.json(await marketFlow(deps.db, marketId, deps.now(), q.window_hours));
  });
  return router;
}

export function marketOpenApiPaths(): Record<string, unknown> {
  return {
    '/v1/market/{conditionId}/flow': {
      get: {
        summary: 'Order flow on a market by cohort (smart money, whales, liquidity providers, everyone else) over a trailing window (paid: metrics_full)',
        description: 'API key or session; a plan with metrics_full (403 plan_required otherwise). The body is the agent route market.flow\'s.',
        parameters: [
          { name: 'conditionId', in: 'path', required: true, description: 'condition id, 0x + 64 hex (any case)', schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$' } },
          queryParam('window_hours', `trailing window in hours (> 0, at most ${MAX_FLOW_WINDOW_HOURS}; default ${DEFAULT_FLOW_WINDOW_HOURS})`, {
            type: 'number',
            exclusiveMinimum: 0,
            maximum: MAX_FLOW_WINDOW_HOURS,
            default: DEFAULT_FLOW_WINDOW_HOURS,
          }),
        ],
        responses: {
          '200': { description: 'flow by cohort', content: { 'application/json': { schema: { $ref: '#/components/schemas/MarketFlow' } } } },
          ...errorResponses(400, 401, 403, 404, 500),
        },
      },
    },
  };
}

export function marketOpenApiSchemas(): Record<string, unknown> {
  return { MarketFlow: jsonSchema(MarketFlow) };
}

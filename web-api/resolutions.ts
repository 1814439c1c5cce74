/**
 * GET /v1/resolutions: the authoritative pull feed of market resolutions (data/resolution-feed.ts). Receivers of
 * the market.resolved webhook reconcile with it from a persisted cursor: every resolution appears exactly once, in
 * the order the service first saw it (seq), whatever its resolved_at. docs/api-traders.md has the parameters and
 * body.
 */
import express from 'express';
import { z } from 'zod';
import { errorResponses, jsonSchema, queryParam } from './openapi-parts.ts';
import type { QueryRunner } from '../core/query.ts';
import type { ResolutionFeed } from '../data/resolution-feed.ts';
import { ApiError } from './errors.ts';
import { requireAuth } from './principal.ts';

export const RESOLUTIONS_LIMIT = { min: 1, max: 1000, default: 100 } as const;

export const ResolutionItem = z.object({
  /** position in the feed: strictly increasing, assigned when the service first saw the resolution */
  seq: z.number().int().positive(),
  /** the cursor just after this row (persist it to resume after this row) */
  cursor: z.string(),
  condition_id: z.string(),
  question_id: z.string(),
  /** may be empty for very young markets */
  title: z.string(),
  /** may be empty for very young markets */
  slug: z.string(),
  category: z.string(),
  /** binary (two outcome slots) or categorical */
  market_kind: z.string(),
  /** YES | NO (or the venue's names of the outcomes: Up, Down, a team) | INVALID; null with winner_index -1 on ties or multi-outcome payouts */
  winner_outcome: z.string().nullable(),
  winner_index: z.number().int(),
  outcome_slot_count: z.number().int(),
  /** ISO 8601 time of the on-chain resolution */
  resolved_time: z.string(),
  tx_hash: z.string(),
  /** ISO 8601 time the service first saw the resolution (seq order follows it) */
  recorded_at: z.string(),
});
export type ResolutionItem = z.infer<typeof ResolutionItem>;

export const ResolutionsPage = z.object({
  rows: z.array(ResolutionItem),
  /** persist and send back as `cursor`; always present (unchanged when no row followed) */
  next_cursor: z.string(),
  /** more rows follow right now: fetch again without waiting */
  has_more: z.boolean(),
});
export type ResolutionsPage = z.infer<typeof ResolutionsPage>;

const ResolutionsQuery = z
  .object({
    cursor: z.string().max(256).optional(),
    limit: z
      .string()
      .regex(/^[0-9]{1,6}$/, `limit must be an integer ${RESOLUTIONS_LIMIT.min}-${RESOLUTIONS_LIMIT.max}`)
      .transform(Number)
      .pipe(z.number().int().min(RESOLUTIONS_LIMIT.min).max(RESOLUTIONS_LIMIT.max))
      .optional(),
  })
  .strict();

function badCursor(reason: string): ApiError {
  return new ApiError(400, 'invalid_request', 'invalid cursor', reason, [{ path: ['cursor'], code: 'custom', message: reason }]);
}

export function resolutionsRouter(deps: { db: QueryRunner; feed: ResolutionFeed; now: () => Date }): express.Router {
  const router = express.Router();
  router.get('/', async (req, res) => {
    requireAuth(res);
    const q = ResolutionsQuery.parse(req.query);
    const limit = q.limit ?? RESOLUTIONS_LIMIT.default;
    // the format is checked before any work; "not past the end" only after the sync
    if (q.cursor !== undefined) {
      const c = deps.feed.parseCursor(q.cursor);
      if (!c.ok) throw badCursor(c.reason);
    }
    try {
      await deps.feed.sync(deps.db);
    } catch (err) {
      // the log stays consistent without it: serve what is recorded, the next request syncs again
      console.error(`[${String(res.locals.traceId ?? '')}] resolution feed sync failed at ${deps.now().toISOString()}`, err);
      res.setHeader('X-Feed-Sync', 'failed');
    }
    let after = 0;
    if (q.cursor !== undefined) {
      const c = await deps.feed.checkCursor(q.cursor);
      if (!c.ok) throw badCursor(c.reason);
      after = c.seq;
    }
    const { rows, hasMore } = await deps.feed.page(after, limit);
    const body: ResolutionsPage = {
      rows: rows.map((r) => ({
        seq: r.seq,
        cursor: deps.feed.cursorFor(r.seq),
        condition_id: r.condition_id,
        question_id: r.question_id,
        title: r.title,
        slug: r.slug,
        category: r.category,
        market_kind: r.market_kind,
        winner_outcome: r.winner_outcome as ResolutionItem['winner_outcome'],
        winner_index: r.winner_index,
        outcome_slot_count: r.outcome_slot_count,
        resolved_time: r.resolved_time,
        tx_hash: r.tx_hash,
        recorded_at: r.recorded_at,
      })),
      next_cursor: deps.feed.cursorFor(rows.length ? rows[rows.length - 1]!.seq : after),
      has_more: hasMore,
    };
    res.setHeader('Cache-Control', 'no-store');
    res.json(body);
  });
  return router;
}

const errorRefs = errorResponses;

export function resolutionsOpenApiPaths(): Record<string, unknown> {
  return {
    '/v1/resolutions': {
      get: {
        summary: 'Authoritative pull feed of resolutions (resume from a persisted cursor; no gaps, no duplicates)',
        description:
          'Rows in feed order (seq): the order the service first saw each resolution, not resolved_at. Omit cursor to start at the beginning; ' +
          'persist next_cursor (or a row cursor) and send it back. has_more=true: fetch again now. API key or session.',
        parameters: [
          { name: 'cursor', in: 'query', required: false, description: 'opaque cursor from a previous page (next_cursor or a row cursor)', schema: { type: 'string', maxLength: 256 } },
          {
            name: 'limit',
            in: 'query',
            required: false,
            description: `rows per page (${RESOLUTIONS_LIMIT.min}-${RESOLUTIONS_LIMIT.max}, default ${RESOLUTIONS_LIMIT.default})`,
            schema: { type: 'integer', minimum: RESOLUTIONS_LIMIT.min, maximum: RESOLUTIONS_LIMIT.max, default: RESOLUTIONS_LIMIT.default },
          },
        ],
        responses: {
          '200': { description: 'a page of the feed', content: { 'application/json': { schema: { $ref: '#/components/schemas/ResolutionsPage' } } } },
          ...errorRefs(400, 401, 500),
        },
      },
    },
  };
}

export function resolutionsOpenApiSchemas(): Record<string, unknown> {
  return { ResolutionsPage: jsonSchema(ResolutionsPage) };
}

import { z } from 'zod';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { buildAsOf, count, int0, intParam, marketStateSql, num0, publicT, str, usd } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Top events
// ---------------------------------------------------------------------------------------------------------------

export const TOP_EVENTS_LIMIT = { min: 1, max: 50, default: 10 } as const;

export const PublicTopEvents = z.strictObject({
  events: z.array(z.strictObject({ slug: z.string(), title: z.string(), volume_24h_usdc: usd.nonnegative(), questions: count })),
  as_of: z.string(),
});
export type PublicTopEvents = z.infer<typeof PublicTopEvents>;

export const TopEventsQuery = z.strictObject({ limit: intParam(TOP_EVENTS_LIMIT) });

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

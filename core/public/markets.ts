import { z } from 'zod';
import { PublicTopHolder, marketConsensus, marketIdByConditionId, marketTeaserStats, toPublicTopHolders, topHolders } from '../market.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { SlugParam } from './events.ts';
import {
  MARKET_STATES,
  PublicError,
  ageSeconds,
  count,
  isoOrEmpty,
  marketStateSql,
  maybe,
  num0,
  price,
  publicT,
  requireBuild,
  str,
  usd,
  winnerSql,
  type MarketState,
} from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Market teaser
// ---------------------------------------------------------------------------------------------------------------

export const PUBLIC_TOP_HOLDERS = 5;

export const PublicMarketTeaser = z.strictObject({
  condition_id: z.string(),
  market_title: z.string(),
  market_category: z.string(),
  market_slug: z.string(),
  end_date: z.string(),
  resolved: z.boolean(),
  market_state: z.enum(MARKET_STATES),
  /** YES | NO, or the venue's name of the winner (Up, Down, a team: core/outcomes.ts) | INVALID; "" before */
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

export const MarketIdParam = SlugParam;

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

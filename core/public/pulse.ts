import { z } from 'zod';
import { SMART_MONEY_COHORTS, walletCohortSql } from '../market.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { ageSeconds, count, int0, marketStateSql, maybe, num, num0, publicT, requireBuild, usd } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// Pulse
// ---------------------------------------------------------------------------------------------------------------

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

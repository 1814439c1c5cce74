import { z } from 'zod';
import { MIN_RESOLVED_MARKETS } from '../calibration.ts';
import type { AsOf, QueryRunner } from '../query.ts';
import { presetBySlug } from '../rankings.ts';
import { PUBLIC_BOARD, ageSeconds, count, int0, intParam, maybe, num, num0, publicT, requireBuild, safeLabel, sqlStr, str, usd } from './shared.ts';
import type { TidIndex } from './tids.ts';

// ---------------------------------------------------------------------------------------------------------------
// Leaderboard
// ---------------------------------------------------------------------------------------------------------------

export const LEADERBOARD_LIMIT = { min: 1, max: 25, default: 25 } as const;

export const LeaderboardRow = z.strictObject({
  rank: z.number().int().positive(),
  tid: z.string(),
  wallet_label: z.string(),
  display: z.strictObject({ username: z.string(), pseudonym: z.string(), verified: z.boolean() }),
  composite_score: z.number(),
  realized_pnl: usd,
  lifetime_volume_usdc: usd.nonnegative(),
  trade_count: count,
  win_rate_pct: maybe(z.number().min(0).max(100)),
  n_resolved_markets: count,
  /** null: unmeasured (fewer than MIN_RESOLVED_MARKETS resolved markets); never 0 */
  calibration_excess_z: maybe(z.number()),
  calibration_excess_z_pctile: maybe(z.number().min(0).max(100)),
});
export type LeaderboardRow = z.infer<typeof LeaderboardRow>;
export const PublicLeaderboard = z.strictObject({
  preset: z.string(),
  title: z.string(),
  rows: z.array(LeaderboardRow).max(LEADERBOARD_LIMIT.max),
  total_rows: count,
  snapshot_age_seconds: count,
  as_of: z.string(),
});
export type PublicLeaderboard = z.infer<typeof PublicLeaderboard>;

export const LeaderboardQuery = z.strictObject({ limit: intParam(LEADERBOARD_LIMIT) });

/**
 * The anonymous top of PUBLIC_BOARD: masked identity (tid, username or pseudonym), headline numbers, and the
 * calibration z with its percentile, both null for a wallet under MIN_RESOLVED_MARKETS resolved markets (unmeasured:
 * never 0 and never a bottom rank).
 */
export async function publicLeaderboard(db: QueryRunner, now: AsOf, limitIn: number | undefined, tids: TidIndex): Promise<PublicLeaderboard> {
  const { limit } = LeaderboardQuery.parse({ limit: limitIn });
  const build = await requireBuild(db, true);
  const T = publicT(now, build);
  const preset = presetBySlug(PUBLIC_BOARD);
  const rows = await db.all<Record<string, unknown>>(
    `SELECT b.rank, b.address, b.username, b.pseudonym, b.verified, b.composite_score, b.realized_pnl, b.lifetime_volume_usdc,
      b.trade_count, b.win_rate_pct, b.n_resolved_markets, b.calibration_ranked, b.calibration_excess_z, m.calibration_excess_z_pctile
    FROM a_board b LEFT JOIN a_wallet_pctiles m USING (wallet_id)
    WHERE b.preset = ${sqlStr(preset.slug)} AND b.rank <= ${limit} ORDER BY b.rank`,
  );
  const [t] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_board WHERE preset = ${sqlStr(preset.slug)}`);
  return {
    preset: preset.slug,
    title: preset.title,
    rows: rows.map((r) => {
      const measured = Boolean(r.calibration_ranked) && int0(r.n_resolved_markets) >= MIN_RESOLVED_MARKETS;
      const username = safeLabel(str(r.username), '');
      const pseudonym = str(r.pseudonym);
      return {
        rank: int0(r.rank),
        tid: tids.tid(String(r.address)),
        wallet_label: username || pseudonym,
        display: { username, pseudonym, verified: Boolean(r.verified) },
        composite_score: num0(r.composite_score),
        realized_pnl: num0(r.realized_pnl),
        lifetime_volume_usdc: num0(r.lifetime_volume_usdc),
        trade_count: int0(r.trade_count),
        win_rate_pct: num(r.win_rate_pct),
        n_resolved_markets: int0(r.n_resolved_markets),
        calibration_excess_z: measured ? num(r.calibration_excess_z) : null,
        calibration_excess_z_pctile: measured ? num(r.calibration_excess_z_pctile) : null,
      };
    }),
    total_rows: int0(t?.n),
    snapshot_age_seconds: ageSeconds(T, build),
    as_of: build.toISOString(),
  };
}

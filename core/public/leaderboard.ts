import { z } from 'zod';
import { MIN_RESOLVED_MARKETS } from '../calibration.ts';
import type { AsOf, QueryRunner } from '../query.ts';
import { PRESETS, RankingConfig, boardHead, boardMeta, explainGates, presetBySlug } from '../rankings.ts';
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
export async function publicLeaderboard(db: QueryRunner, now: AsOf, limitIn: number | undefined, tids: TidIndex, slug: string = PUBLIC_BOARD): Promise<PublicLeaderboard> {
  const { limit } = LeaderboardQuery.parse({ limit: limitIn });
  const build = await requireBuild(db, true);
  const T = publicT(now, build);
  const preset = presetBySlug(slug);
  const stored = await boardMeta(db, preset.slug);
  const rows = await db.all<Record<string, unknown>>(
    `SELECT b.rank, b.address, b.username, b.pseudonym, b.verified, b.composite_score, b.realized_pnl, b.lifetime_volume_usdc,
      b.trade_count, b.win_rate_pct, b.n_resolved_markets, b.calibration_ranked, b.calibration_excess_z, m.calibration_excess_z_pctile
    FROM ${boardHead(stored, limit)} b LEFT JOIN a_wallet_pctiles m USING (wallet_id)
    WHERE b.preset = ${sqlStr(preset.slug)} AND b.rank <= ${limit} ORDER BY b.rank`,
  );
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
    total_rows: int0(stored?.total_rows),
    snapshot_age_seconds: ageSeconds(T, build),
    as_of: build.toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Every preset's board, anonymously (the web app's public preset pages)
// ---------------------------------------------------------------------------------------------------------------

export const PublicBoard = PublicLeaderboard.extend({
  purpose: z.string(),
  /** cohort → each gate → scored → one row per user, as the build counted them */
  explain: z.strictObject({
    cohort_size: count,
    gates: z.array(z.strictObject({ label: z.string(), condition: z.string(), dropped: count, remaining: count })),
  }),
});
export type PublicBoard = z.infer<typeof PublicBoard>;

export const PublicBoards = z.strictObject({
  presets: z.array(z.strictObject({ slug: z.string(), title: z.string(), purpose: z.string() })),
});
export type PublicBoards = z.infer<typeof PublicBoards>;

export function publicBoards(): PublicBoards {
  return { presets: PRESETS.map((p) => ({ slug: p.slug, title: p.title, purpose: p.purpose })) };
}

/** A preset's board as the leaderboard shows the default one (tids, masked identity), with its gates funnel. */
export async function publicBoard(db: QueryRunner, slug: string, now: AsOf, limitIn: number | undefined, tids: TidIndex): Promise<PublicBoard> {
  const preset = presetBySlug(slug);
  const board = await publicLeaderboard(db, now, limitIn, tids, preset.slug);
  const [m] = await db.all<{ cohort_size: number; gate_counts: number[]; scored: number; total_rows: number }>(
    `SELECT cohort_size, gate_counts, scored, total_rows FROM a_board_meta WHERE preset = ${sqlStr(preset.slug)}`,
  );
  const cfg = RankingConfig.parse(preset.config);
  const gates = m
    ? explainGates(cfg, { cohort: int0(m.cohort_size), counts: (m.gate_counts ?? []).map((x) => int0(x)), scored: int0(m.scored), total: int0(m.total_rows) })
    : [];
  return { ...board, purpose: preset.purpose, explain: { cohort_size: int0(m?.cohort_size), gates } };
}

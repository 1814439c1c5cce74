import { getAddress } from 'viem';
import { z } from 'zod';
import type { AsOf, QueryRunner } from '../query.ts';
import { METRICS, type MetricId } from '../rankings.ts';
import { resolveTrader } from '../trader/index.ts';
import { NO_CLAIMS, type ClaimLookup } from './directory.ts';
import { PUBLIC_BOARD, PublicError, ageSeconds, count, int0, isoOrEmpty, maybe, num, num0, publicT, requireBuild, safeLabel, sqlStr, str, usd } from './shared.ts';
import { ADDRESS_RE, TID_RE, type TidIndex } from './tids.ts';

// ---------------------------------------------------------------------------------------------------------------
// Trader teaser
// ---------------------------------------------------------------------------------------------------------------

/** Metrics the trader teaser shows; every other measured catalogue metric counts in locked_metric_count. */
export const TEASER_METRICS: readonly MetricId[] = ['realized_pnl', 'total_pnl', 'volume', 'trade_count', 'markets_traded', 'win_rate'];

export const PublicTraderDisplay = z.strictObject({
  username: z.string(),
  pseudonym: z.string(),
  profile_image: z.string(),
  x_username: z.string(),
  verified: z.boolean(),
  eoa: z.string(),
  claimed: z.boolean(),
  founding: z.boolean(),
});

export const PublicTraderTeaser = z.strictObject({
  /** EIP-55 address when asked by address; the tid itself when asked by tid (a tid is never unmasked) */
  proxy_wallet: z.string(),
  /** rank on the public board (PUBLIC_BOARD); null: not on it (gated out), never a bottom rank */
  rank: maybe(z.number().int().positive()),
  composite_score: maybe(z.number()),
  total_pnl: usd,
  realized_pnl: usd,
  pnl_under_review: z.boolean(),
  lifetime_volume_usdc: usd.nonnegative(),
  trade_count: count,
  markets_traded: count,
  /** null: no resolved position (unmeasured), never 0 */
  win_rate_pct: maybe(z.number().min(0).max(100)),
  percentiles: z.strictObject({
    total_pnl: maybe(z.number().min(0).max(100)),
    realized_pnl: maybe(z.number().min(0).max(100)),
    lifetime_volume_usdc: maybe(z.number().min(0).max(100)),
    win_rate_pct: maybe(z.number().min(0).max(100)),
  }),
  display: PublicTraderDisplay,
  first_trade_at: z.string(),
  last_trade_at: z.string(),
  locked_metric_count: count,
  snapshot_age_seconds: count,
  wallet_count: count,
});
export type PublicTraderTeaser = z.infer<typeof PublicTraderTeaser>;
/** A known wallet without activity as of the build: the empty success body. */
export const EmptyTraderTeaser = z.strictObject({});
export const PublicTraderResponse = z.union([PublicTraderTeaser, EmptyTraderTeaser]);
export type PublicTraderResponse = z.infer<typeof PublicTraderResponse>;

export const TraderRefParam = z
  .string()
  .refine((s) => ADDRESS_RE.test(s) || TID_RE.test(s), 'a proxy wallet (0x + 40 hex) or a tid (t_ + 22 characters)');

export type TraderRef = { kind: 'address'; address: string } | { kind: 'tid'; tid: string };

export function traderRef(s: string): TraderRef {
  return TID_RE.test(s) ? { kind: 'tid', tid: s } : { kind: 'address', address: s };
}

/** Catalogue metrics the teaser hides (locked_metric_count counts those measured for the wallet). */
export const LOCKED_METRICS: readonly MetricId[] = (Object.keys(METRICS) as MetricId[]).filter((id) => !TEASER_METRICS.includes(id));

/**
 * The trader teaser: headline numbers and percentiles from the analytics build, rank and composite on PUBLIC_BOARD
 * (the board row of the wallet's user), claim flags from the account directory. By tid, the proxy wallet and the
 * claimer's EOA stay masked. PublicError not_found: no such wallet. The empty body {}: a known wallet with no fill
 * as of the build.
 */
export async function publicTraderTeaser(db: QueryRunner, ref: TraderRef, now: AsOf, tids: TidIndex, claims: ClaimLookup = NO_CLAIMS): Promise<PublicTraderResponse> {
  const build = await requireBuild(db, true);
  const T = publicT(now, build);
  const address = ref.kind === 'address' ? ref.address : await tids.resolve(db, ref.tid);
  const who = address ? await resolveTrader(db, address) : null;
  if (!who) throw new PublicError('not_found', ref.kind === 'tid' ? `no trader ${ref.tid}` : `no trader ${ref.address}`);
  const measured = LOCKED_METRICS.map((id) => `coalesce((${METRICS[id].measured}), false)::INTEGER`).join(' + ');
  const [r] = await db.all<Record<string, unknown>>(
    `WITH b AS (SELECT *, ${measured} AS locked_metric_count FROM a_rank_base WHERE wallet_id = ${who.wallet_id})
    SELECT b.*, pc.total_pnl_pctile, pc.realized_pnl_pctile, pc.lifetime_volume_usdc_pctile, pc.win_rate_pct_pctile
    FROM b LEFT JOIN a_wallet_pctiles pc ON pc.wallet_id = ${who.wallet_id}`,
  );
  if (!r) return {};
  // the user's row of the public board (one per user: its best-scoring wallet, maybe not this one); a user's wallets
  // are its links (user_key is the linked user, else the wallet alone)
  const userWallets = r.linked_user_id === null || r.linked_user_id === undefined ? String(who.wallet_id) : `SELECT wallet_id FROM wallet_links WHERE user_id = ${sqlStr(String(r.linked_user_id))}`;
  const [bd] = await db.all<{ rank: number; composite_score: number }>(
    `SELECT rank, composite_score FROM a_board_rank WHERE preset = ${sqlStr(PUBLIC_BOARD)} AND wallet_id IN (${userWallets})`,
  );
  const [pop] = await db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_wallet_metrics`);
  const claim = (await claims([who.address])).get(who.address);
  const masked = ref.kind === 'tid';
  return {
    proxy_wallet: masked ? ref.tid : getAddress(who.address),
    rank: num(bd?.rank),
    composite_score: num(bd?.composite_score),
    total_pnl: num0(r.total_pnl),
    realized_pnl: num0(r.realized_pnl),
    pnl_under_review: num0(r.cluster_size) > 1,
    lifetime_volume_usdc: num0(r.lifetime_volume_usdc),
    trade_count: int0(r.trade_count),
    markets_traded: int0(r.markets_traded),
    win_rate_pct: num(r.win_rate_pct),
    percentiles: {
      total_pnl: num(r.total_pnl_pctile),
      realized_pnl: num(r.realized_pnl_pctile),
      lifetime_volume_usdc: num(r.lifetime_volume_usdc_pctile),
      win_rate_pct: num(r.win_rate_pct_pctile),
    },
    display: {
      username: safeLabel(str(r.username), ''),
      pseudonym: str(r.pseudonym),
      profile_image: str(r.profile_image),
      x_username: str(claim?.x_username),
      verified: Boolean(r.verified),
      eoa: masked ? '' : str(claim?.eoa),
      claimed: Boolean(claim?.claimed),
      founding: Boolean(claim?.founding),
    },
    first_trade_at: isoOrEmpty(r.first_trade_at),
    last_trade_at: isoOrEmpty(r.last_trade_at),
    locked_metric_count: int0(r.locked_metric_count),
    snapshot_age_seconds: ageSeconds(T, build),
    wallet_count: int0(pop?.n),
  };
}

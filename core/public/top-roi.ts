import { z } from 'zod';
import type { AsOf, QueryRunner } from '../query.ts';
import { TopRoiQuery, topRoiTrades, traderTid, type TopRoiQueryInput } from '../trader/index.ts';
import { buildAsOf, price, publicT, safeLabel, sqlStr } from './shared.ts';
import type { TidIndex } from './tids.ts';

// ---------------------------------------------------------------------------------------------------------------
// Top-ROI (core/trader/top-roi.ts topRoiTrades, in the spec's public shape)
// ---------------------------------------------------------------------------------------------------------------

export const PublicTopRoiTrade = z.strictObject({
  rank: z.number().int().positive(),
  tid: z.string(),
  wallet_label: z.string(),
  display: z.strictObject({ username: z.string(), pseudonym: z.string() }),
  market_title: z.string(),
  market_slug: z.string(),
  category: z.string(),
  cost_usdc: z.number().positive(),
  profit_usdc: z.number(),
  roi_x: z.number().nonnegative(),
  entry_price: price,
  resolved_at: z.string(),
});
export const PublicTopRoiTrades = z.strictObject({ trades: z.array(PublicTopRoiTrade) });
export type PublicTopRoiTrades = z.infer<typeof PublicTopRoiTrades>;
/** The public top-ROI query: core/trader/top-roi.ts TopRoiQuery, strict (unknown parameters are a 400). */
export const PublicTopRoiQuery = TopRoiQuery.strict();

export async function publicTopRoi(db: QueryRunner, now: AsOf, opts: TopRoiQueryInput, tids: TidIndex): Promise<PublicTopRoiTrades> {
  const T = publicT(now, await buildAsOf(db));
  const r = await topRoiTrades(db, T, opts, tids.key);
  const body: PublicTopRoiTrades = {
    trades: r.trades.map((t) => {
      return {
        rank: t.rank,
        tid: t.tid,
        wallet_label: safeLabel(t.wallet_label, t.display.pseudonym),
        display: { username: safeLabel(t.display.username ?? '', ''), pseudonym: t.display.pseudonym },
        market_title: t.market_title,
        market_slug: t.market_slug,
        category: t.category,
        cost_usdc: t.cost_usdc,
        profit_usdc: t.profit_usdc,
        roi_x: t.roi_x,
        entry_price: t.entry_price,
        resolved_at: t.resolved_at,
      };
    }),
  };
  await rememberTopRoiTids(db, tids, body);
  return body;
}
/**
 * Remember the wallets behind the tids of a top-ROI answer, so that /trader/{tid} resolves them without a scan: the
 * candidates are the wallets with the row's pseudonym (a handful), and only the one whose tid matches is kept.
 */
export async function rememberTopRoiTids(db: QueryRunner, tids: TidIndex, body: PublicTopRoiTrades): Promise<void> {
  const pseudonyms = [...new Set(body.trades.map((t) => t.display.pseudonym))];
  if (!pseudonyms.length) return;
  const want = new Set(body.trades.map((t) => t.tid));
  const rows = await db.all<{ address: string }>(`SELECT address FROM wallets WHERE pseudonym IN (${pseudonyms.map(sqlStr).join(', ')})`);
  for (const r of rows) {
    const tid = traderTid(tids.key, r.address);
    if (want.has(tid)) tids.remember(tid, r.address);
  }
}

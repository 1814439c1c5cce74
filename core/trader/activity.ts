import { z } from 'zod';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { ACT_KEY, cursorField, effectiveAsOf, encodeCursor, listOf } from './cursors.ts';
import { resolveTrader } from './identity.ts';
import { FEED_LIMIT } from './rules.ts';
import { OutcomeSide, Params, count, isoUs, num0, outcomeName } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// 3. Activity feed
// ---------------------------------------------------------------------------------------------------------------

export const ACTIVITY_TYPES = ['trade', 'redeem', 'split', 'merge', 'convert'] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];
/** Legs listed per inventory item (a neg-risk conversion can touch every question of a group). */
export const MAX_ACTIVITY_LEGS = 50;

export const TraderActivityQuery = z.object({
  /** item types to include (list or comma-separated); all when omitted */
  types: listOf(ACTIVITY_TYPES).optional(),
  limit: z.coerce.number().int().min(FEED_LIMIT.min).max(FEED_LIMIT.max).default(FEED_LIMIT.default),
  cursor: cursorField('act', ACT_KEY).optional(),
});
export type TraderActivityQueryInput = z.input<typeof TraderActivityQuery>;

const MarketRef = z.object({ condition_id: z.string(), title: z.string(), slug: z.string() });

export const ActivityTrade = z.object({
  type: z.literal('trade'),
  ts: z.string(),
  tx_hash: z.string(),
  log_index: z.number().int(),
  /** the wallet's role in the fill; both parties' legs are trades of the wallet */
  role: z.enum(['taker', 'maker']),
  side: z.enum(['BUY', 'SELL']),
  outcome: OutcomeSide,
  price: z.number(),
  shares: z.number(),
  size_usdc: z.number(),
  /** taker fee (0 on a maker leg) */
  fee_usdc: z.number(),
  market: MarketRef,
});

export const ActivityInventory = z.object({
  type: z.enum(['redeem', 'split', 'merge', 'convert']),
  ts: z.string(),
  tx_hash: z.string(),
  log_index: z.number().int(),
  /** shares split / merged / converted per token; for a redeem the payout */
  amount: z.number(),
  /** USDC into (+) or out of (-) the wallet */
  usdc_delta: z.number(),
  /** null for a conversion (it spans a neg-risk group) */
  market: MarketRef.nullable(),
  neg_risk_market_id: z.string().nullable(),
  legs: z.array(z.object({ condition_id: z.string(), outcome: OutcomeSide, shares_delta: z.number() })).max(MAX_ACTIVITY_LEGS),
  legs_total: count,
});

export const ActivityItem = z.union([ActivityTrade, ActivityInventory]);
export type ActivityItem = z.infer<typeof ActivityItem>;

export const TraderActivity = z.object({
  proxy_wallet: z.string(),
  as_of: z.string(),
  items: z.array(ActivityItem),
  next_cursor: z.string().nullable(),
});
export type TraderActivity = z.infer<typeof TraderActivity>;

/**
 * One wallet's unified feed as of T, newest first: trades (taker and maker legs), redeems (settlements), splits,
 * merges and conversions. Total order (ts desc, tx_hash desc, log_index desc, type desc, role/kind desc), keyset
 * pagination; the opaque cursor pins the first page's T.
 */
export async function traderActivity(db: QueryRunner, wallet: number | string, asOf: AsOf, opts: TraderActivityQueryInput = {}): Promise<TraderActivity | null> {
  const q = TraderActivityQuery.parse(opts);
  const T0 = effectiveAsOf(asOf, q.cursor);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const T = tsLiteral(T0);
  const W = who.wallet_id;
  const types = new Set<ActivityType>(q.types ?? ACTIVITY_TYPES);
  const params = new Params();
  let keyset = 'true';
  if (q.cursor) {
    const [kts, tx, li, ty, sub] = q.cursor.key;
    const [ptx, pty, psub] = [params.add(tx), params.add(ty), params.add(sub)];
    keyset = `(k_ts < ${kts} OR (k_ts = ${kts} AND (tx_hash < ${ptx} OR (tx_hash = ${ptx} AND (log_index < ${li}
      OR (log_index = ${li} AND (type < ${pty} OR (type = ${pty} AND sub < ${psub}))))))))`;
  }
  const invTypes = [...types].filter((t) => t !== 'trade').map((t) => `'${t.toUpperCase()}'`);
  const parts: string[] = [];
  if (types.has('trade')) {
    parts.push(`SELECT 'trade' AS type, ts, tx_hash, log_index, role AS sub, side, market_id, outcome_index::INTEGER AS outcome_index,
        price, shares, size_usdc, fee_usdc, NULL::DOUBLE AS amount, NULL::DOUBLE AS usdc_delta, NULL::VARCHAR AS neg_risk_market_id
      FROM fill_legs WHERE wallet_id = ${W} AND ts <= ${T}`);
  }
  if (invTypes.length) {
    parts.push(`SELECT lower(kind) AS type, ts, tx_hash, log_index, kind AS sub, NULL::VARCHAR AS side, market_id, NULL::INTEGER AS outcome_index,
        NULL::DOUBLE AS price, NULL::DOUBLE AS shares, NULL::DOUBLE AS size_usdc, NULL::DOUBLE AS fee_usdc, amount, usdc_delta, neg_risk_market_id
      FROM inventory_events WHERE wallet_id = ${W} AND ts <= ${T} AND kind IN (${invTypes.join(', ')})`);
  }
  const rows = await db.all<Record<string, unknown>>(
    `WITH feed AS (SELECT *, epoch_us(ts) AS k_ts FROM (${parts.join(' UNION ALL ')}))
    SELECT feed.*, m.condition_id, m.question, m.slug, m.outcome_labels FROM feed LEFT JOIN markets m USING (market_id)
    WHERE ${keyset}
    ORDER BY k_ts DESC, tx_hash DESC, log_index DESC, type DESC, sub DESC LIMIT ${q.limit + 1}`,
    params.values,
  );
  const page = rows.slice(0, q.limit);
  const inv = page.filter((r) => r.type !== 'trade');
  const legsBy = new Map<string, { condition_id: string; outcome: string; shares_delta: number }[]>();
  if (inv.length) {
    const lp = new Params();
    const keys = [...new Set(inv.map((r) => String(r.tx_hash)))].map((tx) => lp.add(tx));
    const legs = await db.all<Record<string, unknown>>(
      `SELECT l.tx_hash, l.log_index, l.outcome_index, l.shares_delta, m.condition_id, m.outcome_labels
      FROM inventory_legs l JOIN markets m USING (market_id)
      WHERE l.wallet_id = ${W} AND l.tx_hash IN (${keys.join(', ')})
      ORDER BY l.tx_hash, l.log_index, l.market_id, l.outcome_index`,
      lp.values,
    );
    for (const l of legs) {
      const k = `${l.tx_hash}#${num0(l.log_index)}`;
      const list = legsBy.get(k) ?? [];
      list.push({ condition_id: String(l.condition_id), outcome: outcomeName(num0(l.outcome_index), l.outcome_labels), shares_delta: num0(l.shares_delta) });
      legsBy.set(k, list);
    }
  }
  const market = (r: Record<string, unknown>) =>
    r.condition_id === null || r.condition_id === undefined ? null : { condition_id: String(r.condition_id), title: String(r.question), slug: String(r.slug) };
  const items: ActivityItem[] = page.map((r) => {
    const base = { ts: isoUs(num0(r.k_ts)), tx_hash: String(r.tx_hash), log_index: num0(r.log_index) };
    if (r.type === 'trade') {
      return {
        type: 'trade' as const,
        ...base,
        role: r.sub as 'taker' | 'maker',
        side: r.side as 'BUY' | 'SELL',
        outcome: outcomeName(num0(r.outcome_index), r.outcome_labels),
        price: num0(r.price),
        shares: num0(r.shares),
        size_usdc: num0(r.size_usdc),
        fee_usdc: num0(r.fee_usdc),
        market: market(r) ?? { condition_id: '', title: '', slug: '' },
      };
    }
    const legs = legsBy.get(`${r.tx_hash}#${num0(r.log_index)}`) ?? [];
    return {
      type: r.type as 'redeem' | 'split' | 'merge' | 'convert',
      ...base,
      amount: num0(r.amount),
      usdc_delta: num0(r.usdc_delta),
      market: market(r),
      neg_risk_market_id: (r.neg_risk_market_id as string | null) ?? null,
      legs: legs.slice(0, MAX_ACTIVITY_LEGS),
      legs_total: legs.length,
    };
  });
  const last = page[page.length - 1];
  return {
    proxy_wallet: who.address,
    as_of: T0.toISOString(),
    items,
    next_cursor:
      rows.length > q.limit && last
        ? encodeCursor('act', T0, [num0(last.k_ts), String(last.tx_hash), num0(last.log_index), String(last.type), String(last.sub)])
        : null,
  };
}

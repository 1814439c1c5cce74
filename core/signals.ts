/**
 * Smart-money signals (the spec's signal.smart_money event): a taker fill of at least SMART_MONEY_MIN_USD (5,000 USD)
 * by a wallet with at least one positive smart-money tag (whale, sharp, early_bird, contrarian; core/tags.ts).
 * signal_type is large_buy when the taker bought the outcome token and exit when the taker sold it.
 *
 * One rule, two consumers: signalFromFill() decides for one fill (the real-time webhook producer calls it per taker
 * fill with the wallet's current tags); smartMoneySignals() lists the recent signals as of T with the same rule in SQL
 * and then maps every row through signalFromFill(), so the list can never carry a signal the rule would refuse (a
 * property test checks the SQL selects exactly the fills the rule accepts).
 *
 * As of T, without lookahead: only fills stamped <= T are read, and the wallet tags come from the analytics build
 * (a_wallet_metrics.smart_money_tags), which must be as of T or earlier (labels_as_of in the answer). The tags are the
 * build's, applied to every fill of the window: "wallets that are smart money as of the build, and what they did".
 */
import { outcomeLabel } from './outcomes.ts';
import { getAddress } from 'viem';
import { z } from 'zod';
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';
import { SMART_MONEY_TAGS, type SmartMoneyTag } from './tags.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rule and bounds
// ---------------------------------------------------------------------------------------------------------------

/** The spec's smart-money threshold: a fill of 5,000 USD or more (taker notional, price * shares, fees excluded). */
export const SMART_MONEY_MIN_USD = 5000;
export const SIGNAL_TYPES = ['large_buy', 'exit'] as const;
export type SignalType = (typeof SIGNAL_TYPES)[number];
export const SIGNALS_SINCE_HOURS = { min: 1, max: 168, default: 24 } as const;
export const SIGNALS_LIMIT = { min: 1, max: 200, default: 50 } as const;

export class SignalError extends Error {
  constructor(
    readonly code: 'analytics_missing' | 'analytics_after_as_of',
    message: string,
  ) {
    super(message);
    this.name = 'SignalError';
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------------------------

/** YES | NO, or the venue's name of the outcome (core/outcomes.ts) */
const OutcomeSide = z.string().min(1);
const Tags = z.array(z.enum(SMART_MONEY_TAGS)).min(1).max(SMART_MONEY_TAGS.length);

const signalDataShape = {
  signal_type: z.enum(SIGNAL_TYPES),
  /** EIP-55 proxy wallet of the taker */
  trader_proxy: z.string(),
  /** the wallet's positive smart-money tags, in SMART_MONEY_TAGS order */
  smart_money_tags: Tags,
  condition_id: z.string(),
  /** the market's question */
  title: z.string(),
  /** the outcome token the taker traded */
  outcome_side: OutcomeSide,
  price: z.number(),
  size_usdc: z.number().min(SMART_MONEY_MIN_USD),
  tx_hash: z.string(),
};

/** Exactly the spec's signal.smart_money data fields. */
export const SmartMoneySignalData = z.strictObject(signalDataShape);
export type SmartMoneySignalData = z.infer<typeof SmartMoneySignalData>;

/** A listed signal: the event data plus where the fill sits in the chain (ts, log_index). */
export const SmartMoneySignal = z.strictObject({ ...signalDataShape, ts: z.string(), log_index: z.number().int().nonnegative() });
export type SmartMoneySignal = z.infer<typeof SmartMoneySignal>;

export const SmartMoneySignals = z.strictObject({
  as_of: z.string(),
  /** the analytics build the tags come from (<= as_of) */
  labels_as_of: z.string(),
  since_hours: z.number().int(),
  /** the window is (window_start, as_of] */
  window_start: z.string(),
  min_size_usdc: z.number(),
  signals: z.array(SmartMoneySignal).max(SIGNALS_LIMIT.max),
  next_cursor: z.string().nullable(),
});
export type SmartMoneySignals = z.infer<typeof SmartMoneySignals>;

/** One taker fill as the rule sees it (the webhook producer builds it from a trader.fill). */
export interface SignalFill {
  trader_proxy: string;
  condition_id: string;
  title: string;
  outcome_side: string;
  /** the taker's side on the outcome token, any case ('BUY' in the venue tables, 'buy' in trader.fill) */
  taker_side: string;
  price: number;
  size_usdc: number;
  tx_hash: string;
}

/** The wallet's positive smart-money tags among `tags`, deduplicated, in SMART_MONEY_TAGS order. */
export function positiveTags(tags: readonly string[]): SmartMoneyTag[] {
  const have = new Set(tags);
  return SMART_MONEY_TAGS.filter((t) => have.has(t));
}

/**
 * The rule for one fill: a signal when the taker's notional is at least SMART_MONEY_MIN_USD and the taker holds at
 * least one positive smart-money tag; large_buy when the taker bought, exit when it sold; null otherwise.
 */
export function signalFromFill(fill: SignalFill, walletTags: readonly string[]): SmartMoneySignalData | null {
  if (!Number.isFinite(fill.size_usdc) || fill.size_usdc < SMART_MONEY_MIN_USD) return null;
  const tags = positiveTags(walletTags);
  if (!tags.length) return null;
  const side = fill.taker_side.toUpperCase();
  if (side !== 'BUY' && side !== 'SELL') return null;
  return {
    signal_type: side === 'BUY' ? 'large_buy' : 'exit',
    trader_proxy: getAddress(fill.trader_proxy),
    smart_money_tags: tags,
    condition_id: fill.condition_id,
    title: fill.title,
    outcome_side: fill.outcome_side,
    price: fill.price,
    size_usdc: fill.size_usdc,
    tx_hash: fill.tx_hash,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Query
// ---------------------------------------------------------------------------------------------------------------

const CursorPayload = z.strictObject({
  v: z.literal(1),
  f: z.literal('sig'),
  /** as-of of the first page, epoch ms */
  t: z.number().int(),
  /** the last row of the page: (ts in epoch µs, tx_hash, log_index) */
  k: z.tuple([z.number().int(), z.string().regex(/^0x[0-9a-fA-F]{1,128}$/), z.number().int().nonnegative()]),
});
type CursorPayload = z.infer<typeof CursorPayload>;

function encodeCursor(asOf: AsOf, k: CursorPayload['k']): string {
  return Buffer.from(JSON.stringify({ v: 1, f: 'sig', t: asOf.getTime(), k } satisfies CursorPayload), 'utf8').toString('base64url');
}

const CursorField = z
  .string()
  .max(512)
  .transform((s, ctx) => {
    try {
      const p = CursorPayload.parse(JSON.parse(Buffer.from(s, 'base64url').toString('utf8')));
      return { asOf: new Date(p.t), key: p.k };
    } catch {
      ctx.addIssue({ code: 'custom', message: 'invalid cursor' });
      return z.NEVER;
    }
  });

export const SmartMoneySignalsQuery = z.strictObject({
  /** the window: fills in (T - sinceHours, T] */
  sinceHours: z.number().int().min(SIGNALS_SINCE_HOURS.min).max(SIGNALS_SINCE_HOURS.max).default(SIGNALS_SINCE_HOURS.default),
  limit: z.number().int().min(SIGNALS_LIMIT.min).max(SIGNALS_LIMIT.max).default(SIGNALS_LIMIT.default),
  /** keep signals whose tags intersect these */
  tags: z.array(z.enum(SMART_MONEY_TAGS)).min(1).max(SMART_MONEY_TAGS.length).optional(),
  /** keep these signal types */
  signalTypes: z.array(z.enum(SIGNAL_TYPES)).min(1).max(SIGNAL_TYPES.length).optional(),
  /** one market: its condition id (0x + 64 hex, any case) */
  conditionId: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, 'a condition id: 0x + 64 hex')
    .transform((s) => s.toLowerCase())
    .optional(),
  /** next_cursor of the previous page (pins the first page's T) */
  cursor: CursorField.optional(),
});
export type SmartMoneySignalsQueryInput = z.input<typeof SmartMoneySignalsQuery>;

const inList = (xs: readonly string[]) => xs.map((x) => `'${x}'`).join(', ');

/** The analytics build usable as of T: its as_of, or a SignalError. */
async function labelsAsOf(db: QueryRunner, asOf: AsOf): Promise<Date> {
  const [t] = await db.all<{ n: number }>(
    `SELECT count(DISTINCT table_name)::INTEGER AS n FROM information_schema.tables WHERE table_name IN ('a_meta', 'a_wallet_metrics')`,
  );
  if (Number(t?.n ?? 0) < 2) throw new SignalError('analytics_missing', 'no analytics build (a_meta, a_wallet_metrics) to read wallet tags from');
  const [m] = await db.all<{ as_of_us: number }>(`SELECT epoch_us(as_of) AS as_of_us FROM a_meta ORDER BY as_of DESC LIMIT 1`);
  if (!m) throw new SignalError('analytics_missing', 'the analytics build has no as_of');
  const built = new Date(Math.floor(Number(m.as_of_us) / 1000));
  if (built.getTime() > asOf.getTime()) {
    throw new SignalError('analytics_after_as_of', `the analytics build is as of ${built.toISOString()}, after ${asOf.toISOString()}: its tags would look ahead`);
  }
  return built;
}

/**
 * Recent smart-money signals as of T, newest first: taker fills in (T - sinceHours, T] of at least
 * SMART_MONEY_MIN_USD by wallets with a positive smart-money tag, optionally narrowed by tags, signal types and one
 * market. Total order (ts desc, tx_hash desc, log_index desc), keyset pagination; the opaque cursor pins the first
 * page's T so pages concatenate exactly. Invalid options throw a ZodError; a missing or later build a SignalError.
 */
export async function smartMoneySignals(db: QueryRunner, asOf: AsOf, opts: SmartMoneySignalsQueryInput = {}): Promise<SmartMoneySignals> {
  const q = SmartMoneySignalsQuery.parse(opts);
  tsLiteral(asOf); // validates
  const T0 = q.cursor && q.cursor.asOf.getTime() < asOf.getTime() ? q.cursor.asOf : asOf;
  const built = await labelsAsOf(db, T0);
  const T = tsLiteral(T0);
  const start = new Date(T0.getTime() - q.sinceHours * 3_600_000);
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = [`f.ts > ${tsLiteral(start)}`, `f.ts <= ${T}`, `f.size_usdc >= ${SMART_MONEY_MIN_USD}`, `f.side IN ('BUY', 'SELL')`];
  if (q.signalTypes) where.push(`f.side IN (${q.signalTypes.map((s) => (s === 'large_buy' ? "'BUY'" : "'SELL'")).join(', ')})`);
  if (q.conditionId) where.push(`f.market_id IN (SELECT market_id FROM markets WHERE condition_id = ${p(q.conditionId)})`);
  const tagged = [`len(tags) > 0`];
  if (q.tags) tagged.push(`list_has_any(tags, [${inList(q.tags)}]::VARCHAR[])`);
  if (q.cursor) {
    const [kts, ktx, kli] = q.cursor.key;
    const tx = p(ktx);
    tagged.push(`(k_ts < ${kts} OR (k_ts = ${kts} AND (tx_hash < ${tx} OR (tx_hash = ${tx} AND log_index < ${kli}))))`);
  }
  const rows = await db.all<Record<string, unknown>>(
    `WITH big AS (
      SELECT f.tx_hash, f.log_index, epoch_us(f.ts) AS k_ts, f.market_id, f.outcome_index, f.taker_id, f.side, f.price, f.size_usdc
      FROM fills f WHERE ${where.join(' AND ')}),
    s AS (
      SELECT big.*, list_filter(a.smart_money_tags, x -> x IN (${inList(SMART_MONEY_TAGS)})) AS tags
      FROM big JOIN a_wallet_metrics a ON a.wallet_id = big.taker_id)
    SELECT s.*, m.condition_id, m.question, m.outcome_labels, w.address
    FROM s JOIN markets m USING (market_id) JOIN wallets w ON w.wallet_id = s.taker_id
    WHERE ${tagged.join(' AND ')}
    ORDER BY k_ts DESC, tx_hash DESC, log_index DESC LIMIT ${q.limit + 1}`,
    params,
  );
  const page = rows.slice(0, q.limit);
  const signals = page.map((r): SmartMoneySignal => {
    const data = signalFromFill(
      {
        trader_proxy: String(r.address),
        condition_id: String(r.condition_id),
        title: String(r.question),
        outcome_side: outcomeLabel(r.outcome_labels as string[] | null, Number(r.outcome_index)),
        taker_side: String(r.side),
        price: Number(r.price),
        size_usdc: Number(r.size_usdc),
        tx_hash: String(r.tx_hash),
      },
      (r.tags as string[] | null) ?? [],
    );
    // the SQL applies the same rule; a row it refuses would be a bug in one of the two
    if (!data) throw new Error(`signal rule and SQL disagree on ${String(r.tx_hash)}#${String(r.log_index)}`);
    return { ...data, ts: new Date(Math.floor(Number(r.k_ts) / 1000)).toISOString(), log_index: Number(r.log_index) };
  });
  const last = page[page.length - 1];
  return {
    as_of: T0.toISOString(),
    labels_as_of: built.toISOString(),
    since_hours: q.sinceHours,
    window_start: start.toISOString(),
    min_size_usdc: SMART_MONEY_MIN_USD,
    signals,
    next_cursor: rows.length > q.limit && last ? encodeCursor(T0, [Number(last.k_ts), String(last.tx_hash), Number(last.log_index)]) : null,
  };
}

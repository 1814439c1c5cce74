/**
 * Traders: one wallet's calibration record, positions feed, activity feed, copy-fitness bundle and agent playbook,
 * plus the venue-wide top-ROI trades. Everything is "as of T": only rows stamped <= T are read (fills, inventory,
 * mids, resolutions), and cohort-relative figures (the calibration percentile, the sharp cutoff) come from an
 * analytics build whose as_of is <= T, never a later one.
 *
 * Per-wallet figures are computed from the venue tables, not read from a build, so that they are exact at any T. To
 * keep that cheap, positionsSql / walletAlphaSql / walletFeaturesSql are run with the venue relations they read
 * (fill_legs, inventory_legs, inventory_events, mids) narrowed to the wallet by CTEs of the same names (walletScope);
 * every result is still filtered on wallet_id, so the narrowing only ever saves time, it never decides a figure.
 *
 * Unknown wallets (no row in `wallets`) give null; the surfaces map that to not_found. Invalid options (limits,
 * cursors, scopes) throw a ZodError from the exported query schemas; the surfaces map that to a 400.
 *
 * docs/methodology.md "Traders: feeds, copy-fitness, playbook" records every rule and threshold used here.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { walletAlphaSql } from './alpha.ts';
import { walletFeaturesSql } from './wallet-features.ts';
import {
  CALIBRATION_BINS,
  CalibrationScope,
  MIN_RESOLVED_MARKETS,
  binLabel,
  calibrationInputsSql,
  calibrationSummary,
  scopePredicate,
  skillDeviate,
  type CalibrationInput,
} from './calibration.ts';
import { DUST_SHARES, positionEventsSql, positionsSql } from './positions.ts';
import { COPY_RULES } from './copy-rules.ts';
import { tsLiteral, type AsOf, type QueryRunner } from './query.ts';
import { SMART_MONEY_TAGS, smartMoneyTags, type SmartMoneyTag } from './tags.ts';

// ---------------------------------------------------------------------------------------------------------------
// Rules and bounds (documented in docs/methodology.md)
// ---------------------------------------------------------------------------------------------------------------

/** Page sizes of the positions and activity feeds. */
export const FEED_LIMIT = { min: 1, max: 200, default: 50 } as const;

export const TOP_ROI_RULE = {
  /** A position must have cost at least this much (buy notional + taker fees) so that dust does not dominate. */
  minCostUsd: 50,
  limit: { min: 1, max: 100, default: 20 },
  sinceDays: { min: 1, max: 365, default: 30 },
} as const;

export { COPY_RULES };


export const BUDGET_RULES = {
  /** Capital at work is sampled at T and every 24 h before it over this many days. */
  windowDays: 90,
  /** The venue's smallest order. */
  minOrderUsd: 1,
  /** A scaled fill fits a market when it is at most this share of the market's liquidity. */
  liquidityCapShare: 0.02,
  /** The follower can mirror within liquidity when at most this share of scaled fills exceed the cap. */
  maxOverCapShare: 0.1,
  /** Budget too small when more than this share of scaled clips fall below the minimum order. */
  maxBelowMinShare: 0.25,
  defaultBudgetUsd: 1_000,
} as const;

export const PLAYBOOK_RULES = {
  maxCategories: 5,
  /** A category's own calibration is shown from this many resolved markets in it. */
  minCategoryMarkets: 10,
  /** taker / maker style thresholds on the taker share of fills */
  takerStyleMin: 0.7,
  makerStyleMax: 0.3,
  /** one category is a "focus" when it has at least this share of volume */
  focusShare: 0.4,
} as const;

// ---------------------------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------------------------

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const WEEK_MS = 7 * DAY_MS;

function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}
function num0(v: unknown): number {
  return num(v) ?? 0;
}
function iso(v: unknown): string {
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'number' || typeof v === 'bigint') return new Date(Number(v)).toISOString();
  return new Date(String(v)).toISOString();
}
function isoOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : iso(v);
}
/** An epoch in microseconds (DuckDB epoch_us) as an ISO string (millisecond precision). */
function isoUs(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString();
}
const clamp01 = (x: number) => Math.min(1, Math.max(0, x));
/** Round to `d` significant digits (compact agent output). */
function sig(x: number | null, d = 4): number | null {
  if (x === null || !Number.isFinite(x)) return null;
  if (x === 0) return 0;
  return Number(x.toPrecision(d));
}
function quantileList(v: unknown, n: number): (number | null)[] {
  const arr = Array.isArray(v) ? v : [];
  return Array.from({ length: n }, (_, i) => num(arr[i]));
}
/** SQL parameters collected while building a statement ($1, $2, ...). */
class Params {
  readonly values: unknown[] = [];
  add(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}
const outcomeName = (o: number) => (o === 0 ? 'YES' : 'NO');

// ---------------------------------------------------------------------------------------------------------------
// Identity and scoping
// ---------------------------------------------------------------------------------------------------------------

export interface TraderIdentity {
  wallet_id: number;
  /** the proxy wallet, 0x + 40 hex, lowercase */
  address: string;
  username: string | null;
  pseudonym: string;
}

/**
 * A wallet by its internal id (number) or its proxy address (0x + 40 hex, any case). Null when unknown or when the
 * reference is neither form.
 */
export async function resolveTrader(db: QueryRunner, wallet: number | string): Promise<TraderIdentity | null> {
  let where: string;
  let value: unknown;
  if (typeof wallet === 'number') {
    if (!Number.isSafeInteger(wallet) || wallet < 0 || wallet > 2 ** 31 - 1) return null;
    where = 'wallet_id = $1::INTEGER';
    value = wallet;
  } else if (/^0x[0-9a-fA-F]{40}$/.test(wallet)) {
    where = 'address = $1';
    value = wallet.toLowerCase();
  } else return null;
  const [row] = await db.all<TraderIdentity>(`SELECT wallet_id, address, username, pseudonym FROM wallets WHERE ${where} LIMIT 1`, [value]);
  return row ? { wallet_id: num0(row.wallet_id), address: row.address, username: row.username ?? null, pseudonym: row.pseudonym } : null;
}

/**
 * positionEventsSql's `ev` rows carry the position as one packed key, pk = wallet << 32 | market << 1 | outcome,
 * and positionsSql orders a position's events by (ts, log_index, ord, q desc). The episode and top-ROI queries
 * below read `ev` directly, so they decode the key and use the same order (tested against positionsSql).
 */
const PK_WALLET = '(pk >> 32)::INTEGER';
const PK_MARKET = '((pk >> 1) & 2147483647)::INTEGER';
const PK_OUTCOME = '(pk & 1)::UTINYINT';
const EVENT_ORDER = 'ts, log_index, ord, q DESC';

const schemaCache = new WeakMap<QueryRunner, string>();
/** The schema the unqualified venue names resolve to (the CTEs below must name the real relations explicitly). */
async function venueSchema(db: QueryRunner): Promise<string> {
  const cached = schemaCache.get(db);
  if (cached) return cached;
  const [row] = await db.all<{ s: string }>(`SELECT current_schema() AS s`);
  const s = `"${(row?.s ?? 'main').replaceAll('"', '""')}"`;
  schemaCache.set(db, s);
  return s;
}

/**
 * CTEs (without the WITH keyword) that shadow the venue relations read by positionsSql, walletAlphaSql and
 * walletFeaturesSql with one wallet's rows: its fill legs, its inventory events and legs (every leg of an inventory
 * event belongs to the event's wallet), and the mids of the markets it touched.
 */
export function walletScopeSql(schema: string, walletId: number): string {
  if (!Number.isSafeInteger(walletId)) throw new Error('wallet id must be an integer');
  return `fill_legs AS (SELECT * FROM ${schema}.fill_legs WHERE wallet_id = ${walletId}),
  inventory_events AS (SELECT * FROM ${schema}.inventory_events WHERE wallet_id = ${walletId}),
  inventory_legs AS (SELECT * FROM ${schema}.inventory_legs WHERE wallet_id = ${walletId}),
  mids AS (SELECT * FROM ${schema}.mids WHERE market_id IN (SELECT market_id FROM fill_legs UNION SELECT market_id FROM inventory_legs))`;
}

/** SQL (a SELECT) of one wallet's positions as of T: positionsSql over the wallet-scoped venue. */
export function walletPositionsSql(schema: string, walletId: number, asOf: AsOf): string {
  return `WITH ${walletScopeSql(schema, walletId)}
    SELECT * FROM (${positionsSql(asOf)}) wp WHERE wallet_id = ${walletId}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Cursors: opaque, pin the first page's as-of, keyset over a total order
// ---------------------------------------------------------------------------------------------------------------

type FeedKind = 'pos' | 'act';
const CursorPayload = z.object({
  v: z.literal(1),
  f: z.enum(['pos', 'act']),
  /** as-of of the first page, epoch ms */
  t: z.number().int(),
  k: z.array(z.union([z.number(), z.string().max(160)])).min(1).max(8),
});
type CursorPayload = z.infer<typeof CursorPayload>;

function encodeCursor(f: FeedKind, asOf: AsOf, k: (number | string)[]): string {
  return Buffer.from(JSON.stringify({ v: 1, f, t: asOf.getTime(), k } satisfies CursorPayload), 'utf8').toString('base64url');
}

const POS_KEY = z.tuple([z.number().int(), z.number().int().nonnegative(), z.number().int().min(0).max(1)]);
const ACT_KEY = z.tuple([z.number().int(), z.string().regex(/^[0-9A-Za-z_:.-]{1,160}$/), z.number().int(), z.string().regex(/^[a-z]{1,10}$/), z.string().regex(/^[A-Za-z]{1,10}$/)]);

function cursorField<K extends z.ZodType>(f: FeedKind, key: K) {
  return z
    .string()
    .max(1024)
    .transform((s, ctx) => {
      try {
        const p = CursorPayload.parse(JSON.parse(Buffer.from(s, 'base64url').toString('utf8')));
        if (p.f !== f) throw new Error('cursor of another feed');
        return { asOf: new Date(p.t), key: key.parse(p.k) as z.infer<K> };
      } catch {
        ctx.addIssue({ code: 'custom', message: 'invalid cursor' });
        return z.NEVER;
      }
    });
}

/** A cursor pins the first page's T, so pages concatenate exactly; never later than the caller's T. */
function effectiveAsOf(asOf: AsOf, cursor: { asOf: Date } | undefined): AsOf {
  tsLiteral(asOf); // validates
  return cursor && cursor.asOf.getTime() < asOf.getTime() ? cursor.asOf : asOf;
}

/** A list option: an array or a comma-separated string, matched case-insensitively against the allowed values. */
const listOf = <T extends readonly [string, ...string[]]>(values: T) => {
  const upper = values.every((x) => x === x.toUpperCase());
  const norm = (x: unknown) => (typeof x === 'string' ? (upper ? x.trim().toUpperCase() : x.trim().toLowerCase()) : x);
  return z.preprocess(
    (v) => (typeof v === 'string' ? v.split(',').map(norm).filter(Boolean) : Array.isArray(v) ? v.map(norm) : v),
    z.array(z.enum(values)).min(1).max(values.length),
  );
};

// ---------------------------------------------------------------------------------------------------------------
// Shared output pieces
// ---------------------------------------------------------------------------------------------------------------

const count = z.number().int().nonnegative();
const share = z.number().min(0).max(1);
const OutcomeSide = z.enum(['YES', 'NO']);
export const Tone = z.enum(['good', 'caution', 'bad']);
export type Tone = z.infer<typeof Tone>;

/** The spec's verdict object (ranking rows carry the same shape). */
export const Verdict = z.object({
  overall: z.number().min(0).max(100),
  tone: Tone,
  title: z.string(),
  topTag: z.object({ label: z.string(), tone: Tone, title: z.string() }),
  copyRecommended: z.boolean(),
  copiesBadly: z.boolean(),
});
export type Verdict = z.infer<typeof Verdict>;

// ---------------------------------------------------------------------------------------------------------------
// 1. Calibration record
// ---------------------------------------------------------------------------------------------------------------

export const TraderCalibrationBin = z.object({
  bin_idx: z.number().int().min(0).max(CALIBRATION_BINS - 1),
  bin_label: z.string(),
  /** mean entry price in the bin; null when the bin is empty */
  predicted_mean: z.number().min(0).max(1).nullable(),
  /** share of the bin's positions whose token won; null when the bin is empty */
  observed_rate: z.number().min(0).max(1).nullable(),
  n: count,
});

export const TraderCalibration = z.object({
  proxy_wallet: z.string(),
  scope: z.string(),
  as_of: z.string(),
  bins: z.array(TraderCalibrationBin).length(CALIBRATION_BINS),
  n_total: count,
  brier: z.number().nullable(),
  calibration_excess: z.number().nullable(),
  calibration_excess_z: z.number().nullable(),
  n_markets: count,
  ranked: z.boolean(),
});
export type TraderCalibration = z.infer<typeof TraderCalibration>;

interface CalibrationRow extends CalibrationInput {
  category: string;
}

async function walletCalibrationInputs(db: QueryRunner, schema: string, walletId: number, asOf: AsOf, scope: CalibrationScope): Promise<CalibrationRow[]> {
  const T = tsLiteral(asOf);
  const rows = await db.all<{ market_id: number; p: number; o: number; category: string }>(
    `WITH ${walletScopeSql(schema, walletId)}
    SELECT c.market_id, c.p::DOUBLE AS p, c.o::INTEGER AS o, c.category
    FROM (${calibrationInputsSql(`(${positionsSql(asOf)})`)}) c
    JOIN markets m USING (market_id) JOIN resolutions r USING (market_id)
    WHERE c.wallet_id = ${walletId} AND ${scopePredicate(scope, T)}
    ORDER BY c.market_id, c.outcome_index`,
  );
  return rows.map((r) => ({ market_id: num0(r.market_id), p: num0(r.p), o: (num0(r.o) === 1 ? 1 : 0) as 0 | 1, category: r.category }));
}

/**
 * The spec's calibration record for one wallet and scope (all | 30d | 90d | 365d | category:<name>), with the
 * summary figures. A known wallet without resolved positions has 10 empty bins and null scores (unmeasured).
 */
export async function traderCalibration(db: QueryRunner, wallet: number | string, asOf: AsOf, scope: string = 'all'): Promise<TraderCalibration | null> {
  const sc = CalibrationScope.parse(scope);
  tsLiteral(asOf);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const inputs = await walletCalibrationInputs(db, await venueSchema(db), who.wallet_id, asOf, sc);
  const s = calibrationSummary(inputs);
  return {
    proxy_wallet: who.address,
    scope: sc,
    as_of: asOf.toISOString(),
    bins: s.bins,
    n_total: s.n_positions,
    brier: s.brier,
    calibration_excess: s.calibration_excess,
    calibration_excess_z: s.calibration_excess_z,
    n_markets: s.n_markets,
    ranked: s.ranked,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 2. Positions feed
// ---------------------------------------------------------------------------------------------------------------

export const POSITION_STATUSES = ['OPEN', 'WON', 'LOST', 'REDEEMABLE', 'VOID'] as const;

export const TraderPositionsQuery = z.object({
  /** one status, a list, or a comma-separated string; all statuses when omitted */
  status: listOf(POSITION_STATUSES).optional(),
  limit: z.coerce.number().int().min(FEED_LIMIT.min).max(FEED_LIMIT.max).default(FEED_LIMIT.default),
  cursor: cursorField('pos', POS_KEY).optional(),
});
export type TraderPositionsQueryInput = z.input<typeof TraderPositionsQuery>;

export const TraderPosition = z.object({
  condition_id: z.string(),
  market_title: z.string(),
  market_slug: z.string(),
  category: z.string(),
  outcome: OutcomeSide,
  status: z.enum(POSITION_STATUSES),
  /** the market's winner as of T: YES | NO | INVALID; null while unresolved or on a tie / multi-outcome payout */
  winner_outcome: z.enum(['YES', 'NO', 'INVALID']).nullable(),
  /** P&L label of a resolved position (also on REDEEMABLE rows); null while unresolved */
  pnl_label: z.enum(['WON', 'LOST', 'VOID']).nullable(),
  /** shares held at T (0 once fully exited) */
  shares: z.number(),
  closed: z.boolean(),
  avg_price: z.number().nullable(),
  entry_price: z.number().nullable(),
  cost_basis: z.number(),
  mark: z.number().nullable(),
  realized_pnl: z.number(),
  unrealized_pnl: z.number(),
  total_pnl: z.number(),
  volume_usdc: z.number(),
  trades: count,
  redeemed_shares: z.number(),
  opened_at: z.string(),
  last_activity_at: z.string(),
  resolved_at: z.string().nullable(),
});
export type TraderPosition = z.infer<typeof TraderPosition>;

export const TraderPositions = z.object({
  proxy_wallet: z.string(),
  as_of: z.string(),
  /** rows matching the status filter, over all pages */
  total_rows: count,
  rows: z.array(TraderPosition),
  next_cursor: z.string().nullable(),
});
export type TraderPositions = z.infer<typeof TraderPositions>;

/**
 * One wallet's positions as of T, newest activity first: ordered by (last activity desc, market id, outcome), a
 * total order, paginated by keyset. The cursor is opaque and pins the first page's T.
 */
export async function traderPositions(db: QueryRunner, wallet: number | string, asOf: AsOf, opts: TraderPositionsQueryInput = {}): Promise<TraderPositions | null> {
  const q = TraderPositionsQuery.parse(opts);
  const T0 = effectiveAsOf(asOf, q.cursor);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const schema = await venueSchema(db);
  const T = tsLiteral(T0);
  const statuses = q.status ?? [...POSITION_STATUSES];
  const statusSql = statuses.map((s) => `'${s}'`).join(', ');
  let keyset = 'true';
  if (q.cursor) {
    const [kts, km, ko] = q.cursor.key;
    keyset = `(k_ts < ${kts} OR (k_ts = ${kts} AND (market_id > ${km} OR (market_id = ${km} AND outcome_index > ${ko}))))`;
  }
  const rows = await db.all<Record<string, unknown>>(
    `WITH p AS (${walletPositionsSql(schema, who.wallet_id, T0)}),
    f AS (
      SELECT p.*, epoch_us(p.last_ts) AS k_ts, m.condition_id, m.question, m.slug, m.category, r.winner, r.resolved_at
      FROM p JOIN markets m USING (market_id)
      LEFT JOIN (SELECT market_id, winner, resolved_at FROM resolutions WHERE resolved_at <= ${T}) r USING (market_id)
      WHERE p.status IN (${statusSql}))
    SELECT *, (SELECT count(*) FROM f) AS total_rows FROM f WHERE ${keyset}
    ORDER BY k_ts DESC, market_id, outcome_index LIMIT ${q.limit + 1}`,
  );
  const page = rows.slice(0, q.limit);
  const last = page[page.length - 1];
  const total = rows.length ? num0(rows[0]!.total_rows) : 0;
  return {
    proxy_wallet: who.address,
    as_of: T0.toISOString(),
    total_rows: total,
    rows: page.map((r) => ({
      condition_id: String(r.condition_id),
      market_title: String(r.question),
      market_slug: String(r.slug),
      category: String(r.category),
      outcome: outcomeName(num0(r.outcome_index)),
      status: r.status as TraderPosition['status'],
      winner_outcome: r.resolved_at === null || r.resolved_at === undefined ? null : ((r.winner as TraderPosition['winner_outcome']) ?? null),
      pnl_label: (r.pnl_label as TraderPosition['pnl_label']) ?? null,
      shares: num0(r.shares),
      closed: num0(r.shares) <= DUST_SHARES,
      avg_price: num(r.avg_price),
      entry_price: num(r.entry_price),
      cost_basis: num0(r.cost_basis),
      mark: num(r.mark),
      realized_pnl: num0(r.realized_pnl),
      unrealized_pnl: num0(r.unrealized_pnl),
      total_pnl: num0(r.total_pnl),
      volume_usdc: num0(r.volume_usdc),
      trades: num0(r.trades),
      redeemed_shares: num0(r.redeemed_shares),
      opened_at: iso(r.first_ts),
      last_activity_at: iso(r.last_ts),
      resolved_at: isoOrNull(r.resolved_at),
    })),
    next_cursor: rows.length > q.limit && last ? encodeCursor('pos', T0, [num0(last.k_ts), num0(last.market_id), num0(last.outcome_index)]) : null,
  };
}

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
    SELECT feed.*, m.condition_id, m.question, m.slug FROM feed LEFT JOIN markets m USING (market_id)
    WHERE ${keyset}
    ORDER BY k_ts DESC, tx_hash DESC, log_index DESC, type DESC, sub DESC LIMIT ${q.limit + 1}`,
    params.values,
  );
  const page = rows.slice(0, q.limit);
  const inv = page.filter((r) => r.type !== 'trade');
  const legsBy = new Map<string, { condition_id: string; outcome: 'YES' | 'NO'; shares_delta: number }[]>();
  if (inv.length) {
    const lp = new Params();
    const keys = [...new Set(inv.map((r) => String(r.tx_hash)))].map((tx) => lp.add(tx));
    const legs = await db.all<Record<string, unknown>>(
      `SELECT l.tx_hash, l.log_index, l.outcome_index, l.shares_delta, m.condition_id
      FROM inventory_legs l JOIN markets m USING (market_id)
      WHERE l.wallet_id = ${W} AND l.tx_hash IN (${keys.join(', ')})
      ORDER BY l.tx_hash, l.log_index, l.market_id, l.outcome_index`,
      lp.values,
    );
    for (const l of legs) {
      const k = `${l.tx_hash}#${num0(l.log_index)}`;
      const list = legsBy.get(k) ?? [];
      list.push({ condition_id: String(l.condition_id), outcome: outcomeName(num0(l.outcome_index)), shares_delta: num0(l.shares_delta) });
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
        outcome: outcomeName(num0(r.outcome_index)),
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

// ---------------------------------------------------------------------------------------------------------------
// 4. Top-ROI trades
// ---------------------------------------------------------------------------------------------------------------

export const TopRoiQuery = z.object({
  limit: z.coerce.number().int().min(TOP_ROI_RULE.limit.min).max(TOP_ROI_RULE.limit.max).default(TOP_ROI_RULE.limit.default),
  category: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^[a-z][a-z0-9_]{0,39}$/, 'category is a lowercase name')
    .optional(),
  since_days: z.coerce.number().int().min(TOP_ROI_RULE.sinceDays.min).max(TOP_ROI_RULE.sinceDays.max).default(TOP_ROI_RULE.sinceDays.default),
  sort: z.enum(['roi', 'profit']).default('roi'),
  dir: z.enum(['asc', 'desc']).default('desc'),
});
export type TopRoiQueryInput = z.input<typeof TopRoiQuery>;

export const TopRoiTrade = z.object({
  rank: z.number().int().positive(),
  /** opaque trader id: a keyed hash of the proxy wallet, never the wallet itself */
  tid: z.string(),
  wallet_label: z.string(),
  display: z.object({ username: z.string().nullable(), pseudonym: z.string() }),
  market_title: z.string(),
  market_slug: z.string(),
  category: z.string(),
  outcome: OutcomeSide,
  cost_usdc: z.number().positive(),
  profit_usdc: z.number(),
  /** payout value / cost: (cost + profit) / cost */
  roi_x: z.number().nonnegative(),
  entry_price: z.number().min(0).max(1),
  resolved_at: z.string(),
});
export type TopRoiTrade = z.infer<typeof TopRoiTrade>;

export const TopRoiTrades = z.object({ trades: z.array(TopRoiTrade), as_of: z.string() });
export type TopRoiTrades = z.infer<typeof TopRoiTrades>;

/**
 * The opaque trader id of the public surfaces: HMAC-SHA256 keyed by a server secret over the lowercase proxy
 * wallet, base64url, 128 bits, prefixed `t_`. Stable for a key (the address never changes; the dense wallet_id may
 * across re-ingests), unlinkable to the address without the key.
 */
export function traderTid(key: string | Uint8Array, address: string): string {
  if ((typeof key === 'string' ? Buffer.byteLength(key) : key.byteLength) < 16) throw new Error('tid key must be at least 16 bytes');
  return `t_${createHmac('sha256', key).update(`tid:v1:${address.toLowerCase()}`).digest('base64url').slice(0, 22)}`;
}

/**
 * Best (or worst) closed trades: positions in markets that resolved YES or NO within the trailing `since_days`
 * ending at T, built only from buy fills (no split or conversion inventory), costing at least TOP_ROI_RULE.minCostUsd
 * (buy notional + taker fees). roi_x = payout value / cost, where the payout value = cost + final P&L (sale
 * proceeds + payout of the shares held). `tidKey` is the surface's secret for traderTid.
 */
export async function topRoiTrades(db: QueryRunner, asOf: AsOf, opts: TopRoiQueryInput, tidKey: string | Uint8Array): Promise<TopRoiTrades> {
  const q = TopRoiQuery.parse(opts);
  traderTid(tidKey, '0x'); // validates the key before any work
  const T = tsLiteral(asOf);
  const S = await venueSchema(db);
  const params = new Params();
  const categorySql = q.category ? `AND m.category = ${params.add(q.category)}` : '';
  const order = q.sort === 'roi' ? 'roi_x' : 'profit_usdc';
  const dir = q.dir === 'asc' ? 'ASC' : 'DESC';
  const rows = await db.all<Record<string, unknown>>(
    `WITH win AS (
      SELECT r.market_id, r.resolved_at FROM resolutions r JOIN markets m USING (market_id)
      WHERE r.resolved_at <= ${T} AND r.resolved_at > ${T} - INTERVAL ${q.since_days} DAY AND r.winner IN ('YES', 'NO') ${categorySql}),
    fill_legs AS (SELECT * FROM ${S}.fill_legs WHERE market_id IN (SELECT market_id FROM win)),
    inv_keys AS (SELECT DISTINCT tx_hash, log_index FROM ${S}.inventory_legs WHERE market_id IN (SELECT market_id FROM win)),
    inventory_legs AS (SELECT l.* FROM ${S}.inventory_legs l SEMI JOIN inv_keys k USING (tx_hash, log_index)),
    inventory_events AS (SELECT e.* FROM ${S}.inventory_events e SEMI JOIN inv_keys k USING (tx_hash, log_index)),
    mids AS (SELECT * FROM ${S}.mids WHERE market_id IN (SELECT market_id FROM fill_legs UNION SELECT market_id FROM inventory_legs)),
    ${positionEventsSql(asOf)},
    acq AS (
      SELECT ${PK_WALLET} AS wallet_id, ${PK_MARKET} AS market_id, ${PK_OUTCOME} AS outcome_index,
        sum(q * px) FILTER (WHERE q > 0 AND is_trade = 1) AS cost_in,
        count(*) FILTER (WHERE q > 0 AND is_trade = 0) AS inv_in
      FROM ev GROUP BY pk),
    pos AS (SELECT * FROM (${positionsSql(asOf)}) WHERE resolved AND bought_shares > 0),
    t AS (
      SELECT pos.wallet_id, pos.market_id, pos.outcome_index, acq.cost_in AS cost_usdc, pos.realized_pnl AS profit_usdc,
        (acq.cost_in + pos.realized_pnl) / acq.cost_in AS roi_x, pos.entry_price, win.resolved_at,
        m.question, m.slug, m.category, w.address, w.username, w.pseudonym
      FROM pos JOIN acq USING (wallet_id, market_id, outcome_index) JOIN win USING (market_id)
      JOIN markets m USING (market_id) JOIN wallets w USING (wallet_id)
      WHERE acq.inv_in = 0 AND acq.cost_in >= ${TOP_ROI_RULE.minCostUsd})
    SELECT * FROM t ORDER BY ${order} ${dir}, cost_usdc DESC, wallet_id, market_id, outcome_index LIMIT ${q.limit}`,
    params.values,
  );
  return {
    as_of: asOf.toISOString(),
    trades: rows.map((r, i) => ({
      rank: i + 1,
      tid: traderTid(tidKey, String(r.address)),
      wallet_label: (r.username as string | null) ?? String(r.pseudonym),
      display: { username: (r.username as string | null) ?? null, pseudonym: String(r.pseudonym) },
      market_title: String(r.question),
      market_slug: String(r.slug),
      category: String(r.category),
      outcome: outcomeName(num0(r.outcome_index)),
      cost_usdc: num0(r.cost_usdc),
      profit_usdc: num0(r.profit_usdc),
      roi_x: Math.max(0, num0(r.roi_x)),
      entry_price: num0(r.entry_price),
      resolved_at: iso(r.resolved_at),
    })),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Wallet profile: the figures copy-fitness and the playbook share
// ---------------------------------------------------------------------------------------------------------------

interface FillStats {
  n_fills: number;
  n_buys: number;
  n_markets: number;
  volume_usdc: number;
  taker_share: number | null;
  taker_share_usd: number | null;
  clip: (number | null)[]; // p25 p50 p75 p95
  entry: (number | null)[]; // p10 p25 p50 p75 p90
  thin_fill_share: number | null;
  thin_usd_share: number | null;
  median_market_liquidity: number | null;
  two_sided_share: number | null;
  first_us: number | null;
  last_us: number | null;
  active_days: number;
}

async function fillStats(db: QueryRunner, walletId: number, asOf: AsOf): Promise<FillStats> {
  const T = tsLiteral(asOf);
  const thin = COPY_RULES.thinLiquidityUsd;
  const [r] = await db.all<Record<string, unknown>>(
    `WITH legs AS (
      SELECT l.*, m.liquidity_usdc FROM fill_legs l JOIN markets m USING (market_id) WHERE l.wallet_id = ${walletId} AND l.ts <= ${T}),
    splits AS (SELECT DISTINCT market_id FROM inventory_events WHERE wallet_id = ${walletId} AND ts <= ${T} AND kind = 'SPLIT'),
    mk AS (
      SELECT market_id, count(DISTINCT outcome_index) FILTER (WHERE side = 'BUY') AS sides_bought FROM legs GROUP BY 1)
    SELECT count(*) AS n_fills, count(*) FILTER (WHERE side = 'BUY') AS n_buys, count(DISTINCT market_id) AS n_markets,
      coalesce(sum(size_usdc), 0)::DOUBLE AS volume_usdc,
      avg(CASE WHEN role = 'taker' THEN 1.0 ELSE 0.0 END) AS taker_share,
      sum(CASE WHEN role = 'taker' THEN size_usdc ELSE 0 END) / nullif(sum(size_usdc), 0) AS taker_share_usd,
      quantile_cont(size_usdc, [0.25, 0.5, 0.75, 0.95]) AS clip,
      quantile_cont(price, [0.1, 0.25, 0.5, 0.75, 0.9]) FILTER (WHERE side = 'BUY') AS entry,
      avg(CASE WHEN liquidity_usdc < ${thin} THEN 1.0 ELSE 0.0 END) FILTER (WHERE liquidity_usdc IS NOT NULL) AS thin_fill_share,
      sum(CASE WHEN liquidity_usdc < ${thin} THEN size_usdc ELSE 0 END) FILTER (WHERE liquidity_usdc IS NOT NULL)
        / nullif(sum(size_usdc) FILTER (WHERE liquidity_usdc IS NOT NULL), 0) AS thin_usd_share,
      (SELECT median(liquidity_usdc) FROM markets WHERE market_id IN (SELECT market_id FROM legs)) AS median_market_liquidity,
      (SELECT avg(CASE WHEN sides_bought = 2 OR market_id IN (SELECT market_id FROM splits) THEN 1.0 ELSE 0.0 END) FROM mk) AS two_sided_share,
      epoch_us(min(ts)) AS first_us, epoch_us(max(ts)) AS last_us, count(DISTINCT ts::DATE) AS active_days
    FROM legs`,
  );
  const row = r ?? {};
  return {
    n_fills: num0(row.n_fills),
    n_buys: num0(row.n_buys),
    n_markets: num0(row.n_markets),
    volume_usdc: num0(row.volume_usdc),
    taker_share: num(row.taker_share),
    taker_share_usd: num(row.taker_share_usd),
    clip: quantileList(row.clip, 4),
    entry: quantileList(row.entry, 5),
    thin_fill_share: num(row.thin_fill_share),
    thin_usd_share: num(row.thin_usd_share),
    median_market_liquidity: num(row.median_market_liquidity),
    two_sided_share: num(row.two_sided_share),
    first_us: num(row.first_us),
    last_us: num(row.last_us),
    active_days: num0(row.active_days),
  };
}

interface HoldStats {
  n_closed: number;
  n_open: number;
  /** p25 p50 p75 in hours */
  hours: (number | null)[];
  share_to_resolution: number | null;
  typical_capital_usd: number | null;
  capital_days: number;
}

/**
 * CTEs (without the WITH keyword) of position hold episodes as of T, ending in `hold_episodes` (wallet_id,
 * market_id, start_ts, exit_ts, cost_in, end_ts, to_resolution, hold_hours). An episode of (wallet, token) starts
 * with the acquisition that finds the position empty (a buy fill, split or conversion) and ends at the event that
 * empties it (sell, merge, conversion) or at the market's resolution, whichever is first; one still open and
 * unresolved at T has a null end_ts and hold_hours (censored). cost_in = the gross cost of its acquisitions.
 * With `walletId`, only that wallet's positions (put walletScopeSql first so the scan is narrowed too); without it,
 * every wallet of the venue at once (the analytics build's a_style, core/wallet-style.ts): one SQL for both, so a
 * ranking row and copyFitness() can never disagree on a hold.
 */
export function holdEpisodesSql(asOf: AsOf, walletId?: number): string {
  if (walletId !== undefined && !Number.isSafeInteger(walletId)) throw new Error('wallet id must be an integer');
  const T = tsLiteral(asOf);
  return `${positionEventsSql(asOf)},
    k AS (SELECT *, ${PK_MARKET} AS market_id FROM ev${walletId === undefined ? '' : ` WHERE ${PK_WALLET} = ${walletId}`}),
    seq AS (
      SELECT *, sum(q) OVER w AS held_after, row_number() OVER w AS n
      FROM k WINDOW w AS (PARTITION BY pk ORDER BY ${EVENT_ORDER} ROWS UNBOUNDED PRECEDING)),
    epi AS (
      SELECT *, sum(CASE WHEN held_after - q <= ${DUST_SHARES} THEN 1 ELSE 0 END) OVER (PARTITION BY pk ORDER BY n ROWS UNBOUNDED PRECEDING) AS episode
      FROM seq),
    eps AS (
      SELECT ${PK_WALLET} AS wallet_id, any_value(market_id) AS market_id, min(ts) AS start_ts,
        min(ts) FILTER (WHERE held_after <= ${DUST_SHARES}) AS exit_ts, coalesce(sum(q * px) FILTER (WHERE q > 0), 0) AS cost_in
      FROM epi GROUP BY pk, episode),
    res AS (SELECT market_id, resolved_at FROM resolutions WHERE resolved_at <= ${T}),
    ends AS (
      SELECT eps.*, least(exit_ts, res.resolved_at) AS end_ts,
        (res.resolved_at IS NOT NULL AND (exit_ts IS NULL OR res.resolved_at <= exit_ts)) AS to_resolution
      FROM eps LEFT JOIN res USING (market_id)),
    hold_episodes AS (
      SELECT *, greatest(0, epoch_ms(end_ts) - epoch_ms(start_ts)) / ${HOUR_MS}.0 AS hold_hours FROM ends)`;
}

/**
 * Holds and capital at work from position episodes (holdEpisodesSql). Episodes still open and unresolved at T are
 * counted in n_open and left out of the quantiles. Capital at work on a day = the gross cost of acquisitions of the
 * episodes open at that moment (sampled at T and every 24 h before it over BUDGET_RULES.windowDays); the typical
 * capital is the median over the sampled days on which it was positive.
 */
async function holdStats(db: QueryRunner, schema: string, walletId: number, asOf: AsOf): Promise<HoldStats> {
  const T = tsLiteral(asOf);
  const [r] = await db.all<Record<string, unknown>>(
    `WITH ${walletScopeSql(schema, walletId)},
    ${holdEpisodesSql(asOf, walletId)},
    days AS (SELECT ${T} - to_days(i::INTEGER) AS d FROM range(${BUDGET_RULES.windowDays}) t(i)),
    cap AS (
      SELECT d, sum(cost_in) AS capital FROM days JOIN hold_episodes e ON e.start_ts <= d AND (e.end_ts IS NULL OR e.end_ts > d)
      GROUP BY d HAVING sum(cost_in) > 0)
    SELECT
      (SELECT count(*) FROM hold_episodes WHERE end_ts IS NOT NULL) AS n_closed,
      (SELECT count(*) FROM hold_episodes WHERE end_ts IS NULL) AS n_open,
      (SELECT quantile_cont(hold_hours, [0.25, 0.5, 0.75]) FROM hold_episodes WHERE end_ts IS NOT NULL) AS hours,
      (SELECT avg(CASE WHEN to_resolution THEN 1.0 ELSE 0.0 END) FROM hold_episodes WHERE end_ts IS NOT NULL) AS share_to_resolution,
      (SELECT median(capital) FROM cap) AS typical_capital_usd,
      (SELECT count(*) FROM cap) AS capital_days`,
  );
  const row = r ?? {};
  return {
    n_closed: num0(row.n_closed),
    n_open: num0(row.n_open),
    hours: quantileList(row.hours, 3),
    share_to_resolution: num(row.share_to_resolution),
    typical_capital_usd: num(row.typical_capital_usd),
    capital_days: num0(row.capital_days),
  };
}

interface Edge {
  n_resolved_markets: number;
  ranked: boolean;
  calibration_excess_z: number | null;
  calibration_excess_z_pctile: number | null;
  skill_deviate: number | null;
  alpha_1h_cents: number | null;
  alpha_24h_cents: number | null;
  tags: SmartMoneyTag[];
  /** as_of of the analytics build that supplied the cohort figures (percentile, sharp cutoff); null: none <= T */
  cohort_as_of: string | null;
  inputs: CalibrationRow[];
}

/** The latest analytics build usable at T (as_of <= T): its as_of and sharp cutoff. */
async function cohortAt(db: QueryRunner, schema: string, asOf: AsOf): Promise<{ as_of: Date; sharp_min_deviate: number | null } | null> {
  const unquoted = schema.slice(1, -1).replaceAll('""', '"');
  const [t] = await db.all<{ n: number }>(
    `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name IN ('a_meta', 'a_wallet_metrics')`,
    [unquoted],
  );
  if (num0(t?.n) < 2) return null;
  const [m] = await db.all<{ as_of_us: number; sharp_min_deviate: number | null }>(
    `SELECT epoch_us(as_of) AS as_of_us, sharp_min_deviate FROM ${schema}.a_meta ORDER BY as_of DESC LIMIT 1`,
  );
  if (!m || num0(m.as_of_us) / 1000 > asOf.getTime()) return null;
  return { as_of: new Date(Math.floor(num0(m.as_of_us) / 1000)), sharp_min_deviate: num(m.sharp_min_deviate) };
}

async function walletEdge(db: QueryRunner, schema: string, walletId: number, asOf: AsOf): Promise<Edge> {
  const inputs = await walletCalibrationInputs(db, schema, walletId, asOf, 'all');
  const s = calibrationSummary(inputs);
  const deviate = skillDeviate(s.calibration_excess_z, s.calibration_skew);
  const [alpha] = await db.all<Record<string, unknown>>(
    `WITH ${walletScopeSql(schema, walletId)} SELECT * FROM (${walletAlphaSql(asOf)}) wa WHERE wallet_id = ${walletId}`,
  );
  const [feat] = await db.all<Record<string, unknown>>(
    `WITH ${walletScopeSql(schema, walletId)} SELECT * FROM (${walletFeaturesSql(asOf)}) wf WHERE wallet_id = ${walletId}`,
  );
  const cohort = await cohortAt(db, schema, asOf);
  let pctile: number | null = null;
  if (cohort && s.ranked && s.calibration_excess_z !== null) {
    // the wallet's z (as of T) placed among the other ranked wallets of the build: 100 * (1 - share with a lower z);
    // equal to the build's own percentile when the build is as of T
    const [c] = await db.all<{ below: number; n: number }>(
      `SELECT count(*) FILTER (WHERE calibration_excess_z < $1::DOUBLE) AS below, count(*) AS n
      FROM ${schema}.a_wallet_metrics WHERE calibration_ranked AND calibration_excess_z IS NOT NULL AND wallet_id <> ${walletId}`,
      [s.calibration_excess_z],
    );
    const n = num0(c?.n);
    pctile = n === 0 ? 100 : 100 * (1 - num0(c?.below) / n);
  }
  const tags = feat
    ? smartMoneyTags(
        {
          trade_count: num0(feat.trade_count),
          median_fill_usdc: num(feat.median_fill_usdc),
          lifetime_volume_usdc: num0(feat.lifetime_volume_usdc),
          calibration_ranked: s.ranked,
          skill_deviate: deviate,
          n_entry_positions: num0(feat.n_entry_positions),
          taker_share: num(feat.taker_share),
          median_entry_age: num(feat.median_entry_age),
          n_buys: num0(feat.n_buys),
          contrarian_buy_share: num(feat.contrarian_buy_share),
        },
        // without a build <= T there is no cohort cutoff: the sharp tag is not given
        cohort?.sharp_min_deviate ?? Number.POSITIVE_INFINITY,
      )
    : [];
  return {
    n_resolved_markets: s.n_markets,
    ranked: s.ranked,
    calibration_excess_z: s.calibration_excess_z,
    calibration_excess_z_pctile: pctile,
    skill_deviate: deviate,
    alpha_1h_cents: num(alpha?.alpha_1h_cents),
    alpha_24h_cents: num(alpha?.alpha_24h_cents),
    tags,
    cohort_as_of: cohort ? cohort.as_of.toISOString() : null,
    inputs,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 5. Copy fitness
// ---------------------------------------------------------------------------------------------------------------

export const CopyFitnessQuery = z.object({
  followerBudgetUsd: z.coerce.number().positive().max(1e9).default(BUDGET_RULES.defaultBudgetUsd),
});
export type CopyFitnessQueryInput = z.input<typeof CopyFitnessQuery>;

export const COPY_FLAGS = ['scalper', 'market_maker', 'thin_markets'] as const;
export type CopyFlag = (typeof COPY_FLAGS)[number];

export interface VerdictInputs {
  n_fills: number;
  ranked: boolean;
  n_resolved_markets: number;
  calibration_excess_z: number | null;
  skill_deviate: number | null;
  sharp: boolean;
  alpha_24h_cents: number | null;
  median_hold_hours: number | null;
  n_closed_holds: number;
  taker_share: number | null;
  median_clip_usd: number | null;
  two_sided_share: number | null;
  thin_fill_share: number | null;
  tags: readonly SmartMoneyTag[];
}

/** The behaviour flags that make a wallet copy badly (COPY_RULES; each needs COPY_RULES.minFillsForStyle fills). */
export function copyFlags(v: VerdictInputs): CopyFlag[] {
  const r = COPY_RULES;
  if (v.n_fills < r.minFillsForStyle) return [];
  const flags: CopyFlag[] = [];
  if (v.n_closed_holds >= r.minClosedHolds && v.median_hold_hours !== null && v.median_hold_hours < r.scalperMaxMedianHoldHours) flags.push('scalper');
  if (
    v.taker_share !== null &&
    v.taker_share < r.makerMaxTakerShare &&
    ((v.two_sided_share ?? 0) >= r.makerMinTwoSidedShare || (v.median_clip_usd !== null && v.median_clip_usd < r.tinyClipUsd))
  ) {
    flags.push('market_maker');
  }
  if (v.thin_fill_share !== null && v.thin_fill_share >= r.thinMaxFillShare) flags.push('thin_markets');
  return flags;
}

const fmt = (x: number | null, d = 1) => (x === null ? 'n/a' : x.toFixed(d));
const pct = (x: number | null) => (x === null ? 'n/a' : `${Math.round(x * 100)}%`);
const usd0 = (x: number | null) => (x === null ? 'n/a' : `$${Math.round(x).toLocaleString('en-US')}`);

function flagTitle(f: CopyFlag, v: VerdictInputs): string {
  switch (f) {
    case 'scalper':
      return `Median hold ${fmt((v.median_hold_hours ?? 0) * 60, 0)} min: gone before a follower can react`;
    case 'market_maker':
      return `Provides liquidity on ${pct(1 - (v.taker_share ?? 0))} of fills and quotes both sides: earns the spread a copier pays`;
    case 'thin_markets':
      return `${pct(v.thin_fill_share)} of fills in markets under ${usd0(COPY_RULES.thinLiquidityUsd)} liquidity: a copier moves the price`;
  }
}

/**
 * The verdict: copiesBadly = any copy flag; copyRecommended = ranked AND (sharp OR skill_deviate > 1) AND 24 h
 * alpha > 0 AND NOT copiesBadly. overall = 100 * (0.45 S + 0.25 A + 0.30 C) with S = clamp(deviate / 3) when ranked
 * (0 otherwise), A = clamp(alpha_24h / 5 cents), C = 0 when copiesBadly else 1. tone: good when recommended, bad
 * when copiesBadly, caution otherwise. topTag: the first copy flag, else sharp, else the evidence state.
 */
export function verdictFor(v: VerdictInputs): Verdict {
  const r = COPY_RULES;
  const flags = copyFlags(v);
  const copiesBadly = flags.length > 0;
  const skilled = v.ranked && (v.sharp || (v.skill_deviate !== null && v.skill_deviate > r.recommendMinDeviate));
  const copyRecommended = skilled && v.alpha_24h_cents !== null && v.alpha_24h_cents > 0 && !copiesBadly;
  const S = v.ranked && v.skill_deviate !== null ? clamp01(v.skill_deviate / r.skillDeviateFull) : 0;
  const A = v.alpha_24h_cents !== null ? clamp01(v.alpha_24h_cents / r.alphaCentsFull) : 0;
  const C = copiesBadly ? 0 : 1;
  const overall = Math.round(100 * (r.weights.skill * S + r.weights.alpha * A + r.weights.copyable * C));
  const tone: Tone = copyRecommended ? 'good' : copiesBadly ? 'bad' : 'caution';
  const zTxt = `z ${fmt(v.calibration_excess_z, 2)} over ${v.n_resolved_markets} resolved markets`;
  let title: string;
  if (copyRecommended) title = 'Copyable edge';
  else if (copiesBadly) title = { scalper: 'Scalper: copies badly', market_maker: 'Market maker: copies badly', thin_markets: 'Thin markets: copies badly' }[flags[0]!];
  else if (v.n_resolved_markets === 0) title = 'No resolved markets yet';
  else if (!v.ranked) title = 'Not enough resolved markets';
  else if (!skilled) title = 'No proven edge over the price';
  else title = 'Edge at resolution, not within 24 h';
  let topTag: Verdict['topTag'];
  if (copiesBadly) topTag = { label: flags[0]!, tone: 'bad', title: flagTitle(flags[0]!, v) };
  else if (v.sharp) topTag = { label: 'sharp', tone: 'good', title: `Beats the price: ${zTxt}` };
  else if (skilled) topTag = { label: 'skilled', tone: 'good', title: `Beats the price: ${zTxt}` };
  else if (!v.ranked) topTag = { label: 'unranked', tone: 'caution', title: `${v.n_resolved_markets} of ${MIN_RESOLVED_MARKETS} resolved markets needed to rank` };
  else topTag = { label: 'no_edge', tone: 'caution', title: `Picks won about as often as their prices implied: ${zTxt}` };
  return { overall, tone, title, topTag, copyRecommended, copiesBadly };
}

const nullableShare = share.nullable();
const q3 = z.object({ p25: z.number().nullable(), median: z.number().nullable(), p75: z.number().nullable() });

export const CopyFitness = z.object({
  proxy_wallet: z.string(),
  as_of: z.string(),
  cohort_as_of: z.string().nullable(),
  sample: z.object({
    n_fills: count,
    n_markets: count,
    n_resolved_markets: count,
    first_trade_at: z.string().nullable(),
    last_trade_at: z.string().nullable(),
  }),
  hold_time_hours: q3.extend({ n_closed: count, n_open: count, share_to_resolution: nullableShare }),
  entry_price: z.object({
    n_buys: count,
    p10: z.number().nullable(),
    p25: z.number().nullable(),
    median: z.number().nullable(),
    p75: z.number().nullable(),
    p90: z.number().nullable(),
    bins: z.array(z.object({ bin_idx: z.number().int(), bin_label: z.string(), n: count, usd_share: nullableShare })).length(CALIBRATION_BINS),
  }),
  taker_share: nullableShare,
  taker_share_usd: nullableShare,
  clip_usd: z.object({ p25: z.number().nullable(), p50: z.number().nullable(), p75: z.number().nullable(), p95: z.number().nullable() }),
  liquidity: z.object({
    median_market_liquidity_usdc: z.number().nullable(),
    thin_threshold_usdc: z.number(),
    thin_fill_share: nullableShare,
    thin_usd_share: nullableShare,
    two_sided_market_share: nullableShare,
  }),
  trades_per_week: z.number().nonnegative(),
  edge: z.object({
    ranked: z.boolean(),
    calibration_excess_z: z.number().nullable(),
    skill_deviate: z.number().nullable(),
    alpha_1h_cents: z.number().nullable(),
    alpha_24h_cents: z.number().nullable(),
    tags: z.array(z.enum(SMART_MONEY_TAGS)),
  }),
  verdict: Verdict,
  copy_flags: z.array(z.object({ flag: z.enum(COPY_FLAGS), title: z.string() })),
  budget_fit: z.object({
    follower_budget_usd: z.number().positive(),
    typical_capital_usd: z.number().nullable(),
    capital_days: count,
    scale_factor: z.number().nullable(),
    min_order_usd: z.number(),
    share_clips_below_min: nullableShare,
    scaled_clip_usd: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
    liquidity_cap_share: z.number(),
    share_fills_over_liquidity_cap: nullableShare,
    can_mirror_liquidity: z.boolean().nullable(),
    fit: z.enum(['ok', 'too_small', 'too_large', 'unknown']),
    note: z.string(),
  }),
});
export type CopyFitness = z.infer<typeof CopyFitness>;

/** Weeks the wallet has been active: first fill to T, at least one. */
function activeWeeks(f: FillStats, asOf: AsOf): number {
  if (f.first_us === null) return 1;
  return Math.max(1, (asOf.getTime() - f.first_us / 1000) / WEEK_MS);
}

/**
 * The copy-decision bundle for one wallet as of T and a follower budget: hold times, entry prices, taker share,
 * clip sizes, traded-market liquidity, activity, the verdict, and how the budget maps onto the trader's clips.
 */
export async function copyFitness(db: QueryRunner, wallet: number | string, asOf: AsOf, opts: CopyFitnessQueryInput = {}): Promise<CopyFitness | null> {
  const q = CopyFitnessQuery.parse(opts);
  const T = tsLiteral(asOf);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const schema = await venueSchema(db);
  const W = who.wallet_id;
  const f = await fillStats(db, W, asOf);
  const h = await holdStats(db, schema, W, asOf);
  const edge = await walletEdge(db, schema, W, asOf);
  const bins = await db.all<{ b: number; n: number; usd: number }>(
    `SELECT least(${CALIBRATION_BINS - 1}, greatest(0, floor(price * ${CALIBRATION_BINS} + 1e-9)))::INTEGER AS b, count(*) AS n, sum(size_usdc)::DOUBLE AS usd
    FROM fill_legs WHERE wallet_id = ${W} AND ts <= ${T} AND side = 'BUY' GROUP BY 1`,
  );
  const buyUsd = bins.reduce((s, b) => s + num0(b.usd), 0);
  const verdictInputs: VerdictInputs = {
    n_fills: f.n_fills,
    ranked: edge.ranked,
    n_resolved_markets: edge.n_resolved_markets,
    calibration_excess_z: edge.calibration_excess_z,
    skill_deviate: edge.skill_deviate,
    sharp: edge.tags.includes('sharp'),
    alpha_24h_cents: edge.alpha_24h_cents,
    median_hold_hours: h.hours[1] ?? null,
    n_closed_holds: h.n_closed,
    taker_share: f.taker_share,
    median_clip_usd: f.clip[1] ?? null,
    two_sided_share: f.two_sided_share,
    thin_fill_share: f.thin_fill_share,
    tags: edge.tags,
  };
  const verdict = verdictFor(verdictInputs);
  const flags = copyFlags(verdictInputs);

  // budget fit over the fills of the capital window
  const B = BUDGET_RULES;
  const scale = h.typical_capital_usd && h.typical_capital_usd > 0 ? q.followerBudgetUsd / h.typical_capital_usd : null;
  let below: number | null = null;
  let over: number | null = null;
  let scaled: (number | null)[] = [null, null];
  if (scale !== null) {
    const [b] = await db.all<Record<string, unknown>>(
      `SELECT avg(CASE WHEN l.size_usdc * $1::DOUBLE < ${B.minOrderUsd} THEN 1.0 ELSE 0.0 END) AS below,
        avg(CASE WHEN l.size_usdc * $1::DOUBLE > ${B.liquidityCapShare} * m.liquidity_usdc THEN 1.0 ELSE 0.0 END) FILTER (WHERE m.liquidity_usdc IS NOT NULL) AS over,
        quantile_cont(l.size_usdc * $1::DOUBLE, [0.5, 0.95]) AS scaled
      FROM fill_legs l JOIN markets m USING (market_id)
      WHERE l.wallet_id = ${W} AND l.ts <= ${T} AND l.ts > ${T} - INTERVAL ${B.windowDays} DAY`,
      [scale],
    );
    below = num(b?.below);
    over = num(b?.over);
    scaled = quantileList(b?.scaled, 2);
  }
  const canMirror = over === null ? null : over <= B.maxOverCapShare;
  const fit: CopyFitness['budget_fit']['fit'] =
    scale === null || below === null ? 'unknown' : below > B.maxBelowMinShare ? 'too_small' : canMirror === false ? 'too_large' : 'ok';
  const note = {
    unknown: `No capital at work in the last ${B.windowDays} days to scale against.`,
    too_small: `At ${fmt(scale, 3)}x the trader's size, ${pct(below)} of its clips fall under the ${usd0(B.minOrderUsd)} minimum order.`,
    too_large: `At ${fmt(scale, 3)}x the trader's size, ${pct(over)} of fills would exceed ${pct(B.liquidityCapShare)} of their market's liquidity.`,
    ok: `At ${fmt(scale, 3)}x the trader's size, ${pct(below)} of clips fall under the minimum and ${pct(over)} exceed the liquidity cap.`,
  }[fit];

  return {
    proxy_wallet: who.address,
    as_of: asOf.toISOString(),
    cohort_as_of: edge.cohort_as_of,
    sample: {
      n_fills: f.n_fills,
      n_markets: f.n_markets,
      n_resolved_markets: edge.n_resolved_markets,
      first_trade_at: f.first_us === null ? null : isoUs(f.first_us),
      last_trade_at: f.last_us === null ? null : isoUs(f.last_us),
    },
    hold_time_hours: {
      p25: h.hours[0] ?? null,
      median: h.hours[1] ?? null,
      p75: h.hours[2] ?? null,
      n_closed: h.n_closed,
      n_open: h.n_open,
      share_to_resolution: h.share_to_resolution,
    },
    entry_price: {
      n_buys: f.n_buys,
      p10: f.entry[0] ?? null,
      p25: f.entry[1] ?? null,
      median: f.entry[2] ?? null,
      p75: f.entry[3] ?? null,
      p90: f.entry[4] ?? null,
      bins: Array.from({ length: CALIBRATION_BINS }, (_, i) => {
        const b = bins.find((x) => num0(x.b) === i);
        return { bin_idx: i, bin_label: binLabel(i), n: num0(b?.n), usd_share: buyUsd > 0 ? num0(b?.usd) / buyUsd : null };
      }),
    },
    taker_share: f.taker_share,
    taker_share_usd: f.taker_share_usd,
    clip_usd: { p25: f.clip[0] ?? null, p50: f.clip[1] ?? null, p75: f.clip[2] ?? null, p95: f.clip[3] ?? null },
    liquidity: {
      median_market_liquidity_usdc: f.median_market_liquidity,
      thin_threshold_usdc: COPY_RULES.thinLiquidityUsd,
      thin_fill_share: f.thin_fill_share,
      thin_usd_share: f.thin_usd_share,
      two_sided_market_share: f.two_sided_share,
    },
    trades_per_week: f.n_fills / activeWeeks(f, asOf),
    edge: {
      ranked: edge.ranked,
      calibration_excess_z: edge.calibration_excess_z,
      skill_deviate: edge.skill_deviate,
      alpha_1h_cents: edge.alpha_1h_cents,
      alpha_24h_cents: edge.alpha_24h_cents,
      tags: edge.tags,
    },
    verdict,
    copy_flags: flags.map((fl) => ({ flag: fl, title: flagTitle(fl, verdictInputs) })),
    budget_fit: {
      follower_budget_usd: q.followerBudgetUsd,
      typical_capital_usd: h.typical_capital_usd,
      capital_days: h.capital_days,
      scale_factor: scale,
      min_order_usd: B.minOrderUsd,
      share_clips_below_min: below,
      scaled_clip_usd: { p50: scaled[0] ?? null, p95: scaled[1] ?? null },
      liquidity_cap_share: B.liquidityCapShare,
      share_fills_over_liquidity_cap: over,
      can_mirror_liquidity: canMirror,
      fit,
      note,
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 6. Playbook
// ---------------------------------------------------------------------------------------------------------------

const n4 = z.number().nullable();

export const TraderPlaybook = z.object({
  proxy_wallet: z.string(),
  label: z.string(),
  as_of: z.string(),
  categories: z
    .array(
      z.object({
        category: z.string(),
        volume_share: share,
        n_resolved_markets: count,
        /** the wallet's calibration z in this category; null below PLAYBOOK_RULES.minCategoryMarkets */
        calibration_excess_z: n4,
      }),
    )
    .max(PLAYBOOK_RULES.maxCategories),
  entry_price_band: z.object({ p25: n4, median: n4, p75: n4 }),
  hold_hours: z.object({ p25: n4, median: n4, p75: n4, share_to_resolution: n4 }),
  style: z.object({ taker_share: n4, kind: z.enum(['taker', 'maker', 'mixed', 'unknown']) }),
  clip_usd: z.object({ p25: n4, median: n4, p75: n4 }),
  rhythm: z.object({
    active_days_per_week: n4,
    trades_per_week: n4,
    peak_hour_utc: z.number().int().min(0).max(23).nullable(),
    peak_hour_share: n4,
    last_active_at: z.string().nullable(),
  }),
  edge: z.object({
    ranked: z.boolean(),
    n_resolved_markets: count,
    calibration_excess_z: n4,
    calibration_excess_z_pctile: n4,
    skill_deviate: n4,
    alpha_1h_cents: n4,
    alpha_24h_cents: n4,
  }),
  tags: z.array(z.enum(SMART_MONEY_TAGS)),
  open: z.object({ positions: count, cost_usdc: z.number(), mark_value_usdc: z.number() }),
  copy: z.object({ copyRecommended: z.boolean(), copiesBadly: z.boolean(), title: z.string() }),
  rules: z.array(z.string()).min(3).max(5),
});
export type TraderPlaybook = z.infer<typeof TraderPlaybook>;

function holdText(hours: number): string {
  if (hours < 1) return `${Math.round(hours * 60)} min`;
  if (hours < 48) return `${fmt(hours, hours < 10 ? 1 : 0)} h`;
  return `${fmt(hours / 24, 1)} days`;
}

/** The templated 'rules' of a playbook (no model): 3 to 5 sentences from the numbers, in a fixed order. */
export function playbookRules(p: Omit<TraderPlaybook, 'rules'>): string[] {
  const R = PLAYBOOK_RULES;
  const e = p.edge;
  const out: string[] = [];
  // 1. edge
  const alpha = e.alpha_24h_cents === null ? '' : `; its fills ${e.alpha_24h_cents >= 0 ? 'gain' : 'lose'} ${fmt(Math.abs(e.alpha_24h_cents), 1)}¢ on average within 24 h`;
  if (e.ranked && e.skill_deviate !== null && (e.skill_deviate > COPY_RULES.recommendMinDeviate || p.tags.includes('sharp'))) {
    const pc = e.calibration_excess_z_pctile === null ? '' : ` (better than ${Math.round(e.calibration_excess_z_pctile)}% of ranked traders)`;
    out.push(`Beats the entry price: calibration z ${fmt(e.calibration_excess_z, 2)} over ${e.n_resolved_markets} resolved markets${pc}${alpha}.`);
  } else if (e.ranked) {
    out.push(`No proven edge: over ${e.n_resolved_markets} resolved markets its picks won about as often as their prices implied (z ${fmt(e.calibration_excess_z, 2)})${alpha}.`);
  } else {
    out.push(`Not yet measurable: ${e.n_resolved_markets} resolved markets, ${MIN_RESOLVED_MARKETS} needed to rank its calibration${alpha}.`);
  }
  if (p.style.taker_share === null) {
    out.push(`No trades as of ${p.as_of.slice(0, 10)}.`);
    out.push(p.open.positions > 0 ? `Holds ${p.open.positions} open positions costing ${usd0(p.open.cost_usdc)}.` : 'Holds no open position.');
    return out;
  }
  // 2. categories
  const top = p.categories[0];
  if (top) {
    const calib = top.calibration_excess_z === null ? '' : `, calibration z ${fmt(top.calibration_excess_z, 2)} there over ${top.n_resolved_markets} markets`;
    out.push(
      top.volume_share >= R.focusShare
        ? `Concentrates on ${top.category} (${pct(top.volume_share)} of volume${calib}).`
        : `Spreads volume across ${p.categories.length} categories; the largest is ${top.category} (${pct(top.volume_share)}${calib}).`,
    );
  }
  // 3. entries and clips
  if (p.entry_price_band.p25 !== null && p.entry_price_band.p75 !== null) {
    out.push(`Buys mostly between ${fmt(p.entry_price_band.p25, 2)} and ${fmt(p.entry_price_band.p75, 2)} (middle half of entries) in clips around ${usd0(p.clip_usd.median)}.`);
  }
  // 4. holds
  if (p.hold_hours.median !== null && out.length < 5) {
    const res = p.hold_hours.share_to_resolution === null ? '' : ` (${pct(p.hold_hours.share_to_resolution)} of holds ride to resolution)`;
    out.push(`Holds a position a median ${holdText(p.hold_hours.median)}${res}.`);
  }
  // 5. style
  if (out.length < 5) {
    const t = p.style.taker_share;
    out.push(
      p.style.kind === 'taker'
        ? `Takes liquidity on ${pct(t)} of fills: a follower can mirror it with market orders.`
        : p.style.kind === 'maker'
          ? `Provides liquidity on ${pct(1 - t)} of fills: copying it with market orders pays the spread it earns.`
          : `Mixes taking (${pct(t)} of fills) and providing liquidity: mirror its taker fills, not its resting orders.`,
    );
  }
  while (out.length < 3) out.push(p.open.positions > 0 ? `Holds ${p.open.positions} open positions costing ${usd0(p.open.cost_usdc)}.` : 'Holds no open position.');
  return out.slice(0, 5);
}

/**
 * A compact style summary an agent can act on (well under 2,000 tokens of JSON): categories, entry band, holds,
 * taker/maker, clips, rhythm, edge, tags, open exposure, and 3-5 templated rules. Numbers are rounded to 4
 * significant digits.
 */
export async function traderPlaybook(db: QueryRunner, wallet: number | string, asOf: AsOf): Promise<TraderPlaybook | null> {
  const T = tsLiteral(asOf);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const schema = await venueSchema(db);
  const W = who.wallet_id;
  const f = await fillStats(db, W, asOf);
  const h = await holdStats(db, schema, W, asOf);
  const edge = await walletEdge(db, schema, W, asOf);
  const cats = await db.all<{ category: string; usd: number }>(
    `SELECT m.category, sum(l.size_usdc)::DOUBLE AS usd FROM fill_legs l JOIN markets m USING (market_id)
    WHERE l.wallet_id = ${W} AND l.ts <= ${T} GROUP BY 1 ORDER BY usd DESC, m.category LIMIT ${PLAYBOOK_RULES.maxCategories}`,
  );
  const [peak] = await db.all<{ h: number; n: number }>(
    `SELECT hour(ts) AS h, count(*) AS n FROM fill_legs WHERE wallet_id = ${W} AND ts <= ${T} GROUP BY 1 ORDER BY n DESC, h LIMIT 1`,
  );
  const [open] = await db.all<{ n: number; cost: number; value: number }>(
    `SELECT count(*) AS n, coalesce(sum(cost_basis), 0)::DOUBLE AS cost, coalesce(sum(shares * coalesce(mark, avg_price, 0)), 0)::DOUBLE AS value
    FROM (${walletPositionsSql(schema, W, asOf)}) p WHERE status = 'OPEN' AND shares > ${DUST_SHARES}`,
  );
  const verdict = verdictFor({
    n_fills: f.n_fills,
    ranked: edge.ranked,
    n_resolved_markets: edge.n_resolved_markets,
    calibration_excess_z: edge.calibration_excess_z,
    skill_deviate: edge.skill_deviate,
    sharp: edge.tags.includes('sharp'),
    alpha_24h_cents: edge.alpha_24h_cents,
    median_hold_hours: h.hours[1] ?? null,
    n_closed_holds: h.n_closed,
    taker_share: f.taker_share,
    median_clip_usd: f.clip[1] ?? null,
    two_sided_share: f.two_sided_share,
    thin_fill_share: f.thin_fill_share,
    tags: edge.tags,
  });
  const byCat = new Map<string, CalibrationInput[]>();
  for (const r of edge.inputs) byCat.set(r.category, [...(byCat.get(r.category) ?? []), r]);
  const weeks = activeWeeks(f, asOf);
  const t = f.taker_share;
  const R = PLAYBOOK_RULES;
  const body: Omit<TraderPlaybook, 'rules'> = {
    proxy_wallet: who.address,
    label: who.username ?? who.pseudonym,
    as_of: asOf.toISOString(),
    categories: cats.map((c) => {
      const s = calibrationSummary(byCat.get(c.category) ?? []);
      return {
        category: c.category,
        volume_share: f.volume_usdc > 0 ? (sig(num0(c.usd) / f.volume_usdc) ?? 0) : 0,
        n_resolved_markets: s.n_markets,
        calibration_excess_z: s.n_markets >= R.minCategoryMarkets ? sig(s.calibration_excess_z) : null,
      };
    }),
    entry_price_band: { p25: sig(f.entry[1] ?? null), median: sig(f.entry[2] ?? null), p75: sig(f.entry[3] ?? null) },
    hold_hours: { p25: sig(h.hours[0] ?? null), median: sig(h.hours[1] ?? null), p75: sig(h.hours[2] ?? null), share_to_resolution: sig(h.share_to_resolution) },
    style: { taker_share: sig(t), kind: t === null ? 'unknown' : t >= R.takerStyleMin ? 'taker' : t <= R.makerStyleMax ? 'maker' : 'mixed' },
    clip_usd: { p25: sig(f.clip[0] ?? null), median: sig(f.clip[1] ?? null), p75: sig(f.clip[2] ?? null) },
    rhythm: {
      active_days_per_week: f.n_fills ? sig(Math.min(7, f.active_days / weeks)) : null,
      trades_per_week: f.n_fills ? sig(f.n_fills / weeks) : null,
      peak_hour_utc: peak ? num0(peak.h) : null,
      peak_hour_share: peak && f.n_fills ? sig(num0(peak.n) / f.n_fills) : null,
      last_active_at: f.last_us === null ? null : isoUs(f.last_us),
    },
    edge: {
      ranked: edge.ranked,
      n_resolved_markets: edge.n_resolved_markets,
      calibration_excess_z: sig(edge.calibration_excess_z),
      calibration_excess_z_pctile: sig(edge.calibration_excess_z_pctile),
      skill_deviate: sig(edge.skill_deviate),
      alpha_1h_cents: sig(edge.alpha_1h_cents),
      alpha_24h_cents: sig(edge.alpha_24h_cents),
    },
    tags: edge.tags,
    open: { positions: num0(open?.n), cost_usdc: Math.round(num0(open?.cost) * 100) / 100, mark_value_usdc: Math.round(num0(open?.value) * 100) / 100 },
    copy: { copyRecommended: verdict.copyRecommended, copiesBadly: verdict.copiesBadly, title: verdict.title },
  };
  return { ...body, rules: playbookRules(body) };
}

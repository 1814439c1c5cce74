/**
 * a_legs: every token movement of every known wallet, one row per leg, in the order the position stream reads them.
 * Fill legs (both parties of every fill whose party is known: kind 1 taker, 2 maker) and inventory legs (0 split,
 * merge or conversion; 3 redemption). Built once in position order by a full build; a refresh appends the legs of
 * new venue rows (by seq) and re-reads the legs of changed positions with an ORDER BY of its own.
 *
 * An inventory leg's px is its value per share, conserved over the event (methodology "Positions and P&L"): a
 * split's two tokens cost exactly the USDC paid, a merge's two tokens sell for exactly the USDC received, a
 * neg-risk conversion's NO tokens leave at their mid value and the YES tokens received carry that value (less any
 * USDC received); when the USDC received alone is worth more than the NO tokens' mids say, or is all that is
 * received, the NO tokens leave for exactly that USDC and the YES tokens received cost nothing. Mids are the latest
 * at or before the event (0.5 when there is none). The event's USDC is booked on its first leg (by market, outcome).
 */
import { ALPHA_HORIZON_US } from './position-stream.ts';

export const LEGS_TABLE = 'a_legs';

export const LEGS_DDL = `CREATE TABLE IF NOT EXISTS ${LEGS_TABLE} (
    wallet_id INTEGER NOT NULL,
    market_id INTEGER NOT NULL,
    outcome_index UTINYINT NOT NULL,
    ts TIMESTAMP NOT NULL,
    log_index INTEGER NOT NULL,
    kind UTINYINT NOT NULL,      -- 0 split/merge/convert, 1 fill as taker, 2 fill as maker, 3 redemption
    q DOUBLE NOT NULL,           -- shares into (+) or out of (-) the wallet
    px DOUBLE NOT NULL,          -- effective price per share (fills: fee included; inventory: value per share)
    price DOUBLE NOT NULL,       -- the fill's own price per share (inventory: 0)
    size_usdc DOUBLE NOT NULL,   -- the fill's notional (inventory: 0)
    fee_usdc DOUBLE NOT NULL,    -- the taker's fee (otherwise 0)
    usdc DOUBLE NOT NULL,        -- inventory: the event's USDC into (+) or out of (-) the wallet, on its first leg
    tx_hash VARCHAR,             -- inventory legs: their event (revalued together when a late mid arrives); fills: NULL
    seq BIGINT NOT NULL          -- the venue row's arrival seq
  )`;

/** The order the position stream needs: a position's events by time, inventory before fills, buys first. */
export const LEGS_ORDER = 'wallet_id, market_id, outcome_index, ts, log_index, kind IN (1, 2), q DESC';

/**
 * The a_legs columns the position stream reads (build.ts LEG_SCAN_COLUMNS) and orders them by (LEGS_ORDER): a copy of
 * some legs to stream needs no others (tx_hash, the widest column, only names an inventory leg's event).
 */
export const LEG_STREAM_COLUMNS = 'wallet_id, market_id, outcome_index, ts, log_index, kind, q, px, price, size_usdc, fee_usdc, usdc';

/** SQL (a SELECT) of the fill legs of `fills` rows matching `where` (over the fills table, no alias). */
export function fillLegsSql(where = 'true'): string {
  return `SELECT taker_id AS wallet_id, market_id, outcome_index, ts, log_index, 1::UTINYINT AS kind,
      CASE side WHEN 'BUY' THEN shares ELSE -shares END AS q,
      CASE side WHEN 'BUY' THEN price + fee_usdc / shares ELSE price - fee_usdc / shares END AS px,
      price, size_usdc, fee_usdc, 0.0::DOUBLE AS usdc, NULL::VARCHAR AS tx_hash, seq
    FROM fills WHERE taker_id IS NOT NULL AND (${where})
    UNION ALL
    SELECT maker_id, market_id, CASE WHEN match_type = 'direct' THEN outcome_index ELSE 1 - outcome_index END::UTINYINT, ts, log_index, 2::UTINYINT,
      CASE WHEN (match_type = 'direct' AND side = 'SELL') OR match_type = 'mint' THEN shares ELSE -shares END,
      CASE WHEN match_type = 'direct' THEN price ELSE 1 - price END,
      CASE WHEN match_type = 'direct' THEN price ELSE 1 - price END,
      CASE WHEN match_type = 'direct' THEN size_usdc ELSE (1 - price) * shares END,
      0.0, 0.0, NULL, seq
    FROM fills WHERE maker_id IS NOT NULL AND (${where})`;
}

/**
 * SQL (a SELECT) of the inventory legs of the inventory events matching `where` (over inventory_events i), valued
 * as the header says. An event's legs are all read together, so its value is conserved whatever `where` selects.
 * `few`: the events are a refresh's few, and only their markets' mids are joined (the as-of join otherwise sorted all
 * 40M mids at full scale for a handful of legs, or for none: 1.2 s of every refresh); the same rows either way.
 */
export function inventoryLegsSql(where = 'true', few = false): string {
  // events are numbered (ev_id) so the per-event windows partition on an integer, not on the tx hash string
  return `WITH ev AS (SELECT *, row_number() OVER () AS ev_id FROM inventory_events i WHERE ${where}),
    il AS (
      SELECT l.wallet_id, l.market_id, l.outcome_index, e.ts, e.log_index, e.kind AS ev_kind, l.shares_delta AS q, e.usdc_delta,
        l.tx_hash, e.seq, e.ev_id,
        row_number() OVER (PARTITION BY e.ev_id ORDER BY l.market_id, l.outcome_index) AS leg_no
      FROM inventory_legs l JOIN ev e USING (tx_hash, log_index)),
    priced AS (
      SELECT il.*, coalesce(m.mid, 0.5) AS mid FROM il
      ASOF LEFT JOIN ${few ? '(SELECT * FROM mids WHERE market_id IN (SELECT market_id FROM il))' : 'mids'} m ON m.market_id = il.market_id AND m.outcome_index = il.outcome_index AND m.ts <= il.ts),
    valued AS (
      SELECT *,
        sum(CASE WHEN ev_kind <> 'REDEEM' AND q < 0 THEN -q * mid ELSE 0 END) OVER e AS out_value,
        sum(CASE WHEN ev_kind <> 'REDEEM' AND q > 0 THEN q * mid ELSE 0 END) OVER e AS in_value
      FROM priced WINDOW e AS (PARTITION BY ev_id))
    SELECT wallet_id, market_id, outcome_index, ts, log_index,
      (CASE WHEN ev_kind = 'REDEEM' THEN 3 ELSE 0 END)::UTINYINT AS kind, q,
      coalesce(round(CASE
        WHEN ev_kind = 'REDEEM' THEN 0
        WHEN ev_kind = 'SPLIT' THEN mid * (-usdc_delta) / nullif(in_value, 0)
        WHEN ev_kind = 'MERGE' THEN mid * usdc_delta / nullif(out_value, 0)
        WHEN q < 0 AND (in_value = 0 OR out_value < usdc_delta) THEN mid * usdc_delta / out_value
        WHEN q < 0 THEN mid
        ELSE mid * greatest(out_value - usdc_delta, 0) / nullif(in_value, 0)
      END, 12), 0) AS px,
      0.0::DOUBLE AS price, 0.0::DOUBLE AS size_usdc, 0.0::DOUBLE AS fee_usdc,
      CASE WHEN leg_no = 1 THEN usdc_delta ELSE 0.0 END AS usdc, tx_hash, seq
    FROM valued`;
}

/** Legs of every fill and inventory event that arrived up to batch `upToSeq`: the full build's a_legs, in stream order. */
export function createLegsSql(upToSeq: number): string {
  const w = `seq <= ${upToSeq}`;
  return `CREATE OR REPLACE TABLE ${LEGS_TABLE} AS SELECT * FROM (${fillLegsSql(w)} UNION ALL SELECT * FROM (${inventoryLegsSql(w)})) ORDER BY ${LEGS_ORDER}`;
}

/**
 * The full build's a_legs a range of wallets at a time (ranges counted over legWalletsSql): each range's legs are
 * sorted apart (a sort that fits in memory, where all of them at once spilled to disk) and appended in wallet order, so
 * the table is the same, in the same order, as createLegsSql's; the build streams one range while the next is sorted.
 * The inventory legs are computed once (their values need every leg of an event, whichever wallets it touches) into a
 * table of their own, on disk (tens of millions of rows at full scale, kept while every range sorts), dropped at the
 * end.
 */
const STAGED_INVENTORY_LEGS = 'a_legs_inventory_staged';
export function rangedLegsSql(upToSeq: number): { create: string[]; range: (lo: number, hi: number) => string; drop: string } {
  const w = `seq <= ${upToSeq}`;
  return {
    create: [
      `CREATE OR REPLACE TABLE ${LEGS_TABLE} AS SELECT * FROM (${fillLegsSql('false')} UNION ALL SELECT * FROM (${inventoryLegsSql('false')}))`,
      `CREATE OR REPLACE TABLE ${STAGED_INVENTORY_LEGS} AS ${inventoryLegsSql(w)}`,
    ],
    range: (lo, hi) => {
      const r = `wallet_id >= ${lo} AND wallet_id < ${hi}`;
      return `INSERT INTO ${LEGS_TABLE} SELECT * FROM (SELECT * FROM (${fillLegsSql(w)}) WHERE ${r} UNION ALL SELECT * FROM ${STAGED_INVENTORY_LEGS} WHERE ${r}) ORDER BY ${LEGS_ORDER}`;
    },
    drop: `DROP TABLE IF EXISTS ${STAGED_INVENTORY_LEGS}`,
  };
}

/**
 * A FROM clause with one row (its wallet_id) per leg of fills and inventory events up to batch `upToSeq`: what the
 * build's wallet ranges for rangedLegsSql are counted over (no sort of the legs).
 */
export function legWalletsSql(upToSeq: number): string {
  const w = `seq <= ${upToSeq}`;
  return `(SELECT taker_id AS wallet_id FROM fills WHERE taker_id IS NOT NULL AND ${w}
    UNION ALL SELECT maker_id FROM fills WHERE maker_id IS NOT NULL AND ${w}
    UNION ALL SELECT l.wallet_id FROM inventory_legs l SEMI JOIN (SELECT tx_hash, log_index FROM inventory_events WHERE ${w}) e USING (tx_hash, log_index))`;
}

/** (Re)append the legs of venue rows of arrival batches (afterSeq, upToSeq] (fills and inventory events). */
export function appendLegsSql(afterSeq: number, upToSeq: number): string[] {
  const w = `seq > ${afterSeq} AND seq <= ${upToSeq}`;
  return [`DELETE FROM ${LEGS_TABLE} WHERE ${w}`, `INSERT INTO ${LEGS_TABLE} ${fillLegsSql(w)} UNION ALL SELECT * FROM (${inventoryLegsSql(w, true)})`];
}

/**
 * a_horizon_fills: the fill legs whose +24 h alpha horizon is still ahead of the state's T (ts > T - 24 h), in time
 * order. Only they can have a horizon fall due at a later refresh (alpha-due.ts), so that rule reads this small
 * table (a day of fills) instead of every leg (a_legs is in wallet order: a time filter skips none of it).
 */
export const HORIZON_FILLS_TABLE = 'a_horizon_fills';
const HORIZON_FILL_COLUMNS = 'wallet_id, market_id, outcome_index, ts, log_index, kind, q, price, size_usdc, seq';
const horizonStart = (T: string) => `${T} - INTERVAL ${ALPHA_HORIZON_US.h24 / 1e6} SECOND`;

/** a_horizon_fills of a full build as of T (a SQL timestamp), from a_legs. */
export function createHorizonFillsSql(T: string): string {
  return `CREATE OR REPLACE TABLE ${HORIZON_FILLS_TABLE} AS SELECT ${HORIZON_FILL_COLUMNS} FROM ${LEGS_TABLE}
    WHERE kind IN (1, 2) AND ts > ${horizonStart(T)} ORDER BY ts`;
}

/** Add the fill legs of arrival batches (afterSeq, upToSeq] whose 24 h horizon is after Tnew (run after appendLegsSql). */
export function appendHorizonFillsSql(afterSeq: number, upToSeq: number, Tnew: string): string[] {
  const w = `seq > ${afterSeq} AND seq <= ${upToSeq}`;
  return [
    `DELETE FROM ${HORIZON_FILLS_TABLE} WHERE ${w}`,
    `INSERT INTO ${HORIZON_FILLS_TABLE} SELECT ${HORIZON_FILL_COLUMNS} FROM ${LEGS_TABLE} WHERE ${w} AND kind IN (1, 2) AND ts > ${horizonStart(Tnew)} ORDER BY ts`,
  ];
}

/** Drop the fills whose every horizon is due by Tnew (once the due-horizon rule has read them). */
export function pruneHorizonFillsSql(Tnew: string): string {
  return `DELETE FROM ${HORIZON_FILLS_TABLE} WHERE ts <= ${horizonStart(Tnew)}`;
}

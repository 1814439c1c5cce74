/**
 * a_position_state's rows by wallet, beside the columnar table. A refresh needs every state row of the few thousand
 * wallets it touches (their positions continue, their due horizons fold on, their per-wallet rows are recomputed);
 * read from DuckDB, that copy decompressed all 39 columns of all 64M rows at full scale (11.8 s of a ~45 s refresh,
 * session 26), because a columnar scan cannot skip to a few rows spread over every row group. A store keyed by wallet
 * (jobs/analytics/state-store.ts: SQLite) answers the same in tens of milliseconds.
 *
 * The store is a copy, never the truth: it holds a_position_state as of one version (a_meta.version), and a refresh
 * reads it only when it holds the version the refresh starts from; otherwise the refresh reads the table as before.
 * Each refresh hands the store its touched wallets' rows as they are after it (`stage`), which the store keeps once
 * that version commits. Here: the rows' shape, their encoding per wallet, and the SQL that reads them from DuckDB.
 */
import type { ColumnarRunner } from '../query.ts';
import { POSITION_STATE_COLUMNS } from './positions.ts';

/** Columns per state row (a_position_state's, in its order). */
export const STATE_WIDTH = POSITION_STATE_COLUMNS.length;

/**
 * State rows, row-major: values[i * STATE_WIDTH + c] is row i's column c (TIMESTAMP as epoch µs, integers as
 * doubles), nulls[i * STATE_WIDTH + c] is 1 where it is NULL (then its value is NaN). A NaN with no null flag is a NaN.
 */
export interface StateRows {
  n: number;
  values: Float64Array;
  nulls: Uint8Array;
}

/**
 * A heavy wallet (a market maker: thousands of positions, touched by almost every refresh) keeps its rows in slots by
 * market, each slot a value of its own, so that a refresh writes again only the slots of the positions it changed;
 * a lighter wallet keeps all its rows in one value. Rows are ordered by slot within a wallet (stateRowsSql).
 */
export const HEAVY_SLOTS = 64;
/** A wallet with at least this many state rows is heavy (~1% of the wallets at full scale, many of the rows). */
export const HEAVY_ROWS = 256;
/**
 * The most state rows a refresh stages for the store: held in memory as doubles (~350 bytes a row) until its version
 * is kept. An ordinary refresh at full scale touches ~1.4M rows; an hour's refresh whose mids arrived late touched
 * 21.9M (session 28), and staging them took the process (DuckDB's 8 GB included) from 13 to 23.8 GB, where the
 * kernel killed it. A refresh touching more stages its wallets' ids: the store reads them again after the commit.
 */
export const STAGE_MAX_ROWS = 3_000_000;
/** The slot of a heavy wallet's row, 0..HEAVY_SLOTS-1, in SQL. */
export const STATE_SLOT_SQL = `(market_id & ${HEAVY_SLOTS - 1})`;
export const slotOfMarket = (marketId: number): number => marketId & (HEAVY_SLOTS - 1);

/** How a staged wallet's rows are given (PositionStateStore.stage). */
export const STAGED_WHOLE = 0;
/** a heavy wallet: the rows of the slots its changed positions are in, each slot whole */
export const STAGED_SLOTS = 1;
/** a wallet heavy now and light before: all its rows (its single value goes) */
export const STAGED_TURNED_HEAVY = 2;

/**
 * Which committed state a store holds: a_meta's version and built_at (µs). The version alone does not say: a full
 * build starts again at version 1.
 */
export interface StateStamp {
  version: number;
  builtAtUs: number;
}

/** SQL reading a_meta's StateStamp (columns version, built_at_us). */
export const STATE_STAMP_SQL = `SELECT version, epoch_us(built_at)::DOUBLE AS built_at_us FROM a_meta`;

/** A copy of a_position_state keyed by wallet (see above). */
export interface PositionStateStore {
  /** the row count that makes a wallet heavy (HEAVY_ROWS; tests make it small) */
  readonly heavyRows: number;
  /**
   * the most state rows a refresh stages (STAGE_MAX_ROWS; tests make it small): a refresh touching more (restreaming
   * most positions after a batch of late mids) stages its wallets' ids instead (stageStale)
   */
  readonly stageMaxRows: number;
  /**
   * Resolves once the versions committed so far are kept in the store (the service keeps one while the next refresh
   * begins): `holds` then answers for the newest. A refresh awaits it before asking `holds`.
   */
  settled(): Promise<void>;
  /** whether it holds a_position_state of this committed state whole (a refresh from it reads the store) */
  holds(stamp: StateStamp): boolean;
  /** a read failed (a value that does not decode): the store no longer holds anything until filled again */
  readFailed(error: Error): void;
  /** every state row of these wallets (ascending ids), wallet by wallet */
  read(wallets: Int32Array): StateRows;
  /**
   * As of `version`, each of `wallets` (ascending ids) has in `rows` (wallet by wallet, in stateRowsSql's order) what
   * `modes[k]` says: STAGED_WHOLE (a light wallet: all its rows), STAGED_SLOTS (a heavy one: its changed slots whole),
   * STAGED_TURNED_HEAVY (all its rows). The store keeps them if, and once, that version commits.
   */
  stage(version: number, wallets: Int32Array, modes: Uint8Array, rows: StateRows): void;
  /**
   * As of `version`, the rows of `wallets` (ascending ids) changed, too many to stage: once that version commits, the
   * store reads them again from the committed table in the background (it holds nothing meanwhile), instead of
   * being emptied and filled again whole.
   */
  stageStale(version: number, wallets: Int32Array): void;
}

export function emptyStateRows(n = 0): StateRows {
  return { n, values: new Float64Array(n * STATE_WIDTH), nulls: new Uint8Array(n * STATE_WIDTH) };
}

/**
 * A SELECT of `source`'s state rows as the scan reads them: every column a DOUBLE (NULL as NaN) and two masks of
 * NULLs (bit c of m0 for column c < 31, bit c - 31 of m1 for the others), in `order` (by default a wallet's rows by
 * slot, then position: the store's order).
 */
export function stateRowsSql(source: string, order = `wallet_id, ${STATE_SLOT_SQL}, market_id, outcome_index`): string {
  const value = ([n, t]: readonly [string, string]) =>
    t === 'TIMESTAMP' ? `coalesce(epoch_us(${n})::DOUBLE, 'NaN'::DOUBLE) AS ${n}` : `coalesce(${n}::DOUBLE, 'NaN'::DOUBLE) AS ${n}`;
  const mask = (from: number, to: number) =>
    POSITION_STATE_COLUMNS.slice(from, to)
      .map(([n], k) => `((${n} IS NULL)::INTEGER << ${k})`)
      .join(' + ');
  return `SELECT ${POSITION_STATE_COLUMNS.map(value).join(', ')}, ${mask(0, 31)} AS m0, ${STATE_WIDTH > 31 ? mask(31, STATE_WIDTH) : '0'} AS m1
    FROM ${source} ORDER BY ${order}`;
}

/** Run stateRowsSql's SELECT and gather its rows. */
export async function scanStateRows(db: Pick<ColumnarRunner, 'scan'>, sql: string): Promise<StateRows> {
  const parts: StateRows[] = [];
  let n = 0;
  await db.scan(sql, (b) => {
    const part = emptyStateRows(b.n);
    for (let c = 0; c < STATE_WIDTH; c++) {
      const v = b.f64(POSITION_STATE_COLUMNS[c]![0]);
      for (let i = 0; i < b.n; i++) part.values[i * STATE_WIDTH + c] = v[i]!;
    }
    const m0 = b.int('m0');
    const m1 = b.int('m1');
    for (let i = 0; i < b.n; i++) {
      for (let c = 0; c < STATE_WIDTH; c++) {
        const bit = c < 31 ? (m0[i]! >>> c) & 1 : (m1[i]! >>> (c - 31)) & 1;
        part.nulls[i * STATE_WIDTH + c] = bit;
      }
    }
    parts.push(part);
    n += b.n;
  });
  return concatStateRows(parts, n);
}

function concatStateRows(parts: readonly StateRows[], n = parts.reduce((s, p) => s + p.n, 0)): StateRows {
  if (parts.length === 1) return parts[0]!;
  const out = emptyStateRows(n);
  let at = 0;
  for (const p of parts) {
    out.values.set(p.values.subarray(0, p.n * STATE_WIDTH), at * STATE_WIDTH);
    out.nulls.set(p.nulls.subarray(0, p.n * STATE_WIDTH), at * STATE_WIDTH);
    at += p.n;
  }
  return out;
}

/** Append state rows to `table` (a_position_state's columns), in parts: each part's rows as they come, then close. */
export async function stateRowsWriter(
  db: Pick<ColumnarRunner, 'writer'>,
  table: string,
): Promise<{ append(rows: StateRows): void; ready(): Promise<void>; close(): Promise<void> }> {
  const w = await db.writer(table, POSITION_STATE_COLUMNS.map(([name, type]) => ({ name, type })));
  return {
    append(rows) {
      for (let i = 0; i < rows.n; i++) w.row(rows.values.subarray(i * STATE_WIDTH, (i + 1) * STATE_WIDTH), rows.nulls.subarray(i * STATE_WIDTH, (i + 1) * STATE_WIDTH));
    },
    // once the rows queued for the database are few enough to append more
    ready: async () => {
      await w.ready?.();
    },
    close: () => w.close(),
  };
}


/** The runs [start, end) of consecutive rows in [from, to) whose `key` is the same. */
export function rowRuns(from: number, to: number, key: (row: number) => number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = from; i < to; ) {
    const k = key(i);
    let j = i + 1;
    while (j < to && key(j) === k) j++;
    out.push([i, j]);
    i = j;
  }
  return out;
}

/** The row index where each wallet's rows begin (rows in wallet order), and the end: wallet k is rows [at[k], at[k + 1]). */
export function walletRuns(wallets: Int32Array, rows: StateRows): Int32Array {
  const at = new Int32Array(wallets.length + 1);
  let i = 0;
  for (let k = 0; k < wallets.length; k++) {
    at[k] = i;
    while (i < rows.n && rows.values[i * STATE_WIDTH]! === wallets[k]!) i++;
  }
  at[wallets.length] = i;
  if (i !== rows.n) throw new Error(`state rows: row ${i} (wallet ${rows.values[i * STATE_WIDTH]}) is not of the wallets given, in their order`);
  return at;
}

// --- one wallet's rows as bytes: the store's value (wallet_id is its key, not repeated)
//   u8 format, u32 n; then per column after wallet_id: u8 has-nulls, [n bytes of nulls], n values
//   (INTEGER: i32, UTINYINT: u8, DOUBLE and TIMESTAMP: f64), little-endian

const FORMAT = 1;
const WIDTHS = POSITION_STATE_COLUMNS.map(([, t]) => (t === 'INTEGER' ? 4 : t === 'UTINYINT' ? 1 : 8));

/** The bytes of rows [from, to) (one wallet's). */
export function encodeWalletRows(rows: StateRows, from: number, to: number): Uint8Array {
  const n = to - from;
  let size = 5;
  for (let c = 1; c < STATE_WIDTH; c++) {
    size += 1 + n * WIDTHS[c]!;
    if (hasNull(rows, from, to, c)) size += n;
  }
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  v.setUint8(0, FORMAT);
  v.setUint32(1, n, true);
  let p = 5;
  for (let c = 1; c < STATE_WIDTH; c++) {
    const nulls = hasNull(rows, from, to, c);
    v.setUint8(p++, nulls ? 1 : 0);
    if (nulls) for (let i = from; i < to; i++) v.setUint8(p++, rows.nulls[i * STATE_WIDTH + c]!);
    const w = WIDTHS[c]!;
    for (let i = from; i < to; i++) {
      const x = rows.nulls[i * STATE_WIDTH + c] ? 0 : rows.values[i * STATE_WIDTH + c]!;
      if (w === 8) v.setFloat64(p, x, true);
      else if (w === 4) v.setInt32(p, x, true);
      else v.setUint8(p, x);
      p += w;
    }
  }
  return out;
}

function hasNull(rows: StateRows, from: number, to: number, c: number): boolean {
  for (let i = from; i < to; i++) if (rows.nulls[i * STATE_WIDTH + c]) return true;
  return false;
}

/** How many rows the bytes of a wallet hold. */
export function walletRowCount(bytes: Uint8Array): number {
  if (bytes[0] !== FORMAT) throw new Error(`state rows: unknown format ${bytes[0]}`);
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1, true);
}

/** Decode a wallet's bytes into rows [at, at + n) of `out`. */
export function decodeWalletRows(wallet: number, bytes: Uint8Array, out: StateRows, at: number): number {
  const n = walletRowCount(bytes);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < n; i++) {
    out.values[(at + i) * STATE_WIDTH] = wallet;
    out.nulls[(at + i) * STATE_WIDTH] = 0;
  }
  let p = 5;
  for (let c = 1; c < STATE_WIDTH; c++) {
    const nulls = v.getUint8(p++) === 1;
    const np = p;
    if (nulls) p += n;
    const w = WIDTHS[c]!;
    for (let i = 0; i < n; i++) {
      const isNull = nulls && bytes[np + i] === 1;
      const x = w === 8 ? v.getFloat64(p, true) : w === 4 ? v.getInt32(p, true) : v.getUint8(p);
      out.values[(at + i) * STATE_WIDTH + c] = isNull ? Number.NaN : x;
      out.nulls[(at + i) * STATE_WIDTH + c] = isNull ? 1 : 0;
      p += w;
    }
  }
  if (p !== bytes.byteLength) throw new Error(`state rows: ${bytes.byteLength - p} bytes left over for wallet ${wallet}`);
  return n;
}

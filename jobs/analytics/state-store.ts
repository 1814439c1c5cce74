/**
 * a_position_state by wallet in a SQLite file beside the venue database (core/analytics/state-rows.ts says why): a
 * light wallet's state rows encoded as one value, a heavy wallet's as one value per slot, each deflated and with the
 * version of a_position_state it was taken from.
 *
 * Following the analytics engine:
 * - `reset(version)` empties the store and makes it follow from that committed version; `fill` then copies
 *   a_position_state into it in slices of wallets, each read in a transaction of its own (so at whichever version is
 *   committed then). Meanwhile every refresh stages its touched wallets' rows and `committed` keeps them. A slice never
 *   overwrites a wallet's rows taken from a later version, so once the last slice is in, every wallet holds its rows
 *   as of the newest version kept: the store `holds` it, and refreshes read from it.
 * - `committed(version)` keeps what the refresh to that version staged when the store followed the version before it;
 *   anything else (a version committed without staging: a full build; a failure in between) resets it, to be filled
 *   again. A crash between the venue database's commit and the store's leaves the store a version behind: at the next
 *   start it does not hold the persisted version and is filled again.
 * - A refresh that touched too many rows to stage stages its wallets' ids (`stageStale`): at its commit the store
 *   follows that version but holds nothing (filled = 0 on disk too) until `fill` has read those wallets again from the
 *   committed table, in slices like a fill's (a third of the rows after an hour's refresh with late mids, instead of
 *   all of them after a reset).
 *
 * Until the fill completes the journal is kept in memory and nothing is synced (a crash then leaves a store that is
 * emptied at the next start anyway); from then on it is a write-ahead log, and each kept version is one transaction.
 */
import { existsSync, rmSync } from 'node:fs';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import Database from 'better-sqlite3';
import type { DuckDBConnection } from '@duckdb/node-api';
import {
  HEAVY_ROWS,
  STAGE_MAX_ROWS,
  HEAVY_SLOTS,
  STAGED_SLOTS,
  STAGED_TURNED_HEAVY,
  STAGED_WHOLE,
  STATE_STAMP_SQL,
  STATE_WIDTH,
  slotOfMarket,
  decodeWalletRows,
  emptyStateRows,
  encodeWalletRows,
  scanStateRows,
  stateRowsSql,
  walletRowCount,
  rowRuns,
  walletRuns,
  type PositionStateStore,
  type StateRows,
  type StateStamp,
} from '../../core/analytics/state-rows.ts';
import { slicedPause, yieldToEventLoop } from '../../core/steps.ts';
import { duckRunner } from '../../data/runner.ts';
import { queryRows } from '../../data/duckdb.ts';
import { POSITION_STATE_COLUMNS } from '../../core/analytics/positions.ts';

/** The store file's layout (3: a heavy wallet's rows in slots); with the columns and the slot rules, another value empties it. */
const STORE_FORMAT = 3;
/**
 * A value's key: its wallet's, times the keys a wallet can have, plus 0 for a light wallet's one value or 1 + slot for
 * a heavy one's (state-rows.ts). A wallet's values are the keys keyOf(w, null) .. keyOf(w, HEAVY_SLOTS - 1), in slot
 * order.
 */
const KEYS_PER_WALLET = HEAVY_SLOTS + 1;
const keyOf = (wallet: number, slot: number | null) => wallet * KEYS_PER_WALLET + (slot === null ? 0 : 1 + slot);
/**
 * A wallet's value: its encoded rows (state-rows.ts) deflated at level 1. At full scale 3.2 times smaller than the
 * rows encoded (17.9 GiB), at ~110 MB/s of deflate and ~430 MB/s of inflate. On this thread, pausing every
 * STEP_MS: on libuv's threads (zlib's async calls) a slice of 4,000 wallets took 580–700 ms against 200 ms here, a
 * call's hand-over costing more than its deflate.
 */
const pack = (rows: StateRows, from: number, to: number): Buffer => deflateRawSync(encodeWalletRows(rows, from, to), { level: 1 });
/**
 * The store's work on this thread between pauses (deflating, writing values): 500 values between pauses held the
 * service 200–400 ms at full scale (a market maker's value, or a page read from the disk, costs many light ones).
 */
const STEP_MS = 15;

/** Each value's bytes (rows [from, to) of one wallet or slot), pausing every STEP_MS. */
async function packValues(rows: StateRows, values: readonly Value[], pause: () => Promise<void>): Promise<Buffer[]> {
  const out: Buffer[] = [];
  const step = slicedPause(pause, STEP_MS);
  for (const v of values) {
    out.push(pack(rows, v.from, v.to));
    await step();
  }
  return out;
}
/** Wallet ids per fill slice: ~23 state rows each at full scale, so ~90k rows (~30 MB) read and written at a time. */
const FILL_SLICE_WALLETS = 4_000;

export interface StateStoreStatus {
  /** the version it follows from (kept or reset at) */
  applied: number;
  /** that version's a_meta.built_at (µs) */
  appliedAtUs: number;
  /** every wallet's rows are in (it holds `applied`) */
  filled: boolean;
  /** wallets whose rows it is to read again from the table (a refresh that touched too many to stage) */
  stale: number;
  /** wallets whose rows it holds */
  wallets: number;
  /** of which heavy: rows in slots */
  heavy: number;
}

/** What a refresh staged: its touched wallets' rows, or (too many) their ids alone, to be read again after its commit. */
type Staged = { version: number; wallets: Int32Array; modes: Uint8Array; rows: StateRows; stale?: undefined } | { version: number; stale: Int32Array };

/**
 * The values of a wallet's rows [from, to) (in slot order): one, or (`slots`) one per slot; `replacesSingle`: also
 * an empty single value (a wallet that turned heavy: a fill slice of an older version must not put its old single
 * value back beside the slots).
 */
function walletValues(rows: StateRows, wallet: number, from: number, to: number, slots: boolean, replacesSingle: boolean): Value[] {
  if (!slots) return [{ key: keyOf(wallet, null), from, to }];
  const slotAt = (i: number) => slotOfMarket(rows.values[i * STATE_WIDTH + 1]!);
  const out = rowRuns(from, to, slotAt).map(([i, j]) => ({ key: keyOf(wallet, slotAt(i)), from: i, to: j }));
  return replacesSingle ? [{ key: keyOf(wallet, null), from, to: from }, ...out] : out;
}

/** One value to write: its key and the rows [from, to) it holds. */
interface Value {
  key: number;
  from: number;
  to: number;
}

/** One ascending list of the ascending lists' ids, each once. */
function mergeAscending(lists: Int32Array[]): Int32Array {
  if (lists.length <= 1) return lists[0] ?? new Int32Array(0);
  const all = new Int32Array(lists.reduce((n, l) => n + l.length, 0));
  let at = 0;
  for (const l of lists) {
    all.set(l, at);
    at += l.length;
  }
  all.sort();
  let n = 0;
  for (let k = 0; k < all.length; k++) if (k === 0 || all[k] !== all[k - 1]) all[n++] = all[k]!;
  return all.subarray(0, n);
}

/** The committed state a connection reads (a_meta's stamp). */
export async function stateStamp(conn: DuckDBConnection): Promise<StateStamp> {
  const [m] = await queryRows<{ version: number; built_at_us: number }>(conn, STATE_STAMP_SQL);
  return { version: Number(m!.version), builtAtUs: Number(m!.built_at_us) };
}

export class SqliteStateStore implements PositionStateStore {
  private db!: Database.Database;
  private applied = 0;
  private appliedAtUs = 0;
  private filled = false;
  /** what the file must have been written with: else it is emptied (another layout, or another heavy threshold) */
  private readonly layout: string;
  private staged: Staged | null = null;
  /** read's statement, of the current connection (recreate drops it) */
  private readValues: Database.Statement | null = null;
  /** a read failed: emptied at the next commit */
  private broken = false;
  /** bumped by reset: a fill of an earlier generation stops */
  private generation = 0;
  /** the store's writes, one at a time (a fill slice never lands inside a kept version's transaction) */
  private writing: Promise<unknown> = Promise.resolve();
  /** the versions being kept (committed), one after the other: `settled` waits for them */
  private keeping: Promise<unknown> = Promise.resolve();
  /** every wallet is to be copied (emptied by a reset, or never filled) */
  private needsFull = true;
  /** the wallets (ascending ids, per version that staged them) to read again from the table before it holds anything */
  private stale: Int32Array[] = [];

  private constructor(
    private readonly path: string,
    readonly heavyRows: number,
    readonly stageMaxRows: number,
  ) {
    this.layout = JSON.stringify({ format: STORE_FORMAT, columns: POSITION_STATE_COLUMNS, slots: HEAVY_SLOTS, heavyRows });
  }

  /** Open the store at `path` (created empty when absent, unreadable or of another format). */
  static open(path: string, opts: { heavyRows?: number; stageMaxRows?: number } = {}): SqliteStateStore {
    const store = new SqliteStateStore(path, opts.heavyRows ?? HEAVY_ROWS, opts.stageMaxRows ?? STAGE_MAX_ROWS);
    try {
      store.connect();
      const meta = store.db.prepare(`SELECT layout, applied, applied_at_us, filled FROM store_meta`).get() as
        | { layout: string; applied: number; applied_at_us: number; filled: number }
        | undefined;
      if (!meta || meta.layout !== store.layout) throw new Error('another layout');
      store.applied = meta.applied;
      store.appliedAtUs = meta.applied_at_us;
      store.filled = meta.filled === 1;
      store.needsFull = !store.filled;
      // (a filled store's file is in WAL mode; the sync level is the connection's)
      if (store.filled) store.db.pragma('synchronous = NORMAL');
    } catch {
      store.recreate({ version: 0, builtAtUs: 0 });
    }
    return store;
  }

  private connect(): void {
    this.db = new Database(this.path);
    this.db.pragma('page_size = 16384');
  }

  /** Remove the file and start an empty one following `stamp` (its journal in memory until filled). */
  private recreate(stamp: StateStamp): void {
    this.readValues = null;
    this.db?.close();
    for (const f of [this.path, `${this.path}-wal`, `${this.path}-shm`, `${this.path}-journal`]) if (existsSync(f)) rmSync(f);
    this.connect();
    // in memory, not off: better-sqlite3's defensive mode refuses 'OFF' (and keeps the rollback journal on disk)
    this.db.pragma('journal_mode = MEMORY');
    this.db.pragma('synchronous = OFF');
    this.db.exec(`CREATE TABLE state_rows (key INTEGER PRIMARY KEY, version INTEGER NOT NULL, rows BLOB NOT NULL);
      CREATE TABLE store_meta (layout TEXT NOT NULL, applied INTEGER NOT NULL, applied_at_us INTEGER NOT NULL, filled INTEGER NOT NULL)`);
    this.db.prepare(`INSERT INTO store_meta VALUES (?, ?, ?, 0)`).run(this.layout, stamp.version, stamp.builtAtUs);
    this.applied = stamp.version;
    this.appliedAtUs = stamp.builtAtUs;
    this.filled = false;
    this.needsFull = true;
    this.stale = [];
  }

  status(): StateStoreStatus {
    const c = this.db.prepare(`SELECT count(DISTINCT key / ${KEYS_PER_WALLET}) AS n, count(DISTINCT key / ${KEYS_PER_WALLET}) FILTER (WHERE key % ${KEYS_PER_WALLET} <> 0) AS heavy FROM state_rows`).get() as { n: number; heavy: number };
    return { applied: this.applied, appliedAtUs: this.appliedAtUs, filled: this.filled, stale: this.stale.reduce((n, w) => n + w.length, 0), wallets: c.n, heavy: c.heavy };
  }

  /** `fill` has work to do: a copy of every wallet, or wallets to read again (and no reset or failed read pending) */
  pendingFill(): boolean {
    return !this.filled && !this.broken && (this.needsFull || this.stale.length > 0);
  }

  holds(stamp: StateStamp): boolean {
    return this.filled && this.applied === stamp.version && this.appliedAtUs === stamp.builtAtUs;
  }

  /** Until it is filled again it holds nothing, and the next version committed empties it (committed answers 'reset'). */
  readFailed(): void {
    this.filled = false;
    this.broken = true;
  }

  read(wallets: Int32Array): StateRows {
    // prepared once per connection: a refresh reads a few wallets at a time, ~900 calls at full scale
    const get = (this.readValues ??= this.db.prepare(`SELECT rows FROM state_rows WHERE key BETWEEN ? AND ? ORDER BY key`).pluck());
    const values: { wallet: number; bytes: Uint8Array }[] = [];
    let n = 0;
    for (let k = 0; k < wallets.length; k++) {
      for (const packed of get.all(keyOf(wallets[k]!, null), keyOf(wallets[k]!, HEAVY_SLOTS - 1)) as Uint8Array[]) {
        const bytes = inflateRawSync(packed);
        values.push({ wallet: wallets[k]!, bytes });
        n += walletRowCount(bytes);
      }
    }
    const out = emptyStateRows(n);
    let at = 0;
    for (const v of values) at += decodeWalletRows(v.wallet, v.bytes, out, at);
    return out;
  }

  stage(version: number, wallets: Int32Array, modes: Uint8Array, rows: StateRows): void {
    walletRuns(wallets, rows); // throws unless the rows are the wallets', in their order
    if (modes.length !== wallets.length || modes.some((m) => m !== STAGED_WHOLE && m !== STAGED_SLOTS && m !== STAGED_TURNED_HEAVY)) throw new Error('state rows: a mode per wallet');
    this.staged = { version, wallets, modes, rows };
  }

  stageStale(version: number, wallets: Int32Array): void {
    for (let k = 1; k < wallets.length; k++) if (wallets[k]! <= wallets[k - 1]!) throw new Error('state rows: stale wallets in ascending order');
    this.staged = { version, stale: wallets };
  }

  /** The version staged did not commit. */
  discard(): void {
    this.staged = null;
  }

  /** Empty the store; it follows from the committed state `stamp` (fill it next). */
  reset(stamp: StateStamp): Promise<void> {
    this.generation++;
    this.staged = null;
    this.broken = false;
    return this.serial(async () => this.recreate(stamp));
  }

  /**
   * `version` committed: keep what its refresh staged when the store followed the version before it, and answer
   * 'kept', or 'stale' when it staged wallets to read again (fill next); otherwise reset the store at it and answer
   * 'reset' (fill it next).
   */
  committed(stamp: StateStamp, pause: () => Promise<void> = yieldToEventLoop): Promise<'kept' | 'stale' | 'reset'> {
    // what this version staged, taken now: the next refresh may stage its own while this one is kept
    const staged = this.staged;
    this.staged = null;
    // after the version before it is kept (its `applied` is what this one checks)
    const run = this.keeping.then(() => this.keep(stamp, staged, pause));
    this.keeping = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every version committed so far is kept, or the store reset: `holds` then answers for the newest. */
  async settled(): Promise<void> {
    await this.keeping;
  }

  private async keep(stamp: StateStamp, staged: Staged | null, pause: () => Promise<void>): Promise<'kept' | 'stale' | 'reset'> {
    const version = stamp.version;
    if (!staged || staged.version !== version || this.applied !== version - 1 || this.broken) {
      await this.reset(stamp);
      return 'reset';
    }
    if (staged.stale) {
      const stale = staged.stale;
      try {
        // it follows this version but holds nothing until those wallets are read again (on disk too: a crash meanwhile
        // leaves a store that the next start empties)
        await this.serial(async () => {
          this.db.prepare(`UPDATE store_meta SET applied = ?, applied_at_us = ?, filled = 0`).run(version, stamp.builtAtUs);
          this.applied = version;
          this.appliedAtUs = stamp.builtAtUs;
          this.filled = false;
          this.stale.push(stale);
        });
        return 'stale';
      } catch {
        await this.reset(stamp);
        return 'reset';
      }
    }
    try {
      // the publish's listeners and the requests waiting go first (and a test holds a keep here)
      await pause();
      const at = walletRuns(staged.wallets, staged.rows);
      const parts = Array.from(staged.wallets, (w, k) => walletValues(staged.rows, w, at[k]!, at[k + 1]!, staged.modes[k] !== STAGED_WHOLE, staged.modes[k] === STAGED_TURNED_HEAVY)).flat();
      const values = await packValues(staged.rows, parts, pause);
      await this.serial(async () => {
        const put = this.upsert();
        this.db.exec('BEGIN');
        try {
          // pausing every STEP_MS: an upsert reads its value's page first, from the disk when not cached
          const step = slicedPause(pause, STEP_MS);
          for (let k = 0; k < parts.length; k++) {
            put.run(parts[k]!.key, version, values[k]);
            await step();
          }
          this.db.prepare(`UPDATE store_meta SET applied = ?, applied_at_us = ?`).run(version, stamp.builtAtUs);
          this.db.exec('COMMIT');
        } catch (e) {
          if (this.db.inTransaction) this.db.exec('ROLLBACK');
          throw e;
        }
        this.applied = version;
        this.appliedAtUs = stamp.builtAtUs;
      });
      return 'kept';
    } catch {
      // whatever failed, the store no longer follows: emptied, to be filled again
      await this.reset(stamp);
      return 'reset';
    }
  }

  /**
   * Bring the store to hold the committed state: copy a_position_state into it (after a reset), then read again the
   * wallets stale versions named (stageStale), each in slices of wallets read in a transaction of their own on `conn`
   * (a connection no one else uses meanwhile). Resolves true once it holds the state, false when a reset (or
   * `stopped`) ended it first.
   */
  async fill(conn: DuckDBConnection, opts: { pause?: () => Promise<void>; stopped?: () => boolean; sliceWallets?: number } = {}): Promise<boolean> {
    const generation = this.generation;
    const current = () => generation === this.generation && !opts.stopped?.();
    const copy = { conn, pause: opts.pause ?? yieldToEventLoop, current, slice: opts.sliceWallets ?? FILL_SLICE_WALLETS };
    for (;;) {
      if (this.needsFull) {
        // (a reset meanwhile wants a copy again: only a copy of this generation clears the flag)
        if (!(await this.copyWallets(copy, null)) || !current()) return false;
        this.needsFull = false;
      }
      const stale = mergeAscending(this.stale.splice(0));
      if (stale.length) {
        if (!(await this.copyWallets(copy, stale))) return false;
        continue;
      }
      const done = await this.serial(async () => {
        if (!current()) return false;
        // a version kept meanwhile named more wallets: read them first
        if (this.stale.length) return null;
        // synced before it says 'filled': the slices were written unsynced (until the first fill), and a power loss must
        // not leave a store that says it is filled over pages that never reached the disk (this commit syncs first)
        this.db.pragma('synchronous = FULL');
        this.db.prepare(`UPDATE store_meta SET filled = 1`).run();
        this.db.pragma('journal_mode = WAL');
        this.db.pragma('synchronous = NORMAL');
        this.filled = true;
        return true;
      });
      if (done !== null) return done;
    }
  }

  /**
   * Copy the rows of `wallets` (ascending ids; null: every wallet) from a_position_state, in slices of `slice` wallets,
   * each read at the version committed then. Resolves false once `current` says the copy is no longer wanted.
   */
  private async copyWallets(
    c: { conn: DuckDBConnection; pause: () => Promise<void>; current: () => boolean; slice: number },
    wallets: Int32Array | null,
  ): Promise<boolean> {
    const db = duckRunner(c.conn);
    const slices: string[] = [];
    if (wallets) {
      for (let k = 0; k < wallets.length; k += c.slice) {
        const ids = wallets.subarray(k, k + c.slice);
        slices.push(`wallet_id BETWEEN ${ids[0]} AND ${ids[ids.length - 1]} AND wallet_id IN (${ids.join(',')})`);
      }
    } else {
      const [top] = await queryRows<{ hi: number | null }>(c.conn, `SELECT max(wallet_id) AS hi FROM a_position_state`);
      for (let lo = 0; lo <= Number(top?.hi ?? -1); lo += c.slice) slices.push(`wallet_id >= ${lo} AND wallet_id < ${lo + c.slice}`);
    }
    for (const where of slices) {
      if (!c.current()) return false;
      await c.conn.run('BEGIN TRANSACTION');
      let version: number;
      let rows: StateRows;
      try {
        version = (await stateStamp(c.conn)).version;
        rows = await scanStateRows(db, stateRowsSql(`(SELECT * FROM a_position_state WHERE ${where})`));
      } finally {
        await c.conn.run('COMMIT');
      }
      // the slice's wallets, each a run of rows: one value, or a heavy wallet's slots. A wallet read again may have
      // turned heavy in the version that named it (which staged nothing): its single value goes, empty, at this version
      const parts = rowRuns(0, rows.n, (i) => rows.values[i * STATE_WIDTH]!).flatMap(([i, j]) =>
        walletValues(rows, rows.values[i * STATE_WIDTH]!, i, j, j - i >= this.heavyRows, wallets !== null && j - i >= this.heavyRows),
      );
      const values = await packValues(rows, parts, c.pause);
      await this.serial(async () => {
        if (!c.current()) return;
        const put = this.upsert();
        this.db.transaction(() => parts.forEach((p, k) => put.run(p.key, version, values[k])))();
      });
      await c.pause();
    }
    return c.current();
  }

  /** A value at a version, unless the store has it from a later one. */
  private upsert(): Database.Statement {
    return this.db.prepare(`INSERT INTO state_rows (key, version, rows) VALUES (?, ?, ?)
      ON CONFLICT (key) DO UPDATE SET version = excluded.version, rows = excluded.rows WHERE excluded.version >= state_rows.version`);
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.writing.then(f);
    this.writing = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    this.generation++;
    await this.keeping;
    await this.writing;
    this.db.close();
  }
}

/**
 * a_position_state by wallet (core/analytics/state-rows.ts, jobs/analytics/state-store.ts): a wallet's rows survive
 * their encoding bit for bit (NULL apart from NaN, -0 apart from +0); the SELECT and the writer carry them between
 * DuckDB and JavaScript unchanged; and a store following the analytics engine holds the table as of every version it
 * says it holds — after its fill, across refreshes that read from it, after a restart, after a crash between the
 * database's commit and its own (filled again), and after a full build (emptied and filled again).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { POSITION_STATE_COLUMNS, POSITION_STATE_DDL } from '../../core/analytics/positions.ts';
import type { RefreshReport } from '../../core/analytics/refresh.ts';
import {
  STATE_WIDTH,
  decodeWalletRows,
  emptyStateRows,
  encodeWalletRows,
  scanStateRows,
  stateRowsSql,
  stateRowsWriter,
  walletRowCount,
  type StateRows,
} from '../../core/analytics/state-rows.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { venueInsert } from '../../data/schema.ts';
import { duckRunner } from '../../data/runner.ts';
import { AnalyticsEngine } from '../../jobs/analytics/engine.ts';
import { SqliteStateStore } from '../../jobs/analytics/state-store.ts';
import { DAY, HOUR, START, batchArb, busyWallet, createLiveVenue, writeBatch } from '../helpers/live-venue.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'state-store-'));
  dirs.push(d);
  return d;
};

/** A value of column c as a_position_state can hold it (NULL: null). */
function valueArb(c: number): fc.Arbitrary<number | null> {
  const type = POSITION_STATE_COLUMNS[c]![1];
  const v: fc.Arbitrary<number> =
    type === 'INTEGER'
      ? fc.integer({ min: -2147483648, max: 2147483647 })
      : type === 'UTINYINT'
        ? fc.integer({ min: 0, max: 255 })
        : type === 'TIMESTAMP'
          ? fc.integer({ min: -2e15, max: 4e15 })
          : fc.oneof(fc.double(), fc.constantFrom(0, -0, Number.NaN, 1e-300, -1.5e308));
  return c <= 2 ? v : fc.option(v, { freq: 4 });
}

/** Rows of ascending wallets (1..6 rows each), their non-key columns random. */
const rowsArb = fc
  .array(fc.tuple(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 6 })), { minLength: 1, maxLength: 6 })
  .chain((ws) => {
    const wallets = [...new Set(ws.map(([w]) => w))].sort((a, b) => a - b);
    const counts = wallets.map((w) => ws.find(([x]) => x === w)![1]);
    const rows = wallets.flatMap((w, k) => Array.from({ length: counts[k]! }, () => w));
    return fc.tuple(fc.constant(rows), fc.array(fc.tuple(...Array.from({ length: STATE_WIDTH - 1 }, (_, c) => valueArb(c + 1))), { minLength: rows.length, maxLength: rows.length }));
  })
  .map(([walletOfRow, cols]) => {
    const r = emptyStateRows(walletOfRow.length);
    walletOfRow.forEach((w, i) => {
      r.values[i * STATE_WIDTH] = w;
      cols[i]!.forEach((x, j) => {
        r.values[i * STATE_WIDTH + j + 1] = x === null ? Number.NaN : x;
        r.nulls[i * STATE_WIDTH + j + 1] = x === null ? 1 : 0;
      });
    });
    return r;
  });

/** Every value as its bits (a NaN, a -0 and a NULL told apart), row by row. */
const bits = (r: StateRows) => Array.from({ length: r.n * STATE_WIDTH }, (_, k) => (r.nulls[k] ? 'NULL' : Object.is(r.values[k], -0) ? '-0' : String(r.values[k])));

describe('state rows', () => {
  it('a wallet’s rows decode to exactly what was encoded', () => {
    fc.assert(
      fc.property(rowsArb, (rows) => {
        const out = emptyStateRows(rows.n);
        let at = 0;
        for (let i = 0; i < rows.n; ) {
          let j = i;
          while (j < rows.n && rows.values[j * STATE_WIDTH] === rows.values[i * STATE_WIDTH]) j++;
          const bytes = encodeWalletRows(rows, i, j);
          expect(walletRowCount(bytes)).toBe(j - i);
          at += decodeWalletRows(rows.values[i * STATE_WIDTH]!, bytes, out, at);
          i = j;
        }
        expect(bits(out)).toEqual(bits(rows));
      }),
      { numRuns: 200 },
    );
  });

  it('DuckDB → rows → DuckDB keeps every value, NULL apart from NaN', async () => {
    const { instance, conn } = await openDuckDB({ path: ':memory:', threads: 1 });
    try {
      const db = duckRunner(conn);
      await conn.run(POSITION_STATE_DDL);
      await fc.assert(
        fc.asyncProperty(rowsArb, async (rows) => {
          await conn.run(`DELETE FROM a_position_state`);
          const w = await stateRowsWriter(db, 'a_position_state');
          w.append(rows);
          await w.close();
          // NULLs are NULLs in SQL, NaNs are NaNs (the row store must not turn one into the other)
          const [c] = await queryRows<{ nulls: number; nans: number }>(conn, `SELECT count(*) FILTER (WHERE shares IS NULL) AS nulls, count(*) FILTER (WHERE isnan(shares)) AS nans FROM a_position_state`);
          const col = POSITION_STATE_COLUMNS.findIndex(([n]) => n === 'shares');
          const want = { nulls: 0, nans: 0 };
          for (let i = 0; i < rows.n; i++) {
            if (rows.nulls[i * STATE_WIDTH + col]) want.nulls++;
            else if (Number.isNaN(rows.values[i * STATE_WIDTH + col])) want.nans++;
          }
          expect({ nulls: Number(c!.nulls), nans: Number(c!.nans) }).toEqual(want);
          // read back in the order written (market_id and outcome_index are random: order by rowid)
          const back = await scanStateRows(db, stateRowsSql('(SELECT rowid AS r, * FROM a_position_state)', 'r'));
          expect(bits(back)).toEqual(bits(rows));
        }),
        { numRuns: 40 },
      );
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  });
});

describe('a store file', () => {
  it('of another layout or heavy threshold, or unreadable, is emptied when opened; another build of the same version is not held', async () => {
    const path = join(tempDir(), 'store.sqlite');
    let store = SqliteStateStore.open(path);
    await store.reset({ version: 7, builtAtUs: 1000 });
    const rows = emptyStateRows(2);
    rows.values[0] = 5;
    rows.values[STATE_WIDTH] = 5;
    store.stage(8, new Int32Array([5]), new Uint8Array([0]), rows);
    expect(await store.committed({ version: 8, builtAtUs: 2000 })).toBe('kept');
    expect(store.status()).toMatchObject({ applied: 8, appliedAtUs: 2000, wallets: 1 });
    await store.close();
    // reopened as it was: it still follows version 8 of that build (not filled, so it holds nothing yet)
    store = SqliteStateStore.open(path);
    expect(store.status()).toMatchObject({ applied: 8, appliedAtUs: 2000, wallets: 1 });
    await store.close();
    // another heavy threshold: its values would be read wrong
    store = SqliteStateStore.open(path, { heavyRows: 9 });
    expect(store.status()).toEqual({ applied: 0, appliedAtUs: 0, filled: false, stale: 0, wallets: 0, heavy: 0 });
    await store.close();
    const raw = new Database(path);
    raw.prepare(`UPDATE store_meta SET layout = 'another'`).run();
    raw.close();
    store = SqliteStateStore.open(path, { heavyRows: 9 });
    expect(store.status()).toEqual({ applied: 0, appliedAtUs: 0, filled: false, stale: 0, wallets: 0, heavy: 0 });
    await store.close();
    writeFileSync(path, 'not a database');
    store = SqliteStateStore.open(path);
    expect(store.status()).toEqual({ applied: 0, appliedAtUs: 0, filled: false, stale: 0, wallets: 0, heavy: 0 });
    await store.close();
  });
});

/** Every wallet's state rows, as the table holds them and as the store does. */
async function tableAndStore(conn: DuckDBConnection, store: SqliteStateStore): Promise<[string[], string[]]> {
  await store.settled();
  const table = await scanStateRows(duckRunner(conn), stateRowsSql('a_position_state'));
  const ids = new Int32Array([...new Set(Array.from({ length: table.n }, (_, i) => table.values[i * STATE_WIDTH]!))]);
  return [bits(table), bits(store.read(ids))];
}

describe('a store following the analytics engine', () => {
  const HISTORY_DAYS = 12;

  /** A live venue with a busy wallet's history, in a database file of its own (the store's path beside it). */
  async function withVenue(use: (v: { instance: DuckDBInstance; conn: DuckDBConnection; storePath: string }) => Promise<void>): Promise<void> {
    const path = join(tempDir(), 'venue.duckdb');
    const { instance, conn } = await openDuckDB({ path, threads: 1 });
    try {
      await createLiveVenue(conn);
      for (const b of busyWallet(1, HISTORY_DAYS, 5)) await writeBatch(conn, b.rows);
      await use({ instance, conn, storePath: `${path}.state-rows.sqlite` });
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  }

  it('holds a_position_state at every version it says it holds: filled, refreshed, restarted, a version behind, after a full build', async () => {
    await withVenue(async ({ instance, conn, storePath }) => {
      const logs: string[] = [];
      let prev = HISTORY_DAYS * DAY + 3 * HOUR;
      let now = START + prev;
      // wallets of 4 positions or more keep their rows in slots (the busy wallet turns heavy as it trades)
      const open = () => AnalyticsEngine.open(instance, { now: () => new Date(now), stateStore: { path: storePath, heavyRows: 4 }, log: (m) => logs.push(m) });
      let engine = await open();
      // the first build: the store is filled in the background, then every refresh reads from it
      expect(engine.stateStore()).toMatchObject({ filling: true, filled: false });
      await engine.stateStoreFilled();
      expect(engine.stateStore()).toMatchObject({ filling: false, filled: true, applied: engine.published().version });
      const refreshOnce = async (): Promise<RefreshReport> => {
        const [batch] = fc.sample(batchArb(prev), { numRuns: 1, seed: prev });
        prev = batch!.asOf;
        now = START + prev;
        await writeBatch(conn, batch!.rows);
        return (await engine.refreshNow()) as RefreshReport;
      };
      for (let i = 0; i < 3; i++) {
        const r = await refreshOnce();
        expect(r.state_rows).toBe('store');
        // the version is kept in the background, after the publish
        await engine.stateStoreKept();
        expect(r.seconds.state_store).toBeGreaterThan(0);
        expect(engine.stateStore()).toMatchObject({ filled: true, applied: engine.published().version });
        const [table, held] = await tableAndStore(conn, (engine as unknown as { store: SqliteStateStore }).store);
        expect(held).toEqual(table);
      }
      // a restart: the store holds the persisted version, so it is read at once (no fill)
      await engine.stop();
      engine = await open();
      expect(engine.stateStore()).toMatchObject({ filling: false, filled: true });
      expect((await refreshOnce()).state_rows).toBe('store');

      // values that do not decode: that refresh reads the table (and succeeds), the store is emptied and filled again
      await engine.stateStoreKept();
      let raw = new Database(storePath);
      raw.prepare(`UPDATE state_rows SET rows = x'00'`).run();
      raw.close();
      expect((await refreshOnce()).state_rows).toBe('table');
      await engine.stateStoreFilled();
      expect((await refreshOnce()).state_rows).toBe('store');

      // a crash between the database's commit and the store's: the store is a version behind at the next start
      await engine.stop();
      raw = new Database(storePath);
      raw.prepare(`UPDATE store_meta SET applied = applied - 1`).run();
      raw.close();
      engine = await open();
      expect(engine.stateStore()).toMatchObject({ filled: false });
      // refreshes read the table until it is filled again, and the store follows them meanwhile
      const during = await refreshOnce();
      await engine.stateStoreFilled();
      expect(['store', 'table']).toContain(during.state_rows);
      expect((await refreshOnce()).state_rows).toBe('store');
      let [table, held] = await tableAndStore(conn, (engine as unknown as { store: SqliteStateStore }).store);
      expect(held).toEqual(table);

      // a full build (venue rows were removed): committed without rows staged, so the store is emptied and filled again
      await conn.run(`CREATE TABLE IF NOT EXISTS venue_retractions (seq BIGINT NOT NULL, removed_at TIMESTAMP NOT NULL, rows_removed BIGINT NOT NULL, reason VARCHAR NOT NULL)`);
      await conn.run(`INSERT INTO venue_retractions VALUES ((SELECT max(seq) + 1 FROM fills), now(), 0, 'test')`);
      const built = await refreshOnce();
      expect(built).not.toHaveProperty('state_rows');
      await engine.stateStoreFilled();
      expect(engine.stateStore()).toMatchObject({ filled: true, applied: engine.published().version });
      expect((await refreshOnce()).state_rows).toBe('store');
      [table, held] = await tableAndStore(conn, (engine as unknown as { store: SqliteStateStore }).store);
      expect(held).toEqual(table);
      await engine.stop();
      expect(logs.filter((l) => /state rows by wallet filled/.test(l))).toHaveLength(4);
    });
  }, 300_000);

  it('a fill that fails is tried again after a wait, longer after each failure in a row, until the store is filled', async () => {
    // the store's fill fails twice (as a full disk would), then runs as it does
    const fill = vi.spyOn(SqliteStateStore.prototype, 'fill');
    fill.mockRejectedValueOnce(new Error('disk full (test)')).mockRejectedValueOnce(new Error('disk full again (test)'));
    try {
      await withVenue(async ({ instance, conn, storePath }) => {
        const logs: string[] = [];
        const now = START + HISTORY_DAYS * DAY + 3 * HOUR;
        const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now), stateStore: { path: storePath, heavyRows: 4, retryMs: [40, 80] }, log: (m) => logs.push(m) });
        await vi.waitFor(() => expect(engine.stateStore()).toMatchObject({ filled: true, filling: false }), { timeout: 30_000, interval: 20 });
        expect(fill).toHaveBeenCalledTimes(3);
        expect(logs.filter((l) => /not filled \(filled again in 0\.0 s\): disk full \(test\)/.test(l))).toHaveLength(1);
        expect(logs.filter((l) => /not filled \(filled again in 0\.1 s\): disk full again/.test(l))).toHaveLength(1);
        expect(logs.filter((l) => /state rows by wallet filled/.test(l))).toHaveLength(1);
        const [table, held] = await tableAndStore(conn, (engine as unknown as { store: SqliteStateStore }).store);
        expect(held).toEqual(table);
        await engine.stop();
      });
    } finally {
      fill.mockRestore();
    }
  }, 120_000);

  it('a refresh touching more state rows than the store stages stages its wallets ids: the store reads those again after its commit (not emptied) and holds the table', async () => {
    await withVenue(async ({ instance, conn, storePath }) => {
      const logs: string[] = [];
      let prev = HISTORY_DAYS * DAY + 3 * HOUR;
      let now = START + prev;
      // two wallets no batch below touches (a market of their own): their values must keep their versions
      const hex = (n: number, len: number) => '0x' + n.toString(16).padStart(len, '0');
      await conn.run(`INSERT INTO wallets VALUES (50, '${hex(50, 40)}', NULL, 'Wallet-50', NULL, false), (51, '${hex(51, 40)}', NULL, 'Wallet-51', NULL, false)`);
      await conn.run(`${venueInsert('markets')} VALUES (9, '${hex(1009, 64)}', '${hex(2009, 64)}', 1, 'Question 9?', 'q-9', 'politics', '100091', '100092', false, NULL,
        TIMESTAMP '2026-02-20', TIMESTAMP '2026-02-25', TIMESTAMP '2026-04-30', NULL, 50000, 100000, 'synthetic')`);
      await writeBatch(conn, [{ kind: 'fill', t: 2 * DAY + 10 * HOUR, market: 9, outcome: 0, maker: 51, taker: 50, side: 'BUY', match: 'direct', price: 0.4, shares: 1000, fee: 0 }]);
      const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now), stateStore: { path: storePath, heavyRows: 4, stageMaxRows: 3 }, log: (m) => logs.push(m) });
      await engine.stateStoreFilled();
      const store = (engine as unknown as { store: SqliteStateStore }).store;
      const versions = () => new Map((store as unknown as { db: { prepare(sql: string): { all(): { key: number; version: number }[] } } }).db.prepare(`SELECT key, version FROM state_rows`).all().map((r) => [r.key, r.version]));
      let staged = 0;
      let skipped = 0;
      for (let i = 0; i < 4; i++) {
        const [batch] = fc.sample(batchArb(prev), { numRuns: 1, seed: prev });
        prev = batch!.asOf;
        now = START + prev;
        await writeBatch(conn, batch!.rows);
        const before = versions();
        const r = (await engine.refreshNow()) as RefreshReport;
        // the rows touched bound the rows staged: within the limit they are staged, beyond it the wallets' ids
        if (r.state_rows_staged) staged++;
        else skipped++;
        await engine.stateStoreFilled();
        expect(engine.stateStore()).toMatchObject({ filled: true, stale: 0, applied: engine.published().version });
        const [table, held] = await tableAndStore(conn, store);
        expect(held).toEqual(table);
        if (!r.state_rows_staged) {
          expect(r.touched_state_rows).toBeGreaterThan(0);
          // read again: the touched wallets' values, not every value (a refill writes them all at a new version)
          const after = versions();
          const same = [...after].filter(([k, v]) => before.get(k) === v).length;
          const rewritten = [...after].filter(([k, v]) => before.get(k) !== v).length;
          expect(same).toBeGreaterThan(0);
          expect(rewritten).toBeGreaterThan(0);
        }
      }
      expect(skipped).toBeGreaterThan(0);
      expect(logs.filter((l) => /more than the store stages: their wallets are read again/.test(l))).toHaveLength(skipped);
      expect(logs.filter((l) => /state rows by wallet filled/.test(l))).toHaveLength(1 + skipped);
      expect(staged + skipped).toBe(4);
      const { applied, appliedAtUs } = engine.stateStore()!;
      await engine.stop();
      // a version that named wallets to read again says so on disk at once: a crash before they are read leaves a
      // store that the next start does not hold (emptied and filled again), never one that holds stale rows
      const open = SqliteStateStore.open(storePath, { heavyRows: 4 });
      expect(open.holds({ version: applied, builtAtUs: appliedAtUs })).toBe(true);
      open.stageStale(applied + 1, Int32Array.of(1, 50));
      expect(await open.committed({ version: applied + 1, builtAtUs: appliedAtUs + 1 })).toBe('stale');
      expect(open.status()).toMatchObject({ filled: false, stale: 2, applied: applied + 1 });
      const afterCrash = SqliteStateStore.open(storePath, { heavyRows: 4 });
      expect(afterCrash.holds({ version: applied + 1, builtAtUs: appliedAtUs + 1 })).toBe(false);
      expect(afterCrash.status()).toMatchObject({ filled: false, applied: applied + 1 });
      await afterCrash.close();
      await open.close();
    });
  }, 300_000);
});

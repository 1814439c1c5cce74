/**
 * The columnar writer of data/runner.ts: rows written with set/next reach the table through INSERT statements that read
 * them from a table function, so DuckDB stores them off the event loop. Every value of every column type arrives,
 * nulls included, across several INSERTs; a scan on the same connection can feed it; its storing leaves the event loop
 * free (the control: an appender's close holds it for the whole write); a failed INSERT is reported by close(); inside
 * a transaction its rows are the transaction's.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DOUBLE, DuckDBDataChunk, INTEGER, type DuckDBConnection, type DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ColumnType } from '../../core/query.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';

let dir: string;
let db: { instance: DuckDBInstance; conn: DuckDBConnection };

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'runner-writer-'));
  db = await openDuckDB({ path: join(dir, 'db.duckdb'), threads: 2 });
});
afterEach(async () => {
  db.conn.closeSync();
  db.instance.closeSync();
  await rm(dir, { recursive: true, force: true });
});

const COLUMNS: { name: string; type: ColumnType }[] = [
  { name: 'id', type: 'INTEGER' },
  { name: 'u', type: 'UTINYINT' },
  { name: 'd', type: 'DOUBLE' },
  { name: 'b', type: 'BOOLEAN' },
  { name: 'ts', type: 'TIMESTAMP' },
];
const DDL = `(id INTEGER, u UTINYINT, d DOUBLE, b BOOLEAN, ts TIMESTAMP)`;
// row r's values; some nulls in every nullable column, the timestamps' only in the first blocks (a block after them
// must not keep their validity); µs timestamps past 2^32, negative ones too
const expected = (r: number) => ({
  id: r,
  u: r % 256,
  d: r % 7 === 3 ? null : r * 0.25 - 1000.125,
  b: r % 13 === 5 ? null : r % 2 === 0,
  ts: r < 5000 && r % 11 === 4 ? null : (r - 1000) * 86_400_000_123,
});
const writeRow = (w: { set(c: number, v: number | boolean | null): void; next(): void }, r: number) => {
  const e = expected(r);
  w.set(0, e.id);
  w.set(1, e.u);
  w.set(2, e.d);
  w.set(3, e.b);
  w.set(4, e.ts);
  w.next();
};
const readBack = async (table: string) =>
  (await queryRows<{ id: number; u: number; d: number | null; b: boolean | null; ts: number | null }>(db.conn, `SELECT id, u, d, b, epoch_us(ts)::DOUBLE AS ts FROM ${table} ORDER BY id`)).map((r) => ({
    id: Number(r.id),
    u: Number(r.u),
    d: r.d,
    b: r.b,
    ts: r.ts === null ? null : Number(r.ts),
  }));

describe('the columnar writer', () => {
  it('writes every value of every column type, nulls included, across several INSERTs and a last partial block', async () => {
    const run = duckRunner(db.conn, db.instance);
    await run.run(`CREATE TABLE t ${DDL}`);
    const n = 150_001; // more rows than one INSERT starts with, and not a multiple of a block
    const w = await run.writer('t', COLUMNS);
    for (let r = 0; r < n; r++) {
      writeRow(w, r);
      // the event loop runs now and then, as between a scan's chunks: INSERTs start and read while rows are added
      if (r % 10_000 === 0) await new Promise((res) => setImmediate(res));
    }
    expect(w.rows).toBe(n);
    await w.close();
    const rows = await readBack('t');
    expect(rows).toHaveLength(n);
    for (let r = 0; r < n; r++) if (JSON.stringify(rows[r]) !== JSON.stringify(expected(r))) expect(rows[r]).toEqual(expected(r));
  });

  it('writes whole rows (row) as set/next does, mixed with them; a NaN not marked null stays NaN', async () => {
    const run = duckRunner(db.conn, db.instance);
    await run.run(`CREATE TABLE t ${DDL}`);
    const n = 150_001;
    const w = await run.writer('t', COLUMNS);
    const values = new Float64Array(COLUMNS.length);
    const nulls = new Uint8Array(COLUMNS.length);
    for (let r = 0; r < n; r++) {
      // every third row through set/next: the two ways share the blocks
      if (r % 3 === 0) {
        writeRow(w, r);
        continue;
      }
      const e = Object.values(expected(r));
      e.forEach((x, c) => {
        nulls[c] = x === null ? 1 : 0;
        values[c] = x === null ? -1 : Number(x);
      });
      w.row(values, nulls);
    }
    await w.close();
    const rows = await readBack('t');
    expect(rows).toHaveLength(n);
    for (let r = 0; r < n; r++) if (JSON.stringify(rows[r]) !== JSON.stringify(expected(r))) expect(rows[r]).toEqual(expected(r));
    // without a null mask every value is written; NaN is a value
    await run.run(`CREATE TABLE nan (d DOUBLE, id INTEGER)`);
    const v = await run.writer('nan', [
      { name: 'd', type: 'DOUBLE' },
      { name: 'id', type: 'INTEGER' },
    ]);
    v.row(Float64Array.of(Number.NaN, 7));
    await v.close();
    expect(await queryRows(db.conn, `SELECT isnan(d) AS nan, d IS NULL AS null, id FROM nan`)).toEqual([{ nan: true, null: false, id: 7 }]);
  });

  it('writes runs of rows as columns (columns), mixed with set/next, across blocks; NaN is NULL only where declared', async () => {
    const run = duckRunner(db.conn, db.instance);
    await run.run(`CREATE TABLE c (id INTEGER, u UTINYINT, p DOUBLE, x DOUBLE)`);
    const w = await run.writer('c', [
      { name: 'id', type: 'INTEGER' },
      { name: 'u', type: 'UTINYINT' },
      { name: 'p', type: 'DOUBLE', nanIsNull: true },
      { name: 'x', type: 'DOUBLE' },
    ]);
    // row r: p is NaN (NULL) where r % 5 === 2, x is NaN (stored as NaN) where r % 7 === 3
    const p = (r: number) => (r % 5 === 2 ? Number.NaN : r / 8);
    const x = (r: number) => (r % 7 === 3 ? Number.NaN : -r);
    let r = 0;
    // runs that start inside a block, span several, end inside one; plain arrays and typed arrays of another type
    for (const len of [3, 2045, 1, 5000, 0, 2048, 777]) {
      const ids = Float64Array.from({ length: len }, (_, k) => r + k);
      const us = Array.from({ length: len }, (_, k) => (r + k) % 256);
      const ps = Float64Array.from({ length: len }, (_, k) => p(r + k));
      const xs = Array.from({ length: len }, (_, k) => x(r + k));
      w.columns(len, [ids, us, ps, xs]);
      r += len;
      // a row through set/next between runs: a NaN set on the declared column is NULL too, and so is a null set
      // on it (a block with both)
      w.set(0, r);
      w.set(1, r % 256);
      w.set(2, r % 3 === 0 ? null : p(r));
      w.set(3, x(r));
      w.next();
      r++;
      await new Promise((res) => setImmediate(res));
    }
    expect(w.rows).toBe(r);
    expect(() => w.columns(1, [[1], [1], [1]])).toThrow(/3 columns given for 4/);
    // a column shorter than the run would leave a reused block's old values
    expect(() => w.columns(2, [[1, 2], [1, 2], [1], [1, 2]])).toThrow(/column p has 1 values for 2 rows/);
    await w.close();
    // NULL and NaN told apart in SQL (JSON writes a NaN as null)
    const rows = await queryRows<{ id: number; u: number; p_null: boolean; p: number; x_nan: boolean; x_null: boolean; x: number }>(
      db.conn,
      `SELECT id, u, p IS NULL AS p_null, coalesce(p, -1) AS p, isnan(x) AS x_nan, x IS NULL AS x_null, CASE WHEN isnan(x) THEN 0 ELSE x END AS x FROM c ORDER BY id`,
    );
    expect(rows).toHaveLength(r);
    // the rows written through set/next (one after each run) whose p was set null
    const setNull = new Set<number>();
    for (let at = 0, i = 0; i < 7; i++) {
      at += [3, 2045, 1, 5000, 0, 2048, 777][i]!;
      if (at % 3 === 0) setNull.add(at);
      at++;
    }
    expect(setNull.size).toBeGreaterThan(0);
    for (let k = 0; k < r; k++) {
      const pNull = Number.isNaN(p(k)) || setNull.has(k);
      const want = { id: k, u: k % 256, p_null: pNull, p: pNull ? -1 : p(k), x_nan: Number.isNaN(x(k)), x_null: false, x: Number.isNaN(x(k)) ? 0 : x(k) };
      const got = { ...rows[k]!, id: Number(rows[k]!.id), u: Number(rows[k]!.u) };
      if (JSON.stringify(got) !== JSON.stringify(want)) expect(got).toEqual(want);
    }
  });

  it('writes through a select list: a table of other columns (a text column from a code), in the order written', async () => {
    const run = duckRunner(db.conn, db.instance);
    // the columns of a_board_rank's kind: a name the writer cannot take, then numbers; not the writer's order either
    await run.run(`CREATE TABLE named (name VARCHAR, d DOUBLE, id INTEGER)`);
    const names = ['alpha', 'beta', 'gamma'];
    const n = 300_001; // several INSERTs
    const w = await run.writer('named', [
      { name: 'code', type: 'INTEGER' },
      { name: 'id', type: 'INTEGER' },
      { name: 'd', type: 'DOUBLE' },
    ], `['${names.join("', '")}'][code + 1], d, id`);
    for (let r = 0; r < n; r++) {
      w.set(0, Math.floor((r * 3) / n));
      w.set(1, r);
      w.set(2, r % 5 === 0 ? null : r / 8);
      w.next();
      if (r % 10_000 === 0) await new Promise((res) => setImmediate(res));
    }
    await w.close();
    // read in stored order (no ORDER BY): the rows are where the writer put them, each with its name and values
    const rows = await queryRows<{ name: string; d: number | null; id: number }>(db.conn, `SELECT name, d, id FROM named`);
    expect(rows).toHaveLength(n);
    let bad = 0;
    rows.forEach((x, r) => {
      if (Number(x.id) !== r || x.name !== names[Math.floor((r * 3) / n)] || x.d !== (r % 5 === 0 ? null : r / 8)) bad++;
    });
    expect(bad).toBe(0);
    expect(new Set(rows.map((x) => x.name))).toEqual(new Set(names));
  });

  it('is fed by a scan on the same connection, whose chunks wait while too many rows are queued', async () => {
    const run = duckRunner(db.conn, db.instance);
    await run.run(`CREATE TABLE src AS SELECT range::INTEGER AS id FROM range(700000)`);
    await run.run(`CREATE TEMP TABLE t ${DDL}`);
    const w = await run.writer('t', COLUMNS);
    let seen = 0;
    await run.scan(`SELECT id FROM src ORDER BY id`, (b) => {
      const id = b.int('id');
      for (let i = 0; i < b.n; i++) writeRow(w, id[i]!);
      seen += b.n;
    });
    await w.close();
    expect(seen).toBe(700_000);
    const [agg] = await queryRows<{ n: number; ids: number; nulls_d: number; trues: number }>(
      db.conn,
      `SELECT count(*)::INTEGER AS n, sum(id)::DOUBLE AS ids, count(*) FILTER (WHERE d IS NULL)::INTEGER AS nulls_d, count(*) FILTER (WHERE b)::INTEGER AS trues FROM t`,
    );
    let trues = 0;
    let nullsD = 0;
    for (let r = 0; r < 700_000; r++) {
      const e = expected(r);
      if (e.b === true) trues++;
      if (e.d === null) nullsD++;
    }
    expect(agg).toEqual({ n: 700_000, ids: (700_000 * 699_999) / 2, nulls_d: nullsD, trues });
  });

  it('stores the rows with the event loop free; the control: an appender holds it for the whole close', async () => {
    const run = duckRunner(db.conn, db.instance);
    const wide = Array.from({ length: 24 }, (_, c) => ({ name: `c${c}`, type: (c % 3 === 0 ? 'INTEGER' : 'DOUBLE') as ColumnType }));
    const ddl = `(${wide.map((c) => `${c.name} ${c.type}`).join(', ')})`;
    await run.run(`CREATE TABLE a ${ddl}`);
    await run.run(`CREATE TABLE b ${ddl}`);
    const n = 300_000;
    const value = (r: number, c: number) => (c % 3 === 0 ? (r * 31 + c) % 1_000_003 : Math.sin(r * 0.001 + c) * 1e6);
    // the longest gap between ticks of a 5 ms heartbeat while f runs, and f's duration
    const watch = async (f: () => Promise<void>) => {
      let beat = performance.now();
      let longest = 0;
      const timer = setInterval(() => {
        const now = performance.now();
        longest = Math.max(longest, now - beat);
        beat = now;
      }, 5);
      const t0 = performance.now();
      await f();
      const took = performance.now() - t0;
      clearInterval(timer);
      longest = Math.max(longest, performance.now() - beat);
      return { longest, took };
    };

    // control: the same rows through an appender, a data chunk per 2,048 rows, then its close
    const appender = await db.conn.createAppender('a');
    const control = await watch(async () => {
      const chunk = DuckDBDataChunk.create(wide.map((c) => (c.type === 'INTEGER' ? INTEGER : DOUBLE)), 2048);
      for (let a = 0; a < n; a += 2048) {
        const len = Math.min(2048, n - a);
        chunk.rowCount = len;
        for (let c = 0; c < wide.length; c++) chunk.getColumnVector(c).setItem(0, 0 as never);
        for (let c = 0; c < wide.length; c++) {
          const v = chunk.getColumnVector(c) as unknown as { items: Float64Array | Int32Array; flush(): void };
          for (let r = 0; r < len; r++) v.items[r] = value(a + r, c);
          v.flush();
        }
        appender.appendDataChunk(chunk);
      }
      appender.closeSync();
    });
    expect(control.longest).toBeGreaterThan(0.8 * control.took);

    // the writer: every row set first (nothing can be stored meanwhile), then close() stores them
    const w = await run.writer('b', wide);
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < wide.length; c++) w.set(c, value(r, c));
      w.next();
    }
    const stored = await watch(() => w.close());
    expect(stored.took).toBeGreaterThan(50);
    expect(stored.longest).toBeLessThan(0.25 * stored.took);
    // the same table both ways
    const [diff] = await queryRows<{ n: number }>(db.conn, `SELECT count(*)::INTEGER AS n FROM (SELECT * FROM a EXCEPT ALL SELECT * FROM b UNION ALL (SELECT * FROM b EXCEPT ALL SELECT * FROM a))`);
    expect(diff!.n).toBe(0);
    const [count] = await queryRows<{ n: number }>(db.conn, `SELECT count(*)::INTEGER AS n FROM b`);
    expect(count!.n).toBe(n);
  });

  it('reports a failed INSERT at close, and the connection goes on', async () => {
    const run = duckRunner(db.conn, db.instance);
    await run.run(`CREATE TABLE strict (id INTEGER NOT NULL, d DOUBLE)`);
    const w = await run.writer('strict', [
      { name: 'id', type: 'INTEGER' },
      { name: 'd', type: 'DOUBLE' },
    ]);
    for (let r = 0; r < 100_000; r++) {
      w.set(0, r === 70_000 ? null : r);
      w.set(1, r);
      w.next();
      if (r % 5_000 === 0) await new Promise((res) => setImmediate(res));
    }
    await expect(w.close()).rejects.toThrow(/NOT NULL/);
    expect(await queryRows(db.conn, `SELECT 1 AS one`)).toEqual([{ one: 1 }]);
  });

  it('writes inside the connection transaction: rolled back, its rows are gone; committed, they stay', async () => {
    const run = duckRunner(db.conn, db.instance);
    await run.run(`CREATE TABLE t ${DDL}`);
    for (const end of ['ROLLBACK', 'COMMIT']) {
      await run.run('BEGIN TRANSACTION');
      const w = await run.writer('t', COLUMNS);
      for (let r = 0; r < 80_000; r++) writeRow(w, r);
      await w.close();
      const [inside] = await queryRows<{ n: number }>(db.conn, `SELECT count(*)::INTEGER AS n FROM t`);
      expect(inside!.n).toBe(80_000);
      await run.run(end);
      const [after] = await queryRows<{ n: number }>(db.conn, `SELECT count(*)::INTEGER AS n FROM t`);
      expect(after!.n).toBe(end === 'COMMIT' ? 80_000 : 0);
    }
  });
});

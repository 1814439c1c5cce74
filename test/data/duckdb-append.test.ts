/**
 * appendRows (data/duckdb.ts) appends without holding the event loop, even when its commit is the one that runs a
 * checkpoint DuckDB left pending. The control shows the stall it avoids: in the same state, an appender's close on
 * the table runs the checkpoint on the calling thread.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendRows, openDuckDB, queryRows } from '../../data/duckdb.ts';

let dir: string;
let db: { instance: DuckDBInstance; conn: DuckDBConnection };

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'duckdb-append-'));
  // a file database (an in-memory one never checkpoints)
  db = await openDuckDB({ path: join(dir, 'db.duckdb'), threads: 2 });
});
afterEach(async () => {
  db.conn.closeSync();
  db.instance.closeSync();
  await rm(dir, { recursive: true, force: true });
});

/**
 * A checkpoint left pending: a big update commits while a reader's transaction is open (DuckDB then skips the
 * checkpoint), and the reader ends; the next commit runs it. Returns the write-ahead log's size.
 */
async function pendingCheckpoint(): Promise<string> {
  const { instance, conn } = db;
  await conn.run(`CREATE TABLE fills (id INTEGER, price DOUBLE, side VARCHAR)`);
  await conn.run(`CREATE TABLE ballast AS SELECT range AS a, random() AS b, md5(range::VARCHAR) AS c FROM range(6000000)`);
  await conn.run(`CHECKPOINT`);
  const reader = await instance.connect();
  await reader.run(`BEGIN TRANSACTION`);
  await reader.run(`SELECT count(*) FROM fills`);
  await conn.run(`UPDATE ballast SET b = b + 1, c = c || 'x'`);
  await reader.run(`COMMIT`);
  reader.closeSync();
  return walSize();
}

async function walSize(): Promise<string> {
  const [r] = await queryRows<{ wal: string }>(db.conn, `SELECT wal_size AS wal FROM pragma_database_size()`);
  return r!.wal;
}

/** Run `write`, returning how long it took and the longest the event loop went without running a 5 ms timer. */
async function timed(write: () => Promise<void>): Promise<{ ms: number; longestStall: number }> {
  let longestStall = 0;
  let last = performance.now();
  const beat = setInterval(() => {
    const now = performance.now();
    longestStall = Math.max(longestStall, now - last);
    last = now;
  }, 5);
  const t0 = performance.now();
  await write();
  const ms = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 20));
  clearInterval(beat);
  return { ms, longestStall: Math.max(longestStall, performance.now() - last) };
}

const fill = (app: { appendInteger(x: number): void; appendDouble(x: number): void; appendVarchar(x: string): void; endRow(): void }) => {
  for (let i = 0; i < 50; i++) {
    app.appendInteger(i);
    app.appendDouble(i / 100);
    app.appendVarchar(i % 2 ? 'BUY' : 'SELL');
    app.endRow();
  }
};

describe('appendRows', () => {
  it('the control: an appender closed on the table runs the pending checkpoint on the event loop', async () => {
    const wal = await pendingCheckpoint();
    const t = await timed(async () => {
      const app = await db.conn.createAppender('fills');
      fill(app);
      app.closeSync();
    });
    expect(await walSize()).not.toBe(wal);
    expect(t.ms).toBeGreaterThan(400);
    expect(t.longestStall).toBeGreaterThan(t.ms * 0.8);
  }, 60_000);

  it('appends every row, runs the same checkpoint off the event loop, and leaves no staging table', async () => {
    const wal = await pendingCheckpoint();
    const t = await timed(() => appendRows(db.conn, 'fills', fill));
    // the checkpoint ran in this write (the log was emptied, and it took long enough to matter)
    expect(await walSize()).not.toBe(wal);
    expect(t.ms).toBeGreaterThan(400);
    expect(t.longestStall).toBeLessThan(t.ms / 4);
    const rows = await queryRows<{ id: number; price: number; side: string }>(db.conn, `SELECT * FROM fills ORDER BY id`);
    expect(rows).toHaveLength(50);
    rows.forEach((r, i) => expect(r).toEqual({ id: i, price: i / 100, side: i % 2 ? 'BUY' : 'SELL' }));
    const [{ n }] = (await queryRows<{ n: number }>(db.conn, `SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE table_name LIKE 'append_stage_%'`)) as [{ n: number }];
    expect(n).toBe(0);
  }, 60_000);
});

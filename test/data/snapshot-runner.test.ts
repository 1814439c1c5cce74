/**
 * Readers never see half an update: a writer commits versions that change two tables together (as the analytics
 * builder does: a_meta and the boards), readers issue many multi-statement requests meanwhile — through the runner's
 * scope and through real HTTP requests on an express app using its middleware — and every request reads one version.
 */
import express from 'express';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { openDuckDB } from '../../data/duckdb.ts';
import { readersFirstPause, snapshotRunner, type SnapshotRunner } from '../../data/snapshot-runner.ts';
import { drainPausing, yieldToEventLoop } from '../../core/steps.ts';

let instance: DuckDBInstance;
let writer: DuckDBConnection;
let db: SnapshotRunner;

beforeAll(async () => {
  ({ instance, conn: writer } = await openDuckDB({ path: ':memory:', threads: 2 }));
  await writer.run(`CREATE TABLE meta (version INTEGER)`);
  await writer.run(`CREATE TABLE board (version INTEGER, r INTEGER)`);
  await writer.run(`INSERT INTO meta VALUES (1)`);
  await writer.run(`INSERT INTO board SELECT 1, i FROM range(200) t(i)`);
  db = snapshotRunner(instance, { size: 4 });
});
afterAll(() => {
  db?.close();
  writer?.closeSync();
  instance?.closeSync();
});

/** Commit versions 2, 3, ... until stopped: each replaces both tables in one transaction, with a pause inside. */
function publishVersions(): { stop: () => Promise<number> } {
  let stopped = false;
  let v = 1;
  const loop = (async () => {
    while (!stopped) {
      v++;
      await writer.run('BEGIN TRANSACTION');
      await writer.run(`UPDATE meta SET version = ${v}`);
      await new Promise((r) => setTimeout(r, 2));
      await writer.run(`DELETE FROM board`);
      await writer.run(`INSERT INTO board SELECT ${v}, i FROM range(200) t(i)`);
      await writer.run('COMMIT');
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return v;
    },
  };
}

/** One "request": the version, then (after other work) the board, then the version again. */
async function request(): Promise<number[]> {
  const [m] = await db.all<{ version: number }>(`SELECT version FROM meta`);
  await new Promise((r) => setTimeout(r, Math.random() * 4));
  const rows = await db.all<{ version: number }>(`SELECT DISTINCT version FROM board`);
  const [again] = await db.all<{ version: number }>(`SELECT version FROM meta`);
  return [m!.version, ...rows.map((r) => r.version), again!.version];
}

it('every scoped request reads one committed version while versions are published', async () => {
  const pub = publishVersions();
  const seen = new Set<number>();
  for (let round = 0; round < 40; round++) {
    const reads = await Promise.all(Array.from({ length: 10 }, () => db.scope(request)));
    for (const r of reads) {
      expect(new Set(r).size, `mixed versions ${r.join(',')}`).toBe(1);
      seen.add(r[0]!);
    }
  }
  const last = await pub.stop();
  // not vacuous: the readers saw many versions go by
  expect(seen.size).toBeGreaterThan(5);
  expect(last).toBeGreaterThan(20);
  // every connection went back to the pool
  expect(db.stats()).toMatchObject({ busy: 0, waiting: 0 });
  expect(db.stats().open).toBeLessThanOrEqual(4);
}, 60_000);

it('a failed statement ends the snapshot, the next statement of the scope still runs', async () => {
  const r = await db.scope(async () => {
    await expect(db.all(`SELECT * FROM no_such_table`)).rejects.toThrow(/no_such_table/);
    return db.all<{ version: number }>(`SELECT version FROM meta`);
  });
  expect(r).toHaveLength(1);
  expect(db.stats()).toMatchObject({ busy: 0 });
});

it('a long scope renews its snapshot after maxScopeMs (never pins an old version)', async () => {
  const short = snapshotRunner(instance, { size: 1, maxScopeMs: 50 });
  try {
    const [before, after] = await short.scope(async () => {
      const [a] = await short.all<{ version: number }>(`SELECT version FROM meta`);
      await writer.run(`UPDATE meta SET version = version + 1000`);
      await new Promise((r) => setTimeout(r, 80));
      const [b] = await short.all<{ version: number }>(`SELECT version FROM meta`);
      return [a!.version, b!.version];
    });
    expect(after).toBe(before + 1000);
  } finally {
    await writer.run(`UPDATE meta SET version = version - 1000`);
    short.close();
  }
});

/** A builder's stepped computation: `n` steps, each holding the thread `ms`; when each step began. */
function* busySteps(n: number, ms: number, began: number[]): Generator<void, void> {
  for (let k = 0; k < n; k++) {
    began.push(performance.now());
    const until = performance.now() + ms;
    while (performance.now() < until);
    yield;
  }
}

/** A request of `k` statements one after the other, each ~a few ms of DuckDB; when it began and ended. */
async function multiStatementRequest(r: SnapshotRunner, k: number): Promise<{ from: number; to: number }> {
  return r.scope(async () => {
    const from = performance.now();
    for (let i = 0; i < k; i++) await r.all(`SELECT sum(i) AS s FROM range(${300_000 + i}) t(i)`);
    return { from, to: performance.now() };
  });
}

it('readersFirstPause: a stepped computation lets a request mid-way finish before its next step, and still progresses', async () => {
  const readers = snapshotRunner(instance, { size: 2, readerFreshMs: 400 });
  try {
    // the request starts while a step runs; with readers first, no other step starts until it has ended
    const run = async (pause: () => Promise<void>) => {
      const began: number[] = [];
      const steps = drainPausing(busySteps(12, 40, began), pause);
      await new Promise((r) => setTimeout(r, 10));
      const req = await multiStatementRequest(readers, 6);
      await steps;
      return { req, during: began.filter((t) => t > req.from && t < req.to).length, ms: req.to - req.from };
    };
    const first = await run(readersFirstPause(readers, 1_000));
    expect(first.during).toBe(0);
    // the control: a plain turn of the loop between steps runs one while each statement is out, and the request
    // waits for it every time
    const plain = await run(yieldToEventLoop);
    expect(plain.during).toBeGreaterThanOrEqual(3);
    expect(plain.ms).toBeGreaterThan(first.ms);

    // a reader that stays mid-request holds each step back `maxWaitMs` at most, and not once it is no longer fresh
    let release!: () => void;
    const held = readers.scope(() => new Promise<void>((r) => (release = r)));
    expect(readers.stats().readers).toBe(1);
    const t0 = performance.now();
    await drainPausing(busySteps(5, 1, []), readersFirstPause(readers, 30));
    const waited = performance.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(4 * 30);
    expect(waited).toBeLessThan(400);
    await new Promise((r) => setTimeout(r, 400 - waited + 20));
    expect(readers.stats().readers).toBe(0);
    const t1 = performance.now();
    await drainPausing(busySteps(5, 1, []), readersFirstPause(readers, 30));
    expect(performance.now() - t1).toBeLessThan(4 * 30);
    release();
    await held;
    expect(readers.stats()).toMatchObject({ busy: 0, readers: 0 });
  } finally {
    readers.close();
  }
}, 30_000);

it('over HTTP: the middleware gives each request one version while versions are published', async () => {
  const app = express();
  app.use(db.middleware);
  app.get('/read', async (_req, res) => {
    res.json(await request());
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pub = publishVersions();
  try {
    const seen = new Set<number>();
    for (let round = 0; round < 30; round++) {
      const reads = await Promise.all(Array.from({ length: 8 }, async () => (await fetch(`${base}/read`)).json() as Promise<number[]>));
      for (const r of reads) {
        expect(new Set(r).size, `mixed versions ${r.join(',')}`).toBe(1);
        seen.add(r[0]!);
      }
    }
    expect(seen.size).toBeGreaterThan(5);
  } finally {
    await pub.stop();
    await new Promise((r) => server.close(r));
  }
  // every connection goes back to the pool once its response is done (the last 'finish' may trail the client's read
  // by a few milliseconds on a loaded machine: wait for it, up to 2 s, rather than a fixed 20 ms)
  for (let i = 0; i < 100 && db.stats().busy > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(db.stats()).toMatchObject({ busy: 0, waiting: 0 });
}, 60_000);

it('acrossCommit: requests that start while a writer commits read in transactions begun before the commit, and none is left open once it resolves', async () => {
  // a database file: a checkpoint is refused while a transaction older than a commit that deleted rows is open
  const dir = mkdtempSync(join(tmpdir(), 'across-commit-'));
  const { instance: fileDb, conn: w } = await openDuckDB({ path: join(dir, 'a.duckdb'), threads: 2 });
  const r = snapshotRunner(fileDb, { size: 3 });
  const other = await fileDb.connect();
  try {
    await w.run(`CREATE TABLE meta (version INTEGER)`);
    await w.run(`INSERT INTO meta VALUES (1)`);
    await w.run(`CREATE TABLE big AS SELECT i FROM range(300000) t(i)`);
    await w.run('CHECKPOINT');
    const readVersion = () => r.scope(async () => (await r.all<{ version: number }>(`SELECT version FROM meta`))[0]!.version);
    const changeAndBegin = async (v: number) => {
      await w.run('BEGIN TRANSACTION');
      await w.run(`UPDATE meta SET version = ${v}`);
      await w.run(`DELETE FROM big WHERE i % ${v} = 0`);
    };

    // the control: a read transaction begun before a commit that deleted rows, still open, makes the checkpoint refuse
    await changeAndBegin(2);
    await other.run('BEGIN TRANSACTION');
    await other.run('SELECT count(*) FROM big');
    await w.run('COMMIT');
    await expect(w.run('CHECKPOINT')).rejects.toThrow(/other (write )?transactions/i);
    await other.run('COMMIT');
    await w.run('CHECKPOINT');

    await changeAndBegin(3);
    let aheadAtCommit = -1;
    const during: Promise<number>[] = [];
    await r.acrossCommit(async () => {
      aheadAtCommit = r.stats().begunAhead;
      // two requests arrive as the commit starts: each takes a transaction begun before it, reading the version before
      during.push(readVersion(), readVersion());
      await w.run('COMMIT');
    });
    // every free connection of the pool was in a transaction before the commit; none is left once it resolves
    expect(aheadAtCommit).toBe(3);
    expect(r.stats()).toMatchObject({ begunAhead: 0, tookBegunAhead: 2 });
    expect(await Promise.all(during)).toEqual([2, 2]);
    expect(r.stats()).toMatchObject({ busy: 0, waiting: 0 });
    // the one not taken was ended before acrossCommit resolved, the taken ones with their requests: the checkpoint goes through
    await w.run('CHECKPOINT');
    expect(await readVersion()).toBe(3);

    // a commit that fails: the error is the caller's, and the transactions begun ahead are ended all the same
    await changeAndBegin(4);
    await expect(r.acrossCommit(() => Promise.reject(new Error('commit failed')))).rejects.toThrow('commit failed');
    await w.run('ROLLBACK');
    expect(r.stats()).toMatchObject({ begunAhead: 0, busy: 0, tookBegunAhead: 2 });
    await w.run('CHECKPOINT');
    expect(await readVersion()).toBe(3);
  } finally {
    other.closeSync();
    r.close();
    w.closeSync();
    fileDb.closeSync();
    rmSync(dir, { recursive: true, force: true });
  }
});

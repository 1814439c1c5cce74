/**
 * One builder, many readers (data/published-analytics.ts): a built venue published as a file is what a read-only
 * replica serves (boards and views equal the builder's); the next version switches new requests while a request
 * begun before the switch finishes on the old file; a copy made while the builder commits is one committed state;
 * two replicas follow the same pointer; old files are pruned but the current one never is.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { PublishedAnalytics, publishAnalytics, readPointer } from '../../data/published-analytics.ts';
import { duckRunner } from '../../data/runner.ts';
import { RankerCache } from '../../jobs/analytics/rankers.ts';
import { loadPresetHeads } from '../../core/preset-rankings.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
let dir: string;
const AS_OF = new Date('2026-10-31T23:59:59Z');
const BOARD = `SELECT preset, rank, wallet_id, composite_score FROM a_board ORDER BY preset, rank`;

beforeAll(async () => {
  v = await makeVenue({ wallets: 1200, days: 15, seed: 21 });
  await fullBuild(duckRunner(v.conn), AS_OF);
  dir = await mkdtemp(join(tmpdir(), 'published-'));
}, 300_000);
afterAll(async () => {
  await v?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('published analytics', () => {
  it('a replica serves exactly the builder state, read-only, views included; switches to the next version; old readers finish on the old file', async () => {
    const p1 = await publishAnalytics(v.instance, dir);
    const [meta] = await v.rows<{ version: number; as_of: Date }>(`SELECT version, as_of FROM a_meta`);
    expect(p1).toMatchObject({ version: Number(meta!.version), file: `v${meta!.version}.duckdb`, as_of: AS_OF.toISOString() });
    expect(p1.bytes).toBeGreaterThan(0);
    // publishing the same version again writes nothing new
    expect(await publishAnalytics(v.instance, dir)).toEqual(p1);

    const [a, b] = await Promise.all([PublishedAnalytics.open(dir), PublishedAnalytics.open(dir)]);
    const want = await v.rows(BOARD);
    expect(want.length).toBeGreaterThan(100);
    expect(await a.db.all(BOARD)).toEqual(want);
    expect(await b.db.all(`SELECT count(*)::INTEGER AS n FROM fill_legs`)).toEqual(await v.rows(`SELECT count(*)::INTEGER AS n FROM fill_legs`));
    await expect(a.db.run(`CREATE TABLE nope (x INTEGER)`)).rejects.toThrow(/read-only/i);
    // the in-memory rankers load from whichever file is current
    const rankers = new RankerCache((fn) => a.withInstance(fn));
    await rankers.refresh();
    expect(rankers.at(p1.version)).not.toBeNull();
    // and the preset heads of that file's version: the plain preset pages from memory
    expect(rankers.presetHeads()?.version).toBe(p1.version);

    // a request that began on version 1 keeps reading it after the switch
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const old = a.db.scope(async () => {
      const before = await a.db.all<{ version: number }>(`SELECT version FROM a_meta`);
      await held;
      const after = await a.db.all<{ version: number }>(`SELECT version FROM a_meta`);
      return [Number(before[0]!.version), Number(after[0]!.version)];
    });
    await new Promise((r) => setTimeout(r, 50));
    // the builder's next version: a_meta and a board row change in one transaction
    await v.conn.run('BEGIN TRANSACTION');
    await v.conn.run(`UPDATE a_meta SET version = version + 1`);
    await v.conn.run(`UPDATE a_board_rank SET composite_score = composite_score + 1 WHERE rank = 1`);
    await v.conn.run('COMMIT');
    const p2 = await publishAnalytics(v.instance, dir);
    expect(p2.version).toBe(p1.version + 1);
    const switched = new Promise<number>((r) => a.once('switched', (_p, ms) => r(ms)));
    expect(await a.check()).toBe(true);
    expect(await switched).toBeGreaterThanOrEqual(0);
    expect(await b.check()).toBe(true);
    expect(a.db.version()).toBe(p2.version);
    // announced (main.ts: on 'switched'): the old file's heads are no longer served, before the new ones load
    rankers.announce(p2.version);
    expect(rankers.presetHeads()).toBeNull();
    expect(await a.db.all(BOARD)).toEqual(await v.rows(BOARD));
    expect(await b.db.all(`SELECT version FROM a_meta`)).toEqual([{ version: p2.version }]);
    release();
    expect(await old).toEqual([p1.version, p1.version]);
    await rankers.refresh();
    expect(rankers.at(p2.version)).not.toBeNull();
    // the new file's heads, as the builder's own database reads them
    expect(rankers.presetHeads()?.version).toBe(p2.version);
    expect(rankers.presetHeads()).toEqual(await loadPresetHeads(duckRunner(v.conn)));
    expect(await a.check()).toBe(false);
    await a.close();
    await b.close();
  }, 120_000);

  it("a replica that switches files while the previous file's rank base loads serves the new file's preset heads at once", async () => {
    // (the current version published: nothing new when it is already)
    await publishAnalytics(v.instance, dir);
    const c = await PublishedAnalytics.open(dir);
    const from = c.db.version();
    // the rank base's load (the second borrow of the file: the heads' load is the first) held until released
    let borrows = 0;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const rankers = new RankerCache((fn) => (++borrows === 2 ? held.then(() => c.withInstance(fn)) : c.withInstance(fn)));
    const first = rankers.refresh();
    await vi.waitFor(() => expect(rankers.presetHeads()?.version).toBe(from), { timeout: 20_000, interval: 20 });
    // the builder's next version, published; the replica switches and announces it (main.ts)
    await v.conn.run('BEGIN TRANSACTION');
    await v.conn.run(`UPDATE a_meta SET version = version + 1`);
    await v.conn.run(`UPDATE a_board_rank SET composite_score = composite_score + 1 WHERE rank = 1`);
    await v.conn.run('COMMIT');
    const next = await publishAnalytics(v.instance, dir);
    expect(await c.check()).toBe(true);
    rankers.announce(next.version);
    void rankers.refresh();
    // its heads load while the previous rank base still loads (before: queued behind it, plain presets in SQL)
    await vi.waitFor(() => expect(rankers.presetHeads()?.version).toBe(next.version), { timeout: 20_000, interval: 20 });
    expect(rankers.presetHeads()).toEqual(await loadPresetHeads(duckRunner(v.conn)));
    expect(rankers.at(from)).toBeNull();
    release();
    await first;
    await rankers.refresh();
    expect(rankers.at(next.version)).not.toBeNull();
    await c.close();
  }, 120_000);

  it('a copy taken while the builder commits is one committed state', async () => {
    const { instance, conn } = await openDuckDB({ path: ':memory:', threads: 2 });
    const d = await mkdtemp(join(tmpdir(), 'published-race-'));
    try {
      await conn.run(`CREATE TABLE a_meta AS SELECT 1 AS version, TIMESTAMP '2026-11-01' AS as_of`);
      await conn.run(`CREATE TABLE state AS SELECT 1 AS version, range AS k FROM range(200000)`);
      let stop = false;
      const writer = (async () => {
        const w = await instance.connect();
        for (let i = 2; !stop; i++) {
          await w.run('BEGIN TRANSACTION');
          await w.run(`UPDATE a_meta SET version = ${i}`);
          await w.run(`UPDATE state SET version = ${i}`);
          await w.run('COMMIT');
        }
        w.closeSync();
      })();
      const seen: number[] = [];
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, 30));
        const p = await publishAnalytics(instance, d, { keep: 10 });
        const { instance: ro, conn: rc } = await openDuckDB({ path: join(d, p.file), readOnly: true });
        const [row] = await queryRows<{ lo: number; hi: number; meta: number }>(rc, `SELECT min(version) AS lo, max(version) AS hi, (SELECT version FROM a_meta) AS meta FROM state`);
        rc.closeSync();
        ro.closeSync();
        expect(row!.lo).toBe(row!.hi);
        expect(row!.meta).toBe(row!.lo);
        expect(row!.meta).toBe(p.version);
        seen.push(p.version);
      }
      stop = true;
      await writer;
      expect(new Set(seen).size).toBeGreaterThan(1);
      // pruning keeps the newest and never the current
      expect(readdirSync(d).filter((f) => f.endsWith('.duckdb')).length).toBeGreaterThan(1);
      await conn.run(`UPDATE a_meta SET version = version + 1`);
      await publishAnalytics(instance, d, { keep: 1, graceMs: 0 });
      const pointer = (await readPointer(d))!;
      const files = readdirSync(d).filter((f) => f.endsWith('.duckdb'));
      expect(files).toEqual([pointer.file]);
      expect(existsSync(join(d, pointer.file))).toBe(true);
    } finally {
      conn.closeSync();
      instance.closeSync();
      await rm(d, { recursive: true, force: true });
    }
  }, 120_000);
});

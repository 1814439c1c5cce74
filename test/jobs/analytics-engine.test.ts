/**
 * The builder under stress: a builder process killed (SIGKILL) at a random moment of a refresh leaves a database
 * whose next start resumes without a rebuild and ends equal to a from-scratch build; a resolution written while a
 * refresh runs is picked up by the next refresh, never lost or half-applied.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, expect, it } from 'vitest';
import type { DuckDBInstance } from '@duckdb/node-api';
import { fullBuild } from '../../core/analytics/build.ts';
import type { RefreshReport } from '../../core/analytics/refresh.ts';
import { RESUME_COLUMNS } from '../../core/analytics/positions.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { snapshotRunner, type SnapshotRunner } from '../../data/snapshot-runner.ts';
import { createVenueViews } from '../../data/schema.ts';
import { AnalyticsEngine } from '../../jobs/analytics/engine.ts';
import { PRESETS } from '../../core/rankings.ts';
import { loadPresetHeads } from '../../core/preset-rankings.ts';
import { RankerCache } from '../../jobs/analytics/rankers.ts';
import { DAY, HOUR, START, batchArb, busyWallet, compareStates, copyVenue, createLiveVenue, tableRows, writeBatch } from '../helpers/live-venue.ts';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const HISTORY_DAYS = 12;

/** The state in `instance`'s database compared with a full build of a copy at the same (as_of, watermark). */
/** The tables without the columns a migrated state leaves NULL until a position is restreamed (schema 4's). */
function withoutResumeState(t: Record<string, Record<string, unknown>[]>): Record<string, Record<string, unknown>[]> {
  const drop = (rows: Record<string, unknown>[], cols: readonly string[]) => rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !cols.includes(k))));
  return { ...t, a_position_state: drop(t.a_position_state!, RESUME_COLUMNS.map(([n]) => n)), a_holds: drop(t.a_holds!, ['episode']) };
}

async function diffWithRebuild(instance: DuckDBInstance, catalog: string, migrated = false): Promise<string[]> {
  const conn = await instance.connect();
  try {
    const [m] = await queryRows<{ t: number; watermark: number }>(conn, `SELECT epoch_ms(as_of) AS t, watermark FROM a_meta`);
    const got = await tableRows(conn, catalog);
    await copyVenue(conn, catalog, 'rebuilt');
    await conn.run('USE rebuilt');
    await createVenueViews(conn);
    await fullBuild(duckRunner(conn), new Date(Number(m!.t)), { watermark: Number(m!.watermark) });
    const want = await tableRows(conn, 'rebuilt');
    await conn.run(`USE ${catalog}`);
    await conn.run('DETACH rebuilt');
    return migrated ? compareStates(withoutResumeState(got), withoutResumeState(want)) : compareStates(got, want);
  } finally {
    conn.closeSync();
  }
}

/** The state equals a full build at its mark (every differing row named on failure). */
async function expectSameAsRebuild(instance: DuckDBInstance, migrated = false): Promise<void> {
  const diffs = await diffWithRebuild(instance, 'venue', migrated);
  expect(diffs, diffs.join('\n')).toEqual([]);
}

async function seeded(path: string): Promise<number> {
  const { instance, conn } = await openDuckDB({ path, threads: 1 });
  await createLiveVenue(conn);
  for (const b of busyWallet(1, HISTORY_DAYS, 5)) await writeBatch(conn, b.rows);
  const t0 = HISTORY_DAYS * DAY + 3 * HOUR;
  const engine = await AnalyticsEngine.open(instance, { now: () => new Date(START + t0) });
  await engine.stop();
  conn.closeSync();
  instance.closeSync();
  return t0;
}

/** A seeded venue with a built state, in a directory of its own (removed after the file), opened. */
async function openSeeded(prefix: string, threads: number): Promise<{ path: string; t0: number } & Awaited<ReturnType<typeof openDuckDB>>> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  const path = join(dir, 'venue.duckdb');
  const t0 = await seeded(path);
  return { path, t0, ...(await openDuckDB({ path, threads })) };
}

/** Bytes in the database's write-ahead log (0: none, everything checkpointed). */
const walBytes = (path: string) => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);

function runChild(path: string, asOfMs: number, killAfterMs: number): Promise<{ started: boolean; committed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, '../helpers/engine-child.ts'), path, String(asOfMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('refreshing') && !child.killed) setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code !== 0 && signal !== 'SIGKILL') reject(new Error(`child exited ${code}: ${err}`));
      else resolve({ started: out.includes('refreshing'), committed: out.includes('committed') });
    });
  });
}

it('a builder killed during a refresh: the next start resumes (no rebuild) and equals a full build', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-crash-'));
  dirs.push(dir);
  const path = join(dir, 'venue.duckdb');
  let prev = await seeded(path);
  const batches = fc.sample(fc.integer({ min: 0, max: 1_000_000 }), { numRuns: 4, seed: 42 });
  const outcomes: boolean[] = [];
  for (const [i, s] of batches.entries()) {
    const [batch] = fc.sample(batchArb(prev), { numRuns: 1, seed: s });
    prev = batch!.asOf;
    const { instance, conn } = await openDuckDB({ path, threads: 1 });
    await writeBatch(conn, batch!.rows);
    conn.closeSync();
    instance.closeSync();
    const r = await runChild(path, START + batch!.asOf, [0, 5, 40, 150][i]!);
    expect(r.started).toBe(true);
    outcomes.push(r.committed);
  }
  // at least one kill landed before the commit (else the test proves nothing about crashes)
  expect(outcomes.some((c) => !c)).toBe(true);
  const { instance, conn } = await openDuckDB({ path, threads: 1 });
  try {
    const logs: string[] = [];
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(START + prev + HOUR), log: (m) => logs.push(m) });
    expect(logs.join('\n')).toMatch(/resumed version/);
    await engine.refreshNow();
    await engine.stop();
    await expectSameAsRebuild(instance);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it('a resolution written while a refresh runs is in the next version, and the state equals a full build', async () => {
  const { t0, instance, conn } = await openSeeded('engine-res-', 2);
  try {
    let now = START + t0 + HOUR;
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now) });
    const [batch] = fc.sample(batchArb(t0), { numRuns: 1, seed: 3 });
    await writeBatch(conn, batch!.rows);
    now = START + Math.max(batch!.asOf, t0 + HOUR);
    const open = await queryRows<{ m: number }>(conn, `SELECT m FROM (VALUES (1), (2), (3), (4)) t(m) WHERE m NOT IN (SELECT market_id FROM resolutions) AND m IN (SELECT market_id FROM fills) ORDER BY m`);
    expect(open.length).toBeGreaterThan(0);
    const market = Number(open[0]!.m);
    const running = engine.refreshNow();
    // while it runs: a traded market resolves (stamped before the refresh's T, so the next version must show it)
    await writeBatch(conn, [{ kind: 'resolution', t: now - START - 1, market, winner: 'NO' }]);
    await running;
    await engine.refreshNow();
    const rows = await queryRows<{ r: number; n: number }>(conn, `SELECT count(*) FILTER (WHERE resolved) AS r, count(*) AS n FROM a_positions WHERE market_id = ${market}`);
    expect(Number(rows[0]!.n)).toBeGreaterThan(0);
    expect(rows[0]!.r).toBe(rows[0]!.n);
    await engine.stop();
    await expectSameAsRebuild(instance);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it("a version's preset heads are read inside its transaction: its reports carry them, equal to what a reader loads once it is committed, and the service serves them from its publish on; the pauses of its JavaScript steps are counted, and a slice longer than a refresh leaves none", async () => {
  const { t0, instance, conn } = await openSeeded('engine-heads-', 2);
  try {
    let now = START + t0 + HOUR;
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now) });
    const rankers = new RankerCache(instance);
    await rankers.refresh();
    const first = engine.published().version;
    expect(rankers.presetHeads()?.version).toBe(first);
    const [batch] = fc.sample(batchArb(t0), { numRuns: 1, seed: 5 });
    await writeBatch(conn, batch!.rows);
    now = START + Math.max(batch!.asOf, t0 + HOUR);
    const seen: { event: string; version: number; heads?: number; served?: number }[] = [];
    engine.on('committing', (version, r) => seen.push({ event: 'committing', version, heads: r.heads?.version, served: rankers.presetHeads()?.version }));
    engine.on('published', (p, r) => {
      void rankers.published(p.version, r);
      seen.push({ event: 'published', version: p.version, heads: r.heads?.version, served: rankers.presetHeads()?.version });
    });
    const report = await engine.refreshNow();
    // until the publish the previous version's heads are served; from it, the new version's, read before the commit
    expect(seen).toEqual([
      { event: 'committing', version: first + 1, heads: first + 1, served: first },
      { event: 'published', version: first + 1, heads: first + 1, served: first + 1 },
    ]);
    expect(report!.seconds.heads).toBeGreaterThanOrEqual(0);
    expect(rankers.presetHeads()).toBe(report!.heads);
    expect(report!.heads!.asOf.getTime()).toBe(now);
    expect(report!.heads).toEqual(await loadPresetHeads(duckRunner(conn)));
    // its JavaScript steps paused after each step (counted)
    expect((report as RefreshReport).pauses).toBeGreaterThan(0);
    await engine.stop();
    // with a slice longer than the refresh they never pause, and the state is the same as a rebuild's
    const sliced = await AnalyticsEngine.open(instance, { now: () => new Date(now), pauseSliceMs: 3_600_000 });
    const [more] = fc.sample(batchArb(now - START), { numRuns: 1, seed: 6 });
    await writeBatch(conn, more!.rows);
    now = START + Math.max(more!.asOf, now - START + HOUR);
    const unpaused = (await sliced.refreshNow()) as RefreshReport;
    expect(unpaused.new_legs).toBeGreaterThan(0);
    expect(unpaused.pauses).toBe(0);
    await sliced.stop();
    await expectSameAsRebuild(instance);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it('a backlog of more new fills than a refresh takes in goes in several versions, each equal to a full build at its mark', async () => {
  const { t0, instance, conn } = await openSeeded('engine-cap-', 2);
  try {
    // three arrival batches of two fills each, an hour apart, all before the clock
    const seqs: number[] = [];
    for (let k = 0; k < 3; k++) {
      const t = t0 + k * HOUR + 10 * 60_000;
      const fill = (taker: number, side: 'BUY' | 'SELL') => ({ kind: 'fill' as const, t, market: 1 + (k % 2), outcome: 0 as const, maker: 6, taker, side, match: 'direct' as const, price: 0.4 + k / 10, shares: 100 + k, fee: 0 });
      seqs.push(await writeBatch(conn, [fill(2, 'BUY'), fill(3, k === 2 ? 'SELL' : 'BUY')]));
    }
    const now = START + t0 + 4 * HOUR;
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now), maxRefreshFills: 3 });
    const published: { watermark: number; asOf: number }[] = [];
    engine.on('published', (p) => published.push({ watermark: p.watermark, asOf: p.asOf.getTime() }));
    for (let k = 0; k < 3; k++) {
      await engine.refreshNow();
      // each version takes one batch (two fills; two batches would be four, over the cap) and is as of its last fill,
      // the last one (within the cap) as of the clock
      expect(published[k]).toEqual({ watermark: seqs[k], asOf: k < 2 ? START + t0 + k * HOUR + 10 * 60_000 : now });
      const [m] = await queryRows<{ t: number; w: number }>(conn, `SELECT epoch_ms(as_of) AS t, watermark AS w FROM a_meta`);
      expect({ watermark: Number(m!.w), asOf: Number(m!.t) }).toEqual(published[k]);
      if (k === 0) {
        await expectSameAsRebuild(instance);
      }
    }
    await engine.stop();
    await expectSameAsRebuild(instance);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it('the checkpoint comes after the publish: the commit leaves the refresh in the log, the engine writes it out, and a reader\'s snapshot reads on through it', async () => {
  const { path, t0, instance, conn } = await openSeeded('engine-ckpt-', 2);
  const reader = await instance.connect();
  let readers: SnapshotRunner | undefined;
  const setting = async () => (await queryRows<{ s: string }>(conn, `SELECT current_setting('checkpoint_threshold') AS s`))[0]!.s;
  try {
    // every commit past DuckDB's threshold, as a refresh's always is at full scale
    await conn.run(`SET checkpoint_threshold = '1KB'`);
    const before = await setting();
    let now = START + t0 + HOUR;
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now) });
    // the service's readers: the commit runs across read transactions begun ahead of it (acrossCommit)
    readers = snapshotRunner(instance, { size: 3 });
    engine.setReaders(readers);
    const checkpointed: number[] = [];
    engine.on('checkpointed', (p) => checkpointed.push(p.version));
    // the version is said to be committing (its ranker staged) before it is published
    const announced: string[] = [];
    engine.on('committing', (v) => announced.push(`committing ${v}`));
    engine.on('published', (p) => announced.push(`published ${p.version}`));
    let walAtPublish = -1;
    engine.on('published', () => (walAtPublish = walBytes(path)));
    const batches = fc.sample(batchArb(t0), { numRuns: 3, seed: 5 });

    // the live tail's commit does not checkpoint either (automatic checkpoints are off while the engine runs)
    await writeBatch(conn, batches[0]!.rows);
    expect(walBytes(path)).toBeGreaterThan(0);
    now = START + Math.max(batches[0]!.asOf, t0 + HOUR);
    const first = await engine.refreshNow();
    // published with the refresh's writes still in the log; written out before refreshNow resolves
    expect(walAtPublish).toBeGreaterThan(0);
    expect(walBytes(path)).toBe(0);
    expect(first!.seconds.checkpoint).toBeGreaterThanOrEqual(0);
    expect(checkpointed).toEqual([engine.published().version]);
    expect(announced).toEqual([`committing ${engine.published().version}`, `published ${engine.published().version}`]);
    // the readers' pool was opened and began ahead of the commit (no request asked for it), and every transaction begun
    // ahead was ended before the checkpoint, which went through above
    expect(readers.stats()).toMatchObject({ open: 3, busy: 0, begunAhead: 0 });

    // a request that began before the publish holds the checkpoint back (DuckDB refuses it while that snapshot may
    // need the old rows) but not the publish; its snapshot still reads its own version, whole, and once it ends the
    // checkpoint goes through
    await reader.run('BEGIN TRANSACTION');
    const snapshot = async () => (await queryRows<{ v: number; n: number }>(reader, `SELECT (SELECT version FROM a_meta) AS v, (SELECT count(*) FROM a_position_state) AS n`))[0]!;
    const seen = await snapshot();
    await writeBatch(conn, batches[1]!.rows);
    now = Math.max(START + batches[1]!.asOf, now + HOUR);
    const published = new Promise((r) => engine.once('published', r));
    const second = engine.refreshNow();
    await published;
    await new Promise((r) => setTimeout(r, 300));
    expect(checkpointed).toHaveLength(1);
    expect(walBytes(path)).toBeGreaterThan(0);
    expect(await snapshot()).toEqual(seen);
    await reader.run('COMMIT');
    expect((await second)!.seconds.checkpoint).toBeGreaterThan(0.3);
    expect(walBytes(path)).toBe(0);
    expect(checkpointed).toEqual([seen.v, seen.v + 1]);
    expect((await snapshot()).v).toBe(seen.v + 1);

    // a refresh that fails still writes out the venue rows that arrived (refreshes failing on end would let the log grow)
    await writeBatch(conn, batches[2]!.rows);
    await conn.run('ALTER TABLE a_horizon_fills RENAME TO a_horizon_fills_away');
    expect(walBytes(path)).toBeGreaterThan(0);
    now = Math.max(START + batches[2]!.asOf, now + HOUR);
    await expect(engine.refreshNow()).rejects.toThrow();
    expect(walBytes(path)).toBe(0);
    expect(checkpointed).toEqual([seen.v, seen.v + 1, seen.v + 1]);
    await conn.run('ALTER TABLE a_horizon_fills_away RENAME TO a_horizon_fills');
    await engine.refreshNow();
    expect(checkpointed).toEqual([seen.v, seen.v + 1, seen.v + 1, seen.v + 2]);

    await engine.stop();
    // the database's own setting is back: its commits checkpoint on their own again
    expect(await setting()).toBe(before);
    await expectSameAsRebuild(instance);
  } finally {
    readers?.close();
    reader.closeSync();
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it('a checkpoint held back past its patience is left to the next; after three in a row the next waits until the old snapshot ends', async () => {
  const { path, t0, instance, conn } = await openSeeded('engine-ckpt-skip-', 2);
  const reader = await instance.connect();
  try {
    let now = START + t0 + HOUR;
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now), checkpointPatienceMs: 50, checkpointLongPatienceMs: 60_000 });
    const checkpointed: number[] = [];
    engine.on('checkpointed', (p) => checkpointed.push(p.version));
    const batches = fc.sample(batchArb(t0), { numRuns: 4, seed: 7 });
    // a snapshot older than every publish below (a stream's, say)
    await reader.run('BEGIN TRANSACTION');
    await queryRows(reader, 'SELECT version FROM a_meta');
    for (let k = 0; k < 3; k++) {
      await writeBatch(conn, batches[k]!.rows);
      now = Math.max(START + batches[k]!.asOf, now + HOUR);
      const report = await engine.refreshNow();
      // skipped: the version is published, its writes wait in the log
      expect(report!.seconds.checkpoint).toBeUndefined();
      expect(walBytes(path)).toBeGreaterThan(0);
    }
    expect(checkpointed).toEqual([]);
    await writeBatch(conn, batches[3]!.rows);
    now = Math.max(START + batches[3]!.asOf, now + HOUR);
    const published = new Promise((r) => engine.once('published', r));
    const fourth = engine.refreshNow();
    await published;
    await new Promise((r) => setTimeout(r, 400));
    expect(walBytes(path)).toBeGreaterThan(0);
    await reader.run('COMMIT');
    expect((await fourth)!.seconds.checkpoint).toBeGreaterThan(0.4);
    expect(walBytes(path)).toBe(0);
    expect(checkpointed).toEqual([engine.published().version]);
    await engine.stop();
    await expectSameAsRebuild(instance);
  } finally {
    reader.closeSync();
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it('a state of engine schema 1 (percentiles inside a_wallet_metrics and the rank base, no a_horizon_fills, no stream state to continue from, the boards stored whole, no fill bands, no cluster moments) is migrated on start, not rebuilt, and refreshes on', async () => {
  const { t0, instance, conn } = await openSeeded('engine-migrate-', 1);
  try {
    const want = await tableRows(conn, 'venue');
    // the state as schema 1 stored it: the percentile columns inside both tables (before smart_money_tags and after
    // it, as the old a_wallet_metrics had them), no a_wallet_pctiles, no wallet index on a_wallet_metrics
    const pct = `p.calibration_excess_z_pctile, m.smart_money_tags, p.total_pnl_pctile, p.realized_pnl_pctile, p.lifetime_volume_usdc_pctile, p.win_rate_pct_pctile`;
    await conn.run(`CREATE OR REPLACE TABLE a_wallet_metrics AS SELECT m.* EXCLUDE (smart_money_tags), ${pct} FROM a_wallet_metrics m JOIN a_wallet_pctiles p USING (wallet_id) ORDER BY wallet_id`);
    await conn.run(`DROP INDEX a_rank_base_wallet`);
    await conn.run(`CREATE OR REPLACE TABLE a_rank_base AS SELECT r.*, p.* EXCLUDE (wallet_id) FROM a_rank_base r JOIN a_wallet_pctiles p USING (wallet_id) ORDER BY wallet_id`);
    await conn.run(`DROP TABLE a_wallet_pctiles`);
    await conn.run(`DROP TABLE a_horizon_fills`); // schema 3's
    // schema 4's: the stream state, the redemption-only rows, the hold episodes
    for (const [n] of RESUME_COLUMNS) await conn.run(`ALTER TABLE a_position_state DROP COLUMN ${n}`);
    await conn.run(`DELETE FROM a_position_state WHERE first_ts IS NULL`);
    await conn.run(`ALTER TABLE a_holds DROP COLUMN episode`);
    // schema 5's: the board's view over its stored ranks, the boards' heads (before: the board stored whole, a table in
    // (preset, rank) order)
    await conn.run(`CREATE TABLE a_board_whole AS SELECT * FROM a_board ORDER BY list_position(${JSON.stringify(PRESETS.map((p) => p.slug)).replace(/"/g, "'")}, preset), rank`);
    await conn.run(`DROP VIEW a_board`);
    await conn.run(`DROP TABLE a_board_rank`);
    await conn.run(`DROP TABLE a_board_top`);
    await conn.run(`ALTER TABLE a_board_meta DROP COLUMN top_rows`);
    await conn.run(`ALTER TABLE a_board_whole RENAME TO a_board`);
    // schema 6's: the heavy wallets' fill bands
    const bands = await queryRows(conn, `SELECT * FROM a_fill_band_wallets ORDER BY wallet_id`);
    await conn.run(`DROP TABLE a_fill_band`);
    await conn.run(`DROP TABLE a_fill_band_wallets`);
    // schema 7's: the eligible wallets' moments (the migration writes them again; compareStates checks them)
    await conn.run(`DROP TABLE a_cluster_moments`);
    await conn.run(`UPDATE a_meta SET engine_schema = 1`);
    const logs: string[] = [];
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(START + t0), log: (m) => logs.push(m) });
    expect(logs.join('\n')).toMatch(/resumed version 1/);
    const migrated = await tableRows(conn, 'venue');
    expect(compareStates(withoutResumeState(migrated), withoutResumeState(want))).toEqual([]);
    const [board] = await queryRows<{ k: string }>(conn, `SELECT table_type AS k FROM information_schema.tables WHERE table_catalog = 'venue' AND table_name = 'a_board'`);
    expect(board!.k).toBe('VIEW');
    const [nulls] = await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM a_position_state WHERE raw_shares IS NULL`);
    expect(Number(nulls!.n)).toBeGreaterThan(0); // restreamed, not continued, when they next change
    expect(await queryRows(conn, `SELECT * FROM a_fill_band_wallets ORDER BY wallet_id`)).toEqual(bands);
    // and it refreshes on from there, equal to a full build
    await engine.refreshNow();
    await engine.stop();
    await expectSameAsRebuild(instance, true);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

it('a refresh that fails while the engine runs on its own is logged and the next one tries again: the process goes on, with or without an error listener', async () => {
  const { t0, instance, conn } = await openSeeded('engine-fail-', 2);
  try {
    let now = START + t0 + HOUR;
    const logs: string[] = [];
    const engine = await AnalyticsEngine.open(instance, { now: () => new Date(now), log: (m) => logs.push(m) });
    const published: number[] = [];
    engine.on('published', (p) => published.push(p.version));
    const failures = () => logs.filter((m) => m.includes('refresh failed')).length;
    const until = async (done: () => boolean) => {
      for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
      expect(done()).toBe(true);
    };
    // no 'error' listener: an emitted 'error' would have thrown out of the loop (an unhandled rejection ends the
    // process, and fails this test)
    await conn.run('ALTER TABLE a_horizon_fills RENAME TO a_horizon_fills_away');
    engine.start(10);
    await until(() => failures() >= 2);
    // with one, it hears of each failure
    const heard: Error[] = [];
    engine.on('error', (e) => heard.push(e));
    await until(() => heard.length >= 1);
    expect(heard[0]!.message).toMatch(/a_horizon_fills/);
    expect(published).toEqual([]);
    // the cause goes away: the next refresh publishes
    await conn.run('ALTER TABLE a_horizon_fills_away RENAME TO a_horizon_fills');
    now += HOUR;
    await until(() => published.length >= 1);
    await engine.stop();
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}, 300_000);

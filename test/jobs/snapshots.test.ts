/**
 * Daily preset snapshots (jobs/snapshots.ts, data/snapshot-store.ts): a past day computed again after later data
 * arrived gives byte-identical rows; the same day computed from a venue cut at that day's end gives the same bytes
 * (no lookahead); the store is write-once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRESETS, SNAPSHOT_TOP_K, endOfDay } from '../../core/rankings.ts';
import { SnapshotStore, snapshotBytes } from '../../data/snapshot-store.ts';
import { computeDaySnapshots, currentCatalog, snapshotDay } from '../../jobs/snapshots.ts';
import { openDuckDB } from '../../data/duckdb.ts';
import { attachVenue } from '../../data/venue.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { venueInsert } from '../../data/schema.ts';

let v: TestVenue;
let dir: string;
const DAY = '2026-10-20';

beforeAll(async () => {
  v = await makeVenue({ wallets: 3000, days: 40, seed: 5 });
  dir = await mkdtemp(join(tmpdir(), 'snapshots-'));
}, 600_000);
afterAll(async () => {
  await v?.cleanup();
  await rm(dir, { recursive: true, force: true });
});

const bytes = (boards: Record<string, { rank: number; key: string; composite: number }[]>) =>
  PRESETS.map((p) => `${p.slug}\n${snapshotBytes(boards[p.slug]!)}`).join('\n\n');

describe('preset snapshots', () => {
  it('are lookahead-free and byte-identical when recomputed later', async () => {
    const catalog = await currentCatalog(v.instance);
    const first = await computeDaySnapshots(v.instance, catalog, DAY);
    expect(Object.keys(first).sort()).toEqual(PRESETS.map((p) => p.slug).sort());
    expect(first['top-pnl']!.length).toBeGreaterThan(10);
    expect(first['top-pnl']!.length).toBeLessThanOrEqual(SNAPSHOT_TOP_K);

    // the same venue cut at the end of the day: nothing stamped later exists, same bytes
    const cut = await openDuckDB({ path: ':memory:', threads: 2 });
    await attachVenue(cut.conn, join(v.dir, 'venue'), { materialize: true });
    const T = `make_timestamp(${endOfDay(DAY).getTime() * 1000}::BIGINT)`;
    await cut.conn.run(`DELETE FROM fills WHERE ts > ${T}`);
    await cut.conn.run(`DELETE FROM inventory_legs WHERE (tx_hash, log_index) IN (SELECT tx_hash, log_index FROM inventory_events WHERE ts > ${T})`);
    await cut.conn.run(`DELETE FROM inventory_events WHERE ts > ${T}`);
    await cut.conn.run(`DELETE FROM mids WHERE ts > ${T}`);
    await cut.conn.run(`DELETE FROM resolutions WHERE resolved_at > ${T}`);
    const fromCut = await computeDaySnapshots(cut.instance, await currentCatalog(cut.instance), DAY);
    cut.conn.closeSync();
    cut.instance.closeSync();
    expect(bytes(fromCut)).toBe(bytes(first));

    // later data arrives (fills after the day, a later resolution): recomputing the past day changes nothing
    await v.conn.run(`${venueInsert('fills')} SELECT tx_hash || 'x', log_index, ts + INTERVAL 3 DAY, market_id, outcome_index, maker_id, taker_id, side, match_type,
      price, shares * 7, size_usdc * 7, fee_usdc, exchange_version, exchange_kind FROM fills WHERE ts > ${T} - INTERVAL 1 DAY AND ts <= ${T}`);
    const again = await computeDaySnapshots(v.instance, catalog, DAY);
    expect(bytes(again)).toBe(bytes(first));
    // and a later day does see it (the check above is not vacuous)
    const later = await computeDaySnapshots(v.instance, catalog, '2026-10-28');
    expect(bytes(later)).not.toBe(bytes(first));
  }, 600_000);

  it('the store is write-once', async () => {
    const store = await SnapshotStore.open(join(dir, 'snapshots.sqlite'));
    const catalog = await currentCatalog(v.instance);
    const a = await snapshotDay(v.instance, catalog, store, DAY, new Date('2026-10-21T00:05:00Z'));
    expect(a.results.every((r) => r.created && r.identical)).toBe(true);
    const b = await snapshotDay(v.instance, catalog, store, DAY, new Date('2026-11-05T00:05:00Z'));
    expect(b.results.every((r) => !r.created && r.identical)).toBe(true);
    const s = (await store.get('top-pnl', DAY))!;
    expect(s.computed_at).toBe('2026-10-21T00:05:00.000Z');
    expect(s.as_of).toBe('2026-10-20T23:59:59.999Z');
    expect((await store.latest('top-pnl'))!.date).toBe(DAY);
    await expect(store.db.run(`UPDATE preset_snapshot_rows SET composite = '0' WHERE preset = 'top-pnl'`)).rejects.toThrow(/immutable/);
    // a tampered recomputation is reported, the stored rows stay
    const tampered = await store.put({ ...s, rows: s.rows.map((r, i) => (i === 0 ? { ...r, composite: r.composite + 1 } : r)) });
    expect(tampered.created).toBe(false);
    expect(tampered.identical).toBe(false);
    expect((await store.get('top-pnl', DAY))!.sha256).toBe(s.sha256);
    await store.close();
    // survives reopening (durable)
    const reopened = await SnapshotStore.open(join(dir, 'snapshots.sqlite'));
    expect((await reopened.get('top-pnl', DAY))!.rows).toEqual(s.rows);
    await reopened.close();
  }, 600_000);
});

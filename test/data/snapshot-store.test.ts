/**
 * The preset snapshot store (data/snapshot-store.ts) on SQLite and on PostgreSQL, with two store instances on one
 * database standing for two replicas: a day's snapshot is written once — of concurrent puts of different bodies for
 * one (preset, day) from both replicas exactly one is created and every caller gets that one back, whole; an
 * identical re-put reports identical, a different one does not overwrite; the engine refuses updates; reads
 * reproduce the canonical bytes; latest and days.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SnapshotRow } from '../../core/rankings.ts';
import { SNAPSHOT_MIGRATIONS, SnapshotStore, snapshotBytes, type StoredSnapshot } from '../../data/snapshot-store.ts';
import type { SqlDb } from '../../data/sql/db.ts';
import { replicas, SERVICE_ENGINES } from '../helpers/service-engines.ts';

const sha = (rows: readonly SnapshotRow[]) => createHash('sha256').update(snapshotBytes(rows)).digest('hex');
/** n rows with composites that need all 9 decimals (and one that rounds) */
const board = (n: number, salt: number): SnapshotRow[] =>
  Array.from({ length: n }, (_, i) => ({ rank: i + 1, key: `0x${(salt * 1000 + i).toString(16).padStart(40, '0')}`, composite: 100 - i * 0.123456789 - salt / 7 }));
const snap = (preset: string, date: string, rows: SnapshotRow[], computedAt = '2026-11-01T00:05:00.000Z'): Omit<StoredSnapshot, 'sha256'> => ({
  preset,
  date,
  as_of: `${date}T23:59:59.999Z`,
  computed_at: computedAt,
  top_k: 100,
  rows,
});
/** What a read gives back: composites through their 9-decimal text. */
const asRead = (rows: readonly SnapshotRow[]) => rows.map((r) => ({ ...r, composite: Number(r.composite.toFixed(9)) }));

describe.each(SERVICE_ENGINES)('the snapshot store on $name', (engine) => {
  let drop: () => Promise<void>;
  let dbs: { a: SqlDb; b: SqlDb; close(): Promise<void> };
  let A: SnapshotStore;
  let B: SnapshotStore;

  beforeAll(async () => {
    let target: string;
    ({ target, drop } = await engine.fresh('snapshots'));
    dbs = await replicas(engine, target);
    [A, B] = await Promise.all([SnapshotStore.open(dbs.a), SnapshotStore.open(dbs.b)]);
  }, 60_000);
  afterAll(async () => {
    await dbs?.close();
    await drop?.();
  });

  it('applies its migration once, also when two replicas open the database together', async () => {
    const rows = await dbs.a.all<{ name: string }>(`SELECT name FROM schema_migrations WHERE store = 'preset_snapshots'`);
    expect(rows.map((r) => r.name)).toEqual(SNAPSHOT_MIGRATIONS.map((m) => m.name));
  });

  it('stores a board and reads back the same canonical bytes on the other replica (several insert batches)', async () => {
    const rows = board(250, 1);
    const r = await A.put(snap('top-pnl', '2026-10-30', rows));
    expect(r).toMatchObject({ created: true, identical: true });
    expect(r.stored.sha256).toBe(sha(rows));
    const s = (await B.get('top-pnl', '2026-10-30'))!;
    expect(s).toEqual({ ...snap('top-pnl', '2026-10-30', asRead(rows)), sha256: sha(rows) });
    expect(sha(s.rows)).toBe(s.sha256);
    expect(await B.get('top-pnl', '2026-10-29')).toBeNull();
    expect(await B.get('nope', '2026-10-30')).toBeNull();
  });

  it('write-once across replicas: of concurrent puts of different bodies exactly one is created and everyone gets it back whole', async () => {
    const bodies = Array.from({ length: 10 }, (_, i) => board(120 + i, 10 + i));
    const out = await Promise.all(bodies.map((rows, i) => (i % 2 ? A : B).put(snap('sharp-forecasters', '2026-10-31', rows, `2026-11-01T00:0${i}:00.000Z`))));
    expect(out.filter((r) => r.created)).toHaveLength(1);
    const w = out.findIndex((r) => r.created);
    for (const [i, r] of out.entries()) {
      expect(r.stored.sha256).toBe(sha(bodies[w]!));
      expect(r.stored.rows).toEqual(asRead(bodies[w]!));
      expect(r.stored.computed_at).toBe(`2026-11-01T00:0${w}:00.000Z`);
      expect(r.identical).toBe(i === w);
    }
    // no rows of a loser got in
    const n = await dbs.a.get<{ n: number }>(`SELECT count(*) AS n FROM preset_snapshot_rows WHERE preset = 'sharp-forecasters' AND day = '2026-10-31'`);
    expect(Number(n!.n)).toBe(bodies[w]!.length);
  });

  it('an identical re-put from the other replica is reported identical and keeps the first; a different one does not overwrite', async () => {
    const rows = board(30, 3);
    await A.put(snap('whales', '2026-10-20', rows, '2026-10-21T00:05:00.000Z'));
    const again = await B.put(snap('whales', '2026-10-20', rows, '2026-11-05T00:05:00.000Z'));
    expect(again).toMatchObject({ created: false, identical: true });
    expect(again.stored.computed_at).toBe('2026-10-21T00:05:00.000Z');
    const tampered = rows.map((r, i) => (i === 7 ? { ...r, composite: r.composite + 1e-6 } : r));
    const other = await B.put(snap('whales', '2026-10-20', tampered));
    expect(other).toMatchObject({ created: false, identical: false });
    expect((await A.get('whales', '2026-10-20'))!.sha256).toBe(sha(rows));
    expect((await A.get('whales', '2026-10-20'))!.rows).toEqual(asRead(rows));
  });

  it('the engine refuses updates of a stored snapshot', async () => {
    await expect(dbs.a.run(`UPDATE preset_snapshot_rows SET composite = '0' WHERE preset = 'whales'`)).rejects.toThrow(/snapshots are immutable/);
    await expect(dbs.b.run(`UPDATE preset_snapshots SET sha256 = 'x' WHERE preset = 'whales'`)).rejects.toThrow(/snapshots are immutable/);
    expect((await A.get('whales', '2026-10-20'))!.rows[0]!.composite).not.toBe(0);
  });

  it('latest and days per preset', async () => {
    for (const d of ['2026-09-03', '2026-09-01', '2026-09-02']) await (d.endsWith('2') ? A : B).put(snap('calibrated', d, board(5, Number(d.slice(-1)))));
    expect(await A.days('calibrated')).toEqual(['2026-09-01', '2026-09-02', '2026-09-03']);
    expect((await B.latest('calibrated'))!.date).toBe('2026-09-03');
    expect((await B.latest('calibrated'))!.rows).toEqual(asRead(board(5, 3)));
    expect(await A.days('never')).toEqual([]);
    expect(await A.latest('never')).toBeNull();
  });
});

/**
 * The daily preset-snapshot schedule (jobs/snapshot-schedule.ts) with an injected clock: missed days are caught up
 * oldest first, a half-written day only gets its missing presets, a re-run stores nothing twice, the day that just
 * ended waits for the grace period, the timer wakes after UTC midnight, retries after a failure and is unref'd; and
 * one real catch-up over a generated venue.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { PRESETS, SNAPSHOT_TOP_K, endOfDay } from '../../core/rankings.ts';
import { SnapshotStore } from '../../data/snapshot-store.ts';
import {
  catchUpSnapshots,
  daysBetween,
  lastCompleteDay,
  missingSnapshotDays,
  nextWakeMs,
  startSnapshotSchedule,
  type SnapshotScheduleOptions,
} from '../../jobs/snapshot-schedule.ts';
import { currentCatalog, snapshotDay } from '../../jobs/snapshots.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'snapshot-schedule-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => {
  // the spies first: restoring a spy made on a faked setTimeout after useRealTimers put the fake back for good
  vi.restoreAllMocks();
  vi.useRealTimers();
});

const newStore = () => SnapshotStore.open(join(dir, `store-${++n}.sqlite`));

/** A stand-in for the DuckDB computation: one row per preset, stored like snapshotDay does; records its calls. */
function fakeDay(store: SnapshotStore, calls: string[], presets = PRESETS.map((p) => p.slug)) {
  return async (day: string, now: Date) => {
    calls.push(day);
    let created = 0;
    for (const preset of presets) {
      const r = await store.put({ preset, date: day, as_of: endOfDay(day).toISOString(), computed_at: now.toISOString(), top_k: SNAPSHOT_TOP_K, rows: [{ rank: 1, key: `w-${day}`, composite: 1 }] });
      if (r.created) created++;
    }
    return { created };
  };
}

describe('day arithmetic', () => {
  it('last complete UTC day, day ranges, next wake', () => {
    expect(lastCompleteDay(new Date('2026-10-25T00:00:00Z'))).toBe('2026-10-24');
    expect(lastCompleteDay(new Date('2026-10-24T23:59:59.999Z'))).toBe('2026-10-23');
    expect(daysBetween('2026-02-27', '2026-03-02')).toEqual(['2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02']);
    expect(daysBetween('2026-03-02', '2026-03-01')).toEqual([]);
    expect(() => daysBetween('2026-02-30', '2026-03-01')).toThrow();
    // noon: the next check is capped at maxSleep; 23:00: midnight + grace; inside today's grace: its end
    expect(nextWakeMs(new Date('2026-10-25T12:00:00Z'), 5 * MIN, HOUR)).toBe(HOUR);
    expect(nextWakeMs(new Date('2026-10-25T23:00:00Z'), 5 * MIN, 24 * HOUR)).toBe(HOUR + 5 * MIN);
    expect(nextWakeMs(new Date('2026-10-25T00:02:00Z'), 5 * MIN, HOUR)).toBe(3 * MIN);
    expect(nextWakeMs(new Date('2026-10-25T00:05:00Z'), 5 * MIN, 48 * HOUR)).toBe(24 * HOUR);
  });
});

describe('catch-up', () => {
  it('computes every missed day oldest first, then nothing; yesterday waits for the grace period', async () => {
    const store = await newStore();
    const calls: string[] = [];
    let clock = new Date('2026-10-25T10:00:00Z');
    const opts: SnapshotScheduleOptions = { store, now: () => clock, firstDay: '2026-10-20', snapshotDay: fakeDay(store, calls) };
    const first = await catchUpSnapshots(opts);
    expect(first.days).toEqual(['2026-10-20', '2026-10-21', '2026-10-22', '2026-10-23', '2026-10-24']);
    expect(first.created).toBe(5 * PRESETS.length);
    // idempotent: a re-run stores nothing and computes nothing
    const again = await catchUpSnapshots(opts);
    expect(again).toEqual({ days: [], created: 0 });
    expect(calls).toHaveLength(5);
    // two days later, 2 minutes after midnight: 10-25 is due, 10-26 waits for the 5-minute grace
    clock = new Date('2026-10-27T00:02:00Z');
    expect((await catchUpSnapshots(opts)).days).toEqual(['2026-10-25']);
    clock = new Date('2026-10-27T00:05:00Z');
    expect((await catchUpSnapshots(opts)).days).toEqual(['2026-10-26']);
    expect((await catchUpSnapshots(opts)).days).toEqual([]);
    for (const p of PRESETS) expect(await store.days(p.slug)).toEqual(daysBetween('2026-10-20', '2026-10-26'));
    // the first write is kept: computed_at is the time of the first run
    expect((await store.get('top-pnl', '2026-10-20'))!.computed_at).toBe('2026-10-25T10:00:00.000Z');
    await store.close();
  });

  it('a half-written day only gets its missing presets; gaps are filled; default first day', async () => {
    const store = await newStore();
    const calls: string[] = [];
    const clock = new Date('2026-10-25T10:00:00Z');
    // a crash left 10-22 with only two presets, and 10-18 complete: 10-19..10-21 are a gap
    await fakeDay(store, [], PRESETS.slice(0, 2).map((p) => p.slug))('2026-10-22', clock);
    await fakeDay(store, [])('2026-10-18', clock);
    expect(await missingSnapshotDays(store, clock, '2026-10-18')).toEqual(['2026-10-19', '2026-10-20', '2026-10-21', '2026-10-22', '2026-10-23', '2026-10-24']);
    // no firstDay: from the earliest stored day
    const r = await catchUpSnapshots({ store, now: () => clock, snapshotDay: fakeDay(store, calls) });
    expect(r.days).toEqual(['2026-10-19', '2026-10-20', '2026-10-21', '2026-10-22', '2026-10-23', '2026-10-24']);
    expect(r.created).toBe(6 * PRESETS.length - 2);
    await store.close();
    // an empty store without firstDay: backfillDays days ending yesterday
    const empty = await newStore();
    const r2 = await catchUpSnapshots({ store: empty, now: () => clock, backfillDays: 3, snapshotDay: fakeDay(empty, []) });
    expect(r2.days).toEqual(['2026-10-22', '2026-10-23', '2026-10-24']);
    await empty.close();
  });
});

describe('schedule', () => {
  it('runs at start, then after UTC midnight; retries a failed run; stop() ends it; timers are unref\'d', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const timers: NodeJS.Timeout[] = [];
    const realSetTimeout = globalThis.setTimeout;
    vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      const t = realSetTimeout(fn, ms);
      timers.push(t);
      return t;
    }) as typeof setTimeout);
    const store = await newStore();
    const calls: string[] = [];
    const logs: string[] = [];
    let clock = new Date('2026-10-25T22:00:00Z');
    const compute = fakeDay(store, calls);
    let failNext = false;
    const s = startSnapshotSchedule({
      store,
      now: () => clock,
      firstDay: '2026-10-23',
      graceMs: 5 * MIN,
      retryMs: 10 * MIN,
      maxSleepMs: HOUR,
      log: (m) => logs.push(m),
      snapshotDay: async (day, now) => {
        if (failNext) {
          failNext = false;
          throw new Error('duckdb went away');
        }
        return compute(day, now);
      },
    });
    await s.runNow(); // joins the start-up run
    expect(calls).toEqual(['2026-10-23', '2026-10-24']);
    // wakes hourly until midnight, computing nothing
    clock = new Date(clock.getTime() + HOUR);
    await vi.advanceTimersByTimeAsync(HOUR);
    expect(calls).toHaveLength(2);
    // 23:00 -> next wake at 00:05; the run there fails once and is retried 10 minutes later
    failNext = true;
    clock = new Date('2026-10-26T00:05:00Z');
    await vi.advanceTimersByTimeAsync(HOUR + 5 * MIN);
    expect(calls).toHaveLength(2);
    expect(logs.some((l) => l.includes('duckdb went away'))).toBe(true);
    clock = new Date('2026-10-26T00:15:00Z');
    await vi.advanceTimersByTimeAsync(10 * MIN);
    expect(calls).toEqual(['2026-10-23', '2026-10-24', '2026-10-25']);
    expect(timers.length).toBeGreaterThan(2);
    for (const t of timers) expect(t.hasRef()).toBe(false);
    await s.stop();
    clock = new Date('2026-10-28T00:15:00Z');
    await vi.advanceTimersByTimeAsync(3 * 24 * HOUR);
    expect(calls).toHaveLength(3);
    await store.close();
  });
});

describe('over a generated venue', () => {
  let v: TestVenue;
  beforeAll(async () => {
    v = await makeVenue({ wallets: 1000, days: 12, seed: 11 });
  }, 600_000);
  afterAll(async () => {
    await v?.cleanup();
  });

  it('catches up the missed days with the real computation, identical to snapshotDay, and stores nothing twice', async () => {
    const store = await newStore();
    let clock = new Date('2026-10-31T06:00:00Z');
    const logs: string[] = [];
    const s = startSnapshotSchedule({ instance: v.instance, store, now: () => clock, firstDay: '2026-10-29', log: (m) => logs.push(m) });
    const first = await s.runNow();
    expect(first.days).toEqual(['2026-10-29', '2026-10-30']);
    expect(first.created).toBe(2 * PRESETS.length);
    for (const p of PRESETS) expect(await store.days(p.slug)).toEqual(['2026-10-29', '2026-10-30']);
    const board = (await store.get('top-pnl', '2026-10-30'))!;
    expect(board.rows.length).toBeGreaterThan(10);
    expect(board.computed_at).toBe('2026-10-31T06:00:00.000Z');
    // the scheduled computation is jobs/snapshots.ts's: recomputing the day directly gives the same bytes
    const direct = await snapshotDay(v.instance, await currentCatalog(v.instance), store, '2026-10-30');
    expect(direct.results.every((r) => !r.created && r.identical)).toBe(true);
    // nothing twice
    expect(await s.runNow()).toEqual({ days: [], created: 0 });
    clock = new Date('2026-11-01T01:00:00Z');
    expect((await s.runNow()).days).toEqual(['2026-10-31']);
    await s.stop();
    expect(logs.filter((l) => l.includes('stored'))).toHaveLength(3);
    await store.close();
  }, 170_000);
});

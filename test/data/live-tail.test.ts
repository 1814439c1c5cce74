/**
 * The live tail continues a generated venue: it appends taker fills at the configured rate, hourly mids, closes
 * and resolves markets as venue time passes, never trades a closed market, and tells listeners what landed. Its
 * clock is the venue time through which every row is stored, so a refresh as of that clock never sees a row of its
 * past arrive later (an hour's mids arriving late restream every position on their tokens).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveTail } from '../../data/live-tail/tail.ts';
import { AnalyticsEngine } from '../../jobs/analytics/engine.ts';
import type { TailFill, TailResolution } from '../../data/live-tail/generator.ts';
import { DEFAULT_END } from '../../data/generator/config.ts';
import { REAL_MARKETS_CSV } from '../../data/generator/defaults.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
const OPTS = { wallets: 3000, days: 30, seed: 31 };

beforeAll(async () => {
  v = await makeVenue(OPTS);
});
afterAll(async () => v?.cleanup());

describe('live tail', () => {
  it('appends fills at the configured rate, resolves markets as venue time passes, and emits both', async () => {
    let wall = 1_000_000;
    const before = (await v.rows<{ fills: number; res: number }>(`SELECT (SELECT count(*) FROM fills) AS fills, (SELECT count(*) FROM resolutions) AS res`))[0]!;
    const tail = await LiveTail.start(v.conn, { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: 68, speed: 36_000, now: () => wall }, false);
    const fills: TailFill[] = [];
    const resolutions: TailResolution[] = [];
    tail.on('fill', (f) => fills.push(f));
    tail.on('resolution', (r) => resolutions.push(r));
    // 10 wall seconds in 1-second ticks = 100 venue hours at speed 36,000
    for (let i = 0; i < 10; i++) {
      wall += 1000;
      await tail.tick();
    }
    await tail.stop();
    expect(fills.length).toBeGreaterThanOrEqual(600);
    expect(fills.length).toBeLessThanOrEqual(680);
    const after = (await v.rows<{ fills: number; res: number }>(`SELECT (SELECT count(*) FROM fills) AS fills, (SELECT count(*) FROM resolutions) AS res`))[0]!;
    expect(after.fills - before.fills).toBe(fills.length);
    expect(resolutions.length).toBeGreaterThan(0);
    expect(after.res - before.res).toBe(resolutions.length);
    const closedFirst = await v.rows<{ n: number }>(`SELECT count(*) AS n FROM resolutions r JOIN markets m USING (market_id)
      WHERE r.resolved_at >= TIMESTAMP '2026-11-01' AND (m.closed_at IS NULL OR m.closed_at > r.resolved_at)`);
    expect(closedFirst[0]!.n).toBe(0);

    const end = Date.parse(DEFAULT_END) / 1000;
    for (const f of fills) {
      expect(f.ts).toBeGreaterThanOrEqual(end);
      expect(f.ts).toBeLessThan(end + 100 * 3600 + 1);
      expect(f.price).toBeGreaterThan(0);
      expect(f.price).toBeLessThan(1);
    }
    const bad = await v.rows<{ n: number }>(`SELECT count(*) AS n FROM fills f JOIN markets m USING (market_id)
      WHERE f.ts >= m.end_date OR f.ts >= coalesce(m.closed_at, TIMESTAMP '9999-01-01')`);
    expect(bad[0]!.n).toBe(0);
    const noFillAfterResolution = await v.rows<{ n: number }>(`SELECT count(*) AS n FROM fills f JOIN resolutions r USING (market_id) WHERE f.ts >= r.resolved_at`);
    expect(noFillAfterResolution[0]!.n).toBe(0);
    // each resolution is written once, and only for markets whose close has passed
    const dup = await v.rows<{ n: number }>(`SELECT count(*) - count(DISTINCT market_id) AS n FROM resolutions`);
    expect(dup[0]!.n).toBe(0);
    const mids = await v.rows<{ n: number }>(`SELECT count(*) AS n FROM mids WHERE ts >= TIMESTAMP '2026-11-01'`);
    expect(mids[0]!.n).toBeGreaterThan(0);
    // sells only close shares bought earlier in the tail by the same wallet
    const sells = fills.filter((f) => f.side === 'SELL');
    expect(sells.length).toBeGreaterThan(0);
    for (const s of sells) expect(fills.some((b) => b.side === 'BUY' && b.takerId === s.takerId && b.marketId === s.marketId && b.outcome === s.outcome && b.ts <= s.ts && b.shares === s.shares)).toBe(true);
  });

  it('resumes after the last stored fill without rewriting history', async () => {
    const [{ last }] = (await v.rows<{ last: number }>(`SELECT epoch(max(ts)) AS last FROM fills`)) as [{ last: number }];
    let wall = 5_000_000;
    const tail = await LiveTail.start(v.conn, { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: 20, speed: 60, now: () => wall }, false);
    wall += 2000;
    const b = await tail.tick();
    await tail.stop();
    expect(b.fills.length).toBe(40);
    for (const f of b.fills) expect(f.ts).toBeGreaterThan(last);
    expect(b.resolutions.length).toBe(0); // nothing closes again
  });

  it('writes each batch in one transaction; a batch whose write fails is written whole by a later tick, once, and the ticking goes on', async () => {
    const count = async () => Number((await v.rows<{ n: number }>(`SELECT count(*) AS n FROM fills`))[0]!.n);
    const keys = async () => Number((await v.rows<{ n: number }>(`SELECT count(*) AS n FROM (SELECT DISTINCT tx_hash, log_index FROM fills)`))[0]!.n);
    let wall = 9_000_000;
    const errors: Error[] = [];
    // 10 venue hours a wall second: every tick writes fills and hourly mids
    const tail = await LiveTail.start(v.conn, { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: 68, speed: 36_000, now: () => wall, onError: (e) => errors.push(e) }, false);
    const landed: TailFill[] = [];
    tail.on('fill', (f) => landed.push(f));
    const before = await count();
    // the mids fail to write after the fills did: the batch's fills are rolled back with them, nothing is announced
    await v.conn.run(`ALTER TABLE mids RENAME TO mids_away`);
    const venueSeconds = () => Date.parse(tail.stats().venueTime) / 1000;
    const from = venueSeconds();
    wall += 1000;
    await expect(tail.tick()).rejects.toThrow(/mids/);
    // nothing stored: the clock stays where the stored rows end
    expect(venueSeconds()).toBe(from);
    expect(await count()).toBe(before);
    expect(landed).toHaveLength(0);
    await v.conn.run(`ALTER TABLE mids_away RENAME TO mids`);
    // the next tick writes that batch as it was generated (its fills and mids), the one after moves time on
    wall += 1000;
    const again = await tail.tick();
    expect(again.fills.length).toBeGreaterThanOrEqual(60);
    expect(again.mids.length).toBeGreaterThan(0);
    expect(landed).toHaveLength(again.fills.length);
    // the very batch that failed: the venue hours of the first tick (10 at speed 36,000), not new ones
    const to = venueSeconds();
    expect(to).toBe(from + 36_000);
    for (const f of again.fills) expect(f.ts > from && f.ts <= to).toBe(true);
    expect(await count()).toBe(before + again.fills.length);
    const [m] = await v.rows<{ n: number }>(`SELECT count(*) AS n FROM mids WHERE seq = (SELECT max(seq) FROM fills)`);
    expect(Number(m!.n)).toBe(again.mids.length);
    wall += 1000;
    const next = await tail.tick();
    for (const f of next.fills) expect(f.ts > to).toBe(true);
    await tail.stop();
    // nothing lost, nothing twice: every fill announced is stored once
    expect(await count()).toBe(before + landed.length);
    expect(await keys()).toBe(await count());

    // ticking on its own: a failed write is reported (onError), never an unhandled rejection, and the ticks go on
    const auto = await LiveTail.start(v.conn, { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: 68, speed: 36_000, tickMs: 20, now: () => wall, onError: (e) => errors.push(e) });
    const batches: number[] = [];
    auto.on('batch', (b) => batches.push(b.seq));
    await v.conn.run(`ALTER TABLE mids RENAME TO mids_away`);
    // up to 20 s (each loop ends as soon as its condition holds): under CI's load two writes took more than 2 s
    for (let i = 0; i < 1000 && errors.length < 2; i++) {
      wall += 1000;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(batches).toHaveLength(0);
    await v.conn.run(`ALTER TABLE mids_away RENAME TO mids`);
    for (let i = 0; i < 1000 && batches.length < 2; i++) {
      wall += 1000;
      await new Promise((r) => setTimeout(r, 20));
    }
    await auto.stop();
    expect(batches.length).toBeGreaterThanOrEqual(2);
    expect(await keys()).toBe(await count());
  });
  it("moves its clock only once a batch is stored, and each batch holds what happens after the clock before it through the clock after it (an hour's mids at the clock included)", async () => {
    const venue = { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV };
    // speed 1,000: a wall millisecond is a venue second, so a tick can end exactly on an hour
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 3000 }), { minLength: 4, maxLength: 10 }), async (steps) => {
        let wall = 20_000_000;
        const tail = await LiveTail.start(v.conn, venue, { ratePerSecond: 5, speed: 1000, now: () => wall }, false);
        const clock = () => Date.parse(tail.stats().venueTime) / 1000;
        // the first tick ends exactly on the next hour
        const hour = (Math.floor(clock() / 3600) + 1) * 3600;
        for (const ms of [hour - clock(), ...steps]) {
          const before = clock();
          wall += ms;
          const b = await tail.tick();
          const after = clock();
          expect(after).toBe(before + ms);
          for (const t of [...b.fills.map((f) => f.ts), ...b.mids.map((m) => m.ts), ...b.resolutions.map((r) => r.resolvedAt)]) {
            expect(t).toBeGreaterThan(before);
            expect(t).toBeLessThanOrEqual(after);
          }
          if (before < hour && after === hour) expect(b.mids.some((m) => m.ts === hour)).toBe(true);
        }
        await tail.stop();
      }),
      { numRuns: 4 },
    );
  });

  it('at speed 1 runs venue time at the wall clock, whatever the tick', async () => {
    let wall = 30_000_000;
    const tail = await LiveTail.start(v.conn, { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: 68, speed: 1, now: () => wall }, false);
    const from = Date.parse(tail.stats().venueTime);
    let fills = 0;
    let written = 0;
    // 40 ticks of 250 ms: ten venue seconds (rounding each tick up to a second ran the venue four times too fast)
    for (let i = 0; i < 40; i++) {
      wall += 250;
      const b = await tail.tick();
      fills += b.fills.length;
      if (b.fills.length) written++;
    }
    await tail.stop();
    expect(Date.parse(tail.stats().venueTime) - from).toBe(10_000);
    expect(written).toBe(10);
    expect(fills).toBe(680);
  });

  it('refreshes while it ticks never see a row of their past arrive later', async () => {
    let tail: LiveTail | undefined;
    const clock = () => (tail ? new Date(tail.stats().venueTime) : new Date(Date.parse(DEFAULT_END)));
    const engine = await AnalyticsEngine.open(v.instance, { now: clock, log: () => {} });
    // ten venue hours a wall second, ticking every 5 ms: every refresh starts while batches (the hours' mids among
    // them) are being written
    tail = await LiveTail.start(v.conn, { ...OPTS, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, { ratePerSecond: 68, speed: 36_000, tickMs: 5 });
    const marks: { asOf: string; watermark: number }[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        await engine.refreshNow();
        const p = engine.published();
        marks.push({ asOf: p.asOf.toISOString(), watermark: p.watermark });
      }
    } finally {
      await tail.stop();
      await engine.stop();
    }
    const hours = await v.rows<{ n: number }>(`SELECT count(DISTINCT ts) AS n FROM mids WHERE seq > ${marks[0]!.watermark} AND seq <= ${marks.at(-1)!.watermark}`);
    expect(Number(hours[0]!.n)).toBeGreaterThan(0);
    for (const m of marks) {
      const [late] = await v.rows<{ fills: number; mids: number; resolutions: number }>(`SELECT
        (SELECT count(*) FROM fills WHERE seq > ${m.watermark} AND ts <= TIMESTAMP '${m.asOf}') AS fills,
        (SELECT count(*) FROM mids WHERE seq > ${m.watermark} AND ts <= TIMESTAMP '${m.asOf}') AS mids,
        (SELECT count(*) FROM resolutions WHERE seq > ${m.watermark} AND resolved_at <= TIMESTAMP '${m.asOf}') AS resolutions`);
      expect({ ...m, fills: Number(late!.fills), mids: Number(late!.mids), resolutions: Number(late!.resolutions) }).toEqual({ ...m, fills: 0, mids: 0, resolutions: 0 });
    }
  });
});

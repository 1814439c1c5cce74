/**
 * The live tail continues a generated venue: it appends taker fills at the configured rate, hourly mids, closes
 * and resolves markets as venue time passes, never trades a closed market, and tells listeners what landed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveTail } from '../../data/live-tail/tail.ts';
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
});

/**
 * Risk-adjusted return (core/risk.ts): the statistics worked by hand, the daily mark-to-market P&L and capital on a
 * hand-built venue, and the per-wallet SQL agreeing with riskStats() over the SQL's own daily returns.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_RISK_DAYS, dailyReturnsSql, riskStats, walletRiskSql } from '../../core/risk.ts';
import { queryRows } from '../../data/duckdb.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { dailyReturnsGridSql } from './risk-reference.ts';
import { venueInsert } from '../../data/schema.ts';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
const day = (d: number, h = 0) => Date.UTC(2026, 0, d, h);
const ts = (ms: number) => `make_timestamp(${ms * 1000}::BIGINT)`;
const T = new Date(day(21));

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  await conn.run(`INSERT INTO wallets VALUES (1, '0x${'a'.repeat(40)}', NULL, 'Calm-Otter', NULL, false), (9, '0x${'9'.repeat(40)}', NULL, 'Bold-Yak', NULL, false)`);
  for (const m of [1, 2]) {
    await conn.run(`${venueInsert('markets')} VALUES (${m}, '0x${String(m).repeat(64)}', '0x${String(m).repeat(64)}', NULL, 'Q${m}?', 'q${m}', 'crypto',
      '${m}00', '${m}01', false, NULL, ${ts(day(1))}, ${ts(day(1))}, ${ts(day(30))}, NULL, 10000, 0, 'synthetic')`);
  }
  let log = 0;
  const fill = (t: number, m: number, side: 'BUY' | 'SELL', price: number, shares: number) =>
    conn.run(`${venueInsert('fills')} VALUES ('0x${(++log).toString(16).padStart(64, '0')}', ${log}, ${ts(t)}, ${m}, 0, 9, 1, '${side}', 'direct',
      '${price}'::DOUBLE, '${shares}'::DOUBLE, '${price * shares}'::DOUBLE, 0, 1, 'ctf')`);
  const mid = (t: number, m: number, v: number) => conn.run(`${venueInsert('mids')} VALUES (${m}, 0, ${ts(t)}, '${v}'::DOUBLE)`);
  // Market 2 sits at a constant mid of 0.5: wallet 1 buys 1 share at 0.5 on days 2..11 so it is active on 10 days
  // with no P&L from it; each such buy adds $0.50 to that day's capital.
  await mid(day(1), 2, 0.5);
  for (let d = 2; d <= 11; d++) await fill(day(d, 9), 2, 'BUY', 0.5, 1);
  // Market 1: buy 100 YES at 0.40 on Jan 2, mid 0.50 that evening, 0.45 on Jan 3, sell 100 at 0.60 on Jan 4.
  await fill(day(2, 12), 1, 'BUY', 0.4, 100);
  await mid(day(2, 20), 1, 0.5);
  await mid(day(3, 18), 1, 0.45);
  await fill(day(4, 10), 1, 'SELL', 0.6, 100);
});
afterAll(() => {
  closeMemoryVenue(conn, instance);
});

describe('riskStats', () => {
  it('computes Sharpe, Sortino and max drawdown by the book', () => {
    // r = [0.10, -0.05, 0.02, 0.00, -0.10, 0.05, 0.03, -0.02, 0.04, 0.01]
    // mean = 0.08 / 10 = 0.008; squared deviations 0.008464 + 0.003364 + 0.000144 + 0.000064 + 0.011664 + 0.001764
    //   + 0.000484 + 0.000784 + 0.001024 + 0.000004 = 0.02776 -> sample sd = sqrt(0.02776 / 9)
    // downside: mean of min(r,0)^2 = (0.0025 + 0.01 + 0.0004) / 10 = 0.00129
    // wealth: 1.1, 1.045, 1.0659, 1.0659, 0.95931, ... peak 1.1 -> trough 0.95931: drawdown 1 - 0.95931/1.1 = 0.1279
    const r = [0.1, -0.05, 0.02, 0, -0.1, 0.05, 0.03, -0.02, 0.04, 0.01];
    const dev = r.reduce((a, x) => a + (x - 0.008) ** 2, 0);
    expect(dev).toBeCloseTo(0.02776, 10);
    const s = riskStats(r);
    expect(s.n_days).toBe(10);
    expect(s.mean_daily_return).toBeCloseTo(0.008, 12);
    expect(s.sharpe).toBeCloseTo((0.008 / Math.sqrt(0.02776 / 9)) * Math.sqrt(365), 9);
    expect(s.sortino).toBeCloseTo((0.008 / Math.sqrt(0.00129)) * Math.sqrt(365), 9);
    expect(s.max_drawdown).toBeCloseTo(1 - (1.1 * 0.95 * 1.02 * 1.0 * 0.9) / 1.1, 12);
  });

  it('is unmeasured (null) below 10 days, never 0', () => {
    const s = riskStats([0.1, 0.2, 0.3]);
    expect(s).toEqual({ n_days: 3, sharpe: null, sortino: null, max_drawdown: null, mean_daily_return: null });
  });
});

describe('daily mark-to-market returns', () => {
  it('marks holdings to the day-end mid and divides by the capital at work', async () => {
    const rows = await queryRows<{ day: Date; pnl: number; capital: number; ret: number | null }>(
      conn,
      `SELECT day, pnl, capital, ret FROM (${dailyReturnsSql(T, 20)}) WHERE wallet_id = 1 ORDER BY day`,
    );
    const at = (d: number) => rows.find((r) => r.day.getTime() === day(d))!;
    // Jan 2: cash -40 - 0.5, holdings 100 x 0.50 + 1 x 0.5 -> P&L +10; capital = 0 held the night before + 40.5 spent
    expect(at(2).pnl).toBeCloseTo(10, 9);
    expect(at(2).capital).toBeCloseTo(40.5, 9);
    expect(at(2).ret).toBeCloseTo(10 / 40.5, 9);
    // Jan 3: mid 0.45 -> P&L -5; capital = 50 + 0.5 marked the night before + 0.5 spent
    expect(at(3).pnl).toBeCloseTo(-5, 9);
    expect(at(3).capital).toBeCloseTo(51, 9);
    // Jan 4: sold at 0.60 -> P&L = 60 - 45 = +15; capital = 45 + 1.0 + 0.5
    expect(at(4).pnl).toBeCloseTo(15, 9);
    expect(at(4).capital).toBeCloseTo(46.5, 9);
    // later days: only the market-2 shares, flat mid: P&L 0
    expect(at(8).pnl).toBeCloseTo(0, 9);
    // no row is dated after T's day, and nothing after T is read
    expect(Math.max(...rows.map((r) => r.day.getTime()))).toBeLessThanOrEqual(day(21));
  });

  it('the wallet risk SQL equals riskStats over its own daily returns, and needs 10 days', async () => {
    const rets = (await queryRows<{ ret: number }>(conn, `SELECT ret FROM (${dailyReturnsSql(T, 20)}) WHERE wallet_id = 1 AND ret IS NOT NULL ORDER BY day`)).map((r) => r.ret);
    expect(rets.length).toBeGreaterThanOrEqual(MIN_RISK_DAYS);
    const [sql] = await queryRows<Record<string, number>>(conn, `SELECT * FROM (${walletRiskSql(T, 20)}) WHERE wallet_id = 1`);
    const ref = riskStats(rets);
    expect(sql!.risk_days).toBe(ref.n_days);
    expect(sql!.sharpe).toBeCloseTo(ref.sharpe!, 9);
    expect(sql!.sortino).toBeCloseTo(ref.sortino!, 9);
    expect(sql!.max_drawdown).toBeCloseTo(ref.max_drawdown!, 9);
    // as of Jan 8 the wallet has traded on only 7 days in the window: unmeasured
    const early = await queryRows(conn, `SELECT * FROM (${walletRiskSql(new Date(day(8)), 20)}) WHERE wallet_id = 1`);
    expect(early).toEqual([]);
  });
});

describe('riskStats properties', () => {
  it('max drawdown is in [0, 1), Sharpe is scale-free in the sign of returns', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -0.5, max: 0.5, noNaN: true }), { minLength: 10, maxLength: 60 }), (r) => {
        const s = riskStats(r);
        expect(s.max_drawdown!).toBeGreaterThanOrEqual(0);
        expect(s.max_drawdown!).toBeLessThan(1);
        const neg = riskStats(r.map((x) => -x));
        if (s.sharpe !== null && neg.sharpe !== null) expect(neg.sharpe).toBeCloseTo(-s.sharpe, 9);
        // a series that never loses has no drawdown
        if (r.every((x) => x >= 0)) expect(s.max_drawdown).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});

/**
 * The streaming formulation (segments of constant shares joined to one per-token value table) against the naive
 * per-token daily grid in ./risk-reference.ts, on random small venues: buys and sells that never short, splits,
 * redemptions after resolution, mids on random days, resolutions inside and outside the window, any as-of.
 */
describe('dailyReturnsSql equals the per-token grid reference', () => {
  interface Op { w: number; m: number; o: number; d: number; h: number; kind: number; q: number; px: number }
  const opArb = fc.record({ w: fc.integer({ min: 1, max: 2 }), m: fc.integer({ min: 1, max: 3 }), o: fc.nat(1), d: fc.nat(24), h: fc.nat(23), kind: fc.nat(9), q: fc.integer({ min: 1, max: 500 }), px: fc.integer({ min: 1, max: 99 }) });
  const venueArb = fc.record({
    ops: fc.array(opArb, { minLength: 60, maxLength: 150, size: 'max' }),
    mids: fc.array(fc.record({ m: fc.integer({ min: 1, max: 3 }), o: fc.nat(1), d: fc.nat(34), h: fc.nat(23), v: fc.integer({ min: 1, max: 99 }) }), { maxLength: 60, size: 'max' }),
    res: fc.array(fc.record({ d: fc.nat(35), winner: fc.nat(2) }), { minLength: 3, maxLength: 3 }),
    asOfDay: fc.integer({ min: 14, max: 32 }),
    asOfHour: fc.nat(23),
    window: fc.constantFrom(12, 20, 90),
  });

  it('gives the same pnl, capital and return on every day with capital at work', async () => {
    const { instance: pi, conn: pc } = await openMemoryVenue(1);
    try {
      await fc.assert(
        fc.asyncProperty(venueArb, async (p) => {
          for (const t of ['fills', 'inventory_events', 'inventory_legs', 'resolutions', 'mids', 'markets']) await pc.run(`DELETE FROM ${t}`);
          for (const m of [1, 2, 3]) {
            await pc.run(`${venueInsert('markets')} VALUES (${m}, '0x${String(m).repeat(64)}', '0x${String(m).repeat(64)}', NULL, 'Q${m}?', 'q${m}', 'crypto',
              '${m}00', '${m}01', false, NULL, ${ts(day(1))}, ${ts(day(1))}, ${ts(day(60))}, NULL, 10000, 0, 'synthetic')`);
          }
          const resAt = new Map<number, { at: number; py: number; pn: number; w: number }>();
          p.res.forEach((r, i) => {
            if (r.d > 28) return; // unresolved
            const [py, pn, wi] = r.winner === 0 ? [1, 0, 0] : r.winner === 1 ? [0, 1, 1] : [0.5, 0.5, -1];
            resAt.set(i + 1, { at: day(2 + r.d, 12), py, pn, w: wi });
          });
          for (const [m, r] of resAt) {
            await pc.run(`${venueInsert('resolutions')} VALUES (${m}, ${r.w === 0 ? "'YES'" : r.w === 1 ? "'NO'" : "'INVALID'"}, ${r.w}, [1, 0], ${r.py}, ${r.pn}, 2, ${ts(r.at)}, '0xr${m}')`);
          }
          const seenMid = new Set<string>();
          for (const x of p.mids) {
            const at = day(1 + x.d, x.h);
            const k = `${x.m}|${x.o}|${at}`;
            if (seenMid.has(k)) continue;
            seenMid.add(k);
            await pc.run(`${venueInsert('mids')} VALUES (${x.m}, ${x.o}, ${ts(at)}, ${x.v / 100})`);
          }
          // ops in time order; balances per (wallet, token) never go negative
          const ops = [...p.ops].sort((a, b) => a.d - b.d || a.h - b.h);
          const bal = new Map<string, number>();
          let n = 0;
          for (const op of ops as Op[]) {
            const at = day(1 + op.d, op.h) + (n % 60) * 1000;
            const r = resAt.get(op.m);
            const key = (o: number) => `${op.w}|${op.m}|${o}`;
            const held = bal.get(key(op.o)) ?? 0;
            n++;
            if (r && at >= r.at) {
              // after resolution: redeem whatever is held
              const y = bal.get(key(0)) ?? 0;
              const no = bal.get(key(1)) ?? 0;
              if (y + no <= 0) continue;
              const usdc = y * r.py + no * r.pn;
              await pc.run(`${venueInsert('inventory_events')} VALUES ('0xi${n}', ${n}, ${ts(at)}, ${op.w}, 'REDEEM', ${op.m}, NULL, ${usdc}, ${usdc})`);
              if (y > 0) await pc.run(`INSERT INTO inventory_legs VALUES ('0xi${n}', ${n}, ${op.w}, ${op.m}, 0, ${-y})`);
              if (no > 0) await pc.run(`INSERT INTO inventory_legs VALUES ('0xi${n}', ${n}, ${op.w}, ${op.m}, 1, ${-no})`);
              bal.set(key(0), 0);
              bal.set(key(1), 0);
            } else if (op.kind === 0) {
              // split: q USDC into q YES + q NO
              await pc.run(`${venueInsert('inventory_events')} VALUES ('0xi${n}', ${n}, ${ts(at)}, ${op.w}, 'SPLIT', ${op.m}, NULL, ${op.q}, ${-op.q})`);
              for (const o of [0, 1]) {
                await pc.run(`INSERT INTO inventory_legs VALUES ('0xi${n}', ${n}, ${op.w}, ${op.m}, ${o}, ${op.q})`);
                bal.set(key(o), (bal.get(key(o)) ?? 0) + op.q);
              }
            } else {
              const sell = op.kind >= 7 && held > 0;
              const q = sell ? Math.min(held, op.q) : op.q;
              const px = op.px / 100;
              await pc.run(`${venueInsert('fills')} VALUES ('0xf${n}', ${n}, ${ts(at)}, ${op.m}, ${op.o}, 9, ${op.w}, '${sell ? 'SELL' : 'BUY'}', 'direct',
                ${px}, ${q}, ${px * q}, ${(op.kind % 3) * 0.001 * q}, 1, 'ctf')`);
              bal.set(key(op.o), held + (sell ? -q : q));
            }
          }
          const T = new Date(day(p.asOfDay, p.asOfHour));
          type Row = { wallet_id: number; day: Date; pnl: number; capital: number; ret: number | null };
          const order = `ORDER BY wallet_id, day`;
          const fast = await queryRows<Row>(pc, `SELECT * FROM (${dailyReturnsSql(T, p.window)}) WHERE wallet_id <> 9 AND capital >= 1e-9 ${order}`);
          const grid = await queryRows<Row>(pc, `SELECT * FROM (${dailyReturnsGridSql(T, p.window)}) WHERE wallet_id <> 9 AND capital >= 1e-9 ${order}`);
          expect(fast.map((r) => [r.wallet_id, r.day.getTime()])).toEqual(grid.map((r) => [r.wallet_id, r.day.getTime()]));
          fast.forEach((r, i) => {
            const g = grid[i]!;
            expect(r.pnl).toBeCloseTo(g.pnl, 6);
            expect(r.capital).toBeCloseTo(g.capital, 6);
            if (g.ret === null) expect(r.ret).toBeNull();
            else expect(r.ret!).toBeCloseTo(g.ret, 6);
          });
          // computed in wallet slices (how big venues avoid spilling), the union is the same
          const sliced = await queryRows<Row>(pc, `SELECT * FROM (${dailyReturnsSql(T, p.window, { of: 2, k: 0 })}) UNION ALL SELECT * FROM (${dailyReturnsSql(T, p.window, { of: 2, k: 1 })})`);
          const key = (r: Row) => `${r.wallet_id}|${r.day.getTime()}|${r.pnl.toFixed(6)}|${r.capital.toFixed(6)}`;
          const all = await queryRows<Row>(pc, `SELECT * FROM (${dailyReturnsSql(T, p.window)})`);
          expect(sliced.map(key).sort()).toEqual(all.map(key).sort());
          // and days the grid reports with P&L but no capital are the same too (none are lost)
          const lost = await queryRows<{ n: number }>(pc, `SELECT count(*)::INTEGER AS n FROM (${dailyReturnsGridSql(T, p.window)}) g
            WHERE abs(pnl) > 1e-6 AND NOT EXISTS (SELECT 1 FROM (${dailyReturnsSql(T, p.window)}) f WHERE f.wallet_id = g.wallet_id AND f.day = g.day AND abs(f.pnl - g.pnl) < 1e-6)`);
          expect(lost[0]!.n).toBe(0);
        }),
        { numRuns: 120, endOnFailure: true },
      );
    } finally {
      closeMemoryVenue(pc, pi);
    }
  }, 300_000);
});

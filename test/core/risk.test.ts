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

let instance: DuckDBInstance;
let conn: DuckDBConnection;
const day = (d: number, h = 0) => Date.UTC(2026, 0, d, h);
const ts = (ms: number) => `make_timestamp(${ms * 1000}::BIGINT)`;
const T = new Date(day(21));

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
  await conn.run(`INSERT INTO wallets VALUES (1, '0x${'a'.repeat(40)}', NULL, 'Calm-Otter', NULL, false), (9, '0x${'9'.repeat(40)}', NULL, 'Bold-Yak', NULL, false)`);
  for (const m of [1, 2]) {
    await conn.run(`INSERT INTO markets VALUES (${m}, '0x${String(m).repeat(64)}', '0x${String(m).repeat(64)}', NULL, 'Q${m}?', 'q${m}', 'crypto',
      '${m}00', '${m}01', false, NULL, ${ts(day(1))}, ${ts(day(1))}, ${ts(day(30))}, NULL, 10000, 0, 'synthetic')`);
  }
  let log = 0;
  const fill = (t: number, m: number, side: 'BUY' | 'SELL', price: number, shares: number) =>
    conn.run(`INSERT INTO fills VALUES ('0x${(++log).toString(16).padStart(64, '0')}', ${log}, ${ts(t)}, ${m}, 0, 9, 1, '${side}', 'direct',
      '${price}'::DOUBLE, '${shares}'::DOUBLE, '${price * shares}'::DOUBLE, 0, 1, 'ctf')`);
  const mid = (t: number, m: number, v: number) => conn.run(`INSERT INTO mids VALUES (${m}, 0, ${ts(t)}, '${v}'::DOUBLE)`);
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

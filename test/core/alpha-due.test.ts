/**
 * Alpha horizons that fall due (core/analytics/alpha-due.ts), worked by hand: the due fills' terms are folded onto a
 * position's stored sums in stream order; a fill whose horizon was already due, or is not yet, adds nothing; the
 * payout replaces the mid once the market resolved at or before the horizon; no mid at the horizon, no term.
 */
import { expect, it } from 'vitest';
import { AlphaCatchUp, type AlphaSums } from '../../core/analytics/alpha-due.ts';
import { MidIndex, tokenOf } from '../../core/analytics/mid-index.ts';
import type { ScanBatch } from '../../core/query.ts';

const H = 3_600_000_000; // an hour in µs

function batch(rows: Record<string, number>[]): ScanBatch {
  const col = (name: string) => rows.map((r) => r[name]!);
  return {
    n: rows.length,
    int: (name) => Int32Array.from(col(name)),
    u8: (name) => Uint8Array.from(col(name)),
    f64: (name) => Float64Array.from(col(name)),
  };
}

it('folds the terms of fills whose horizon fell in (T_old, T_new] onto the stored sums, in order', () => {
  const mids = new MidIndex();
  // market 7 outcome 0: mid 0.50 at 0, 0.60 at 2 h, 0.70 at 26 h; market 8 outcome 1: mid 0.30 at 0
  mids.add(7, 0, 0, 0.5);
  mids.add(7, 0, 2 * H, 0.6);
  mids.add(7, 0, 26 * H, 0.7);
  mids.add(8, 1, 0, 0.3);
  // market 8 resolved at 1.5 h, its outcome 1 pays 1
  const resolvedAt = new Float64Array(10).fill(Number.NaN);
  resolvedAt[8] = 1.5 * H;
  const payout = new Float64Array(20);
  payout[tokenOf(8, 1)] = 1;
  const out: AlphaSums[] = [];
  const tOld = 2.5 * H;
  const tNew = 26.5 * H;
  const c = new AlphaCatchUp(mids, { resolvedAt, payout }, tOld, tNew, (s) => out.push(s));
  const stored = { a1_num: 1, a1_den: 10, a1_n: 1, a24_num: 0, a24_den: 0, a24_n: 0 };
  c.push(
    batch([
      // wallet 1, market 7: a buy at 1 h (its +1 h at 2 h was due already; +24 h at 25 h falls due now)
      { wallet_id: 1, market_id: 7, outcome_index: 0, ts: 1 * H, q: 10, price: 0.4, size: 4, ...stored },
      // a sell at 2 h (+1 h at 3 h falls due: mid 0.60; +24 h at 26 h falls due: mid 0.70)
      { wallet_id: 1, market_id: 7, outcome_index: 0, ts: 2 * H, q: -5, price: 0.55, size: 2.75, ...stored },
      // a buy at 25.6 h: +1 h at 26.6 h is after T_new, not yet
      { wallet_id: 1, market_id: 7, outcome_index: 0, ts: 25.6 * H, q: 1, price: 0.7, size: 0.7, ...stored },
      // wallet 2, market 8 outcome 1: a buy at 1.75 h; +1 h at 2.75 h is after the resolution at 1.5 h: the payout
      { wallet_id: 2, market_id: 8, outcome_index: 1, ts: 1.75 * H, q: 2, price: 0.3, size: 0.6, a1_num: 0, a1_den: 0, a1_n: 0, a24_num: 0, a24_den: 0, a24_n: 0 },
    ]),
  );
  c.finish();
  expect(out).toHaveLength(2);
  const [a, b] = out;
  // +1 h: the sell at 2 h: 2.75 * -1 * (0.60 - 0.55) = -0.1375, onto 1 -> 0.8625
  expect(a!.a1_num).toBe(1 + 2.75 * -1 * (0.6 - 0.55));
  expect([a!.a1_den, a!.a1_n]).toEqual([12.75, 2]);
  // +24 h: the buy at 1 h (mid at 25 h: 0.60): 4 * (0.60 - 0.40) = 0.8; then the sell at 2 h (mid at 26 h: 0.70): 2.75 * -1 * (0.70 - 0.55) = -0.4125
  expect(a!.a24_num).toBe(0 + 4 * 1 * (0.6 - 0.4) + 2.75 * -1 * (0.7 - 0.55));
  expect([a!.a24_den, a!.a24_n]).toEqual([6.75, 2]);
  // wallet 2: +1 h due at 2.75 h, resolved at 1.5 h: payout 1: 0.6 * (1 - 0.3) = 0.42; +24 h due at 25.75 h: payout again
  expect(b).toMatchObject({ wallet_id: 2, a1_num: 0.6 * (1 - 0.3), a1_den: 0.6, a1_n: 1, a24_num: 0.6 * (1 - 0.3), a24_n: 1 });
});

it('no mid at the horizon: no term, and the stored sums come back as they were', () => {
  const mids = new MidIndex();
  mids.add(7, 0, 10 * H, 0.5); // only after the horizon
  const out: AlphaSums[] = [];
  const c = new AlphaCatchUp(mids, { resolvedAt: new Float64Array(10).fill(Number.NaN), payout: new Float64Array(20) }, 1.5 * H, 3 * H, (s) => out.push(s));
  c.push(batch([{ wallet_id: 3, market_id: 7, outcome_index: 0, ts: 1 * H, q: 1, price: 0.5, size: 0.5, a1_num: 0.25, a1_den: 2, a1_n: 3, a24_num: 0, a24_den: 0, a24_n: 0 }]));
  c.finish();
  expect(out).toEqual([{ wallet_id: 3, market_id: 7, outcome_index: 0, a1_num: 0.25, a1_den: 2, a1_n: 3, a24_num: 0, a24_den: 0, a24_n: 0 }]);
});

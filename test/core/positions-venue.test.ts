/** Positions over a generated venue: the venue is zero-sum, so P&L must net to minus the fees market by market. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { positionsSql } from '../../core/positions.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
const END = new Date('2026-11-01T00:00:00Z');

beforeAll(async () => {
  v = await makeVenue({ wallets: 4000, days: 40, seed: 3 });
  await v.conn.run(`CREATE TABLE p AS ${positionsSql(END)}`);
});
afterAll(async () => v?.cleanup());

describe('positions over the venue', () => {
  it('realized P&L plus fees nets to zero on every resolved standard market and neg-risk group', async () => {
    const rows = await v.rows<{ k: string; pnl: number; fees: number; n: number }>(`
      WITH k AS (SELECT market_id, coalesce(neg_risk_market_id, condition_id) AS k FROM markets),
      done AS (SELECT k.k FROM k LEFT JOIN resolutions r USING (market_id) GROUP BY 1 HAVING count(*) = count(r.market_id))
      SELECT k.k, sum(p.realized_pnl) AS pnl, (SELECT coalesce(sum(fee_usdc), 0) FROM fills f JOIN k k2 USING (market_id) WHERE k2.k = k.k) AS fees, count(*) AS n
      FROM p JOIN k USING (market_id) WHERE k.k IN (SELECT k FROM done) GROUP BY 1`);
    expect(rows.length).toBeGreaterThan(20);
    for (const r of rows) expect(Math.abs(r.pnl + r.fees), r.k).toBeLessThan(1e-6 * Math.max(1, r.n) + 0.01);
  });

  it('no NaN or infinite figure, shares never negative, unresolved positions are OPEN', async () => {
    const r = (await v.rows<Record<string, number>>(`SELECT count(*) FILTER (WHERE NOT isfinite(total_pnl) OR total_pnl IS NULL) AS bad_pnl,
      count(*) FILTER (WHERE shares < 0) AS neg, count(*) FILTER (WHERE NOT resolved AND status <> 'OPEN') AS bad_status,
      count(*) FILTER (WHERE resolved AND pnl_label IS NULL) AS missing_label, count(*) AS n FROM p`))[0]!;
    expect(r.n).toBeGreaterThan(10_000);
    expect(r).toMatchObject({ bad_pnl: 0, neg: 0, bad_status: 0, missing_label: 0 });
  });

  it('never-redeemers hold REDEEMABLE positions and redeemers mostly do not', async () => {
    const r = (await v.rows<{ nr: number; r: number }>(`SELECT count(*) FILTER (WHERE t.never_redeems) AS nr, count(*) FILTER (WHERE NOT t.never_redeems) AS r
      FROM p JOIN truth_wallets t USING (wallet_id) WHERE p.status = 'REDEEMABLE'`))[0]!;
    expect(r.nr).toBeGreaterThan(10);
    expect(r.nr).toBeGreaterThan(r.r);
  });
});

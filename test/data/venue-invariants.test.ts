/**
 * Invariants of the synthetic venue: what a real venue guarantees (conservation of shares, prices in (0,1), no
 * trading after resolution, referential integrity) and what makes it look real (heavy tails, categories,
 * neg-risk groups, INVALID markets, splits/merges/converts/redeems, never-redeemers).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
const one = async <T = any>(sql: string) => (await v.rows<T>(sql))[0] as T;

beforeAll(async () => {
  v = await makeVenue({ wallets: 6000, days: 45, seed: 11 });
});
afterAll(async () => v?.cleanup());

describe('referential integrity and uniqueness', () => {
  it('every table is populated and the manifest counts match', async () => {
    for (const [table, n] of Object.entries(v.result.counts)) {
      expect(n, table).toBeGreaterThan(0);
      expect((await one(`SELECT count(*) AS n FROM ${table}`)).n).toBe(n);
    }
  });

  it('every fill references an existing market and wallets, and (tx_hash, log_index) is unique', async () => {
    const r = await one(`SELECT
      (SELECT count(*) FROM fills f ANTI JOIN markets m USING (market_id)) AS orphan_market,
      (SELECT count(*) FROM fills f ANTI JOIN wallets w ON w.wallet_id = f.maker_id) AS orphan_maker,
      (SELECT count(*) FROM fills f ANTI JOIN wallets w ON w.wallet_id = f.taker_id) AS orphan_taker,
      (SELECT count(*) - count(DISTINCT (tx_hash, log_index)) FROM fills) AS dup_fills,
      (SELECT count(*) - count(DISTINCT (tx_hash, log_index)) FROM inventory_events) AS dup_inv,
      (SELECT count(*) - count(DISTINCT address) FROM wallets) AS dup_addr,
      (SELECT count(*) FROM fills WHERE maker_id = taker_id) AS self_trades`);
    expect(r).toEqual({ orphan_market: 0, orphan_maker: 0, orphan_taker: 0, dup_fills: 0, dup_inv: 0, dup_addr: 0, self_trades: 0 });
  });

  it('ids and hashes have the venue formats', async () => {
    const r = await one(`SELECT
      count(*) FILTER (WHERE NOT regexp_full_match(address, '0x[0-9a-f]{40}')) AS bad_addr FROM wallets`);
    expect(r.bad_addr).toBe(0);
    const m = await one(`SELECT count(*) FILTER (WHERE NOT regexp_full_match(condition_id, '0x[0-9a-f]{64}')
      OR NOT regexp_full_match(yes_token_id, '[0-9]{60,78}') OR yes_token_id = no_token_id) AS bad FROM markets`);
    expect(m.bad).toBe(0);
    const f = await one(`SELECT count(*) FILTER (WHERE NOT regexp_full_match(tx_hash, '0x[0-9a-f]{64}')) AS bad FROM fills`);
    expect(f.bad).toBe(0);
  });
});

describe('prices, sizes and time', () => {
  it('prices are strictly inside (0,1) and size_usdc = price * shares', async () => {
    const r = await one(`SELECT min(price) AS lo, max(price) AS hi, min(shares) AS min_shares,
      max(abs(size_usdc - price * shares)) AS size_err FROM fills`);
    expect(r.lo).toBeGreaterThan(0);
    expect(r.hi).toBeLessThan(1);
    expect(r.min_shares).toBeGreaterThan(0);
    expect(r.size_err).toBeLessThan(1e-6);
  });

  it('no fill at or after its market closed or resolved, none outside the venue window', async () => {
    const r = await one(`SELECT
      (SELECT count(*) FROM fills f JOIN resolutions r USING (market_id) WHERE f.ts >= r.resolved_at) AS after_resolution,
      (SELECT count(*) FROM fills f JOIN markets m USING (market_id) WHERE f.ts >= m.end_date OR f.ts < m.trading_opens_at) AS outside_market,
      (SELECT count(*) FROM resolutions r JOIN markets m USING (market_id) WHERE r.resolved_at < m.end_date) AS early_resolution,
      (SELECT count(*) FROM inventory_events i JOIN resolutions r USING (market_id) WHERE i.kind = 'REDEEM' AND i.ts < r.resolved_at) AS early_redeem,
      (SELECT count(*) FROM inventory_events i ANTI JOIN resolutions r USING (market_id) WHERE i.kind = 'REDEEM') AS redeem_unresolved`);
    expect(r).toEqual({ after_resolution: 0, outside_market: 0, early_resolution: 0, early_redeem: 0, redeem_unresolved: 0 });
    const w = await one(`SELECT min(ts)::VARCHAR AS lo, max(ts)::VARCHAR AS hi FROM fills`);
    expect(Date.parse(`${w.hi}Z`)).toBeLessThan(Date.parse('2026-11-01T00:00:00Z'));
    expect(Date.parse(`${w.lo}Z`)).toBeGreaterThanOrEqual(Date.parse('2026-11-01T00:00:00Z') - 45 * 86400e3);
  });
});

describe('conservation of shares', () => {
  it('fills only move shares between the two parties', async () => {
    const r = await one(`SELECT max(abs(net)) AS worst FROM (
      SELECT market_id, outcome_index, sum(CASE side WHEN 'BUY' THEN shares ELSE -shares END) AS net FROM fill_legs GROUP BY ALL)`);
    expect(r.worst).toBeLessThan(1e-6);
  });

  it('no wallet ever holds a negative balance of any token', async () => {
    const r = await one(`WITH d AS (
        SELECT wallet_id, market_id, outcome_index, ts, CASE side WHEN 'BUY' THEN shares ELSE -shares END AS delta, 1 AS ord FROM fill_legs
        UNION ALL SELECT l.wallet_id, l.market_id, l.outcome_index, i.ts, l.shares_delta, 0
        FROM inventory_legs l JOIN inventory_events i USING (tx_hash, log_index)),
      r AS (SELECT sum(delta) OVER (PARTITION BY wallet_id, market_id, outcome_index ORDER BY ts, ord ROWS UNBOUNDED PRECEDING) AS bal FROM d)
      SELECT count(*) FILTER (WHERE bal < -1e-6) AS negative, count(*) AS n FROM r`);
    expect(r.n).toBeGreaterThan(10_000);
    expect(r.negative).toBe(0);
  });

  it('splits, merges, redeems and converts move tokens and USDC consistently', async () => {
    const rows = await v.rows<{ kind: string; n: number; bad: number }>(`
      WITH legs AS (SELECT tx_hash, log_index, sum(shares_delta) AS net, count(*) AS n_legs,
          sum(CASE WHEN outcome_index = 0 THEN shares_delta END) AS yes, sum(CASE WHEN outcome_index = 1 THEN shares_delta END) AS no
        FROM inventory_legs GROUP BY ALL),
      paid AS (SELECT l.tx_hash, l.log_index, sum(-l.shares_delta * CASE l.outcome_index WHEN 0 THEN r.payout_yes ELSE r.payout_no END) AS payout
        FROM inventory_legs l JOIN resolutions r USING (market_id) GROUP BY ALL)
      SELECT i.kind, count(*) AS n, count(*) FILTER (WHERE NOT CASE i.kind
          WHEN 'SPLIT' THEN abs(yes - i.amount) < 1e-6 AND abs(no - i.amount) < 1e-6 AND abs(i.usdc_delta + i.amount) < 1e-6
          WHEN 'MERGE' THEN abs(yes + i.amount) < 1e-6 AND abs(no + i.amount) < 1e-6 AND abs(i.usdc_delta - i.amount) < 1e-6
          WHEN 'REDEEM' THEN abs(i.usdc_delta - p.payout) < 0.011 AND abs(-net - i.amount) < 0.011
          WHEN 'CONVERT' THEN abs(no + i.amount) < 1e-6 AND abs(yes - i.amount * (n_legs - 1)) < 1e-6 AND i.usdc_delta = 0
        END) AS bad
      FROM inventory_events i JOIN legs USING (tx_hash, log_index) LEFT JOIN paid p USING (tx_hash, log_index) GROUP BY 1 ORDER BY 1`);
    expect(rows.map((r) => r.kind)).toEqual(['CONVERT', 'MERGE', 'REDEEM', 'SPLIT']);
    for (const r of rows) expect(r.bad, r.kind).toBe(0);
  });

  it('some wallets never redeem winning shares (REDEEMABLE positions exist)', async () => {
    const r = await one(`WITH held AS (
        SELECT wallet_id, market_id, outcome_index, sum(CASE side WHEN 'BUY' THEN shares ELSE -shares END) AS shares FROM fill_legs GROUP BY ALL
        UNION ALL SELECT wallet_id, market_id, outcome_index, sum(shares_delta) FROM inventory_legs GROUP BY ALL),
      pos AS (SELECT wallet_id, market_id, outcome_index, sum(shares) AS shares FROM held GROUP BY ALL)
      SELECT count(*) AS redeemable, count(DISTINCT p.wallet_id) AS wallets,
        count(*) FILTER (WHERE NOT t.never_redeems) AS from_redeemers
      FROM pos p JOIN resolutions r USING (market_id) JOIN truth_wallets t USING (wallet_id)
      WHERE p.shares > 0.01 AND ((p.outcome_index = 0 AND r.payout_yes > 0) OR (p.outcome_index = 1 AND r.payout_no > 0))
        AND r.resolved_at < TIMESTAMP '2026-10-15'`);
    expect(r.wallets).toBeGreaterThan(20);
    // Redeeming wallets claim within days (lognormal delay, median 6 h); what stays unclaimed 17 days after resolution
    // belongs to never-redeemers.
    expect(r.from_redeemers / r.redeemable).toBeLessThan(0.05);
  });
});

describe('realism', () => {
  it('activity is heavy-tailed: most wallets trade a few times, market makers hundreds of times more', async () => {
    const r = await one(`WITH n AS (SELECT wallet_id, count(*) AS fills FROM fill_legs GROUP BY 1)
      SELECT median(fills) AS med, max(fills) AS top, quantile_cont(fills, 0.99) AS p99,
        (SELECT count(*) FROM wallets) - count(*) AS idle FROM n`);
    expect(r.med).toBeLessThanOrEqual(5);
    expect(r.top / r.med).toBeGreaterThan(1000);
    expect(r.p99).toBeGreaterThan(10 * r.med);
    const mm = await one(`SELECT min(archetype = 'market_maker')::INTEGER AS top5_are_mms FROM (
      SELECT t.archetype FROM fill_legs f JOIN truth_wallets t USING (wallet_id) GROUP BY t.wallet_id, t.archetype ORDER BY count(*) DESC LIMIT 3)`);
    expect(mm.top5_are_mms).toBe(1);
  });

  it('markets span several categories in roughly the real mix', async () => {
    const cats = await v.rows<{ category: string; share: number }>(`SELECT category, count(*) / sum(count(*)) OVER () AS share FROM markets GROUP BY 1 ORDER BY 2 DESC`);
    expect(cats.length).toBeGreaterThanOrEqual(6);
    expect(cats.map((c) => c.category)).toEqual(expect.arrayContaining(['politics', 'sports', 'crypto']));
    expect(cats[0]!.category).toBe('other'); // 54% of the real export
  });

  it('neg-risk groups: YES mids sum near 1 and exactly one question wins, never INVALID', async () => {
    const s = await one(`WITH g AS (SELECT m.neg_risk_market_id, d.ts, sum(d.mid) AS s, count(*) AS n
        FROM mids d JOIN markets m USING (market_id) WHERE m.neg_risk AND d.outcome_index = 0 GROUP BY ALL)
      SELECT avg(abs(s - 1)) AS mean_dev, quantile_cont(abs(s - 1), 0.95) AS p95, count(*) AS n FROM g`);
    expect(s.n).toBeGreaterThan(100);
    expect(s.mean_dev).toBeLessThan(0.03);
    expect(s.p95).toBeLessThan(0.1);
    const w = await one(`SELECT count(*) FILTER (WHERE yes_winners <> 1) AS bad_groups, sum(invalid) AS invalid, count(*) AS groups FROM (
        SELECT m.neg_risk_market_id, count(*) FILTER (WHERE r.winner = 'YES') AS yes_winners, count(*) FILTER (WHERE r.winner = 'INVALID') AS invalid
        FROM markets m JOIN resolutions r USING (market_id) WHERE m.neg_risk GROUP BY 1)`);
    expect(w.groups).toBeGreaterThan(3);
    expect(w).toMatchObject({ bad_groups: 0, invalid: 0 });
  });

  it('market makers are mostly makers, the crowd mostly takes', async () => {
    const rows = await v.rows<{ archetype: string; maker_share: number }>(`SELECT t.archetype, avg((role = 'maker')::INTEGER) AS maker_share
      FROM fill_legs f JOIN truth_wallets t USING (wallet_id) GROUP BY 1`);
    const by = Object.fromEntries(rows.map((r) => [r.archetype, r.maker_share]));
    // Makers' resting orders are taken by the crowd; market makers only take when a crowd wallet rests a limit order.
    expect(by.market_maker).toBeGreaterThan(0.75);
    for (const [arch, share] of Object.entries(by)) if (arch !== 'market_maker') expect(share, arch).toBeLessThan(by.market_maker as number);
    expect(by.noise).toBeLessThan(0.1);
  });
});

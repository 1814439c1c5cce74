/**
 * The ground truth names each wallet's archetype, true edge, cluster, owner and leader: check that the venue's
 * fills really show each planted behaviour, and that the latent probabilities the truth rests on are calibrated.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readRealMarkets } from '../../data/ingest/real-markets.ts';
import { REAL_MARKETS_CSV } from '../../data/generator/defaults.ts';
import { DEFAULT_END, ARCHETYPE_SHARE } from '../../data/generator/config.ts';
import { buildMarkets } from '../../data/generator/markets.ts';
import { Rng } from '../../data/generator/rng.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
const one = async <T = any>(sql: string) => (await v.rows<T>(sql))[0] as T;

beforeAll(async () => {
  v = await makeVenue({ wallets: 8000, days: 60, seed: 23 });
});
afterAll(async () => v?.cleanup());

/** Each wallet's own entries (the fills where it bought), with its archetype. */
const BUYS = `SELECT f.*, t.archetype, t.cluster_id, t.leader_id, t.owner_id FROM fill_legs f JOIN truth_wallets t USING (wallet_id) WHERE f.side = 'BUY'`;

describe('ground truth matches the venue', () => {
  it('names every wallet once, with archetype shares as configured', async () => {
    const r = await one(`SELECT count(*) AS n, count(DISTINCT wallet_id) AS d, (SELECT count(*) FROM wallets) AS wallets FROM truth_wallets`);
    expect(r.n).toBe(r.d);
    expect(r.n).toBe(r.wallets);
    const shares = Object.fromEntries((await v.rows<{ archetype: string; share: number }>(`SELECT archetype, count(*) / (SELECT count(*) FROM truth_wallets) AS share FROM truth_wallets GROUP BY 1`)).map((x) => [x.archetype, x.share]));
    for (const [arch, share] of Object.entries(ARCHETYPE_SHARE)) {
      if (arch === 'noise') continue;
      // multi-wallet owners copy their first wallet's archetype, so shares drift a little
      expect(shares[arch], arch).toBeGreaterThan(share * 0.7);
      expect(shares[arch], arch).toBeLessThan(share * 1.5);
    }
  });

  it('resolutions follow the markets the truth resolved', async () => {
    const r = await one(`SELECT count(*) AS n, count(*) FILTER (WHERE r.winner_index <> CASE WHEN t.winner >= 0 THEN t.winner ELSE -1 END) AS bad
      FROM resolutions r JOIN truth_markets t USING (market_id)`);
    expect(r.n).toBeGreaterThan(50);
    expect(r.bad).toBe(0);
  });

  it('sharps have a clearly positive true edge, noise and favourite-buyers none', async () => {
    const rows = await v.rows<{ archetype: string; med: number; frac_pos: number }>(`SELECT archetype, median(true_edge) AS med,
      avg((true_edge > 0.01)::INTEGER) AS frac_pos FROM truth_wallets WHERE positions >= 10 GROUP BY 1`);
    const by = Object.fromEntries(rows.map((r) => [r.archetype, r]));
    expect(by.sharp!.med).toBeGreaterThan(0.03);
    expect(by.sharp!.frac_pos).toBeGreaterThan(0.9);
    expect(Math.abs(by.noise!.med)).toBeLessThan(0.02);
    expect(Math.abs(by.favourite_buyer!.med)).toBeLessThan(0.02);
    expect(Math.abs(by.longshot_buyer!.med)).toBeLessThan(0.02);
  });

  it('favourite-buyers pay above 0.87, longshot buyers below 0.16', async () => {
    const r = await one(`SELECT
      min(price) FILTER (WHERE archetype = 'favourite_buyer') AS fav_min,
      max(price) FILTER (WHERE archetype = 'longshot_buyer') AS long_max FROM (${BUYS})`);
    expect(r.fav_min).toBeGreaterThanOrEqual(0.87);
    expect(r.long_max).toBeLessThanOrEqual(0.16);
  });

  it('whales trade in large clips, noise traders in small ones', async () => {
    const r = await one(`SELECT median(size_usdc) FILTER (WHERE archetype = 'whale') AS whale,
      median(size_usdc) FILTER (WHERE archetype = 'noise') AS noise FROM (${BUYS})`);
    expect(r.whale).toBeGreaterThan(3000);
    expect(r.noise).toBeLessThan(100);
  });

  it('early birds enter in the first tenth of a market life', async () => {
    const r = await one(`SELECT median((epoch(b.ts) - epoch(m.trading_opens_at)) / (epoch(m.end_date) - epoch(m.trading_opens_at))) AS early,
      (SELECT median((epoch(b2.ts) - epoch(m2.trading_opens_at)) / (epoch(m2.end_date) - epoch(m2.trading_opens_at)))
        FROM (${BUYS}) b2 JOIN markets m2 USING (market_id) WHERE b2.archetype = 'noise') AS noise
      FROM (${BUYS}) b JOIN markets m USING (market_id) WHERE b.archetype = 'early_bird'`);
    expect(r.early).toBeLessThan(0.1);
    expect(r.noise).toBeGreaterThan(0.2);
  });

  it('sybil cluster members trade in lockstep: same token, same side, within seconds', async () => {
    const r = await one(`WITH b AS (SELECT * FROM (${BUYS}) WHERE cluster_id IS NOT NULL)
      SELECT avg(matched::INTEGER) AS lockstep, count(*) AS n FROM (
        SELECT EXISTS (SELECT 1 FROM b o WHERE o.cluster_id = b.cluster_id AND o.wallet_id <> b.wallet_id AND o.market_id = b.market_id
          AND o.outcome_index = b.outcome_index AND abs(epoch(o.ts) - epoch(b.ts)) <= 60) AS matched FROM b)`);
    expect(r.n).toBeGreaterThan(100);
    expect(r.lockstep).toBeGreaterThan(0.8);
    // and unrelated wallets almost never do
    const base = await one(`WITH b AS (SELECT * FROM (${BUYS}) WHERE archetype = 'sharp')
      SELECT avg(matched::INTEGER) AS lockstep FROM (
        SELECT EXISTS (SELECT 1 FROM b o WHERE o.wallet_id <> b.wallet_id AND o.market_id = b.market_id
          AND o.outcome_index = b.outcome_index AND abs(epoch(o.ts) - epoch(b.ts)) <= 60) AS matched FROM b)`);
    expect(base.lockstep).toBeLessThan(0.2);
  });

  it('copy-traders enter after their leader, on the same token', async () => {
    const r = await one(`WITH c AS (SELECT * FROM (${BUYS}) WHERE archetype = 'copy_trader'), l AS (${BUYS})
      SELECT avg(followed::INTEGER) AS followed, count(*) AS n FROM (
        SELECT EXISTS (SELECT 1 FROM l WHERE l.wallet_id = c.leader_id AND l.market_id = c.market_id AND l.outcome_index = c.outcome_index
          AND l.ts <= c.ts AND l.ts >= c.ts - INTERVAL 13 HOUR) AS followed FROM c)`);
    expect(r.n).toBeGreaterThan(100);
    expect(r.followed).toBeGreaterThan(0.95);
  });

  it('wallets of one owner share a style', async () => {
    const r = await one(`SELECT count(*) AS owners, count(*) FILTER (WHERE styles > 1) AS mixed, min(n) AS smallest FROM (
      SELECT owner_id, count(DISTINCT archetype) AS styles, count(*) AS n FROM truth_wallets WHERE owner_id IS NOT NULL GROUP BY 1)`);
    expect(r.owners).toBeGreaterThan(10);
    expect(r.mixed).toBe(0);
    expect(r.smallest).toBeGreaterThanOrEqual(2);
  });

  it('never-redeemers never redeem', async () => {
    const r = await one(`SELECT count(*) AS n FROM inventory_events i JOIN truth_wallets t USING (wallet_id) WHERE i.kind = 'REDEEM' AND t.never_redeems`);
    expect(r.n).toBe(0);
  });
});

describe('latent probabilities and mids are calibrated by construction', () => {
  it('outcomes happen as often as the latent probability and the mid say', async () => {
    const real = await readRealMarkets(REAL_MARKETS_CSV);
    const venue = buildMarkets({ wallets: 1_000_000, days: 60, seed: 5, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, real);
    const rng = new Rng(99);
    const bins = Array.from({ length: 10 }, () => ({ n: 0, latent: 0, mid: 0, won: 0 }));
    let invalid = 0;
    let standard = 0;
    for (const m of venue.markets) {
      if (m.groupId < 0) {
        standard++;
        if (m.winner === -1) invalid++;
      }
      if (m.winner < 0) continue;
      const h = rng.int(m.latent.length); // one independent draw per market
      const p = m.latent[h] as number;
      const b = bins[Math.min(9, Math.floor(p * 10))]!;
      b.n++;
      b.latent += p;
      b.mid += m.mid[h] as number;
      b.won += m.winner === 0 ? 1 : 0;
    }
    expect(venue.markets.length).toBeGreaterThan(15_000);
    for (const b of bins) {
      if (b.n < 200) continue;
      const observed = b.won / b.n;
      const se = Math.sqrt((observed * (1 - observed) + 0.01) / b.n);
      expect(Math.abs(observed - b.latent / b.n)).toBeLessThan(4 * se + 0.01);
      expect(Math.abs(observed - b.mid / b.n)).toBeLessThan(4 * se + 0.02);
    }
    // about 1% of standard markets void
    expect(invalid / standard).toBeGreaterThan(0.005);
    expect(invalid / standard).toBeLessThan(0.016);
  });
});

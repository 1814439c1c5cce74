/**
 * Wallet style and best category (core/wallet-style.ts): on a generated venue the venue-wide a_style rows equal
 * copyFitness()'s per-wallet figures and give the same verdict; on a hand-built venue the best category (and a
 * wallet's holds) are worked by hand.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import type { ColumnarRunner, QueryRunner } from '../../core/query.ts';
import { copyFitness, holdEpisodesSql, traderCalibration, verdictFor } from '../../core/trader/index.ts';
import {
  BEST_CATEGORY_MIN_MARKETS,
  styleBuildSteps,
  verdictInputsFromRow,
  walletStyleSql,
  type VerdictRow,
} from '../../core/wallet-style.ts';
import { duckRunner } from '../../data/runner.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { venueInsert } from '../../data/schema.ts';

async function runStyleSteps(db: QueryRunner, asOf: Date): Promise<void> {
  for (const step of styleBuildSteps(asOf)) await db.run(step.sql);
}

// ---------------------------------------------------------------------------------------------------------------
// Generated venue: a_style and the verdict equal copyFitness for a sample of wallets of every kind
// ---------------------------------------------------------------------------------------------------------------

describe('generated venue (3,000 wallets, 30 days)', () => {
  let v: TestVenue;
  let db: ColumnarRunner;
  // a few days before the venue's end: fills, inventory and resolutions after T exist and must be ignored
  const T = new Date('2026-10-28T12:00:00Z');
  beforeAll(async () => {
    v = await makeVenue({ wallets: 3000, days: 30, seed: 7 });
    db = duckRunner(v.conn);
    await fullBuild(db, T, { rankings: false });
    await runStyleSteps(db, T);
  });
  afterAll(async () => v?.cleanup());

  interface StyleRow extends Record<string, unknown> {
    wallet_id: number;
    n_fills: number;
    taker_share: number | null;
    median_clip_usd: number | null;
    two_sided_share: number | null;
    thin_fill_share: number | null;
    n_closed_holds: number;
    median_hold_hours: number | null;
  }

  it('has one row per wallet with a fill leg <= T, agreeing with a_features on every wallet', async () => {
    const [c] = await v.rows<{ style: number; legs: number; later: number }>(
      `SELECT (SELECT count(*) FROM a_style)::INTEGER AS style,
        (SELECT count(DISTINCT wallet_id) FROM fill_legs WHERE ts <= ${tsSql(T)})::INTEGER AS legs,
        (SELECT count(*) FROM fill_legs WHERE ts > ${tsSql(T)})::INTEGER AS later`,
    );
    expect(c!.later).toBeGreaterThan(0);
    expect(c!.style).toBe(c!.legs);
    const [d] = await v.rows<{ n: number; bad: number }>(
      `SELECT count(*)::INTEGER AS n,
        count(*) FILTER (WHERE s.n_fills <> f.trade_count OR abs(s.taker_share - f.taker_share) > 1e-12
          OR abs(s.median_clip_usd - f.median_fill_usdc) > 1e-9 OR s.wallet_id IS NULL OR f.wallet_id IS NULL)::INTEGER AS bad
      FROM a_style s FULL JOIN a_features f USING (wallet_id)`,
    );
    expect(d!.n).toBe(c!.style);
    expect(d!.bad).toBe(0);
  });

  it('a_style and the verdict equal copyFitness() for ~30 wallets: exits, holds to resolution, splits, conversions, re-entries, market makers', async () => {
    // holds per wallet and token from the same episode SQL, to find tokens held more than once (exit, re-entry)
    const picks = await v.rows<{ wallet_id: number; kind: string }>(
      `WITH ${holdEpisodesSql(T)},
      reentry AS (SELECT wallet_id FROM hold_episodes GROUP BY wallet_id, market_id HAVING count(*) >= 3),
      exits AS (SELECT wallet_id, count(*) AS n FROM hold_episodes WHERE end_ts IS NOT NULL AND NOT to_resolution GROUP BY 1),
      to_res AS (SELECT wallet_id, count(*) FILTER (WHERE to_resolution) AS r, count(*) FILTER (WHERE end_ts IS NOT NULL AND NOT to_resolution) AS x
        FROM hold_episodes GROUP BY 1),
      inv AS (SELECT wallet_id, kind, count(*) AS n FROM inventory_events WHERE ts <= ${tsSql(T)} GROUP BY ALL),
      picks AS (
        (SELECT wallet_id, 'market_maker' AS kind FROM truth_wallets WHERE archetype = 'market_maker' ORDER BY wallet_id LIMIT 3)
        UNION ALL (SELECT wallet_id, 'reentry' FROM reentry GROUP BY 1 ORDER BY count(*) DESC, wallet_id LIMIT 3)
        UNION ALL (SELECT wallet_id, 'exits' FROM exits ORDER BY n DESC, wallet_id LIMIT 3)
        UNION ALL (SELECT wallet_id, 'to_resolution_only' FROM to_res WHERE r >= 5 AND x = 0 ORDER BY r DESC, wallet_id LIMIT 3)
        UNION ALL (SELECT wallet_id, 'split' FROM inv WHERE kind = 'SPLIT' ORDER BY n DESC, wallet_id LIMIT 2)
        UNION ALL (SELECT wallet_id, 'convert' FROM inv WHERE kind = 'CONVERT' ORDER BY n DESC, wallet_id LIMIT 2)
        UNION ALL (SELECT wallet_id, 'sharp' FROM a_wallet_metrics WHERE calibration_ranked ORDER BY calibration_excess_z, wallet_id LIMIT 3)
        UNION ALL (SELECT wallet_id, 'few_fills' FROM a_style WHERE n_fills < 10 ORDER BY wallet_id LIMIT 2)
        UNION ALL (SELECT wallet_id, 'thin' FROM a_style WHERE thin_fill_share >= 0.5 ORDER BY n_fills DESC, wallet_id LIMIT 2)
        UNION ALL (SELECT any_value(wallet_id ORDER BY wallet_id), 'archetype:' || archetype FROM truth_wallets
          WHERE archetype IN ('whale', 'early_bird', 'contrarian', 'favourite_buyer', 'longshot_buyer', 'copy_trader', 'sybil')
            AND wallet_id IN (SELECT wallet_id FROM a_style WHERE n_fills >= 10) GROUP BY archetype)
        UNION ALL (SELECT wallet_id, 'random' FROM a_style ORDER BY hash(wallet_id * 7919) LIMIT 8)
        UNION ALL (SELECT wallet_id, 'inventory_only' FROM inventory_events WHERE ts <= ${tsSql(T)}
          AND wallet_id NOT IN (SELECT wallet_id FROM a_style) ORDER BY wallet_id LIMIT 1))
      SELECT wallet_id, string_agg(DISTINCT kind, ',') AS kind FROM picks GROUP BY 1 ORDER BY 1`,
    );
    expect(picks.length).toBeGreaterThanOrEqual(28);
    const kinds = new Set(picks.flatMap((p) => p.kind.split(',')));
    for (const k of ['market_maker', 'reentry', 'exits', 'to_resolution_only', 'split', 'convert', 'sharp', 'few_fills', 'thin']) {
      expect(kinds, k).toContain(k);
    }
    const rows = await v.rows<StyleRow>(
      `SELECT m.*, s.* EXCLUDE (wallet_id) FROM a_wallet_metrics m LEFT JOIN a_style s USING (wallet_id)
      WHERE wallet_id IN (${picks.map((p) => p.wallet_id).join(',')})`,
    );
    const byWallet = new Map(rows.map((r) => [r.wallet_id, r]));
    const seen = { flagged: new Set<string>(), recommended: 0, exitAndResolution: 0, reentry: 0, noStyle: 0 };
    for (const p of picks) {
      const c = (await copyFitness(db, p.wallet_id, T))!;
      const msg = `wallet ${p.wallet_id} (${p.kind})`;
      const row = byWallet.get(p.wallet_id);
      if (!row) {
        // no fill leg <= T: no a_style or a_wallet_metrics row; the ranking reads it as empty
        seen.noStyle++;
        expect(c.sample.n_fills, msg).toBe(0);
        expect(verdictFor(verdictInputsFromRow({ n_resolved_markets: c.sample.n_resolved_markets })), msg).toEqual(c.verdict);
        continue;
      }
      expect(row.n_fills, msg).toBe(c.sample.n_fills);
      expect(row.taker_share, msg).toBe(c.taker_share);
      expect(row.median_clip_usd, msg).toBe(c.clip_usd.p50);
      expect(row.thin_fill_share, msg).toBe(c.liquidity.thin_fill_share);
      expect(row.two_sided_share, msg).toBe(c.liquidity.two_sided_market_share);
      expect(row.n_closed_holds, msg).toBe(c.hold_time_hours.n_closed);
      expect(row.median_hold_hours, msg).toBe(c.hold_time_hours.median);
      expect(verdictFor(verdictInputsFromRow(row as VerdictRow)), msg).toEqual(c.verdict);
      for (const f of c.copy_flags) seen.flagged.add(f.flag);
      if (c.verdict.copyRecommended) seen.recommended++;
      const share = c.hold_time_hours.share_to_resolution;
      if (share !== null && share > 0 && share < 1) seen.exitAndResolution++;
      if (p.kind.includes('reentry')) seen.reentry++;
    }
    // the sample is not vacuous: it covers flagged and recommended wallets, mixed holds and repeated episodes
    // (this venue has no scalper and no thin-market wallet with 10 fills: the hand-built venue below covers those)
    expect([...seen.flagged]).toContain('market_maker');
    expect(seen.recommended).toBeGreaterThanOrEqual(1);
    expect(seen.exitAndResolution).toBeGreaterThanOrEqual(5);
    expect(seen.reentry).toBeGreaterThanOrEqual(3);
  });

  it('a_category matches the wallet-scoped category calibration, and a_best_category its rule', async () => {
    const [tot] = await v.rows<{ bad: number; n: number }>(
      `WITH s AS (SELECT wallet_id, sum(n_positions) AS n FROM a_category GROUP BY 1)
      SELECT count(*)::INTEGER AS n, count(*) FILTER (WHERE s.n IS DISTINCT FROM c.n_positions)::INTEGER AS bad
      FROM a_calibration c FULL JOIN s USING (wallet_id)`,
    );
    expect(tot!.n).toBeGreaterThan(100);
    expect(tot!.bad).toBe(0);
    // every best row is the first of its wallet's eligible categories under (z, -markets, name), checked in TS
    const cats = await v.rows<{ wallet_id: number; category: string; n_markets: number; calibration_excess_z: number | null }>(
      `SELECT wallet_id, category, n_markets, calibration_excess_z FROM a_category ORDER BY wallet_id, category`,
    );
    const best = new Map<number, { category: string; z: number; n: number }>();
    for (const c of cats) {
      if (c.n_markets < BEST_CATEGORY_MIN_MARKETS || c.calibration_excess_z === null) continue;
      const b = best.get(c.wallet_id);
      const z = c.calibration_excess_z;
      if (!b || z < b.z || (z === b.z && (c.n_markets > b.n || (c.n_markets === b.n && c.category < b.category)))) {
        best.set(c.wallet_id, { category: c.category, z, n: c.n_markets });
      }
    }
    const got = await v.rows<{ wallet_id: number; best_category: string; best_category_z: number; best_category_markets: number }>(
      `SELECT * FROM a_best_category ORDER BY wallet_id`,
    );
    expect(got.length).toBeGreaterThan(20);
    expect(got.length).toBe(best.size);
    for (const g of got) {
      expect(best.get(g.wallet_id)).toEqual({ category: g.best_category, z: g.best_category_z, n: g.best_category_markets });
    }
    // per-category figures equal traderCalibration(scope category:<name>) for a few wallets
    const sample = await v.rows<{ wallet_id: number; category: string; n_markets: number; calibration_excess_z: number }>(
      `SELECT a.wallet_id, a.category, a.n_markets, a.calibration_excess_z FROM a_category a JOIN a_best_category b USING (wallet_id)
      ORDER BY b.best_category_markets DESC, a.wallet_id, a.category LIMIT 8`,
    );
    expect(sample.length).toBe(8);
    for (const s of sample) {
      const cal = (await traderCalibration(db, s.wallet_id, T, `category:${s.category}`))!;
      expect(cal.n_markets).toBe(s.n_markets);
      expect(cal.calibration_excess_z).toBeCloseTo(s.calibration_excess_z, 9);
    }
  });

  it('the style SQL is as of T: rows after T change nothing', async () => {
    const before = await v.rows(`SELECT * FROM (${walletStyleSql(T)}) ORDER BY wallet_id`);
    const after = await v.rows(`SELECT * FROM a_style ORDER BY wallet_id`);
    expect(after).toEqual(before);
    const earlier = new Date(T.getTime() - 5 * 86_400_000);
    const [e] = await v.rows<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM (${walletStyleSql(earlier)})`);
    const [l] = await v.rows<{ n: number }>(`SELECT count(DISTINCT wallet_id)::INTEGER AS n FROM fill_legs WHERE ts <= ${tsSql(earlier)}`);
    expect(e!.n).toBe(l!.n);
    expect(e!.n).toBeLessThan(after.length);
  });
});

function tsSql(t: Date): string {
  return `make_timestamp(${t.getTime() * 1000}::BIGINT)`;
}

// ---------------------------------------------------------------------------------------------------------------
// Hand-built venue: best category worked by hand
// ---------------------------------------------------------------------------------------------------------------

describe('best category on a hand-built venue', () => {
  let instance: DuckDBInstance;
  let conn: DuckDBConnection;
  let db: ColumnarRunner;
  const day = (d: number, h = 0) => Date.UTC(2026, 0, d, h);
  const ts = (ms: number) => `make_timestamp(${ms * 1000}::BIGINT)`;
  const T = new Date(day(20));
  // sports 1..12 resolve YES on Jan 3, sports 13 is void (INVALID) on Jan 3; politics 41..50 resolve YES on Jan 4;
  // crypto 21..32 resolve YES on Jan 5, crypto 33 never resolves
  const SPORTS = range(1, 12);
  const POLITICS = range(41, 50);
  const CRYPTO = range(21, 32);

  beforeAll(async () => {
    ({ instance, conn } = await openMemoryVenue());
    db = duckRunner(conn);
    for (const w of [1, 2, 3, 4, 5, 6, 7, 8, 99]) {
      await conn.run(`INSERT INTO wallets VALUES (${w}, '0x${String(w).padStart(40, '0')}', NULL, 'W-${w}', NULL, false)`);
    }
    const market = (m: number, category: string, liquidity = 10_000) =>
      conn.run(`${venueInsert('markets')} VALUES (${m}, '0x${String(m).padStart(64, '0')}', '0x${String(m).padStart(64, '0')}', NULL, 'Q${m}?', 'q${m}', '${category}',
        '${m}00', '${m}01', false, NULL, ${ts(day(1))}, ${ts(day(1))}, ${ts(day(30))}, NULL, ${liquidity}, 0, 'synthetic')`);
    const resolve = (m: number, winner: 'YES' | 'INVALID', t: number) =>
      conn.run(`${venueInsert('resolutions')} VALUES (${m}, '${winner}', ${winner === 'YES' ? 0 : -1}, ${winner === 'YES' ? '[1, 0]' : '[1, 1]'},
        ${winner === 'YES' ? 1 : 0.5}, ${winner === 'YES' ? 0 : 0.5}, 2, ${ts(t)}, '0x${String(m).padStart(64, 'f')}')`);
    for (const m of [...SPORTS, 13]) await market(m, 'sports');
    for (const m of POLITICS) await market(m, 'politics');
    for (const m of [...CRYPTO, 33]) await market(m, 'crypto');
    // culture 90..99 resolve YES on Jan 5 (longshots for wallet 8)
    for (const m of range(90, 99)) await market(m, 'culture');
    for (const m of range(90, 99)) await resolve(m, 'YES', day(5));
    // never resolved (no calibration input): economics 60..65 liquid, weather 70..80 thin (under $10,000)
    for (const m of range(60, 65)) await market(m, 'economics');
    for (const m of range(70, 80)) await market(m, 'weather', 5_000);
    for (const m of SPORTS) await resolve(m, 'YES', day(3));
    await resolve(13, 'INVALID', day(3));
    for (const m of POLITICS) await resolve(m, 'YES', day(4));
    for (const m of CRYPTO) await resolve(m, 'YES', day(5));
    let log = 0;
    // the wallet takes 100 shares of a token at 0.50; wallet 99 is the maker, minting (it buys the complement)
    const buy = (w: number, m: number, token: 'YES' | 'NO', t: number, price = 0.5) =>
      conn.run(`${venueInsert('fills')} VALUES ('0x${(++log).toString(16).padStart(64, '0')}', ${log}, ${ts(t)}, ${m}, ${token === 'YES' ? 0 : 1}, 99, ${w}, 'BUY', 'mint',
        ${price}, 100, ${price * 100}, 0, 1, 'ctf')`);
    // ... and sells 100 YES at 0.55 to wallet 99 (direct: the maker buys them)
    const sell = (w: number, m: number, t: number) =>
      conn.run(`${venueInsert('fills')} VALUES ('0x${(++log).toString(16).padStart(64, '0')}', ${log}, ${ts(t)}, ${m}, 0, 99, ${w}, 'SELL', 'direct',
        0.55, 100, 55, 0, 1, 'ctf')`);
    // a market list won on its first k and lost on the rest (all resolve YES: buying NO loses)
    const book = async (w: number, markets: number[], wins: number, t: number) => {
      for (const [i, m] of markets.entries()) await buy(w, m, i < wins ? 'YES' : 'NO', t);
    };
    // wallet 1: sports 8 of 10 (z = (5 - 8) / sqrt(10 * 0.25) = -1.897), the void sports 13 left out;
    //           crypto 9 of 12 (z = (6 - 9) / sqrt(3) = -1.732), the open crypto 33 left out;
    //           politics 9 of 9 (z = -4.5 / 1.5 = -3, the best z, but 9 < 10 markets)
    await book(1, SPORTS.slice(0, 10), 8, day(2));
    await buy(1, 13, 'YES', day(2));
    await book(1, CRYPTO, 9, day(2));
    await buy(1, 33, 'YES', day(2));
    await book(1, POLITICS.slice(0, 9), 9, day(2));
    // wallet 2: sports 6 of 12 and politics 5 of 10: both z = 0 exactly, sports has more markets
    await book(2, SPORTS, 6, day(2, 1));
    await book(2, POLITICS, 5, day(2, 1));
    // wallet 3: politics 5 of 10 and crypto 5 of 10 (z = 0, 10 markets each: the name decides, crypto);
    //           sports 3 of 10 (z = +1.265: eligible, but worse)
    await book(3, POLITICS, 5, day(2, 2));
    await book(3, CRYPTO.slice(0, 10), 5, day(2, 2));
    await book(3, SPORTS.slice(0, 10), 3, day(2, 2));
    // wallet 4: crypto 9 of 9: z = -3 but no eligible category, so no best-category row
    await book(4, CRYPTO.slice(0, 9), 9, day(2, 3));
    // wallet 5, a scalper: six round trips of 10 minutes; wallet 6 buys in 11 thin markets; wallet 7 only splits
    for (const m of range(60, 65)) {
      await buy(5, m, 'YES', day(6, m - 60));
      await sell(5, m, day(6, m - 60) + 600_000);
    }
    for (const m of range(70, 80)) await buy(6, m, 'YES', day(6));
    // ... and splits in market 70 after T: its two-sided share at T stays 0
    await conn.run(`${venueInsert('inventory_events')} VALUES ('0x${'d'.repeat(64)}', 0, ${ts(day(21))}, 6, 'SPLIT', 70, NULL, 10, -10)`);
    await conn.run(`INSERT INTO inventory_legs VALUES ('0x${'d'.repeat(64)}', 0, 6, 70, 0, 10), ('0x${'d'.repeat(64)}', 0, 6, 70, 1, 10)`);
    // wallet 8: politics 8 of 10 at 0.50 (z = -1.897, skew 0, deviate 1.897) and culture longshots, 3 of 10 at 0.10:
    //   z = (1 - 3) / sqrt(10 * 0.09) = -2.108 ranks first; its skew-corrected deviate (1.62) would not
    await book(8, POLITICS, 8, day(2, 4));
    for (const [i, m] of range(90, 99).entries()) await buy(8, m, i < 3 ? 'YES' : 'NO', day(2, 4), 0.1);
    await conn.run(`${venueInsert('inventory_events')} VALUES ('0x${'e'.repeat(64)}', 0, ${ts(day(7))}, 7, 'SPLIT', 60, NULL, 10, -10)`);
    await conn.run(`INSERT INTO inventory_legs VALUES ('0x${'e'.repeat(64)}', 0, 7, 60, 0, 10), ('0x${'e'.repeat(64)}', 0, 7, 60, 1, 10)`);
    await fullBuild(db, T, { rankings: false });
    await runStyleSteps(db, T);
  });
  afterAll(() => closeMemoryVenue(conn, instance));

  it('picks the most negative z among categories with >= 10 resolved markets; ties by markets, then name', async () => {
    const best = await db.all(`SELECT * FROM a_best_category ORDER BY wallet_id`);
    expect(best.filter((b) => b.wallet_id !== 99)).toEqual([
      { wallet_id: 1, best_category: 'sports', best_category_z: expect.closeTo(-3 / Math.sqrt(2.5), 12), best_category_markets: 10 },
      { wallet_id: 2, best_category: 'sports', best_category_z: 0, best_category_markets: 12 },
      { wallet_id: 3, best_category: 'crypto', best_category_z: 0, best_category_markets: 10 },
      { wallet_id: 8, best_category: 'culture', best_category_z: expect.closeTo(-2 / Math.sqrt(0.9), 12), best_category_markets: 10 },
    ]);
  });

  it('keeps every (wallet, category) row with its calibration and rank', async () => {
    const rows = await db.all(
      `SELECT wallet_id, category, n_positions, n_markets, calibration_excess_z, eligible, category_rank, best_category
      FROM a_category WHERE wallet_id <> 99 ORDER BY wallet_id, category`,
    );
    const z = (wins: number, n: number) => expect.closeTo((n / 2 - wins) / Math.sqrt(n / 4), 12);
    expect(rows).toEqual([
      { wallet_id: 1, category: 'crypto', n_positions: 12, n_markets: 12, calibration_excess_z: z(9, 12), eligible: true, category_rank: 2, best_category: 'sports' },
      { wallet_id: 1, category: 'politics', n_positions: 9, n_markets: 9, calibration_excess_z: z(9, 9), eligible: false, category_rank: null, best_category: 'sports' },
      { wallet_id: 1, category: 'sports', n_positions: 10, n_markets: 10, calibration_excess_z: z(8, 10), eligible: true, category_rank: 1, best_category: 'sports' },
      { wallet_id: 2, category: 'politics', n_positions: 10, n_markets: 10, calibration_excess_z: 0, eligible: true, category_rank: 2, best_category: 'sports' },
      { wallet_id: 2, category: 'sports', n_positions: 12, n_markets: 12, calibration_excess_z: 0, eligible: true, category_rank: 1, best_category: 'sports' },
      { wallet_id: 3, category: 'crypto', n_positions: 10, n_markets: 10, calibration_excess_z: 0, eligible: true, category_rank: 1, best_category: 'crypto' },
      { wallet_id: 3, category: 'politics', n_positions: 10, n_markets: 10, calibration_excess_z: 0, eligible: true, category_rank: 2, best_category: 'crypto' },
      { wallet_id: 3, category: 'sports', n_positions: 10, n_markets: 10, calibration_excess_z: z(3, 10), eligible: true, category_rank: 3, best_category: 'crypto' },
      { wallet_id: 4, category: 'crypto', n_positions: 9, n_markets: 9, calibration_excess_z: z(9, 9), eligible: false, category_rank: null, best_category: null },
      { wallet_id: 8, category: 'culture', n_positions: 10, n_markets: 10, calibration_excess_z: expect.closeTo(-2 / Math.sqrt(0.9), 12), eligible: true, category_rank: 1, best_category: 'culture' },
      { wallet_id: 8, category: 'politics', n_positions: 10, n_markets: 10, calibration_excess_z: z(8, 10), eligible: true, category_rank: 2, best_category: 'culture' },
    ]);
    // the maker bought both tokens of some markets: positions and distinct markets differ, and it is still one wallet
    const [mm] = await db.all<{ pos: number; mk: number }>(`SELECT sum(n_positions)::INTEGER AS pos, sum(n_markets)::INTEGER AS mk FROM a_category WHERE wallet_id = 99`);
    expect(mm!.pos).toBeGreaterThan(mm!.mk);
  });

  it('wallet 1 style by hand: 33 taker clips of $50, holds of 24 h (11), 48 h (9) and 72 h (12), one open', async () => {
    const [s] = await db.all(`SELECT * FROM a_style WHERE wallet_id = 1`);
    expect(s).toEqual({
      wallet_id: 1,
      n_fills: 33,
      taker_share: 1,
      median_clip_usd: 50,
      two_sided_share: 0,
      thin_fill_share: 0,
      n_closed_holds: 32,
      median_hold_hours: 48,
    });
    const [m] = await db.all(`SELECT * FROM a_style WHERE wallet_id = 99`);
    // the maker: every fill passive; it bought both tokens where wallets took opposite sides
    expect(m).toMatchObject({ n_fills: 33 + 22 + 30 + 9 + 12 + 11 + 20, taker_share: 0, median_clip_usd: 50 });
    const c = (await copyFitness(db, 1, T))!;
    expect(c.hold_time_hours).toMatchObject({ median: 48, n_closed: 32, n_open: 1 });
  });

  it('a_style and the verdict equal copyFitness() for every wallet: scalper, thin markets, maker, split only', async () => {
    const rows = await db.all<Record<string, unknown> & { wallet_id: number }>(
      `SELECT w.wallet_id, s.wallet_id IS NOT NULL AS has_style, m.* EXCLUDE (wallet_id), s.* EXCLUDE (wallet_id)
      FROM wallets w LEFT JOIN a_wallet_metrics m USING (wallet_id) LEFT JOIN a_style s USING (wallet_id) ORDER BY w.wallet_id`,
    );
    const flags: Record<number, string[]> = {};
    for (const row of rows) {
      const c = (await copyFitness(db, row.wallet_id, T))!;
      const msg = `wallet ${row.wallet_id}`;
      expect(row.has_style, msg).toBe(c.sample.n_fills > 0);
      if (row.has_style) {
        expect(row.n_fills, msg).toBe(c.sample.n_fills);
        expect(row.taker_share, msg).toBe(c.taker_share);
        expect(row.median_clip_usd, msg).toBe(c.clip_usd.p50);
        expect(row.thin_fill_share, msg).toBe(c.liquidity.thin_fill_share);
        expect(row.two_sided_share, msg).toBe(c.liquidity.two_sided_market_share);
        expect(row.n_closed_holds, msg).toBe(c.hold_time_hours.n_closed);
        expect(row.median_hold_hours, msg).toBe(c.hold_time_hours.median);
      }
      expect(verdictFor(verdictInputsFromRow(row)), msg).toEqual(c.verdict);
      flags[row.wallet_id] = c.copy_flags.map((f) => f.flag);
    }
    expect(rows.map((r) => r.wallet_id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 99]);
    // wallet 99 only makes, but in $50 clips and mostly one token per market: not a market maker by the rule
    expect(flags).toEqual({ 1: [], 2: [], 3: [], 4: [], 5: ['scalper'], 6: ['thin_markets'], 7: [], 8: [], 99: [] });
    const [s6] = await db.all(`SELECT two_sided_share, thin_fill_share FROM a_style WHERE wallet_id = 6`);
    expect(s6).toEqual({ two_sided_share: 0, thin_fill_share: 1 });
    const [d8] = await db.all<{ politics: number; culture: number }>(
      `SELECT max(skill_deviate) FILTER (WHERE category = 'politics') AS politics, max(skill_deviate) FILTER (WHERE category = 'culture') AS culture
      FROM a_category WHERE wallet_id = 8`,
    );
    expect(d8!.politics).toBeGreaterThan(d8!.culture);
    const [s5] = await db.all(`SELECT n_closed_holds, median_hold_hours FROM a_style WHERE wallet_id = 5`);
    expect(s5).toEqual({ n_closed_holds: 6, median_hold_hours: expect.closeTo(10 / 60, 12) });
  });
});

function range(a: number, b: number): number[] {
  return Array.from({ length: b - a + 1 }, (_, i) => a + i);
}

/**
 * Calibration (methodology "Calibration: forecasts implied by entries"): a hand-worked example through both the
 * TypeScript summary and the SQL path (positions -> calibration inputs -> per-wallet summary), the sample rule,
 * the percentile, scope parsing, and a property test against a brute-force recomputation.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CalibrationScope,
  MIN_RESOLVED_MARKETS,
  calibrationInputsSql,
  calibrationSummary,
  scopePredicate,
  skillDeviate,
  walletCalibrationSql,
  type CalibrationInput,
} from '../../core/calibration.ts';
import { positionsSql } from '../../core/positions.ts';
import { tsLiteral } from '../../core/query.ts';
import { queryRows } from '../../data/duckdb.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { venueInsert } from '../../data/schema.ts';

// ---------------------------------------------------------------------------------------------------------------
// A tiny hand-built venue
// ---------------------------------------------------------------------------------------------------------------

const DAY = 86_400_000;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const ts = (ms: number) => `make_timestamp(${Math.round(ms) * 1000}::BIGINT)`;

let instance: DuckDBInstance;
let conn: DuckDBConnection;
const rows = <T = Record<string, unknown>>(sql: string) => queryRows<T>(conn, sql);

async function insertMarket(id: number, category = 'politics') {
  const hex = id.toString(16).padStart(64, '0');
  await conn.run(`${venueInsert('markets')} VALUES (${id}, '0x${hex}', '0x${hex}', NULL, 'Q${id}?', 'q-${id}', '${category}',
    '${id * 2}', '${id * 2 + 1}', false, NULL, ${ts(T0 - DAY)}, ${ts(T0 - DAY)}, ${ts(T0 + 30 * DAY)}, NULL, NULL, NULL, 'test')`);
}

let fillSeq = 0;
/** A 'mint' fill: the taker buys `outcome` at `price`, the maker (wallet 99) buys the complement at 1 - price. */
async function insertBuy(wallet: number, market: number, outcome: 0 | 1, price: number, shares: number, at: number, maker = 99) {
  fillSeq++;
  await conn.run(`${venueInsert('fills')} VALUES ('0xf${fillSeq}', 0, ${ts(at)}, ${market}, ${outcome}, ${maker}, ${wallet}, 'BUY', 'mint',
    ${price}, ${shares}, ${price * shares}, 0, 2, 'ctf')`);
}
/** A 'merge' fill: the taker sells `outcome` at `price`, the maker (wallet 99) sells the complement. */
async function insertSell(wallet: number, market: number, outcome: 0 | 1, price: number, shares: number, at: number, maker = 99) {
  fillSeq++;
  await conn.run(`${venueInsert('fills')} VALUES ('0xf${fillSeq}', 0, ${ts(at)}, ${market}, ${outcome}, ${maker}, ${wallet}, 'SELL', 'merge',
    ${price}, ${shares}, ${price * shares}, 0, 2, 'ctf')`);
}

async function resolve(market: number, winner: 'YES' | 'NO' | 'INVALID', at: number) {
  const [num, py, pn, wi] = winner === 'YES' ? ['[1,0]', 1, 0, 0] : winner === 'NO' ? ['[0,1]', 0, 1, 1] : ['[1,1]', 0.5, 0.5, -1];
  await conn.run(`${venueInsert('resolutions')} VALUES (${market}, '${winner}', ${wi}, ${num}, ${py}, ${pn}, 2, ${ts(at)}, '0xr${market}')`);
}

async function split(wallet: number, market: number, amount: number, at: number) {
  const tx = `0xs${market}_${wallet}`;
  await conn.run(`${venueInsert('inventory_events')} VALUES ('${tx}', 0, ${ts(at)}, ${wallet}, 'SPLIT', ${market}, NULL, ${amount}, ${-amount})`);
  await conn.run(`INSERT INTO inventory_legs VALUES ('${tx}', 0, ${wallet}, ${market}, 0, ${amount}), ('${tx}', 0, ${wallet}, ${market}, 1, ${amount})`);
}

interface WalletCal {
  wallet_id: number;
  n_positions: number;
  n_markets: number;
  brier: number | null;
  calibration_excess: number | null;
  calibration_excess_z: number | null;
  calibration_skew: number | null;
  calibration_variance: number;
  skill_deviate: number | null;
  calibration_ranked: boolean;
  calibration_excess_z_pctile: number | null;
}

/** walletCalibrationSql over an inputs table of (wallet_id, market_id, p, o). */
async function sqlCalibration(inputs: string): Promise<Map<number, WalletCal>> {
  const out = await rows<WalletCal>(`SELECT * FROM (${walletCalibrationSql(inputs)}) ORDER BY wallet_id`);
  return new Map(out.map((r) => [r.wallet_id, r]));
}

async function loadInputs(table: string, data: readonly { wallet_id: number; market_id: number; p: number; o: number }[]) {
  await conn.run(`CREATE OR REPLACE TABLE ${table} (wallet_id INTEGER, market_id INTEGER, p DOUBLE, o INTEGER)`);
  if (!data.length) return;
  // chunked VALUES; doubles printed with full precision (JS shortest round-trip repr)
  for (let i = 0; i < data.length; i += 500) {
    const chunk = data.slice(i, i + 500).map((r) => `(${r.wallet_id}, ${r.market_id}, '${r.p}'::DOUBLE, ${r.o})`);
    await conn.run(`${venueInsert(table)} VALUES ${chunk.join(',')}`);
  }
}

beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
});
afterAll(() => {
  closeMemoryVenue(conn, instance);
});

// ---------------------------------------------------------------------------------------------------------------
// The hand-worked example
// ---------------------------------------------------------------------------------------------------------------
//
// Four resolved positions of one wallet, entry price p and outcome o:
//   market 1: p = 0.20, won  (o = 1)   p - o = -0.80   (p - o)^2 = 0.6400   p(1-p) = 0.1600
//   market 2: p = 0.70, lost (o = 0)   p - o = +0.70   (p - o)^2 = 0.4900   p(1-p) = 0.2100
//   market 3: p = 0.95, won  (o = 1)   p - o = -0.05   (p - o)^2 = 0.0025   p(1-p) = 0.0475
//   market 4: p = 0.05, lost (o = 0)   p - o = +0.05   (p - o)^2 = 0.0025   p(1-p) = 0.0475
//                                       sum  = -0.10          sum = 1.1350          sum = 0.4650
// Brier = 1.135 / 4 = 0.28375; excess = -0.10 / 4 = -0.025 (better than the prices implied);
// z = -0.10 / sqrt(0.465) = -0.10 / 0.681909... = -0.146647...
// Skew of sum(o - p) under the null: sum p(1-p)(1-2p) / (sum p(1-p))^1.5
//   = (0.16 * 0.6 + 0.21 * -0.4 + 0.0475 * -0.9 + 0.0475 * 0.9) / 0.465^1.5 = (0.096 - 0.084) / 0.317088... = 0.037844...
// Skill deviate (Cornish-Fisher): s = -z = 0.146647; w = s - skew (s^2 - 1) / 6 = 0.146647 + 0.037844 * 0.978495 / 6
//   = 0.152819...
// Bins: 0.05 -> bin 0 ('0-10%'), 0.20 -> bin 2, 0.70 -> bin 7, 0.95 -> bin 9; bins 1, 3, 4, 5, 6, 8 empty.
const HAND: CalibrationInput[] = [
  { p: 0.2, o: 1, market_id: 1 },
  { p: 0.7, o: 0, market_id: 2 },
  { p: 0.95, o: 1, market_id: 3 },
  { p: 0.05, o: 0, market_id: 4 },
];
const HAND_BRIER = 1.135 / 4;
const HAND_EXCESS = -0.1 / 4;
const HAND_Z = -0.1 / Math.sqrt(0.465);
const HAND_SKEW = 0.012 / 0.465 ** 1.5;
const HAND_DEVIATE = -HAND_Z - (HAND_SKEW * (HAND_Z * HAND_Z - 1)) / 6;

describe('calibration: hand-worked example', () => {
  it('calibrationSummary: Brier, excess, z, bins', () => {
    const s = calibrationSummary(HAND);
    expect(s.n_positions).toBe(4);
    expect(s.n_markets).toBe(4);
    expect(s.brier).toBeCloseTo(0.28375, 12);
    expect(s.calibration_excess).toBeCloseTo(-0.025, 12);
    expect(s.calibration_excess_z).toBeCloseTo(-0.14664711502135327, 12);
    expect(s.calibration_excess_z).toBeCloseTo(HAND_Z, 12);
    expect(s.calibration_skew).toBeCloseTo(0.0378443, 6);
    expect(s.calibration_skew).toBeCloseTo(HAND_SKEW, 12);
    expect(skillDeviate(s.calibration_excess_z, s.calibration_skew)).toBeCloseTo(0.152819, 5);
    expect(skillDeviate(s.calibration_excess_z, s.calibration_skew)).toBeCloseTo(HAND_DEVIATE, 12);
    expect(s.ranked).toBe(false); // 4 markets < 30

    expect(s.bins).toHaveLength(10);
    expect(s.bins.map((b) => b.bin_label)).toEqual(['0-10%', '10-20%', '20-30%', '30-40%', '40-50%', '50-60%', '60-70%', '70-80%', '80-90%', '90-100%']);
    expect(s.bins.map((b) => b.bin_idx)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(s.bins.map((b) => b.n)).toEqual([1, 0, 1, 0, 0, 0, 0, 1, 0, 1]);
    expect(s.bins[0]).toMatchObject({ predicted_mean: 0.05, observed_rate: 0, n: 1 });
    expect(s.bins[2]).toMatchObject({ predicted_mean: 0.2, observed_rate: 1, n: 1 });
    expect(s.bins[7]).toMatchObject({ predicted_mean: 0.7, observed_rate: 0, n: 1 });
    expect(s.bins[9]).toMatchObject({ predicted_mean: 0.95, observed_rate: 1, n: 1 });
    for (const i of [1, 3, 4, 5, 6, 8]) expect(s.bins[i]).toEqual({ bin_idx: i, bin_label: `${i * 10}-${i * 10 + 10}%`, predicted_mean: null, observed_rate: null, n: 0 });
    // n_total = sum of n
    expect(s.bins.reduce((a, b) => a + b.n, 0)).toBe(4);
  });

  it('bin edges: 0.1 opens bin 1, 1.0 closes bin 9, several positions in one bin average', () => {
    const s = calibrationSummary([
      { p: 0.1, o: 1, market_id: 1 },
      { p: 1.0, o: 1, market_id: 2 },
      { p: 0.9, o: 0, market_id: 3 },
      { p: 0.0999, o: 0, market_id: 4 },
      { p: 0.3, o: 1, market_id: 5 },
      { p: 0.35, o: 0, market_id: 6 },
    ]);
    expect(s.bins[0]!.n).toBe(1); // 0.0999
    expect(s.bins[1]!.n).toBe(1); // 0.1
    expect(s.bins[3]).toMatchObject({ n: 2, observed_rate: 0.5 }); // 0.3, 0.35
    expect(s.bins[3]!.predicted_mean).toBeCloseTo(0.325, 12);
    expect(s.bins[9]).toMatchObject({ n: 2, observed_rate: 0.5 }); // 0.9 and 1.0
    expect(s.bins[9]!.predicted_mean).toBeCloseTo(0.95, 12);
  });

  it('no rows: everything null, 10 empty bins, unranked', () => {
    const s = calibrationSummary([]);
    expect(s).toMatchObject({ n_positions: 0, n_markets: 0, brier: null, calibration_excess: null, calibration_excess_z: null, calibration_skew: null, ranked: false });
    expect(skillDeviate(null, null)).toBeNull();
    expect(skillDeviate(-3, null)).toBe(3); // no skew: the deviate is -z
    expect(s.bins.map((b) => b.n)).toEqual(Array(10).fill(0));
    expect(s.bins.every((b) => b.observed_rate === null && b.predicted_mean === null)).toBe(true);
  });

  it('the SQL path (positions -> inputs -> wallet summary) over a hand-built venue', async () => {
    const t = (d: number) => T0 + d * DAY;
    for (let m = 1; m <= 10; m++) await insertMarket(m, m <= 5 ? 'politics' : 'sports');
    // wallet 1: the four hand-worked positions, bought as a taker in 'mint' fills (the maker, wallet 99, buys the
    // complement at 1 - p). Market 2 is bought in two clips and partly sold: the share-weighted buy price is
    // (100 * 0.6 + 300 * 0.7333...) / 400 = (60 + 220) / 400 = 0.70; sells do not move the entry price.
    await insertBuy(1, 1, 0, 0.2, 100, t(1));
    await insertBuy(1, 2, 0, 0.6, 100, t(1));
    await insertBuy(1, 2, 0, 220 / 300, 300, t(2));
    await insertSell(1, 2, 0, 0.9, 50, t(3));
    await insertBuy(1, 3, 1, 0.95, 10, t(1)); // the NO token of market 3, which resolves NO: won
    await insertBuy(1, 4, 0, 0.05, 1000, t(1));
    // excluded: market 5 resolves INVALID (void); market 6 only split-acquired (no buy); market 7 never resolves;
    // market 8 resolves after T.
    await insertBuy(1, 5, 0, 0.5, 100, t(1));
    await split(1, 6, 100, t(1));
    await insertBuy(1, 7, 0, 0.3, 100, t(1));
    await insertBuy(1, 8, 0, 0.3, 100, t(1));
    await resolve(1, 'YES', t(5));
    await resolve(2, 'NO', t(5));
    await resolve(3, 'NO', t(5));
    await resolve(4, 'NO', t(5));
    await resolve(5, 'INVALID', t(5));
    await resolve(6, 'YES', t(5));
    await resolve(8, 'YES', t(20));
    const T = new Date(t(10));
    await conn.run(`CREATE OR REPLACE TABLE pos AS ${positionsSql(T)}`);

    const inputs = await rows<{ wallet_id: number; market_id: number; outcome_index: number; p: number; o: number }>(
      `SELECT * FROM (${calibrationInputsSql('pos')}) WHERE wallet_id = 1 ORDER BY market_id`,
    );
    expect(inputs.map((r) => r.market_id)).toEqual([1, 2, 3, 4]);
    expect(inputs.map((r) => r.o)).toEqual([1, 0, 1, 0]);
    expect(inputs.map((r) => r.outcome_index)).toEqual([0, 0, 1, 0]);
    inputs.forEach((r, i) => expect(r.p).toBeCloseTo(HAND[i]!.p, 12));

    const cal = await sqlCalibration(`(${calibrationInputsSql('pos')})`);
    const w1 = cal.get(1)!;
    expect(w1.n_positions).toBe(4);
    expect(w1.n_markets).toBe(4);
    expect(w1.brier).toBeCloseTo(HAND_BRIER, 12);
    expect(w1.calibration_excess).toBeCloseTo(HAND_EXCESS, 12);
    expect(w1.calibration_excess_z).toBeCloseTo(HAND_Z, 12);
    expect(w1.calibration_skew).toBeCloseTo(HAND_SKEW, 12);
    expect(w1.calibration_variance).toBeCloseTo(0.465, 12);
    expect(w1.skill_deviate).toBeCloseTo(HAND_DEVIATE, 12);
    expect(w1.calibration_ranked).toBe(false);
    expect(w1.calibration_excess_z_pctile).toBeNull();

    // The maker (wallet 99) bought every complement at 1 - p: its positions on markets 1-4 mirror wallet 1's,
    // (p - o) flips sign so excess = +0.025, z = +0.1 / sqrt(0.465); Brier is unchanged ((1-p) - (1-o))^2 = (p-o)^2.
    // Its market-2 complement: 100 at 0.4 and 300 at 1 - 0.7333 = 0.2667 -> (40 + 80) / 400 = 0.30. Markets 5
    // (void) and 7, 8 (unresolved at T) are excluded for it too.
    const w99 = cal.get(99)!;
    expect(w99.n_positions).toBe(4);
    expect(w99.brier).toBeCloseTo(HAND_BRIER, 12);
    expect(w99.calibration_excess).toBeCloseTo(-HAND_EXCESS, 12);
    expect(w99.calibration_excess_z).toBeCloseTo(-HAND_Z, 12);
    // p -> 1 - p flips the sign of (1 - 2p): the skew flips too
    expect(w99.calibration_skew).toBeCloseTo(-HAND_SKEW, 12);
    expect(cal.size).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Sample rule and percentile
// ---------------------------------------------------------------------------------------------------------------

/** n distinct markets for one wallet, p = 0.5 each, `wins` of them won: z = (n/2 - wins) / sqrt(n/4). */
function walletRows(wallet: number, n: number, wins: number, marketBase = 0) {
  return Array.from({ length: n }, (_, i) => ({ wallet_id: wallet, market_id: marketBase + i, p: 0.5, o: (i < wins ? 1 : 0) as 0 | 1 }));
}

describe('calibration: the 30-resolved-markets rule and the percentile', () => {
  it(`fewer than ${MIN_RESOLVED_MARKETS} distinct markets: unranked, score kept, percentile null`, async () => {
    expect(MIN_RESOLVED_MARKETS).toBe(30);
    const data = [
      ...walletRows(1, 29, 25), // 29 markets: a great score, but unranked
      ...walletRows(2, 30, 10), // 30 markets: ranked
      // wallet 3: 40 positions (both tokens of 20 markets): only 20 distinct markets -> unranked
      ...Array.from({ length: 40 }, (_, i) => ({ wallet_id: 3, market_id: i % 20, p: 0.5, o: i < 20 ? 1 : 0 })),
    ];
    await loadInputs('cal_rule', data);
    const cal = await sqlCalibration('cal_rule');
    expect(cal.get(1)).toMatchObject({ n_markets: 29, calibration_ranked: false, calibration_excess_z_pctile: null });
    expect(cal.get(1)!.calibration_excess_z).toBeCloseTo((14.5 - 25) / Math.sqrt(29 / 4), 12);
    expect(cal.get(2)).toMatchObject({ n_markets: 30, calibration_ranked: true, calibration_excess_z_pctile: 100 }); // lone ranked wallet
    expect(cal.get(3)).toMatchObject({ n_positions: 40, n_markets: 20, calibration_ranked: false, calibration_excess_z_pctile: null });

    // the TS summary agrees on the rule
    expect(calibrationSummary(walletRows(1, 29, 25)).ranked).toBe(false);
    expect(calibrationSummary(walletRows(2, 30, 10)).ranked).toBe(true);
    expect(calibrationSummary(data.filter((r) => r.wallet_id === 3).map((r) => ({ ...r, o: r.o as 0 | 1 }))).ranked).toBe(false);
  });

  it('percentile among ranked wallets: most negative z -> 100, worst -> 0, ties share, unranked ignored', async () => {
    // z per wallet = (15 - wins) / sqrt(7.5) over 30 markets at p = 0.5
    const data = [
      ...walletRows(10, 30, 25), // z = -10/2.739 (best)
      ...walletRows(11, 30, 20),
      ...walletRows(12, 30, 20), // tie with 11
      ...walletRows(13, 30, 15), // z = 0
      ...walletRows(14, 30, 5), // worst
      ...walletRows(15, 10, 10), // unranked, even better z: must not take a rank
    ];
    await loadInputs('cal_pct', data);
    const cal = await sqlCalibration('cal_pct');
    // percent_rank over 5 ranked wallets ordered by z ascending: ranks 1, 2, 2, 4, 5 -> (r-1)/4 = 0, .25, .25, .75, 1
    expect(cal.get(10)!.calibration_excess_z_pctile).toBeCloseTo(100, 12);
    expect(cal.get(11)!.calibration_excess_z_pctile).toBeCloseTo(75, 12);
    expect(cal.get(12)!.calibration_excess_z_pctile).toBeCloseTo(75, 12);
    expect(cal.get(13)!.calibration_excess_z_pctile).toBeCloseTo(25, 12);
    expect(cal.get(14)!.calibration_excess_z_pctile).toBeCloseTo(0, 12);
    expect(cal.get(15)!.calibration_excess_z_pctile).toBeNull();
    expect(cal.get(15)!.calibration_ranked).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Scope parsing
// ---------------------------------------------------------------------------------------------------------------

describe('CalibrationScope', () => {
  it('defaults to all and accepts the trailing windows', () => {
    expect(CalibrationScope.parse(undefined)).toBe('all');
    for (const s of ['all', '30d', '90d', '365d']) expect(CalibrationScope.parse(s)).toBe(s);
  });
  it('normalises case and whitespace', () => {
    expect(CalibrationScope.parse('  ALL ')).toBe('all');
    expect(CalibrationScope.parse('90D')).toBe('90d');
    expect(CalibrationScope.parse(' Category:Sports\t')).toBe('category:sports');
    expect(CalibrationScope.parse('category:science_tech')).toBe('category:science_tech');
  });
  it('rejects unknown windows, empty categories and injection attempts', () => {
    for (const bad of ['', ' ', 'category:', 'category: ', 'category:1abc', '7d', '0d', '30 d', 'all;', 'sports', 'category:x\' OR 1=1', "category:x'--",
      'category:a b', 'category:' + 'a'.repeat(41), 'category:sports;drop table markets', 'category:pop-culture']) {
      expect(CalibrationScope.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
    expect(CalibrationScope.safeParse(30).success).toBe(false);
  });
  it('scopePredicate: the SQL of each parsed scope', () => {
    const T = tsLiteral(new Date(T0));
    expect(scopePredicate(CalibrationScope.parse(undefined), T)).toBe('true');
    expect(scopePredicate(CalibrationScope.parse('90D'), T)).toBe(`r.resolved_at > ${T} - INTERVAL 90 DAY`);
    expect(scopePredicate(CalibrationScope.parse(' Category:Science_Tech '), T)).toBe(`m.category = 'science_tech'`);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Property: TS summary = brute force = SQL
// ---------------------------------------------------------------------------------------------------------------

/** Brute force, written independently: bins by interval membership, sums by definition. */
function bruteForce(rs: readonly CalibrationInput[]) {
  const n = rs.length;
  const mean = (f: (r: CalibrationInput) => number) => (n ? rs.map(f).reduce((a, b) => a + b, 0) / n : null);
  const sumDiff = rs.map((r) => r.p - r.o).reduce((a, b) => a + b, 0);
  const sumVar = rs.map((r) => r.p * (1 - r.p)).reduce((a, b) => a + b, 0);
  const bins = Array.from({ length: 10 }, (_, i) => {
    const inBin = rs.filter((r) => r.p >= i / 10 && (i === 9 ? r.p <= 1 : r.p < (i + 1) / 10));
    return {
      bin_idx: i,
      n: inBin.length,
      predicted_mean: inBin.length ? inBin.reduce((a, r) => a + r.p, 0) / inBin.length : null,
      observed_rate: inBin.length ? inBin.reduce((a, r) => a + r.o, 0) / inBin.length : null,
    };
  });
  const markets = new Set(rs.map((r) => r.market_id)).size;
  const sumThird = rs.map((r) => r.p * (1 - r.p) * (1 - 2 * r.p)).reduce((a, b) => a + b, 0);
  return {
    n_positions: n,
    n_markets: markets,
    brier: mean((r) => (r.p - r.o) ** 2),
    calibration_excess: mean((r) => r.p - r.o),
    calibration_excess_z: n ? sumDiff / Math.sqrt(sumVar) : null,
    calibration_skew: n ? sumThird / sumVar / Math.sqrt(sumVar) : null,
    ranked: markets >= 30,
    bins,
  };
}

const close = (a: number | null, b: number | null, tol = 1e-9) => {
  if (a === null || b === null) return a === b;
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b));
};

// p inside (0,1) as an entry price can be (an average of tick prices >= 0.001; at 1e-300 the skew's
// (sum p(1-p))^1.5 underflows), biased to hit the bin edges now and then
const pArb = fc.oneof(
  { weight: 4, arbitrary: fc.double({ min: 1e-4, max: 1 - 1e-4, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.05, 0.95, 0.999, 0.001) },
);
const rowArb = fc.record({ p: pArb, o: fc.constantFrom<0 | 1>(0, 1), market_id: fc.integer({ min: 1, max: 45 }) });
const walletsArb = fc.array(fc.array(rowArb, { minLength: 1, maxLength: 50 }), { minLength: 1, maxLength: 6 });

describe('calibration: property tests', () => {
  it('calibrationSummary equals a brute-force recomputation; bin n sum to n_positions', () => {
    fc.assert(
      fc.property(fc.array(rowArb, { maxLength: 80 }), (rs) => {
        const s = calibrationSummary(rs);
        const b = bruteForce(rs);
        expect(s.n_positions).toBe(b.n_positions);
        expect(s.n_markets).toBe(b.n_markets);
        expect(s.ranked).toBe(b.ranked);
        expect(close(s.brier, b.brier)).toBe(true);
        expect(close(s.calibration_excess, b.calibration_excess)).toBe(true);
        expect(close(s.calibration_excess_z, b.calibration_excess_z)).toBe(true);
        expect(close(s.calibration_skew, b.calibration_skew)).toBe(true);
        expect(s.bins.map((x) => x.n)).toEqual(b.bins.map((x) => x.n));
        expect(s.bins.reduce((a, x) => a + x.n, 0)).toBe(s.n_positions);
        s.bins.forEach((x, i) => {
          expect(close(x.predicted_mean, b.bins[i]!.predicted_mean)).toBe(true);
          expect(close(x.observed_rate, b.bins[i]!.observed_rate)).toBe(true);
          if (x.n) expect(x.predicted_mean!).toBeGreaterThanOrEqual(i / 10 - 1e-12);
        });
        // excess is a mean of values in (-1, 1); Brier of values in [0, 1)
        if (s.n_positions) {
          expect(Math.abs(s.calibration_excess!)).toBeLessThanOrEqual(1);
          expect(s.brier!).toBeGreaterThanOrEqual(0);
          expect(s.brier!).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('walletCalibrationSql agrees with calibrationSummary per wallet (and on the percentile)', async () => {
    await fc.assert(
      fc.asyncProperty(walletsArb, async (wallets) => {
        const data = wallets.flatMap((rs, w) => rs.map((r) => ({ wallet_id: w + 1, ...r })));
        await loadInputs('cal_prop', data);
        const cal = await sqlCalibration('cal_prop');
        expect(cal.size).toBe(wallets.length);
        const sums = wallets.map((rs) => calibrationSummary(rs));
        sums.forEach((s, w) => {
          const q = cal.get(w + 1)!;
          expect(q.n_positions).toBe(s.n_positions);
          expect(q.n_markets).toBe(s.n_markets);
          expect(q.calibration_ranked).toBe(s.ranked);
          expect(close(q.brier, s.brier), `brier ${q.brier} ${s.brier}`).toBe(true);
          expect(close(q.calibration_excess, s.calibration_excess)).toBe(true);
          expect(close(q.calibration_excess_z, s.calibration_excess_z)).toBe(true);
          expect(close(q.calibration_skew, s.calibration_skew), `skew ${q.calibration_skew} ${s.calibration_skew}`).toBe(true);
          expect(close(q.skill_deviate, skillDeviate(s.calibration_excess_z, s.calibration_skew), 1e-8), `deviate ${q.skill_deviate}`).toBe(true);
        });
        // percentile: 100 * (1 - (rank - 1) / (N - 1)) over ranked wallets, rank by z ascending (ties share the
        // lowest rank); a lone ranked wallet reads 100. Skip the comparison on near-ties (float order may differ).
        const ranked = sums.map((s, w) => ({ w: w + 1, z: s.calibration_excess_z! })).filter((_, w) => sums[w]!.ranked);
        const zs = ranked.map((r) => r.z).sort((a, b) => a - b);
        const nearTie = zs.some((z, i) => i > 0 && z - zs[i - 1]! < 1e-9);
        for (const [w, q] of cal) {
          if (!q.calibration_ranked) {
            expect(q.calibration_excess_z_pctile).toBeNull();
            continue;
          }
          expect(q.calibration_excess_z_pctile).toBeGreaterThanOrEqual(0);
          expect(q.calibration_excess_z_pctile).toBeLessThanOrEqual(100);
          if (nearTie) continue;
          const z = ranked.find((r) => r.w === w)!.z;
          const below = ranked.filter((r) => r.z < z).length;
          const expected = ranked.length === 1 ? 100 : 100 * (1 - below / (ranked.length - 1));
          expect(q.calibration_excess_z_pctile!).toBeCloseTo(expected, 9);
        }
      }),
      { numRuns: 60 },
    );
  });
});

// keep the literal helper referenced so that tsLiteral and ts() stay in step (both microseconds since the epoch)
it('the test timestamp literal matches core tsLiteral', () => {
  expect(ts(T0)).toBe(tsLiteral(new Date(T0)));
});

/**
 * Smart-money tags (methodology "Smart-money tags"): every rule exactly at, just inside and just outside its
 * thresholds, nulls never tag, the sharp cutoff (Benjamini-Hochberg over the ranked wallets' skill deviates, never
 * below 2), and the SQL rules (tagsSql) agree with smartMoneyTags() on random inputs and cutoffs.
 */
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIN_RESOLVED_MARKETS } from '../../core/calibration.ts';
import { benjaminiHochbergCutoff, normalCdf } from '../../core/stats.ts';
import { SMART_MONEY_TAGS, TAG_RULES, sharpCutoff, sharpCutoffSteps, smartMoneyTags, tagsSql, type TagInputs } from '../../core/tags.ts';
import { openDuckDB, queryRows } from '../../data/duckdb.ts';

/** The neighbouring doubles, to probe a threshold from both sides. */
function nextUp(x: number): number {
  const f = new Float64Array([x]);
  const u = new BigInt64Array(f.buffer);
  if (x === 0) return Number.MIN_VALUE;
  u[0]! += x > 0 ? 1n : -1n;
  return f[0]!;
}
function nextDown(x: number): number {
  return -nextUp(-x);
}

/** Metrics that satisfy no rule: each test switches one rule on. */
const NONE: TagInputs = {
  trade_count: 0,
  median_fill_usdc: null,
  lifetime_volume_usdc: 0,
  calibration_ranked: false,
  skill_deviate: null,
  n_entry_positions: 0,
  taker_share: null,
  median_entry_age: null,
  n_buys: 0,
  contrarian_buy_share: null,
};
/** A cohort cutoff on skill_deviate for the sharp rule (sharpCutoff() of some cohort). */
const CUT = 2.5;
const WHALE: TagInputs = { ...NONE, trade_count: 10, median_fill_usdc: 2500, lifetime_volume_usdc: 50_000 };
const SHARP: TagInputs = { ...NONE, calibration_ranked: true, skill_deviate: CUT };
const EARLY: TagInputs = { ...NONE, n_entry_positions: 20, median_entry_age: 0.1, taker_share: 0.3 };
const CONTRA: TagInputs = { ...NONE, n_buys: 20, contrarian_buy_share: 0.5 };
const ALL: TagInputs = { ...WHALE, calibration_ranked: true, skill_deviate: CUT, n_entry_positions: 20, median_entry_age: 0.1, taker_share: 0.3, n_buys: 20, contrarian_buy_share: 0.5 };
const tags = (m: TagInputs, cut = CUT) => smartMoneyTags(m, cut);

describe('smartMoneyTags: rules at their edges', () => {
  it('the documented thresholds', () => {
    expect(TAG_RULES).toEqual({
      sharp: { minResolvedMarkets: 30, falseDiscoveryRate: 0.1, minDeviate: 2 },
      whale: { minTrades: 10, minMedianFillUsd: 2_500, minVolumeUsd: 50_000 },
      early_bird: { minPositions: 20, maxMedianEntryAge: 0.1, minTakerShare: 0.3 },
      contrarian: { minBuys: 20, minContrarianShare: 0.5, dropCents: 5 },
    });
    expect(TAG_RULES.sharp.minResolvedMarkets).toBe(MIN_RESOLVED_MARKETS);
    expect(SMART_MONEY_TAGS).toEqual(['whale', 'sharp', 'early_bird', 'contrarian']);
  });

  it('nothing tags nothing', () => {
    expect(tags(NONE)).toEqual([]);
  });

  it('whale: >= 10 trades, median fill >= $2,500, volume >= $50,000 (all three, inclusive)', () => {
    expect(tags(WHALE)).toEqual(['whale']);
    expect(tags({ ...WHALE, trade_count: 9 })).toEqual([]);
    expect(tags({ ...WHALE, median_fill_usdc: nextDown(2500) })).toEqual([]);
    expect(tags({ ...WHALE, median_fill_usdc: 2499.99 })).toEqual([]);
    expect(tags({ ...WHALE, median_fill_usdc: null })).toEqual([]);
    expect(tags({ ...WHALE, lifetime_volume_usdc: nextDown(50_000) })).toEqual([]);
    expect(tags({ ...WHALE, trade_count: 11, median_fill_usdc: nextUp(2500), lifetime_volume_usdc: 1e9 })).toEqual(['whale']);
  });

  it('sharp: ranked on calibration (>= 30 resolved markets) and skill_deviate >= the cohort cutoff', () => {
    expect(tags(SHARP)).toEqual(['sharp']);
    expect(tags({ ...SHARP, skill_deviate: nextDown(CUT) })).toEqual([]);
    expect(tags({ ...SHARP, skill_deviate: 9 })).toEqual(['sharp']);
    // a great deviate on too few markets is unranked: never sharp
    expect(tags({ ...SHARP, calibration_ranked: false, skill_deviate: 9 })).toEqual([]);
    expect(tags({ ...SHARP, skill_deviate: null })).toEqual([]);
    // no discovery in the cohort: the cutoff is +infinity and nobody is sharp
    expect(tags({ ...SHARP, skill_deviate: 1e300 }, Number.POSITIVE_INFINITY)).toEqual([]);
  });

  it('early_bird: >= 20 entered markets and median entry age <= 0.1 of the market life', () => {
    expect(tags(EARLY)).toEqual(['early_bird']);
    expect(tags({ ...EARLY, median_entry_age: 0 })).toEqual(['early_bird']);
    expect(tags({ ...EARLY, n_entry_positions: 19 })).toEqual([]);
    // a liquidity provider (mostly maker) quoting new markets is not an early bird
    expect(tags({ ...EARLY, taker_share: 0.29 })).toEqual([]);
    expect(tags({ ...EARLY, taker_share: null })).toEqual([]);
    expect(tags({ ...EARLY, median_entry_age: nextUp(0.1) })).toEqual([]);
    expect(tags({ ...EARLY, median_entry_age: null })).toEqual([]);
  });

  it('contrarian: >= 20 buys and a contrarian share >= 0.5', () => {
    expect(tags(CONTRA)).toEqual(['contrarian']);
    expect(tags({ ...CONTRA, contrarian_buy_share: 1 })).toEqual(['contrarian']);
    expect(tags({ ...CONTRA, n_buys: 19 })).toEqual([]);
    expect(tags({ ...CONTRA, contrarian_buy_share: nextDown(0.5) })).toEqual([]);
    expect(tags({ ...CONTRA, contrarian_buy_share: null })).toEqual([]);
  });

  it('tags combine, in the fixed order whale, sharp, early_bird, contrarian', () => {
    expect(tags(ALL)).toEqual(['whale', 'sharp', 'early_bird', 'contrarian']);
    expect(tags({ ...CONTRA, calibration_ranked: true, skill_deviate: 3 })).toEqual(['sharp', 'contrarian']);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The sharp cutoff: Benjamini-Hochberg at a 10% FDR over one-sided p-values 1 - Phi(w), never below 2
// ---------------------------------------------------------------------------------------------------------------

describe('sharpCutoff', () => {
  it('normalCdf is accurate to ~1e-7', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1)).toBeCloseTo(0.8413447461, 6);
    expect(normalCdf(-1)).toBeCloseTo(0.1586552539, 6);
    expect(normalCdf(1.959963985)).toBeCloseTo(0.975, 6);
    expect(normalCdf(3)).toBeCloseTo(0.9986501020, 6);
    expect(normalCdf(-4)).toBeCloseTo(3.167124e-5, 6);
  });

  it('Benjamini-Hochberg is a step-up rule (a later p-value under its line rescues the earlier ones)', () => {
    // m = 4, q = 0.1: lines k q / m = 0.025, 0.05, 0.075, 0.1 over sorted p = 0.001, 0.06, 0.07, 0.2. p(2) = 0.06 is above its line, p(3) = 0.07 is under
    // its own (p(4) = 0.2 is over): p(1..3) are discoveries, the cutoff is 0.07.
    expect(benjaminiHochbergCutoff([0.2, 0.001, 0.07, 0.06], 0.1)).toBe(0.07);
    expect(benjaminiHochbergCutoff([0.2, 0.3], 0.1)).toBeNull();
    expect(benjaminiHochbergCutoff([], 0.1)).toBeNull();
    expect(benjaminiHochbergCutoff([0.1], 0.1)).toBe(0.1); // p(1) <= 1 * q / 1, inclusive
  });

  it('hand-worked cohort: the smallest discovered deviate', () => {
    // deviates 4, 3, 2.5, 1, 0.5, 0, -1 -> p = 1 - Phi(w) = 3.2e-5, 1.35e-3, 6.21e-3, 0.159, 0.309, 0.5, 0.841
    // m = 7, lines k * 0.1 / 7 = 0.0143, 0.0286, 0.0429, 0.0571, ...: p(1..3) under, p(4..7) over -> cutoff w = 2.5
    expect(sharpCutoff([1, 4, -1, 2.5, 0, 3, 0.5])).toBe(2.5);
  });

  it('never below 2 standard errors', () => {
    // 20 wallets at w = 5 and one at 1.9 (p = 0.0287 <= 21 * 0.1 / 21 = 0.1): all are discoveries, but the cutoff
    // is clamped to 2
    expect(sharpCutoff([...Array(20).fill(5), 1.9])).toBe(2);
  });

  it('no ranked wallet, or no discovery: +infinity (nobody is sharp)', () => {
    expect(sharpCutoff([])).toBe(Number.POSITIVE_INFINITY);
    expect(sharpCutoff([0, 0.5, 1, -2, 1.5])).toBe(Number.POSITIVE_INFINITY);
  });

  it('property: the cutoff is >= 2, a deviate of the cohort (or +infinity), and its holder is a discovery', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -5, max: 8, noNaN: true }), { maxLength: 200 }), (ds) => {
        const c = sharpCutoff(ds);
        if (c === Number.POSITIVE_INFINITY) return;
        expect(c).toBeGreaterThanOrEqual(2);
        if (c > 2) expect(ds).toContain(c);
        // brute-force BH: the number of discoveries k* is the largest k with p(k) <= k q / m
        const ps = ds.map((w) => 1 - normalCdf(w)).sort((a, b) => a - b);
        let k = 0;
        ps.forEach((p, i) => {
          if (p <= ((i + 1) * 0.1) / ps.length) k = i + 1;
        });
        expect(k).toBeGreaterThan(0);
        // every deviate at or above the cutoff is among the k* discoveries
        expect(ds.filter((w) => w >= c).length).toBeLessThanOrEqual(k);
      }),
      { numRuns: 300 },
    );
  });

  it('in steps (slices of 3 deviates) it is the same cutoff, a step per slice', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -5, max: 8, noNaN: true }), { maxLength: 60 }), (ds) => {
        const steps = sharpCutoffSteps(ds, 3);
        let n = 0;
        let r = steps.next();
        for (; !r.done; r = steps.next()) n++;
        expect(r.value).toBe(sharpCutoff(ds));
        expect(n).toBeGreaterThanOrEqual(Math.ceil(ds.length / 3));
      }),
      { numRuns: 200 },
    );
    // Float64Array deviates as well as arrays
    expect(sharpCutoff(Float64Array.of(1, 4, -1, 2.5, 0, 3, 0.5))).toBe(2.5);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// SQL = TypeScript
// ---------------------------------------------------------------------------------------------------------------

let instance: DuckDBInstance;
let conn: DuckDBConnection;
beforeAll(async () => {
  ({ instance, conn } = await openDuckDB({ path: ':memory:', threads: 1 }));
});
afterAll(() => {
  conn?.closeSync();
  instance?.closeSync();
});

const dbl = (x: number | null) => (x === null ? 'NULL' : `'${x}'::DOUBLE`); // exact (a bare literal would be a DECIMAL)

/** tagsSql(cut) evaluated over typed rows of the wallet-metrics columns it reads. */
async function sqlTags(inputs: readonly TagInputs[], cut: number): Promise<string[][]> {
  await conn.run(`CREATE OR REPLACE TABLE m (id INTEGER, trade_count INTEGER, median_fill_usdc DOUBLE, lifetime_volume_usdc DOUBLE,
    calibration_ranked BOOLEAN, skill_deviate DOUBLE, n_entry_positions INTEGER, taker_share DOUBLE, median_entry_age DOUBLE, n_buys INTEGER,
    contrarian_buy_share DOUBLE)`);
  const values = inputs.map(
    (r, i) =>
      `(${i}, ${r.trade_count}, ${dbl(r.median_fill_usdc)}, ${dbl(r.lifetime_volume_usdc)}, ${r.calibration_ranked}, ${dbl(r.skill_deviate)},
        ${r.n_entry_positions}, ${dbl(r.taker_share)}, ${dbl(r.median_entry_age)}, ${r.n_buys}, ${dbl(r.contrarian_buy_share)})`,
  );
  await conn.run(`INSERT INTO m VALUES ${values.join(',')}`);
  const rows = await queryRows<{ tags: string[] }>(conn, `SELECT ${tagsSql(cut)} AS tags FROM m ORDER BY id`);
  return rows.map((r) => r.tags);
}

/** A value near a threshold (exactly on it, one ulp either side, a little either side) or anywhere in a range. */
function near(threshold: number, lo: number, hi: number): fc.Arbitrary<number> {
  return fc.oneof(
    fc.constantFrom(threshold, nextUp(threshold), nextDown(threshold), threshold + 0.01, threshold - 0.01),
    fc.double({ min: lo, max: hi, noNaN: true }),
  );
}
const nearInt = (threshold: number, hi: number) => fc.oneof(fc.constantFrom(threshold - 1, threshold, threshold + 1, 0), fc.integer({ min: 0, max: hi }));
const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 5 });

/** A cutoff as sharpCutoff() yields it (2, a deviate above 2 with any number of digits, or +infinity) and rows near it. */
const cohortArb = fc
  .oneof(fc.constant(2), fc.double({ min: 2, max: 8, noNaN: true }), fc.constant(Number.POSITIVE_INFINITY))
  .chain((cut) =>
    fc.tuple(
      fc.constant(cut),
      fc.array(
        fc.record({
          trade_count: nearInt(10, 1000),
          median_fill_usdc: orNull(near(2500, 0, 1e5)),
          lifetime_volume_usdc: near(50_000, 0, 1e7),
          calibration_ranked: fc.boolean(),
          skill_deviate: orNull(Number.isFinite(cut) ? near(cut, -10, 10) : fc.double({ min: -10, max: 1e6, noNaN: true })),
          n_entry_positions: nearInt(20, 500),
          taker_share: orNull(near(0.3, 0, 1)),
          median_entry_age: orNull(near(0.1, 0, 1)),
          n_buys: nearInt(20, 500),
          contrarian_buy_share: orNull(near(0.5, 0, 1)),
        }),
        { minLength: 1, maxLength: 60 },
      ),
    ),
  );

describe('tagsSql agrees with smartMoneyTags', () => {
  it('on the edge cases above', async () => {
    const cases: TagInputs[] = [
      NONE,
      WHALE,
      SHARP,
      EARLY,
      CONTRA,
      ALL,
      { ...WHALE, median_fill_usdc: nextDown(2500) },
      { ...WHALE, median_fill_usdc: null },
      { ...SHARP, skill_deviate: nextDown(CUT) },
      { ...SHARP, calibration_ranked: false },
      { ...EARLY, median_entry_age: nextUp(0.1) },
      { ...CONTRA, contrarian_buy_share: nextDown(0.5) },
    ];
    expect(await sqlTags(cases, CUT)).toEqual(cases.map((c) => tags(c)));
  });

  it('when the cohort has no discovery (cutoff +infinity) the SQL still runs and tags nobody sharp', async () => {
    const cases = [ALL, { ...SHARP, skill_deviate: 1e300 }];
    expect(await sqlTags(cases, Number.POSITIVE_INFINITY)).toEqual([['whale', 'early_bird', 'contrarian'], []]);
  });

  it('a cutoff with 17 significant digits: the wallet that defines it keeps its tag in SQL', async () => {
    // sharpCutoff returns one of the cohort's own deviates; the SQL must compare against exactly that double
    for (const cut of [2.0000000000000004, 2.718281828459045, 3.3333333333333335, 7.999999999999999]) {
      expect(await sqlTags([{ ...SHARP, skill_deviate: cut }, { ...SHARP, skill_deviate: nextDown(cut) }], cut), String(cut)).toEqual([['sharp'], []]);
    }
  });

  it('on random inputs and cutoffs concentrated at the thresholds', async () => {
    await fc.assert(
      fc.asyncProperty(cohortArb, async ([cut, inputs]) => {
        expect(await sqlTags(inputs, cut)).toEqual(inputs.map((m) => tags(m, cut)));
      }),
      { numRuns: 120 },
    );
  });
});

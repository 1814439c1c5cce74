/**
 * The heavy wallets' median fill from a band of sizes around it (core/analytics/median-fill.ts): worked by hand, then
 * on random batches against DuckDB's median over every size (what a rebuild computes), with the band checked to be
 * the run of the sorted sizes it claims to be after every batch.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { FILL_BAND_DDL, addBandsSql, refreshBands, type FillBandRules } from '../../core/analytics/median-fill.ts';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { closeMemoryVenue, openMemoryVenue } from '../helpers/memory-venue.ts';
import { bandViolations } from '../helpers/fill-band.ts';

let instance: DuckDBInstance;
let conn: DuckDBConnection;
beforeAll(async () => {
  ({ instance, conn } = await openMemoryVenue());
});
afterAll(() => closeMemoryVenue(conn, instance));

/** The sizes seen (t_legs) and the batch just arrived (t_new), as a_legs' fill legs. */
async function reset(rules: FillBandRules, sizes: [number, number][]): Promise<void> {
  for (const t of ['t_legs', 't_new']) await conn.run(`CREATE OR REPLACE TABLE ${t} (wallet_id INTEGER, kind UTINYINT, size_usdc DOUBLE)`);
  for (const sql of FILL_BAND_DDL) await conn.run(sql);
  if (sizes.length) await conn.run(`INSERT INTO t_legs VALUES ${sizes.map(([w, v]) => `(${w}, 1, ${v})`).join(', ')}`);
  for (const sql of addBandsSql('(SELECT wallet_id, size_usdc FROM t_legs)', rules)) await conn.run(sql);
}

/** One refresh's median step: the banded wallets from their bands, the others from every size (then banded if heavy). */
async function arrive(rules: FillBandRules, sizes: [number, number][]): Promise<{ medians: Map<number, number>; banded: number; dropped: number }> {
  await conn.run(`DELETE FROM t_new`);
  if (sizes.length) await conn.run(`INSERT INTO t_new VALUES ${sizes.map(([w, v]) => `(${w}, ${w % 2 ? 1 : 2}, ${v})`).join(', ')}`);
  await conn.run(`INSERT INTO t_legs SELECT * FROM t_new`);
  await conn.run(`CREATE OR REPLACE TEMP TABLE t_scope AS SELECT DISTINCT wallet_id FROM t_legs`);
  const r = await refreshBands(duckRunner(conn), 't_scope', 't_new', rules);
  const medians = new Map<number, number>();
  for (const m of await queryRows<{ wallet_id: number; median_fill_usdc: number }>(conn, `SELECT * FROM band_median`)) medians.set(m.wallet_id, m.median_fill_usdc);
  const legWallets = `(SELECT wallet_id FROM t_scope EXCEPT SELECT wallet_id FROM band_median)`;
  for (const m of await queryRows<{ wallet_id: number; m: number }>(conn, `SELECT wallet_id, median(size_usdc) AS m FROM t_legs WHERE wallet_id IN ${legWallets} GROUP BY 1`)) {
    medians.set(m.wallet_id, m.m);
  }
  for (const sql of addBandsSql(`(SELECT wallet_id, size_usdc FROM t_legs WHERE wallet_id IN ${legWallets})`, rules)) await conn.run(sql);
  return { medians, ...r };
}

const band = async (w: number) => ({
  run: (await queryRows<{ v: number }>(conn, `SELECT size_usdc AS v FROM a_fill_band WHERE wallet_id = ${w} ORDER BY v`)).map((r) => r.v),
  counts: (await queryRows<{ below: number; above: number }>(conn, `SELECT below, above FROM a_fill_band_wallets WHERE wallet_id = ${w}`)).map((r) => [Number(r.below), Number(r.above)]),
});

it('keeps a run of the sorted sizes around the median, reads the median there, and drops the band when the median leaves it', async () => {
  const rules = { minLegs: 5, half: 1 };
  // wallet 1: 1..9 → ranks 3..5 kept (4, 5, 6), three below and three above; wallet 2: four sizes, under minLegs
  await reset(rules, [...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((v): [number, number] => [1, v]), [2, 1], [2, 2], [2, 3], [2, 4]]);
  expect(await band(1)).toEqual({ run: [4, 5, 6], counts: [[3, 3]] });
  expect(await band(2)).toEqual({ run: [], counts: [] });
  // 10 and 11 come above the run: N = 11, the median is rank 5 = the run's third value, 6
  let r = await arrive(rules, [
    [1, 10],
    [1, 11],
  ]);
  expect(r.medians.get(1)).toBe(6);
  expect(await band(1)).toEqual({ run: [5, 6], counts: [[4, 5]] }); // cut back to ranks 4..6 (5, 6; rank 6 = 7 was never in it)
  // 5.5 goes into the run (between 5 and 6): N = 12, ranks 5 and 6 → 5.5 and 6: 5.75
  r = await arrive(rules, [[1, 5.5]]);
  expect(r.medians.get(1)).toBe(5.75);
  expect(await band(1)).toEqual({ run: [5, 5.5, 6], counts: [[4, 5]] });
  // 12, 13, 14: N = 15, the median is rank 7 (7), past the run's end: dropped, read from every size, banded again
  r = await arrive(rules, [
    [1, 12],
    [1, 13],
    [1, 14],
  ]);
  expect(r.dropped).toBe(1);
  expect(r.medians.get(1)).toBe(7);
  expect(await band(1)).toEqual({ run: [6, 7, 8], counts: [[6, 6]] });
  // wallet 2 reaches five sizes: read from its sizes, then banded (ranks 1..3 of 1, 2, 3, 4, 100)
  r = await arrive(rules, [[2, 100]]);
  expect(r.medians.get(2)).toBe(3);
  expect(await band(2)).toEqual({ run: [2, 3, 4], counts: [[1, 1]] });
  expect(await bandViolations(conn, '(SELECT wallet_id, size_usdc FROM t_legs)')).toEqual([]);
});

describe('on random batches', () => {
  it('the medians equal DuckDB median over every size, and every band is the run of sizes it claims', async () => {
    const seen = { banded: 0, dropped: 0, made: 0 };
    // sizes from a small set (ties at the run's ends) or anywhere; batches lopsided at times (the median walks)
    const size = fc.oneof(fc.integer({ min: 1, max: 6 }), fc.double({ min: 0.01, max: 1000, noNaN: true }).map((x) => Math.round(x * 1e6) / 1e6));
    const batch = fc.array(fc.tuple(fc.integer({ min: 1, max: 4 }), size), { maxLength: 25 });
    await fc.assert(
      fc.asyncProperty(fc.record({ minLegs: fc.integer({ min: 1, max: 12 }), half: fc.integer({ min: 0, max: 4 }) }), batch, fc.array(batch, { minLength: 1, maxLength: 8 }), async (rules, first, batches) => {
        await reset(rules, first);
        for (const b of batches) {
          const r = await arrive(rules, b);
          seen.banded += r.banded;
          seen.dropped += r.dropped;
          const want = await queryRows<{ wallet_id: number; m: number }>(conn, `SELECT wallet_id, median(size_usdc) AS m FROM t_legs GROUP BY 1 ORDER BY 1`);
          expect(want.map((x) => [x.wallet_id, r.medians.get(x.wallet_id)])).toEqual(want.map((x) => [x.wallet_id, x.m]));
          expect(await bandViolations(conn, '(SELECT wallet_id, size_usdc FROM t_legs)')).toEqual([]);
          const [c] = await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM a_fill_band_wallets`);
          seen.made += Number(c!.n);
        }
      }),
      // a fixed seed: the coverage floors below are counts over random input (a clean-clone run drew 4 dropped bands
      // against the floor of 5); the assertions inside the property hold for any seed
      { numRuns: Number(process.env.BAND_RUNS ?? 40), seed: 20261128 },
    );
    // both paths are taken: medians read from bands, bands that lost their median
    expect(seen.banded).toBeGreaterThan(50);
    expect(seen.dropped).toBeGreaterThan(5);
  }, 600_000);
});

/**
 * The full build's a_legs sorted a range of wallets at a time (rangedLegsSql on a side connection), each range
 * streamed while the next one sorts, and its per-wallet tables written a range of wallets at a time: the same table,
 * in the same physical order, and the same analytics state as the one-statement sort and the whole-cohort statements
 * give.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fullBuild, legRanges } from '../../core/analytics/build.ts';
import type { ColumnarRunner } from '../../core/query.ts';
import { queryRows } from '../../data/duckdb.ts';
import { duckRunner } from '../../data/runner.ts';
import { compareStates, tableRows } from '../helpers/live-venue.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
const END = new Date('2026-11-01T00:00:00Z');
const RANGE_LEGS = 4000;

beforeAll(async () => {
  v = await makeVenue({ wallets: 1500, days: 30, seed: 9 });
});
afterAll(async () => v?.cleanup());

/** a_legs as stored (the order the build's stream reads it in). */
const storedLegs = () => queryRows(v.conn, `SELECT wallet_id, market_id, outcome_index, ts, log_index, kind, q, px, usdc, tx_hash, seq FROM a_legs`);

it('equals the one-statement build: a_legs in the same stored order, every analytics table', async () => {
  // the one-statement sort: no side connection
  await fullBuild(duckRunner(v.conn), END);
  const legsOnce = await storedLegs();
  const once = await tableRows(v.conn, 'memory');

  // a range of ~4k legs at a time, on a side connection
  const base = duckRunner(v.conn, v.instance);
  const [{ w }] = (await queryRows<{ w: number }>(v.conn, `SELECT max(seq) AS w FROM fills`)) as [{ w: number }];
  const ranges = await legRanges(base, Number(w), RANGE_LEGS);
  expect(ranges.length).toBeGreaterThan(5);
  // consecutive, covering every wallet id
  expect(ranges[0]![0]).toBe(-(2 ** 31));
  expect(ranges.at(-1)![1]).toBe(2 ** 31 - 1);
  for (let k = 1; k < ranges.length; k++) expect(ranges[k]![0]).toBe(ranges[k - 1]![1]);
  let sides = 0;
  const sideStatements: string[] = [];
  const mainStatements: string[] = [];
  const db: ColumnarRunner = {
    ...base,
    run: (sql, params) => {
      mainStatements.push(sql);
      return base.run(sql, params);
    },
    side: async () => {
      sides++;
      const s = await base.side!();
      return {
        run: (sql: string) => {
          sideStatements.push(sql);
          return s.run(sql);
        },
        close: () => s.close(),
      };
    },
  };
  // the per-wallet tables a range of ~4k legs' wallets at a time too
  await fullBuild(db, END, { legRangeLegs: RANGE_LEGS, walletRangeLegs: RANGE_LEGS });
  expect(sides).toBe(1);
  const walletRanges = mainStatements.filter((s) => s.startsWith('CREATE OR REPLACE TEMP TABLE median_fill'));
  expect(walletRanges.length).toBeGreaterThan(5);
  expect(walletRanges[0]).toContain(`wallet_id >= ${-(2 ** 31)} AND`);
  for (const table of ['a_features', 'a_alpha', 'a_pnl', 'a_calibration', 'a_style', 'a_category']) {
    expect(mainStatements.filter((s) => s.startsWith(`INSERT INTO ${table} SELECT`)).length).toBe(walletRanges.length - 1);
  }
  // every range sorted on the side, one statement each
  expect(sideStatements.filter((s) => s.startsWith('INSERT INTO a_legs')).length).toBe(ranges.length);
  expect(await storedLegs()).toEqual(legsOnce);
  expect(compareStates(await tableRows(v.conn, 'memory'), once)).toEqual([]);
}, 300_000);

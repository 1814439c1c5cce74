/**
 * A refresh rewrites a_wallet_metrics and a_rank_base row by row (core/analytics/cohort.ts refreshCohortSql,
 * core/rankings.ts refreshRankBase) for the rows metricsChangedSql / rankChangedSql list. At test scale the wallets
 * a moved sharp cutoff re-tags are dirty anyway, so the refresh property test cannot tell whether the cutoff's band
 * is in those lists. Here the cutoff moves alone (no wallet is dirty): the row-by-row tables must equal the tables
 * written whole at the new cutoff, and the move must have re-tagged wallets (the comparison has teeth).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { refreshCohortSql, writeCohortSql } from '../../core/analytics/cohort.ts';
import { metricsChangedSql, rankChangedSql } from '../../core/analytics/refresh.ts';
import { refreshRankBase, writeRankBase } from '../../core/rankings.ts';
import { duckRunner } from '../../data/runner.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

const T = new Date('2026-10-31T23:59:59Z');
let v: TestVenue;

beforeAll(async () => {
  v = await makeVenue({ wallets: 3000, days: 40, seed: 11 });
  await fullBuild(duckRunner(v.conn), T);
}, 300_000);
afterAll(async () => v?.cleanup());

/** Rows of `a` not in `b` plus rows of `b` not in `a` (0: the same multiset of rows, to the last bit). */
async function differing(a: string, b: string): Promise<number> {
  const [r] = await v.rows<{ n: number }>(`SELECT (SELECT count(*) FROM (SELECT * FROM ${a} EXCEPT ALL SELECT * FROM ${b})) + (SELECT count(*) FROM (SELECT * FROM ${b} EXCEPT ALL SELECT * FROM ${a})) AS n`);
  return Number(r!.n);
}

it('a cutoff that moves alone re-tags its band row by row, as a rewrite at the new cutoff does', async () => {
  const db = duckRunner(v.conn);
  const [m] = await v.rows<{ c: number | null }>(`SELECT sharp_min_deviate AS c FROM a_meta`);
  const before = m?.c === null || m?.c === undefined ? Number.POSITIVE_INFINITY : Number(m.c);
  // the new cutoff: the median ranked deviate, so that many wallets cross it (from no cutoff, or from the old one)
  const [med] = await v.rows<{ c: number }>(`SELECT median(skill_deviate) AS c FROM a_calibration WHERE calibration_ranked`);
  const after = Number(med!.c);
  expect(after).not.toBe(before);

  await v.conn.run('BEGIN TRANSACTION');
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE dirty_wallets (wallet_id INTEGER)`);
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE clusters_before AS SELECT * FROM a_clusters`);
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE tags_before AS SELECT wallet_id, smart_money_tags FROM a_wallet_metrics`);
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE metrics_changed AS ${metricsChangedSql(before, after)}`);
  for (const sql of refreshCohortSql(after, 'metrics_changed')) await v.conn.run(sql);
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE rank_changed AS ${rankChangedSql(before, after)}`);
  await refreshRankBase(db, 'rank_changed');
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE rowwise_metrics AS SELECT * FROM a_wallet_metrics`);
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE rowwise_pctiles AS SELECT * FROM a_wallet_pctiles`);
  await v.conn.run(`CREATE OR REPLACE TEMP TABLE rowwise_rank_base AS SELECT * FROM a_rank_base`);
  const [band] = await v.rows<{ n: number; retagged: number }>(`SELECT (SELECT count(*) FROM metrics_changed) AS n,
    (SELECT count(*) FROM tags_before b JOIN a_wallet_metrics m USING (wallet_id) WHERE b.smart_money_tags <> m.smart_money_tags) AS retagged`);
  // the same state written whole
  for (const sql of writeCohortSql(after)) await v.conn.run(sql);
  await writeRankBase(db);
  const diffs = {
    metrics: await differing('rowwise_metrics', 'a_wallet_metrics'),
    pctiles: await differing('rowwise_pctiles', 'a_wallet_pctiles'),
    rank_base: await differing('rowwise_rank_base', 'a_rank_base'),
  };
  await v.conn.run('ROLLBACK');
  expect(Number(band!.n)).toBeGreaterThan(10);
  expect(Number(band!.retagged)).toBeGreaterThan(10);
  expect(diffs).toEqual({ metrics: 0, pctiles: 0, rank_base: 0 });
}, 120_000);

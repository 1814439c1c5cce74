/**
 * Does the analytics recover the planted skill? At demo scale (the venue `npm start` builds: 100k wallets, 120 days)
 * the measured figures are compared with the generator's ground truth (data/analytics/validity.ts, also printed by
 * `npm run validate`). The floors below are what the current analytics reaches with margin; docs/methodology.md and
 * the issue notes record the figures and why the Spearman >= 0.8 over all ranked wallets is out of reach of any outcome-based
 * statistic on this population (the noise ceiling below).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { duckRunner } from '../../data/runner.ts';
import { validityReport, type ValidityReport } from '../../data/analytics/validity.ts';
import { DEMO_VENUE } from '../../data/generator/defaults.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
let report: ValidityReport;

beforeAll(async () => {
  v = await makeVenue({ wallets: DEMO_VENUE.wallets, days: DEMO_VENUE.days, seed: DEMO_VENUE.seed });
  await fullBuild(duckRunner(v.conn), new Date('2026-10-31T23:59:59Z'));
  report = await validityReport(duckRunner(v.conn));
  console.log(JSON.stringify(report));
}, 600_000);
afterAll(async () => v?.cleanup());

describe('validity at demo scale', () => {
  it('no planted favourite-buyer or noise trader in the top 100 of any forecasting preset', () => {
    const boards = Object.entries(report.forecasting_top100);
    expect(boards).toHaveLength(8);
    for (const [slug, b] of boards) {
      expect(b.rows, slug).toBeGreaterThan(0);
      expect(b.favourite_or_noise, slug).toBe(0);
    }
    // the sharpest board is mostly truly skilled wallets
    expect(report.forecasting_top100['sharp-forecasters']!.skilled).toBeGreaterThanOrEqual(75);
  });

  it('ranks skilled wallets above skill-less ones', () => {
    expect(report.ranked_wallets).toBeGreaterThan(3000);
    expect(report.auc_skilled_vs_zero!).toBeGreaterThan(0.8);
    expect(report.precision_at_100!).toBeGreaterThanOrEqual(0.9);
    // Over all ranked wallets the rank correlation is bounded by sampling noise (most ranked wallets have a few
    // dozen resolved markets and near-zero edge): an oracle holding each wallet's expected z plus unit noise reaches
    // about the same figure; the measured z must not fall short of that ceiling.
    expect(report.spearman_noise_ceiling!).toBeGreaterThan(0.3);
    expect(report.spearman_edge_vs_neg_z!).toBeGreaterThan(report.spearman_noise_ceiling! - 0.05);
  });

  it('favourite-buyers have a low Brier but no skill', () => {
    const f = report.favourite_buyers;
    expect(f.n).toBeGreaterThan(100);
    expect(f.mean_brier!).toBeLessThan(0.5 * f.mean_brier_others!);
    expect(Math.abs(f.mean_excess!)).toBeLessThan(0.05);
    // and none of them is tagged sharp in the top of the calibration ranking
    expect(report.precision_at_100!).toBeGreaterThanOrEqual(0.9);
  });

  it('tags: sharp precision >= 0.9 and recall >= 0.8 of the detectable; whale >= 0.9 / 0.8', () => {
    expect(report.tags.sharp!.precision!).toBeGreaterThanOrEqual(0.9);
    expect(report.tags.sharp_detectable!.recall!).toBeGreaterThanOrEqual(0.8);
    expect(report.tags.whale!.precision!).toBeGreaterThanOrEqual(0.9);
    expect(report.tags.whale!.recall!).toBeGreaterThanOrEqual(0.8);
    expect(report.tags.early_bird!.precision!).toBeGreaterThanOrEqual(0.85);
    expect(report.tags.contrarian!.precision!).toBeGreaterThanOrEqual(0.9);
  });
});

/**
 * Does the analytics recover the planted skill? Compares a_wallet_metrics with the generator's ground truth
 * (truth_wallets). Figures follow methodology.md "Validity": the rank correlation the issue asks for, plus the
 * figures that are not capped by ties at zero skill (AUC, within-skilled correlation, precision at K), favourite-
 * buyers' Brier versus excess, and precision / recall of the smart-money tags.
 */
import type { QueryRunner } from '../../core/query.ts';
import { PRESETS } from '../../core/rankings.ts';

/** True skill threshold: expected edge per resolved position of at least 2 cents. */
export const SKILLED_EDGE = 0.02;
export const ZERO_SKILL_BAND = 0.01;

export interface ValidityReport {
  ranked_wallets: number;
  spearman_edge_vs_neg_z: number | null;
  /**
   * The same correlation for an oracle statistic: each wallet's expected -z (its planted edge at its own sample)
   * plus one unit of sampling noise, the noise any z carries under the null. No statistic computed from outcomes
   * ranks much better than this, so it is the ceiling the measured figure is judged against.
   */
  spearman_noise_ceiling: number | null;
  skilled_ranked: number;
  auc_skilled_vs_zero: number | null;
  spearman_within_skilled: number | null;
  precision_at_100: number | null;
  favourite_buyers: { n: number; mean_brier: number | null; mean_excess: number | null; mean_brier_others: number | null };
  tags: Record<string, { tagged: number; truth: number; precision: number | null; recall: number | null }>;
  /** per forecasting preset: rows in its top 100, and how many are planted favourite-buyers or noise traders */
  forecasting_top100: Record<string, { rows: number; favourite_or_noise: number; skilled: number }>;
}

export async function validityReport(db: QueryRunner): Promise<ValidityReport> {
  // expected_z: the -z a wallet's planted edge produces on average at its own sample (edge * n / sqrt(sum p(1-p)));
  // a skilled wallet is "detectable" when that reaches 3 (a 2-sigma test then finds it about 84% of the time).
  const base = `SELECT m.*, t.archetype, t.true_edge_resolved AS edge, t.resolved_positions AS truth_resolved,
      t.true_edge_resolved * c.n_positions / sqrt(nullif(c.calibration_variance, 0)) AS expected_z
    FROM a_wallet_metrics m JOIN truth_wallets t USING (wallet_id) LEFT JOIN a_calibration c USING (wallet_id)`;
  const [r] = await db.all<Record<string, number | null>>(`WITH b AS (${base} WHERE m.calibration_ranked AND m.calibration_excess_z IS NOT NULL AND t.true_edge_resolved IS NOT NULL),
      rk AS (SELECT *, rank() OVER (ORDER BY edge) AS r_edge, rank() OVER (ORDER BY -calibration_excess_z) AS r_z FROM b),
      sk AS (SELECT *, rank() OVER (ORDER BY edge) AS r_edge, rank() OVER (ORDER BY -calibration_excess_z) AS r_z FROM b WHERE edge >= ${SKILLED_EDGE}),
      pairs AS (
        SELECT avg(CASE WHEN s.calibration_excess_z < z.calibration_excess_z THEN 1.0 WHEN s.calibration_excess_z = z.calibration_excess_z THEN 0.5 ELSE 0 END) AS auc
        FROM (SELECT calibration_excess_z FROM b WHERE edge >= ${SKILLED_EDGE}) s, (SELECT calibration_excess_z FROM b WHERE abs(edge) < ${ZERO_SKILL_BAND}) z),
      -- a deterministic standard normal per wallet (Box-Muller over two hashes of the id), so the ceiling is reproducible
      oracle AS (SELECT edge, expected_z + sqrt(-2 * ln((hash(wallet_id, 1) % 1000000 + 0.5) / 1e6)) * cos(2 * pi() * (hash(wallet_id, 2) % 1000000 + 0.5) / 1e6) AS z_oracle FROM b),
      ork AS (SELECT rank() OVER (ORDER BY edge) AS r_edge, rank() OVER (ORDER BY z_oracle) AS r_z FROM oracle),
      top AS (SELECT avg((edge >= ${SKILLED_EDGE})::INTEGER) AS p FROM (SELECT edge FROM b ORDER BY calibration_excess_z LIMIT 100))
    SELECT (SELECT count(*) FROM b) AS ranked_wallets, (SELECT corr(r_edge, r_z) FROM rk) AS spearman_edge_vs_neg_z,
      (SELECT corr(r_edge, r_z) FROM ork) AS spearman_noise_ceiling,
      (SELECT count(*) FROM sk) AS skilled_ranked, (SELECT auc FROM pairs) AS auc_skilled_vs_zero,
      (SELECT corr(r_edge, r_z) FROM sk) AS spearman_within_skilled, (SELECT p FROM top) AS precision_at_100`);
  const [fav] = await db.all<Record<string, number | null>>(`WITH b AS (${base} WHERE m.calibration_ranked)
    SELECT count(*) FILTER (WHERE archetype = 'favourite_buyer') AS n,
      avg(brier) FILTER (WHERE archetype = 'favourite_buyer') AS mean_brier,
      avg(calibration_excess) FILTER (WHERE archetype = 'favourite_buyer') AS mean_excess,
      avg(brier) FILTER (WHERE archetype <> 'favourite_buyer') AS mean_brier_others FROM b`);
  // Truth per tag: sharp = measurably skilled (ranked and true edge >= 2 cents), whale = planted whale,
  // early_bird / contrarian = planted archetype; tags are judged only on wallets their rule can see.
  // sharp_detectable: the sharp tag's recall over skilled wallets whose edge their sample can reveal.
  const tagTruth: Record<string, string> = {
    sharp: `calibration_ranked AND edge >= ${SKILLED_EDGE}`,
    sharp_detectable: `calibration_ranked AND edge >= ${SKILLED_EDGE} AND expected_z >= 3`,
    whale: `archetype = 'whale' AND trade_count >= 10`,
    early_bird: `archetype = 'early_bird' AND n_entry_positions >= 20`,
    contrarian: `archetype = 'contrarian' AND n_buys >= 20`,
  };
  const tags: ValidityReport['tags'] = {};
  for (const [tag, truth] of Object.entries(tagTruth)) {
    const [t] = await db.all<{ tagged: number; truth: number; tp: number }>(`WITH b AS (${base})
      SELECT count(*) FILTER (WHERE list_contains(smart_money_tags, '${tag.split('_detectable')[0]}')) AS tagged, count(*) FILTER (WHERE ${truth}) AS truth,
        count(*) FILTER (WHERE list_contains(smart_money_tags, '${tag.split('_detectable')[0]}') AND ${truth}) AS tp FROM b`);
    tags[tag] = { tagged: t!.tagged, truth: t!.truth, precision: t!.tagged ? t!.tp / t!.tagged : null, recall: t!.truth ? t!.tp / t!.truth : null };
  }
  const forecasting_top100: ValidityReport['forecasting_top100'] = {};
  const hasBoard = (await db.all(`SELECT 1 FROM information_schema.tables WHERE table_name = 'a_board'`)).length > 0;
  for (const p of hasBoard ? PRESETS.filter((x) => x.forecasting) : []) {
    const [t] = await db.all<{ rows: number; bad: number; skilled: number }>(`SELECT count(*) AS rows,
        count(*) FILTER (WHERE t.archetype IN ('favourite_buyer', 'noise')) AS bad,
        count(*) FILTER (WHERE t.true_edge_resolved >= ${SKILLED_EDGE}) AS skilled
      FROM a_board_rank b JOIN truth_wallets t USING (wallet_id) WHERE b.preset = '${p.slug}' AND b.rank <= 100`);
    forecasting_top100[p.slug] = { rows: Number(t!.rows), favourite_or_noise: Number(t!.bad), skilled: Number(t!.skilled) };
  }
  return {
    forecasting_top100,
    ranked_wallets: Number(r!.ranked_wallets),
    spearman_edge_vs_neg_z: r!.spearman_edge_vs_neg_z ?? null,
    spearman_noise_ceiling: r!.spearman_noise_ceiling ?? null,
    skilled_ranked: Number(r!.skilled_ranked),
    auc_skilled_vs_zero: r!.auc_skilled_vs_zero ?? null,
    spearman_within_skilled: r!.spearman_within_skilled ?? null,
    precision_at_100: r!.precision_at_100 ?? null,
    favourite_buyers: { n: Number(fav!.n), mean_brier: fav!.mean_brier ?? null, mean_excess: fav!.mean_excess ?? null, mean_brier_others: fav!.mean_brier_others ?? null },
    tags,
  };
}

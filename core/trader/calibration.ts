import { z } from 'zod';
import {
  CALIBRATION_BINS,
  CalibrationScope,
  calibrationInputsSql,
  calibrationSummary,
  scopePredicate,
  type CalibrationInput,
} from '../calibration.ts';
import { positionsSql } from '../positions.ts';
import { tsLiteral, type AsOf, type QueryRunner } from '../query.ts';
import { resolveTrader, venueSchema, walletScopeSql } from './identity.ts';
import { count, num0 } from './shared.ts';

// ---------------------------------------------------------------------------------------------------------------
// 1. Calibration record
// ---------------------------------------------------------------------------------------------------------------

export const TraderCalibrationBin = z.object({
  bin_idx: z.number().int().min(0).max(CALIBRATION_BINS - 1),
  bin_label: z.string(),
  /** mean entry price in the bin; null when the bin is empty */
  predicted_mean: z.number().min(0).max(1).nullable(),
  /** share of the bin's positions whose token won; null when the bin is empty */
  observed_rate: z.number().min(0).max(1).nullable(),
  n: count,
});

export const TraderCalibration = z.object({
  proxy_wallet: z.string(),
  scope: z.string(),
  as_of: z.string(),
  bins: z.array(TraderCalibrationBin).length(CALIBRATION_BINS),
  n_total: count,
  brier: z.number().nullable(),
  calibration_excess: z.number().nullable(),
  calibration_excess_z: z.number().nullable(),
  n_markets: count,
  ranked: z.boolean(),
});
export type TraderCalibration = z.infer<typeof TraderCalibration>;

export interface CalibrationRow extends CalibrationInput {
  category: string;
}

export async function walletCalibrationInputs(db: QueryRunner, schema: string, walletId: number, asOf: AsOf, scope: CalibrationScope): Promise<CalibrationRow[]> {
  const T = tsLiteral(asOf);
  const rows = await db.all<{ market_id: number; p: number; o: number; category: string }>(
    `WITH ${walletScopeSql(schema, walletId)}
    SELECT c.market_id, c.p::DOUBLE AS p, c.o::INTEGER AS o, c.category
    FROM (${calibrationInputsSql(`(${positionsSql(asOf)})`)}) c
    JOIN markets m USING (market_id) JOIN resolutions r USING (market_id)
    WHERE c.wallet_id = ${walletId} AND ${scopePredicate(scope, T)}
    ORDER BY c.market_id, c.outcome_index`,
  );
  return rows.map((r) => ({ market_id: num0(r.market_id), p: num0(r.p), o: (num0(r.o) === 1 ? 1 : 0) as 0 | 1, category: r.category }));
}

/**
 * The spec's calibration record for one wallet and scope (all | 30d | 90d | 365d | category:<name>), with the
 * summary figures. A known wallet without resolved positions has 10 empty bins and null scores (unmeasured).
 */
export async function traderCalibration(db: QueryRunner, wallet: number | string, asOf: AsOf, scope: string = 'all'): Promise<TraderCalibration | null> {
  const sc = CalibrationScope.parse(scope);
  tsLiteral(asOf);
  const who = await resolveTrader(db, wallet);
  if (!who) return null;
  const inputs = await walletCalibrationInputs(db, await venueSchema(db), who.wallet_id, asOf, sc);
  const s = calibrationSummary(inputs);
  return {
    proxy_wallet: who.address,
    scope: sc,
    as_of: asOf.toISOString(),
    bins: s.bins,
    n_total: s.n_positions,
    brier: s.brier,
    calibration_excess: s.calibration_excess,
    calibration_excess_z: s.calibration_excess_z,
    n_markets: s.n_markets,
    ranked: s.ranked,
  };
}

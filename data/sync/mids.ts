/**
 * Mids of a synced venue, derived from its fills: the chain has no mid, and the CLOB's price history is not read
 * (yet). At each instant a market traded, the YES mid is the YES price of its last fill then (the highest log index at
 * that block time; a NO fill at p is YES at 1 - p) and the NO mid one minus that. A pure function of the fills, so a batch, a resume or a
 * reorg gives the same rows; stamped at the fill's own time, so nothing looks ahead. The markets' `mids_freshness`
 * says "derived from fills" (docs/venue-sync.md).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { nextVenueSeq } from '../schema.ts';

/** Insert the mids of the fills with seq > `afterSeq` (one arrival batch of the sync); returns rows inserted. */
export async function deriveMids(conn: DuckDBConnection, afterSeq: number): Promise<number> {
  const seq = await nextVenueSeq(conn);
  const r = await conn.run(`INSERT INTO mids (market_id, outcome_index, ts, mid, seq)
    WITH last AS (
      SELECT market_id, ts, arg_max(CASE WHEN outcome_index = 0 THEN price ELSE 1 - price END, log_index) AS yes_mid
      FROM fills WHERE seq > ${afterSeq} GROUP BY market_id, ts
    ), fresh AS (SELECT * FROM last l WHERE NOT EXISTS (SELECT 1 FROM mids m WHERE m.market_id = l.market_id AND m.ts = l.ts
        -- a mid at the same instant can only be as recent as the batch: the zone maps skip older row groups
        AND m.ts >= (SELECT min(ts) FROM last)))
    SELECT market_id, 0::UTINYINT, ts, yes_mid, ${seq} FROM fresh
    UNION ALL SELECT market_id, 1::UTINYINT, ts, 1 - yes_mid, ${seq} FROM fresh`);
  return r.rowsChanged;
}

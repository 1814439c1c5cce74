/**
 * The median fill of a heavy wallet without reading its every leg (a_features.median_fill_usdc, a_style.median_clip_usd).
 *
 * Every fill of the venue has a market maker on one side: at full scale ~140 of them hold half of the 200M fill legs,
 * and nearly every refresh touches every one of them. Their median fill was a copy of ~100M legs and a median over
 * them each time (~17 s of a refresh). A wallet with at least `minLegs` fill legs keeps a band instead: a run of its
 * fill sizes in sorted order around the median, and how many come below and above it.
 *
 * - a_fill_band (wallet_id, size_usdc): the run, ranks [below, below + m) of the wallet's visible fill sizes sorted;
 * - a_fill_band_wallets (wallet_id, below, above): the counts outside it (N = below + m + above).
 *
 * A new fill size v goes below the run (v < its smallest), above it (v > its largest), or into it: the run stays a
 * contiguous run of the sorted sizes (a value equal to an end can stand at that end). The median needs ranks
 * (N - 1) // 2 and N // 2 only: while both are inside the run it is read there, as DuckDB's median computes it
 * (x_lo * 0.5 + x_hi * 0.5); the run is then cut back to `half` ranks either side (the rest counted). When new sizes
 * push the median past an end of the run, the wallet's band is dropped and its legs are read as any other wallet's;
 * a band is made again from them. The bands are not compared with a rebuild's (a rebuild centres them anew): the
 * medians are, and the tests check that a band is the run it claims to be.
 */
import type { QueryRunner } from '../query.ts';

export interface FillBandRules {
  /** a wallet with at least this many visible fill legs keeps a band */
  minLegs: number;
  /** ranks kept on each side of the median ranks when a band is made or cut back */
  half: number;
}

/**
 * Market makers have ~766k fill legs each at full scale; a band of 2 * 2,000 + 2 sizes lets the median move ~2,000
 * ranks (a market maker takes ~100 legs a refresh) before the wallet's legs are read again.
 */
export const FILL_BAND: Readonly<FillBandRules> = { minLegs: 20_000, half: 2_000 };

export const FILL_BAND_TABLE = 'a_fill_band';
export const FILL_BAND_WALLETS = 'a_fill_band_wallets';

/** The empty band tables (a full build writes them anew). */
export const FILL_BAND_DDL = [
  `CREATE OR REPLACE TABLE ${FILL_BAND_TABLE} (wallet_id INTEGER, size_usdc DOUBLE)`,
  `CREATE OR REPLACE TABLE ${FILL_BAND_WALLETS} (wallet_id INTEGER, below BIGINT, above BIGINT)`,
];

/**
 * Statements that add a band for every wallet of `sizes` (a relation of wallet_id, size_usdc: every visible fill
 * leg of its wallets) with at least minLegs sizes. Its wallets must have no band yet.
 */
export function addBandsSql(sizes: string, r: FillBandRules = FILL_BAND): string[] {
  return [
    // the heavy wallets first: only their sizes are sorted
    `CREATE OR REPLACE TEMP TABLE band_made AS SELECT wallet_id, size_usdc, r, n FROM (
        SELECT wallet_id, size_usdc, row_number() OVER (PARTITION BY wallet_id ORDER BY size_usdc) - 1 AS r, count(*) OVER (PARTITION BY wallet_id) AS n
        FROM ${sizes} WHERE wallet_id IN (SELECT wallet_id FROM ${sizes} GROUP BY wallet_id HAVING count(*) >= ${r.minLegs}))
      WHERE r >= (n - 1) // 2 - ${r.half} AND r <= n // 2 + ${r.half}`,
    `INSERT INTO ${FILL_BAND_TABLE} SELECT wallet_id, size_usdc FROM band_made ORDER BY wallet_id, size_usdc`,
    `INSERT INTO ${FILL_BAND_WALLETS} SELECT wallet_id, min(r) AS below, any_value(n) - max(r) - 1 AS above FROM band_made GROUP BY wallet_id ORDER BY wallet_id`,
    `DROP TABLE band_made`,
  ];
}

/**
 * A refresh's banded wallets: for the wallets of `scope` (a table of wallet_id) that have a band, merge the fill
 * sizes of `newLegs` (the legs that became visible: a_legs' columns, ts <= T) into it, and write
 * `band_median (wallet_id, median_fill_usdc)` for those whose median the band still holds (their bands cut back to
 * `half` ranks either side). The others lose their band: their legs are to be read (then addBandsSql).
 */
export async function refreshBands(db: QueryRunner, scope: string, newLegs: string, r: FillBandRules = FILL_BAND): Promise<{ banded: number; dropped: number }> {
  await db.run(`CREATE OR REPLACE TEMP TABLE band_scope AS SELECT wallet_id FROM ${FILL_BAND_WALLETS} WHERE wallet_id IN (SELECT wallet_id FROM ${scope})`);
  await db.run(`CREATE OR REPLACE TEMP TABLE band_new AS SELECT wallet_id, size_usdc FROM ${newLegs} WHERE kind IN (1, 2) AND wallet_id IN (SELECT wallet_id FROM band_scope)`);
  // each new size below, into or above its wallet's run
  await db.run(`CREATE OR REPLACE TEMP TABLE band_edges AS
    SELECT wallet_id, min(size_usdc) AS lo, max(size_usdc) AS hi FROM ${FILL_BAND_TABLE} WHERE wallet_id IN (SELECT wallet_id FROM band_new) GROUP BY wallet_id`);
  await db.run(`UPDATE ${FILL_BAND_WALLETS} w SET below = w.below + c.b, above = w.above + c.a FROM (
      SELECT n.wallet_id, count(*) FILTER (WHERE n.size_usdc < e.lo) AS b, count(*) FILTER (WHERE n.size_usdc > e.hi) AS a
      FROM band_new n JOIN band_edges e USING (wallet_id) GROUP BY n.wallet_id) c
    WHERE w.wallet_id = c.wallet_id`);
  await db.run(`INSERT INTO ${FILL_BAND_TABLE} SELECT n.wallet_id, n.size_usdc FROM band_new n JOIN band_edges e USING (wallet_id) WHERE n.size_usdc >= e.lo AND n.size_usdc <= e.hi`);
  // the runs ranked; lo and hi: the median's ranks within the run
  await db.run(`CREATE OR REPLACE TEMP TABLE band_ranked AS
    SELECT b.wallet_id, b.size_usdc, b.r, w.below, w.above, (w.below + b.m + w.above - 1) // 2 - w.below AS lo, (w.below + b.m + w.above) // 2 - w.below AS hi, b.m
    FROM (SELECT wallet_id, size_usdc, row_number() OVER (PARTITION BY wallet_id ORDER BY size_usdc) - 1 AS r, count(*) OVER (PARTITION BY wallet_id) AS m
      FROM ${FILL_BAND_TABLE} WHERE wallet_id IN (SELECT wallet_id FROM band_scope)) b JOIN ${FILL_BAND_WALLETS} w USING (wallet_id)`);
  // as DuckDB's median computes it (quantile_cont 0.5): the middle size, or half of each middle one (not lo + (hi - lo)
  // * 0.5: 0.01 and 16.01 give 8.010000000000002 that way, 8.01 this one)
  await db.run(`CREATE OR REPLACE TEMP TABLE band_median AS
    SELECT wallet_id, CASE WHEN lo = hi THEN x_lo ELSE x_lo * 0.5 + x_hi * 0.5 END AS median_fill_usdc FROM (
      SELECT wallet_id, any_value(lo) AS lo, any_value(hi) AS hi, max(size_usdc) FILTER (WHERE r = lo) AS x_lo, max(size_usdc) FILTER (WHERE r = hi) AS x_hi
      FROM band_ranked WHERE lo >= 0 AND hi < m GROUP BY wallet_id)`);
  // the runs that moved, cut back around the median; those that lost it, dropped
  await db.run(`CREATE OR REPLACE TEMP TABLE band_cut AS
    SELECT * FROM band_ranked WHERE wallet_id IN (SELECT wallet_id FROM band_new) AND wallet_id IN (SELECT wallet_id FROM band_median)`);
  await db.run(`CREATE OR REPLACE TEMP TABLE band_dropped AS SELECT wallet_id FROM band_scope EXCEPT SELECT wallet_id FROM band_median`);
  await db.run(`DELETE FROM ${FILL_BAND_TABLE} WHERE wallet_id IN (SELECT wallet_id FROM band_cut) OR wallet_id IN (SELECT wallet_id FROM band_dropped)`);
  await db.run(`DELETE FROM ${FILL_BAND_WALLETS} WHERE wallet_id IN (SELECT wallet_id FROM band_dropped)`);
  const kept = `r >= lo - ${r.half} AND r <= hi + ${r.half}`;
  await db.run(`INSERT INTO ${FILL_BAND_TABLE} SELECT wallet_id, size_usdc FROM band_cut WHERE ${kept} ORDER BY wallet_id, size_usdc`);
  await db.run(`UPDATE ${FILL_BAND_WALLETS} w SET below = w.below + c.b, above = w.above + c.a FROM (
      SELECT wallet_id, count(*) FILTER (WHERE r < lo - ${r.half}) AS b, count(*) FILTER (WHERE r > hi + ${r.half}) AS a FROM band_cut GROUP BY wallet_id) c
    WHERE w.wallet_id = c.wallet_id`);
  const [c] = await db.all<{ banded: number; dropped: number }>(`SELECT (SELECT count(*) FROM band_median) AS banded, (SELECT count(*) FROM band_dropped) AS dropped`);
  for (const t of ['band_scope', 'band_new', 'band_edges', 'band_ranked', 'band_cut', 'band_dropped']) await db.run(`DROP TABLE IF EXISTS ${t}`);
  return { banded: Number(c?.banded ?? 0), dropped: Number(c?.dropped ?? 0) };
}

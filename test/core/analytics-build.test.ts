/**
 * The analytics build over a generated venue: per-wallet invariants (a row per trading wallet, win rate null
 * never 0, volume from the raw fills, percentiles in range, tags from the allowed set and equal to the TS rules),
 * and no lookahead: rows stamped after T never change a build as of T.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import { calibrationSummary, skillDeviate, type CalibrationInput } from '../../core/calibration.ts';
import { tsLiteral } from '../../core/query.ts';
import { SMART_MONEY_TAGS, sharpCutoff, smartMoneyTags, type TagInputs } from '../../core/tags.ts';
import { duckRunner } from '../../data/runner.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';
import { venueInsert } from '../../data/schema.ts';

let v: TestVenue;
const END = new Date('2026-11-01T00:00:00Z');
/** Mid-venue, with milliseconds, so that "just after T" (T + 1 microsecond) is a distinct instant. */
const T_MID = new Date('2026-10-12T13:17:05.123Z');
const VENUE_APPENDED = ['fills', 'mids', 'inventory_events', 'inventory_legs', 'resolutions'] as const;
const A_TABLES = ['a_positions', 'a_calibration', 'a_alpha', 'a_features', 'a_wallet_metrics'] as const;

beforeAll(async () => {
  v = await makeVenue({ wallets: 4000, days: 40, seed: 5 });
});
afterAll(async () => v?.cleanup());

const one = async <T = Record<string, number>>(sql: string) => (await v.rows<T>(sql))[0]!;

describe('analytics build as of the end of the venue', () => {
  beforeAll(async () => {
    await fullBuild(duckRunner(v.conn), END);
  });

  it('every wallet with a fill has exactly one metrics row, and no other wallet has one', async () => {
    const r = await one(`WITH traders AS (SELECT taker_id AS wallet_id FROM fills UNION SELECT maker_id FROM fills)
      SELECT (SELECT count(*) FROM traders) AS traders, (SELECT count(*) FROM a_wallet_metrics) AS rows_,
        (SELECT count(DISTINCT wallet_id) FROM a_wallet_metrics) AS distinct_,
        (SELECT count(*) FROM traders t ANTI JOIN a_wallet_metrics m USING (wallet_id)) AS missing,
        (SELECT count(*) FROM a_wallet_metrics m ANTI JOIN traders t USING (wallet_id)) AS extra`);
    expect(r.traders).toBeGreaterThan(1000);
    expect(r).toMatchObject({ rows_: r.traders, distinct_: r.traders, missing: 0, extra: 0 });
  });

  it('win_rate_pct: 100 * WON / (WON + LOST) from the positions, null (never 0) without a resolved position', async () => {
    const r = await one(`WITH lab AS (
        SELECT wallet_id, count(*) FILTER (WHERE resolved) AS resolved, count(*) FILTER (WHERE pnl_label = 'WON') AS won,
          count(*) FILTER (WHERE pnl_label = 'LOST') AS lost
        FROM a_positions GROUP BY 1)
      SELECT count(*) FILTER (WHERE l.resolved = 0 AND m.win_rate_pct IS NOT NULL) AS unresolved_not_null,
        count(*) FILTER (WHERE l.resolved = 0) AS unresolved,
        count(*) FILTER (WHERE l.won + l.lost > 0 AND m.win_rate_pct IS NULL) AS measured_null,
        count(*) FILTER (WHERE l.won + l.lost > 0 AND abs(m.win_rate_pct - 100.0 * l.won / (l.won + l.lost)) > 1e-9) AS wrong,
        count(*) FILTER (WHERE l.won = 0 AND l.lost > 0 AND m.win_rate_pct = 0) AS measured_zero,
        count(*) FILTER (WHERE l.won = 0 AND l.lost > 0 AND m.win_rate_pct IS DISTINCT FROM 0) AS zero_lost,
        count(*) FILTER (WHERE m.win_rate_pct = 0 AND NOT (l.won = 0 AND l.lost > 0)) AS spurious_zero
      FROM a_wallet_metrics m JOIN lab l USING (wallet_id)`);
    expect(r.unresolved).toBeGreaterThan(100); // wallets with positions only in open markets
    expect(r.measured_zero).toBeGreaterThan(10); // wallets that lost every resolved position: a measured 0
    expect(r).toMatchObject({ unresolved_not_null: 0, measured_null: 0, wrong: 0, zero_lost: 0, spurious_zero: 0 });
  });

  it('lifetime_volume_usdc and trade_count come from the raw fills (taker and maker legs)', async () => {
    // recomputed from `fills` without the fill_legs view: the taker trades size_usdc; the maker trades the same
    // notional on a direct match, (1 - price) * shares of the complement on a mint or merge match
    const r = await one(`WITH legs AS (
        SELECT taker_id AS wallet_id, size_usdc AS usd FROM fills
        UNION ALL SELECT maker_id, CASE match_type WHEN 'direct' THEN size_usdc ELSE (1 - price) * shares END FROM fills),
      w AS (SELECT wallet_id, sum(usd) AS usd, count(*) AS n FROM legs GROUP BY 1)
      SELECT count(*) AS n, count(*) FILTER (WHERE abs(m.lifetime_volume_usdc - w.usd) > 1e-6 * greatest(1, w.usd)) AS bad_volume,
        count(*) FILTER (WHERE m.trade_count <> w.n) AS bad_count
      FROM w JOIN a_wallet_metrics m USING (wallet_id)`);
    expect(r.n).toBeGreaterThan(1000);
    expect(r).toMatchObject({ bad_volume: 0, bad_count: 0 });
  });

  it('every percentile is in [0, 100]; no NaN or infinite figure anywhere', async () => {
    const cols = await v.rows<{ column_name: string; column_type: string }>(`DESCRIBE (SELECT * FROM a_wallet_metrics JOIN a_wallet_pctiles USING (wallet_id))`);
    const pct = cols.filter((c) => c.column_name.endsWith('_pctile')).map((c) => c.column_name);
    expect(pct).toEqual(expect.arrayContaining(['calibration_excess_z_pctile', 'total_pnl_pctile', 'win_rate_pct_pctile']));
    const nums = cols.filter((c) => c.column_type === 'DOUBLE').map((c) => c.column_name);
    const r = await one(`SELECT count(*) AS n,
      ${pct.map((c) => `count(*) FILTER (WHERE ${c} < 0 OR ${c} > 100 OR isnan(${c})) AS "${c}"`).join(', ')},
      ${nums.map((c) => `count(*) FILTER (WHERE NOT isfinite(${c})) AS "nonfinite_${c}"`).join(', ')},
      count(*) FILTER (WHERE calibration_excess_z_pctile = 100) AS best, count(*) FILTER (WHERE calibration_excess_z_pctile = 0) AS worst
      FROM a_wallet_metrics JOIN a_wallet_pctiles USING (wallet_id)`);
    for (const c of pct) expect(r[c], c).toBe(0);
    for (const c of nums) expect(r[`nonfinite_${c}`], c).toBe(0);
    expect(r.best).toBeGreaterThanOrEqual(1);
    expect(r.worst).toBeGreaterThanOrEqual(1);
  });

  it('calibration percentile and ranking follow the 30-market rule', async () => {
    const r = await one(`SELECT count(*) FILTER (WHERE calibration_ranked) AS ranked,
      count(*) FILTER (WHERE calibration_ranked <> (n_resolved_markets >= 30)) AS bad_rank,
      count(*) FILTER (WHERE NOT calibration_ranked AND calibration_excess_z_pctile IS NOT NULL) AS unranked_pct,
      count(*) FILTER (WHERE calibration_ranked AND calibration_excess_z_pctile IS NULL) AS ranked_no_pct,
      count(*) FILTER (WHERE n_resolved_markets = 0 AND (brier IS NOT NULL OR calibration_excess_z IS NOT NULL)) AS unmeasured_scored
      FROM a_wallet_metrics JOIN a_wallet_pctiles USING (wallet_id)`);
    expect(r.ranked).toBeGreaterThan(10);
    expect(r).toMatchObject({ bad_rank: 0, unranked_pct: 0, ranked_no_pct: 0, unmeasured_scored: 0 });
  });

  it('calibration in the metrics equals calibrationSummary() over the wallet positions (sample of wallets)', async () => {
    const pos = await v.rows<{ wallet_id: number; market_id: number; p: number; o: number }>(`
      SELECT wallet_id, market_id, entry_price AS p, (outcome_index = winner_index)::INTEGER AS o FROM a_positions
      WHERE resolved AND NOT is_void AND bought_shares > 0 AND wallet_id IN (SELECT wallet_id FROM a_wallet_metrics WHERE n_resolved_markets > 0 ORDER BY hash(wallet_id) LIMIT 200)`);
    const by = new Map<number, CalibrationInput[]>();
    for (const p of pos) by.set(p.wallet_id, [...(by.get(p.wallet_id) ?? []), { p: p.p, o: p.o as 0 | 1, market_id: p.market_id }]);
    const metrics = await v.rows<{ wallet_id: number; brier: number; calibration_excess_z: number; skill_deviate: number; n_resolved_markets: number; calibration_ranked: boolean }>(
      `SELECT wallet_id, brier, calibration_excess_z, skill_deviate, n_resolved_markets, calibration_ranked FROM a_wallet_metrics WHERE wallet_id IN (${[...by.keys()].join(',')})`,
    );
    expect(metrics.length).toBeGreaterThan(100);
    for (const m of metrics) {
      const s = calibrationSummary(by.get(m.wallet_id)!);
      expect(m.n_resolved_markets).toBe(s.n_markets);
      expect(m.calibration_ranked).toBe(s.ranked);
      expect(m.brier).toBeCloseTo(s.brier!, 9);
      expect(m.calibration_excess_z).toBeCloseTo(s.calibration_excess_z!, 9);
      expect(m.skill_deviate).toBeCloseTo(skillDeviate(s.calibration_excess_z, s.calibration_skew)!, 8);
    }
  });

  it('smart_money_tags come from the allowed set and equal smartMoneyTags() at the cohort cutoff', async () => {
    const meta = await one<{ sharp_min_deviate: number | null; ranked_wallets: number }>(`SELECT sharp_min_deviate, ranked_wallets FROM a_meta`);
    const deviates = await v.rows<{ w: number }>(`SELECT skill_deviate AS w FROM a_calibration WHERE calibration_ranked AND skill_deviate IS NOT NULL`);
    const cut = sharpCutoff(deviates.map((d) => d.w));
    expect(meta.sharp_min_deviate ?? Number.POSITIVE_INFINITY).toBe(cut);
    expect(meta.ranked_wallets).toBe(deviates.length);
    const rows = await v.rows<TagInputs & { wallet_id: number; smart_money_tags: string[] }>(`SELECT wallet_id, smart_money_tags, trade_count, median_fill_usdc,
      lifetime_volume_usdc, calibration_ranked, skill_deviate, n_entry_positions, taker_share, median_entry_age, n_buys, contrarian_buy_share FROM a_wallet_metrics`);
    const counts = new Map<string, number>();
    for (const r of rows) {
      for (const t of r.smart_money_tags) {
        expect(SMART_MONEY_TAGS).toContain(t);
        counts.set(t, (counts.get(t) ?? 0) + 1);
      }
      expect(new Set(r.smart_money_tags).size).toBe(r.smart_money_tags.length);
      expect(r.smart_money_tags, `wallet ${r.wallet_id}`).toEqual(smartMoneyTags(r, cut));
    }
    // the venue plants whales, sharps, early birds and contrarians: each rule fires somewhere
    expect(counts.get('whale') ?? 0).toBeGreaterThan(0);
    expect(counts.get('early_bird') ?? 0).toBeGreaterThan(0);
  });
});

describe('no lookahead', () => {
  const T = tsLiteral(T_MID);
  const KEYS: Record<(typeof A_TABLES)[number], string[]> = {
    a_positions: ['wallet_id', 'market_id', 'outcome_index'],
    a_calibration: ['wallet_id'],
    a_alpha: ['wallet_id'],
    a_features: ['wallet_id'],
    a_wallet_metrics: ['wallet_id'],
  };
  const snapshot = async (suffix: string) => {
    for (const t of A_TABLES) await v.conn.run(`CREATE OR REPLACE TABLE ${t}_${suffix} AS SELECT * FROM ${t}`);
  };
  /**
   * Compare two builds of one table. `ab` / `ba`: rows of one missing from the other (EXCEPT ALL both ways) over
   * every column that is not a DOUBLE (keys, counts, labels, statuses, flags, timestamps, tags); `differ`: rows whose
   * DOUBLE columns differ by more than 1e-9 relative. Doubles are not compared bit for bit: the order in which
   * DuckDB adds up a window or a group can change with the physical layout of a table (appending rows to `mids`
   * reorders an ASOF join's output), which moves sums in the last bits (~1e-12) with no change of meaning.
   */
  const compare = async (a: string, b: string, key: string[]) => {
    const cols = await v.rows<{ column_name: string; column_type: string }>(`DESCRIBE ${a}`);
    const exact = cols.filter((c) => c.column_type !== 'DOUBLE').map((c) => c.column_name);
    const doubles = cols.filter((c) => c.column_type === 'DOUBLE').map((c) => c.column_name);
    const close = doubles.map(
      (c) => `((x.${c} IS NULL) <> (y.${c} IS NULL) OR abs(x.${c} - y.${c}) > 1e-9 * greatest(1, abs(x.${c})) OR isnan(x.${c}) <> isnan(y.${c}))`,
    );
    const e = exact.join(', ');
    return one<{ ab: number; ba: number; na: number; nb: number; differ: number }>(`SELECT
      (SELECT count(*) FROM (SELECT ${e} FROM ${a} EXCEPT ALL SELECT ${e} FROM ${b})) AS ab,
      (SELECT count(*) FROM (SELECT ${e} FROM ${b} EXCEPT ALL SELECT ${e} FROM ${a})) AS ba,
      (SELECT count(*) FROM ${a}) AS na, (SELECT count(*) FROM ${b}) AS nb,
      (SELECT count(*) FROM ${a} x JOIN ${b} y USING (${key.join(', ')}) WHERE ${close.length ? close.join(' OR ') : 'false'}) AS differ`);
  };
  const counts = `SELECT (SELECT count(*) FROM fills) AS f, (SELECT count(*) FROM mids) AS m, (SELECT count(*) FROM inventory_events) AS i,
      (SELECT count(*) FROM inventory_legs) AS l, (SELECT count(*) FROM resolutions) AS r`;

  beforeAll(async () => {
    await fullBuild(duckRunner(v.conn), T_MID);
    await snapshot('before');
  });

  it('the mid-venue build is not trivial', async () => {
    const r = await one(`SELECT (SELECT count(*) FROM a_wallet_metrics) AS wallets, (SELECT count(*) FROM a_positions WHERE resolved) AS resolved,
      (SELECT count(*) FROM a_positions WHERE NOT resolved) AS open_, (SELECT count(*) FROM a_alpha WHERE n_alpha_24h > 0) AS alpha,
      (SELECT count(*) FROM a_calibration) AS calibrated, (SELECT count(*) FROM fills WHERE ts > ${T}) AS later_fills,
      (SELECT count(*) FROM resolutions WHERE resolved_at > ${T}) AS later_resolutions,
      (SELECT count(*) FROM inventory_events WHERE ts <= ${T}) AS inventory`);
    for (const k of ['wallets', 'resolved', 'open_', 'alpha', 'calibrated', 'later_fills', 'later_resolutions', 'inventory']) expect(r[k], k).toBeGreaterThan(50);
  });

  it('appending fills, mids, inventory and resolutions stamped after T leaves every a_ table identical', async () => {
    // a shift that moves the earliest row of any table to one second after T (mids and splits start before fills)
    const shift = `(${T} - (SELECT least((SELECT min(ts) FROM fills), (SELECT min(ts) FROM mids), (SELECT min(ts) FROM inventory_events))) + INTERVAL 1 SECOND)`;
    const justAfter = `(${T} + INTERVAL 1 MICROSECOND)`;
    const before = await one(counts);
    for (const t of VENUE_APPENDED) await v.conn.run(`CREATE OR REPLACE TABLE ${t}_orig AS SELECT * FROM ${t}`);
    // 1. every fill, inventory event (with its legs) and mid up to T again, shifted to after T (new tx hashes)
    await v.conn.run(`INSERT INTO fills SELECT * REPLACE (tx_hash || '_late' AS tx_hash, ts + ${shift} AS ts) FROM fills WHERE ts <= ${T}`);
    await v.conn.run(`INSERT INTO inventory_legs SELECT l.* REPLACE (l.tx_hash || '_late' AS tx_hash) FROM inventory_legs l JOIN inventory_events i USING (tx_hash, log_index) WHERE i.ts <= ${T}`);
    await v.conn.run(`INSERT INTO inventory_events SELECT * REPLACE (tx_hash || '_late' AS tx_hash, ts + ${shift} AS ts) FROM inventory_events WHERE ts <= ${T}`);
    await v.conn.run(`INSERT INTO mids SELECT * REPLACE (ts + ${shift} AS ts) FROM mids WHERE ts <= ${T}`);
    // 2. at T + 1 microsecond: a mid of 0.999 on every token, a copy of the last 500 fills, and a resolution
    //    (YES) of every market still unresolved at the end of the venue
    await v.conn.run(`${venueInsert('mids')} SELECT market_id, o::UTINYINT, ${justAfter}, 0.999 FROM markets, (VALUES (0), (1)) t(o)`);
    await v.conn.run(`INSERT INTO fills SELECT * REPLACE (tx_hash || '_now' AS tx_hash, ${justAfter} AS ts)
      FROM (SELECT * FROM fills WHERE ts <= ${T} ORDER BY ts DESC, tx_hash, log_index LIMIT 500)`);
    await v.conn.run(`${venueInsert('resolutions')} SELECT market_id, 'YES', 0, [1, 0], 1.0, 0.0, 2, ${justAfter}, '0xlate' || market_id
      FROM markets WHERE market_id NOT IN (SELECT market_id FROM resolutions)`);
    const after = await one(counts);
    for (const k of ['f', 'm', 'i', 'l', 'r']) expect(after[k]!, k).toBeGreaterThan(before[k]!);
    // everything appended is stamped after T: what the venue holds up to T is unchanged
    const upToT = (sfx: string) => `SELECT (SELECT count(*) FROM fills${sfx} WHERE ts <= ${T}) AS f, (SELECT count(*) FROM mids${sfx} WHERE ts <= ${T}) AS m,
      (SELECT count(*) FROM inventory_events${sfx} WHERE ts <= ${T}) AS i, (SELECT count(*) FROM resolutions${sfx} WHERE resolved_at <= ${T}) AS r`;
    expect(await one(upToT(''))).toEqual(await one(upToT('_orig')));

    await fullBuild(duckRunner(v.conn), T_MID);
    for (const t of A_TABLES) {
      const d = await compare(`${t}_before`, t, KEYS[t]);
      expect(d.na, t).toBeGreaterThan(0);
      expect(d, t).toEqual({ ab: 0, ba: 0, na: d.nb, nb: d.na, differ: 0 });
    }

    // tidy up: the venue as generated
    for (const t of VENUE_APPENDED) await v.conn.run(`DELETE FROM ${t}; INSERT INTO ${t} SELECT * FROM ${t}_orig; DROP TABLE ${t}_orig`);
    expect(await one(counts)).toEqual(before);
  });

  it('a build as of a later T differs (the comparison has teeth)', async () => {
    await fullBuild(duckRunner(v.conn), new Date(T_MID.getTime() + 3 * 86_400_000));
    for (const t of A_TABLES) {
      const d = await compare(`${t}_before`, t, KEYS[t]);
      expect(d.ab + d.ba + d.differ, t).toBeGreaterThan(0);
    }
    // one millisecond later is enough when a fill lands in it
    const [next] = await v.rows<{ t: Date }>(`SELECT min(ts) AS t FROM fills WHERE ts > ${T}`);
    await fullBuild(duckRunner(v.conn), next!.t);
    const d = await compare('a_wallet_metrics_before', 'a_wallet_metrics', KEYS.a_wallet_metrics);
    expect(d.ab + d.ba + d.differ).toBeGreaterThan(0);
  });
});

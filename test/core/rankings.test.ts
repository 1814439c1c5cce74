/**
 * Rankings engine (core/rankings.ts): a hand-worked composite, percentiles and gate counts against a brute-force
 * TypeScript reference over every preset of a small generated venue, users with several wallets, overrides,
 * extra_metrics, config validation and the 60-second cache.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fullBuild } from '../../core/analytics/build.ts';
import {
  METRICS,
  METRIC_IDS,
  PRESETS,
  RankingConfig,
  RankingError,
  RankingResponse,
  boardSql,
  breakdownIdsFor,
  buildBoards,
  copyFitnessVerdict,
  customRanking,
  parseExtraMetrics,
  presetList,
  rankBaseSql,
  type MetricId,
} from '../../core/rankings.ts';
import { loadPresetHeads, presetRanking, type PresetHeads } from '../../core/preset-rankings.ts';
import { TtlCache, cacheKey } from '../../core/ttl-cache.ts';
import { PUBLIC_BOARD, TidIndex, publicTraderTeaser } from '../../core/public/index.ts';
import type { QueryRunner } from '../../core/query.ts';
import { duckRunner } from '../../data/runner.ts';
import { makeVenue, type TestVenue } from '../helpers/venue.ts';

let v: TestVenue;
const T = new Date('2026-10-31T23:59:59Z');
const NOW = new Date('2026-11-01T01:00:00Z');
type Row = Record<string, unknown>;

beforeAll(async () => {
  v = await makeVenue({ wallets: 4000, days: 45, seed: 11 });
  await fullBuild(duckRunner(v.conn), T);
}, 600_000);
afterAll(async () => v?.cleanup());

const n = (x: unknown) => (x === null || x === undefined ? null : Number(x));

/** percent_rank among measured rows, best = 100 (a lone measured row reads 100). */
function refPercentiles(rows: Row[], id: MetricId): Map<number, number | null> {
  const m = METRICS[id];
  const measured = rows.filter((r) => r[`ms_${id}`] === true);
  const vals = measured.map((r) => n(r[`val_${id}`])!);
  const out = new Map<number, number | null>();
  for (const r of rows) {
    if (r[`ms_${id}`] !== true) {
      out.set(Number(r.wallet_id), null);
      continue;
    }
    const x = n(r[`val_${id}`])!;
    // rank - 1 = number of rows strictly worse
    const worse = vals.filter((y) => (m.better === 'higher' ? y < x : y > x)).length;
    out.set(Number(r.wallet_id), measured.length === 1 ? 100 : (100 * worse) / (measured.length - 1));
  }
  return out;
}

describe('composite worked by hand', () => {
  it('weights percentiles over measured metrics only', async () => {
    // four wallets; calibration z: -3, -1, 2, unmeasured; volume: 10, 40, 20, 30
    const ids = (await v.rows<{ wallet_id: number }>(`SELECT wallet_id FROM a_rank_base ORDER BY wallet_id LIMIT 4`)).map((r) => r.wallet_id);
    await v.conn.run(`CREATE OR REPLACE TABLE hand_base AS SELECT * FROM a_rank_base WHERE wallet_id IN (${ids.join(',')})`);
    const zs = [-3, -1, 2, null];
    const vols = [10, 40, 20, 30];
    for (const [i, id] of ids.entries()) {
      await v.conn.run(`UPDATE hand_base SET calibration_ranked = ${zs[i] !== null}, calibration_excess_z = ${zs[i] ?? 'NULL'},
        lifetime_volume_usdc = ${vols[i]}, trade_count = 5, last_trade_at = TIMESTAMP '2026-10-30 00:00:00', user_key = 'u${i}' WHERE wallet_id = ${id}`);
    }
    const cfg = RankingConfig.parse({ weights: { calibration: 2, volume: 1 } });
    const rows = await v.rows<Row>(`SELECT * FROM (${boardSql(cfg, T, 'hand_base')}) ORDER BY rank`);
    const by = new Map(rows.map((r) => [Number(r.wallet_id), r]));
    // calibration (lower z better) among 3 measured: -3 -> 100, -1 -> 50, 2 -> 0; volume: 10 -> 0, 20 -> 33.3, 30 -> 66.7, 40 -> 100
    const expected = [(2 * 100 + 1 * 0) / 3, (2 * 50 + 100) / 3, (2 * 0 + 100 / 3) / 3, 200 / 3 / 1];
    ids.forEach((id, i) => expect(Number(by.get(id)!.composite_score)).toBeCloseTo(expected[i]!, 6));
    // ranks follow the composite: wallet 0 (66.7) and wallet 3 (66.7) tie -> lower wallet id first, then 1 (66.7)...
    const sorted = [...rows].sort((a, b) => Number(b.composite_score) - Number(a.composite_score) || Number(a.wallet_id) - Number(b.wallet_id));
    expect(rows.map((r) => r.wallet_id)).toEqual(sorted.map((r) => r.wallet_id));
    expect(by.get(ids[3]!)!.ms_calibration).toBe(false);
    expect(by.get(ids[3]!)!.pct_calibration).toBeNull();
  });
});

describe('every preset board against a brute-force reference', () => {
  it('percentiles, composite, gates and one row per user', async () => {
    const base = await v.rows<Row>(`SELECT * FROM a_rank_base`);
    expect(base.length).toBeGreaterThan(1000);
    for (const p of PRESETS) {
      const cfg = RankingConfig.parse(p.config);
      const all = await v.rows<Row>(`SELECT * FROM a_board WHERE preset = '${p.slug}' ORDER BY rank`);
      const res = await presetRanking(duckRunner(v.conn), p.slug, { limit: 500 }, NOW);
      RankingResponse.parse(res);
      // explain: each gate's remaining is the brute-force count of cohort rows passing every gate so far
      const cohort = base.filter((r) => Number(r.trade_count) > 0 && (cfg.cohort.active_within_days === undefined || (r.last_trade_at as Date).getTime() > T.getTime() - cfg.cohort.active_within_days * 86_400_000));
      expect(res.cohort_size).toBe(cohort.length);
      let remaining = cohort;
      cfg.gates.forEach((g, i) => {
        const op = { gte: (a: number, b: number) => a >= b, gt: (a: number, b: number) => a > b, lte: (a: number, b: number) => a <= b, lt: (a: number, b: number) => a < b, eq: (a: unknown, b: unknown) => a === b, ne: (a: unknown, b: unknown) => a !== b }[g.op] as (a: unknown, b: unknown) => boolean;
        const field = g.field === 'in_cluster' ? (r: Row) => Number(r.cluster_size) > 1 : (r: Row) => (typeof g.value === 'boolean' ? r[g.field] : n(r[g.field]));
        const next = remaining.filter((r) => field(r) !== null && field(r) !== undefined && op(field(r), g.value));
        expect(res.explain.gates[i]!.remaining).toBe(next.length);
        expect(res.explain.gates[i]!.dropped).toBe(remaining.length - next.length);
        remaining = next;
      });
      const last = res.explain.gates[res.explain.gates.length - 1]!;
      expect(last.remaining).toBe(res.total_rows);
      expect(res.total_rows).toBe(all.length);
      expect(res.gated_out_count).toBe(res.cohort_size - res.total_rows);
      // percentiles over the gated cohort (before one-row-per-user) for every catalogue metric
      const gatedIds = new Set(remaining.map((r) => Number(r.wallet_id)));
      const pctRows = await v.rows<Row>(`SELECT * FROM (${boardSql(cfg, T).replace(/QUALIFY row_number\(\) OVER \(PARTITION BY user_key[^)]*\) = 1/, '')})`);
      expect(new Set(pctRows.map((r) => Number(r.wallet_id)))).toEqual(new Set([...gatedIds].filter((id) => pctRows.some((r) => Number(r.wallet_id) === id))));
      const scoredIds = [...gatedIds];
      const full = await v.rows<Row>(`WITH g AS (SELECT * FROM a_rank_base WHERE wallet_id IN (${scoredIds.join(',') || -1}))
        SELECT wallet_id, ${METRIC_IDS.map((id) => `(${METRICS[id].measured}) AS ms_${id}, (${METRICS[id].value})::DOUBLE AS val_${id}`).join(', ')} FROM g`);
      for (const id of METRIC_IDS) {
        const ref = refPercentiles(full, id);
        for (const r of all.slice(0, 60)) {
          const want = ref.get(Number(r.wallet_id));
          if (want === null) expect(r[`pct_${id}`]).toBeNull();
          else expect(Number(r[`pct_${id}`])).toBeCloseTo(want!, 6);
        }
      }
      // composite = sum(w * pct) / sum(w) over measured weighted metrics
      const weights = Object.entries(cfg.weights) as [MetricId, number][];
      for (const r of all.slice(0, 60)) {
        let num = 0;
        let den = 0;
        for (const [id, w] of weights) if (r[`ms_${id}`] === true) (num += w * Number(r[`pct_${id}`])), (den += w);
        expect(Number(r.composite_score)).toBeCloseTo(num / den, 6);
      }
      // sorted by composite, ranks 1..n, one row per user
      all.forEach((r, i) => expect(Number(r.rank)).toBe(i + 1));
      for (let i = 1; i < all.length; i++) expect(Number(all[i - 1]!.composite_score)).toBeGreaterThanOrEqual(Number(all[i]!.composite_score));
      expect(new Set(all.map((r) => r.user_key)).size).toBe(all.length);
      // rows: nullable brier / win rate only where unmeasured, never 0 for "unmeasured"
      for (const row of res.rows) {
        const b = base.find((x) => String(x.address).toLowerCase() === row.proxy_wallet.toLowerCase())!;
        expect(row.brier).toBe(n(b.brier));
        expect(row.win_rate_pct).toBe(n(b.win_rate_pct));
        expect(Object.keys(row.breakdown).sort()).toEqual(weights.map(([id]) => id).sort());
      }
      const wsum = Object.values(res.normalized_weights).reduce((s, x) => s + x, 0);
      expect(wsum).toBeCloseTo(1, 12);
    }
  }, 300_000);
});

describe('pages past the board head stored whole', () => {
  it('answer as pages within it: the stored ranks, then their wallets by id', async () => {
    const db = duckRunner(v.conn);
    const pages = [
      { limit: 7 },
      { offset: 5, limit: 9 },
      { offset: 40, limit: 500 },
      { limit: 3, extra_metrics: ['brier', 'alpha_24h'] as MetricId[] },
      { active_within_days: 3, limit: 12 },
      { sort_by: 'volume' as const, offset: 2, limit: 6 },
    ];
    const answers = async () => {
      const out: unknown[] = [];
      for (const p of PRESETS) for (const q of pages) out.push((({ query_ms: _, ...rest }) => rest)(await presetRanking(db, p.slug, q, NOW)));
      return out;
    };
    // every page within the head (the head is the whole board)
    await buildBoards(db, T, 1_000_000);
    const whole = await answers();
    const [m] = await v.rows<{ n: number; top: number }>(`SELECT min(total_rows) AS n, min(top_rows) AS top FROM a_board_meta`);
    expect(Number(m!.top)).toBe(Number(m!.n));
    // a head of 4 rows: every page but the first ones reads the ranks and then the rank base
    await buildBoards(db, T, 4);
    expect((await v.rows<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM a_board_top`))[0]!.n).toBe(4 * PRESETS.length);
    const [top] = await v.rows<Row>(`SELECT * FROM a_board_top WHERE preset = 'top-pnl' AND rank = 4`);
    expect(top).toEqual((await v.rows<Row>(`SELECT * FROM a_board WHERE preset = 'top-pnl' AND rank = 4`))[0]);
    expect(await answers()).toEqual(whole);
    await buildBoards(db, T);
  }, 300_000);
});

describe('plain pages from the heads in memory', () => {
  it('answer as SQL does without a statement; other pages, and a version not announced, read SQL', async () => {
    const db = duckRunner(v.conn);
    // a user with two wallets in a head: its wallets are listed from memory too
    const [a, , c] = (await v.rows<{ wallet_id: number }>(`SELECT wallet_id FROM a_board_rank WHERE preset = 'top-pnl' ORDER BY rank LIMIT 3`)).map((r) => r.wallet_id);
    await v.conn.run(`DELETE FROM wallet_links`);
    await v.conn.run(`INSERT INTO wallet_links VALUES (${a}, 'user-3'), (${c}, 'user-3')`);
    await db.run(rankBaseSql());
    // a head of 6 rows: pages within it come from memory, pages past it and overridden pages from SQL
    await buildBoards(db, T, 6);
    const heads = await loadPresetHeads(db);
    expect(heads.boards.size).toBe(PRESETS.length);
    let statements = 0;
    const counted: QueryRunner = {
      all: (sql, p) => (statements++, db.all(sql, p)),
      run: (sql, p) => (statements++, db.run(sql, p)),
    };
    let served: PresetHeads | null = heads;
    const source = { presetHeads: () => served };
    const memoryPages = [{ limit: 6 }, { offset: 2, limit: 3 }, { limit: 4, extra_metrics: ['brier', 'alpha_24h', 'volume'] as MetricId[] }, { offset: 5, limit: 1 }];
    const sqlPages = [{ offset: 4, limit: 5 }, { limit: 3, active_within_days: 3 }, { limit: 3, sort_by: 'volume' as const }];
    const answer = async (slug: string, q: object, s?: typeof source) => (({ query_ms: _, ...rest }) => rest)(await presetRanking(counted, slug, q, NOW, s));
    expect(heads.boards.get('top-pnl')!.rows[0]!.wallet_count).toBe(2);
    for (const p of PRESETS) {
      for (const q of memoryPages) {
        const sql = await answer(p.slug, q);
        const before = statements;
        const memory = await answer(p.slug, q, source);
        expect(statements - before).toBe(0);
        expect(memory, `${p.slug} ${JSON.stringify(q)}`).toEqual(sql);
        // the page's breakdown only, in its order
        expect(memory.rows.map((r) => Object.keys(r.breakdown))).toEqual(sql.rows.map(() => breakdownIdsFor(RankingConfig.parse({ ...p.config, ...q }))));
      }
      for (const q of sqlPages) {
        const before = statements;
        expect(await answer(p.slug, q, source)).toEqual(await answer(p.slug, q));
        expect(statements - before).toBeGreaterThan(0);
      }
    }
    // no heads for the announced version: SQL
    served = null;
    const before = statements;
    expect(await answer('top-pnl', { limit: 6 }, source)).toEqual(await answer('top-pnl', { limit: 6 }));
    expect(statements - before).toBeGreaterThan(0);
    await v.conn.run(`DELETE FROM wallet_links`);
    await db.run(rankBaseSql());
    await buildBoards(db, T);
  }, 300_000);
});

describe('copies_badly in SQL', () => {
  it('equals the copy-fitness verdict on every wallet', async () => {
    const rows = await v.rows<Row>(`SELECT * FROM a_rank_base`);
    let flagged = 0;
    for (const r of rows) {
      const want = copyFitnessVerdict(r).copiesBadly;
      expect(r.copies_badly, String(r.wallet_id)).toBe(want);
      if (want) flagged++;
    }
    expect(flagged).toBeGreaterThan(0);
  });
});

describe('users with several wallets', () => {
  it('collapse into one row listing every wallet', async () => {
    const top = await v.rows<{ wallet_id: number }>(`SELECT wallet_id FROM a_board WHERE preset = 'top-pnl' ORDER BY rank LIMIT 3`);
    const [a, b, c] = top.map((r) => r.wallet_id);
    await v.conn.run(`DELETE FROM wallet_links`);
    await v.conn.run(`INSERT INTO wallet_links VALUES (${a}, 'user-1'), (${c}, 'user-1')`);
    const db = duckRunner(v.conn);
    await db.run(rankBaseSql());
    await buildBoards(db, T);
    const res = await presetRanking(db, 'top-pnl', { limit: 5 }, NOW);
    const u = res.rows.filter((r) => r.user_id === 'user-1');
    expect(u).toHaveLength(1);
    expect(u[0]!.wallet_count).toBe(2);
    expect(u[0]!.rank).toBe(1);
    expect(new Set(u[0]!.wallets.map((w) => w.proxy_wallet.toLowerCase()))).toEqual(
      new Set((await v.rows<{ address: string }>(`SELECT address FROM wallets WHERE wallet_id IN (${a}, ${c})`)).map((r) => r.address)),
    );
    // the second-best wallet now ranks 2nd, the linked third is gone from the board
    const second = (await v.rows<{ address: string }>(`SELECT address FROM wallets WHERE wallet_id = ${b}`))[0]!.address;
    expect(res.rows[1]!.proxy_wallet.toLowerCase()).toBe(second);
    expect(res.explain.gates.at(-1)!.dropped).toBe(1);
    await v.conn.run(`DELETE FROM wallet_links`);
    await db.run(rankBaseSql());
    await buildBoards(db, T);
  }, 120_000);
});

describe('the public trader teaser of a linked wallet', () => {
  it("shows its user's row of the public board (the user's best wallet), not none", async () => {
    const db = duckRunner(v.conn);
    const top = (await v.rows<{ wallet_id: number }>(`SELECT wallet_id FROM a_board_rank WHERE preset = '${PUBLIC_BOARD}' ORDER BY rank LIMIT 3`)).map((r) => r.wallet_id);
    const [a, , c] = top;
    await v.conn.run(`DELETE FROM wallet_links`);
    await v.conn.run(`INSERT INTO wallet_links VALUES (${a}, 'user-2'), (${c}, 'user-2')`);
    await db.run(rankBaseSql());
    await buildBoards(db, T);
    try {
      const [row] = await v.rows<{ rank: number; composite_score: number }>(`SELECT rank, composite_score FROM a_board_rank WHERE preset = '${PUBLIC_BOARD}' AND wallet_id = ${a}`);
      expect((await v.rows(`SELECT 1 FROM a_board_rank WHERE preset = '${PUBLIC_BOARD}' AND wallet_id = ${c}`)).length).toBe(0);
      const [{ address }] = (await v.rows<{ address: string }>(`SELECT address FROM wallets WHERE wallet_id = ${c}`)) as [{ address: string }];
      const teaser = await publicTraderTeaser(db, { kind: 'address', address }, NOW, new TidIndex('k'.repeat(32)));
      expect(teaser.rank).toBe(Number(row!.rank));
      expect(teaser.composite_score).toBeCloseTo(Number(row!.composite_score), 12);
    } finally {
      await v.conn.run(`DELETE FROM wallet_links`);
      await db.run(rankBaseSql());
      await buildBoards(db, T);
    }
  }, 120_000);
});

describe('overrides and extra metrics', () => {
  it('active_within_days narrows, sort_by re-sorts, extra_metrics adds columns', async () => {
    const db = duckRunner(v.conn);
    const narrow = await presetRanking(db, 'top-pnl', { active_within_days: 3, limit: 200 }, NOW);
    for (const r of narrow.rows) expect(new Date(r.last_trade_at).getTime()).toBeGreaterThan(T.getTime() - 3 * 86_400_000);
    const wide = await presetRanking(db, 'top-pnl', { limit: 1 }, NOW);
    expect(narrow.total_rows).toBeLessThan(wide.total_rows);
    expect(narrow.cohort_size).toBeLessThan(wide.cohort_size);
    expect(narrow.explain.gates.at(-1)!.remaining).toBe(narrow.total_rows);
    const byVol = await presetRanking(db, 'top-pnl', { sort_by: 'volume', limit: 50, extra_metrics: parseExtraMetrics('volume, sharpe') }, NOW);
    for (let i = 1; i < byVol.rows.length; i++) expect(byVol.rows[i - 1]!.lifetime_volume_usdc).toBeGreaterThanOrEqual(byVol.rows[i]!.lifetime_volume_usdc);
    expect(byVol.rows.map((r) => r.rank)).toEqual(byVol.rows.map((_, i) => i + 1));
    expect(Object.keys(byVol.rows[0]!.breakdown)).toEqual(expect.arrayContaining(['volume', 'sharpe', 'realized_pnl', 'roi']));
    expect(byVol.rows_capped_at).toBe(50);
  });

  it('unknown extra metric ids are an error listing the valid ones', () => {
    try {
      parseExtraMetrics('volume,nope,alsonope');
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RankingError);
      expect((e as RankingError).code).toBe('invalid_extra_metrics');
      expect((e as RankingError).message).toContain('nope, alsonope');
      expect((e as RankingError).details.valid).toEqual(METRIC_IDS);
    }
    expect(parseExtraMetrics('')).toEqual([]);
  });

  it('an unknown preset lists the presets', async () => {
    await expect(presetRanking(duckRunner(v.conn), 'nope', {}, NOW)).rejects.toMatchObject({ code: 'unknown_preset' });
  });
});

describe('custom rankings', () => {
  it('a custom config equal to a preset gives the preset board', async () => {
    const db = duckRunner(v.conn);
    const p = PRESETS.find((x) => x.slug === 'sharp-forecasters')!;
    const custom = await customRanking(db, { ...p.config, limit: 20 }, NOW);
    const preset = await presetRanking(db, p.slug, { limit: 20 }, NOW);
    expect(custom.rows.map((r) => [r.rank, r.proxy_wallet, r.composite_score])).toEqual(preset.rows.map((r) => [r.rank, r.proxy_wallet, r.composite_score]));
    expect(custom.explain).toEqual(preset.explain);
    expect(custom.rows[0]!.verdict).toEqual(preset.rows[0]!.verdict);
  });

  it('concurrent custom rankings on one connection each get their own board', async () => {
    const db = duckRunner(v.conn);
    const configs = [
      { weights: { realized_pnl: 1 }, limit: 10 },
      { weights: { volume: 1 }, limit: 10 },
      { weights: { calibration: 0.5, alpha_24h: 0.5 }, limit: 10 },
      { weights: { trade_count: 1 }, limit: 10 },
    ];
    const sequential = [];
    for (const c of configs) sequential.push(await customRanking(db, c, NOW));
    const concurrent = await Promise.all(configs.map((c) => customRanking(db, c, NOW)));
    const shape = (r: Awaited<ReturnType<typeof customRanking>>) => r.rows.map((x) => [x.rank, x.proxy_wallet, x.composite_score]);
    expect(concurrent.map(shape)).toEqual(sequential.map(shape));
  });

  it('strict validation with clear errors', async () => {
    const bad = [
      { weights: {} },
      { weights: { calibration: 0 } },
      { weights: { nope: 1 } },
      { weights: { calibration: 1 }, gates: [{ field: 'calibration_ranked', op: 'gte', value: 1 }] },
      { weights: { calibration: 1 }, gates: [{ field: 'trade_count', op: 'gte', value: true }] },
      { weights: { calibration: 1 }, limit: 501 },
      { weights: { calibration: 1 }, cohort: { best_category: 'DROP TABLE x;' } },
      { weights: { calibration: 1 }, surprise: true },
    ];
    for (const cfg of bad) {
      await expect(customRanking(duckRunner(v.conn), cfg as never, NOW)).rejects.toMatchObject({ code: 'invalid_ranking' });
    }
  });

  it('the presets list documents all ten, eight of them forecasting presets gated on calibration excess', () => {
    const list = presetList();
    expect(list).toHaveLength(10);
    const forecasting = list.filter((p) => p.forecasting);
    expect(forecasting).toHaveLength(8);
    for (const p of forecasting) {
      expect(p.gates.map((g) => g.condition)).toContain('calibration_ranked = true');
      expect(p.gates.some((g) => g.condition.startsWith('calibration_excess_z <='))).toBe(true);
      expect(Object.keys(p.weights)).not.toContain('brier');
    }
  });
});

describe('60-second cache', () => {
  it('expires after the TTL and keys on every parameter, in any order', async () => {
    let now = 0;
    const cache = new TtlCache<number>(60_000, () => now);
    let computed = 0;
    const k1 = cacheKey({ slug: 'whales', q: { limit: 5, sort_by: 'volume' } });
    const k2 = cacheKey({ q: { sort_by: 'volume', limit: 5 }, slug: 'whales' });
    expect(k1).toBe(k2);
    expect(cacheKey({ slug: 'whales', q: { limit: 6, sort_by: 'volume' } })).not.toBe(k1);
    const f = async () => ++computed;
    expect((await cache.getOrCompute(k1, f)).hit).toBe(false);
    now = 59_999;
    expect((await cache.getOrCompute(k2, f)).hit).toBe(true);
    now = 60_000;
    expect((await cache.getOrCompute(k1, f)).hit).toBe(false);
    expect(computed).toBe(2);
  });

  it('canonical keys: equal for any key order, different for any changed value', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.boolean())), (d) => {
        const reversed = Object.fromEntries(Object.entries(d).reverse());
        expect(cacheKey(reversed)).toBe(cacheKey(d));
        const keys = Object.keys(d);
        if (keys.length) expect(cacheKey({ ...d, [keys[0]!]: '__changed__' })).not.toBe(cacheKey(d));
      }),
    );
  });
});

/**
 * Benchmark: preset and custom rankings over a 2.8M-wallet cohort.
 *   npm run bench:rankings -- [--source var/demo-analytics.duckdb] [--copies 28] [--runs 40]
 * (a full-scale build serves as is: --source var/bench-venue-w2800000/bench.duckdb --copies 1)
 * The cohort is the demo venue's analytics build (100k wallets, from `npm run analytics:build -- --venue <demo dir>
 * --db var/demo-analytics.duckdb`) replicated `copies` times with fresh wallet ids and addresses, so the ranking
 * path (boards, gate counts, row assembly) runs at full scale without the full-scale build. Prints the board build
 * time, and p50 / p95 / max of uncached preset rankings (plain and with overrides; the plain ones also from the
 * version's board heads in memory, as the service answers them, with the heads' load time) and of custom rankings, in SQL
 * and through the in-memory ranker the service keeps per analytics version (its load time too). Custom configs
 * are random valid RankingConfigs (cohort filters, gates, weights, sorts, pages), the same for both paths; then
 * configs weighting 3, 7 and every metric, over the whole cohort and gated (in memory only). Last, the longest step of
 * the computations a service runs between requests: a version's patch (`patch_steps`, a delta of 45k rows and one of
 * two thirds of the cohort with every value moved) and each preset's board (`board_steps`).
 */
import { parseArgs } from 'node:util';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { METRIC_IDS, PRESETS, RankingConfig, breakdownIdsFor, buildBoards, customRanking } from '../core/rankings.ts';
import { loadPresetHeads, presetRanking } from '../core/preset-rankings.ts';
import { openDuckDB, queryRows, sqlString } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { RankingEngine, VersionRanker } from '../core/ranking-engine.ts';
import { loadRankColumns, type RankColumns } from '../core/rank-columns.ts';
import { patchSteps } from '../core/ranking-patch.ts';

const { values } = parseArgs({ options: { source: { type: 'string' }, copies: { type: 'string' }, runs: { type: 'string' } } });
const source = resolve(values.source ?? 'var/demo-analytics.duckdb');
const copies = Number(values.copies ?? 28);
const runs = Number(values.runs ?? 40);
const path = resolve('var/bench-rankings.duckdb');
await rm(path, { force: true });
const { instance, conn } = await openDuckDB({ path, threads: 2 });
const db = duckRunner(conn);
await conn.run(`ATTACH ${sqlString(source)} AS src (READ_ONLY)`);
const [{ n: srcRows }] = (await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM src.a_rank_base`)) as [{ n: number }];
const stride = 10_000_000;
const t0 = performance.now();
await conn.run(`CREATE TABLE a_rank_base AS SELECT * REPLACE (
    wallet_id + k * ${stride} AS wallet_id, cluster_key + k * ${stride} AS cluster_key,
    CASE WHEN k = 0 THEN address ELSE '0x' || lpad(printf('%x', k), 4, '0') || substr(address, 7) END AS address,
    CASE WHEN k = 0 THEN cluster_address ELSE '0x' || lpad(printf('%x', k), 4, '0') || substr(cluster_address, 7) END AS cluster_address,
    CASE WHEN k = 0 THEN user_key ELSE user_key || ':' || k END AS user_key,
    CASE WHEN k = 0 THEN linked_user_id ELSE linked_user_id || ':' || k END AS linked_user_id)
  FROM src.a_rank_base, range(${copies}) t(k) ORDER BY wallet_id`);
// as writeRankBase leaves it: indexed on wallet_id (a custom ranking's page rows are point lookups)
await conn.run(`CREATE INDEX a_rank_base_wallet ON a_rank_base (wallet_id)`);
await conn.run(`CREATE TABLE wallets AS SELECT wallet_id, address, username, pseudonym, profile_image, verified FROM a_rank_base`);
await conn.run(`CREATE TABLE a_wallet_metrics AS SELECT * FROM a_rank_base LIMIT 0`);
await conn.run(`CREATE TABLE wallet_links AS SELECT wallet_id, linked_user_id AS user_id FROM a_rank_base WHERE linked_user_id IS NOT NULL`);
await conn.run(`CREATE TABLE a_meta AS SELECT * FROM src.a_meta`);
const [meta] = await queryRows<{ as_of: Date }>(conn, `SELECT as_of FROM a_meta`);
const asOf = meta!.as_of;
const cohort = (await queryRows<{ n: number }>(conn, `SELECT count(*) AS n FROM a_rank_base`))[0]!.n;
const loadSeconds = (performance.now() - t0) / 1000;
const t1 = performance.now();
await buildBoards(db, asOf);
const boardSeconds = (performance.now() - t1) / 1000;
const now = new Date(asOf.getTime() + 3_600_000);

function stats(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]!;
  return { n: s.length, p50_ms: Number(q(0.5).toFixed(1)), p95_ms: Number(q(0.95).toFixed(1)), max_ms: Number(s[s.length - 1]!.toFixed(1)) };
}
async function time(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}
const plain: number[] = [];
const overridden: number[] = [];
for (let i = 0; i < runs; i++) {
  const p = PRESETS[i % PRESETS.length]!;
  plain.push(await time(() => presetRanking(db, p.slug, { limit: 50 }, now)));
  overridden.push(await time(() => presetRanking(db, p.slug, { limit: 50, active_within_days: 30, sort_by: 'volume', extra_metrics: ['sharpe', 'alpha_24h'] }, now)));
}
// the plain pages from the version's board heads in memory, as the service answers them once the version is announced
const tHeads = performance.now();
const heads = await loadPresetHeads(db);
const headsLoadSeconds = (performance.now() - tHeads) / 1000;
const fromHeads: number[] = [];
for (let i = 0; i < runs; i++) fromHeads.push(await time(() => presetRanking(db, PRESETS[i % PRESETS.length]!.slug, { limit: 50 }, now, { presetHeads: () => heads })));
const custom: number[] = [];
const configs = [
  { gates: [{ field: 'calibration_ranked', op: 'eq', value: true }], weights: { calibration: 1, alpha_24h: 1 } },
  { cohort: { active_within_days: 30 }, gates: [{ field: 'trade_count', op: 'gte', value: 20 }], weights: { realized_pnl: 1, sharpe: 1 } },
  { gates: [], weights: { volume: 1 } },
] as const;
for (let i = 0; i < Math.max(3, Math.floor(runs / 8)); i++) custom.push(await time(() => customRanking(db, configs[i % configs.length] as never, now)));
// the in-memory ranker of this version, as the service loads it after each publish
const t2 = performance.now();
const version = Number((await queryRows<{ v: number }>(conn, `SELECT version AS v FROM a_meta`))[0]?.v ?? 1);
const rankCols = await loadRankColumns(db);
const rankerColumnsSeconds = (performance.now() - t2) / 1000;
const t3 = performance.now();
const ranker = new VersionRanker(version, new RankingEngine(rankCols));
const rankerOrdersSeconds = (performance.now() - t3) / 1000;
// every metric's rank keys, as the service computes them before it serves a loaded version (RankerCache)
const t4 = performance.now();
await ranker.engine.warm();
const rankerWarmSeconds = (performance.now() - t4) / 1000;
const rankerLoadSeconds = (performance.now() - t2) / 1000;
const rankers = { at: (v: number) => (v === version ? ranker : null) };
// random valid configs (a fixed seed: the same list every run)
let seed = 7;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const metricIds = ['calibration', 'alpha_24h', 'sharpe', 'realized_pnl', 'volume', 'win_rate', 'brier'] as const;
const randomConfig = () => ({
  cohort: { ...(rnd() < 0.5 ? { active_within_days: pick([1, 7, 30]) } : {}), ...(rnd() < 0.3 ? { min_trades: pick([5, 50]) } : {}), ...(rnd() < 0.3 ? { exclude_clusters: true } : {}) },
  gates: rnd() < 0.6 ? [{ field: pick(['trade_count', 'n_resolved_markets', 'markets_traded']), op: 'gte', value: pick([5, 20, 30]) }] : [],
  weights: Object.fromEntries([pick(metricIds), pick(metricIds)].map((m) => [m, pick([1, 2])])),
  sort_by: rnd() < 0.8 ? 'composite' : pick(metricIds),
  limit: pick([10, 50, 100]),
  offset: pick([0, 0, 100]),
});
const fast: number[] = [];
const rankOnly: number[] = [];
const customRandomSql: number[] = [];
for (let i = 0; i < runs * 2; i++) {
  const cfg = randomConfig();
  fast.push(await time(() => customRanking(db, cfg as never, now, undefined, rankers)));
  // the in-memory pass alone (cohort, gates, percentiles, composite, page), without the page rows' SQL
  const parsed = RankingConfig.parse(cfg);
  rankOnly.push(await time(async () => ranker.rankPage(parsed, asOf, breakdownIdsFor(parsed))));
  if (i < Math.max(3, Math.floor(runs / 8))) customRandomSql.push(await time(() => customRanking(db, cfg as never, now)));
}
// configs the random ones do not draw: many weighted metrics (3, 7, every one), over the whole cohort and gated, end
// to end through the ranker; the figures the 'any valid RankingConfig' asks for
const manyMetrics: Record<string, ReturnType<typeof stats>> = {};
for (const k of [3, 7, METRIC_IDS.length])
  for (const gated of [false, true]) {
    const ms: number[] = [];
    for (let i = 0; i < Math.max(5, Math.floor(runs / 4)); i++) {
      const weights = Object.fromEntries(METRIC_IDS.slice(0, k).map((id, j) => [id, 1 + ((i + j) % 3)]));
      const cfg = { weights, gates: gated ? [{ field: 'trade_count', op: 'gte', value: 5 }] : [], limit: 50 };
      ms.push(await time(() => customRanking(db, cfg as never, now, undefined, rankers)));
    }
    manyMetrics[`${k}_metrics_${gated ? 'gated' : 'whole_cohort'}`] = stats(ms);
  }
// A service computes a version's patch and its boards between requests, a step at a time: the longest step is how
// long a request can wait behind them. A patch with a refresh's usual delta (~45k rows) and with the ~1.9M rows a
// refresh changes when moved mids move most wallets' P&L (every row's value nudged, so every order changes).
function longestStep(steps: Generator<void, unknown>): { steps: number; longest_ms: number; total_ms: number } {
  let longest = 0;
  let n = 0;
  const t = performance.now();
  for (;;) {
    const s = performance.now();
    const r = steps.next();
    longest = Math.max(longest, performance.now() - s);
    n++;
    if (r.done) break;
  }
  return { steps: n, longest_ms: Number(longest.toFixed(1)), total_ms: Math.round(performance.now() - t) };
}
// a delta as a refresh loads it (the changed rows of the rank base), every value moved so every order changes
async function nudgedDelta(permille: number): Promise<RankColumns> {
  const delta = await loadRankColumns(db, 'a_rank_base', { where: `hash(wallet_id) % 1000 < ${permille}` });
  for (const v of [delta.volume, ...METRIC_IDS.map((id) => delta.value[id])]) for (let i = 0; i < delta.n; i++) v[i] = v[i]! * 1.001 + 1e-6;
  return delta;
}
const patchStepFigures: Record<string, ReturnType<typeof longestStep>> = {};
// ~45k rows (a usual refresh) and two thirds of the cohort (an hour's mids)
for (const permille of [16, 660]) {
  const delta = await nudgedDelta(permille);
  patchStepFigures[`delta_${delta.n}_rows`] = longestStep(patchSteps(ranker.engine, delta));
}
const boardStepFigures: Record<string, ReturnType<typeof longestStep>> = {};
for (const p of PRESETS) boardStepFigures[p.slug] = longestStep(ranker.engine.boardSteps(RankingConfig.parse(p.config), asOf.getTime() * 1000, () => {}));

console.log(
  JSON.stringify(
    {
      bench: 'rankings',
      source,
      source_wallets: srcRows,
      copies,
      cohort_wallets: cohort,
      load_seconds: Number(loadSeconds.toFixed(1)),
      boards_build_seconds: Number(boardSeconds.toFixed(1)),
      preset_uncached: stats(plain),
      // the same pages from the announced version's heads in memory (no statement), and what reading the heads costs
      preset_from_heads: stats(fromHeads),
      preset_heads_load_seconds: Number(headsLoadSeconds.toFixed(2)),
      preset_with_overrides_uncached: stats(overridden),
      custom_sql: stats(custom),
      custom_random_sql: stats(customRandomSql),
      ranker_load_seconds: Number(rankerLoadSeconds.toFixed(1)),
      ranker_columns_read_seconds: Number(rankerColumnsSeconds.toFixed(1)),
      ranker_metric_orders_seconds: Number(rankerOrdersSeconds.toFixed(1)),
      ranker_rank_keys_seconds: Number(rankerWarmSeconds.toFixed(1)),
      custom_in_memory_random_configs: stats(fast),
      custom_in_memory_rank_pass_only: stats(rankOnly),
      custom_in_memory_many_metrics: manyMetrics,
      patch_steps: patchStepFigures,
      board_steps: boardStepFigures,
      peak_rss_mb: Math.round(process.memoryUsage().rss / 2 ** 20),
    },
    null,
    2,
  ),
);
conn.closeSync();
instance.closeSync();

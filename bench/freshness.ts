/**
 * Benchmark: how fresh the live analytics stay under the live tail, measured in one process as `npm start` runs
 * them — the analytics engine refreshing back to back, the live tail appending fills at --rate per second, the REST
 * app on loopback reading through per-request snapshots, the in-memory rankers reloaded after each publish.
 *
 * Freshness of a fill = (wall time its version is published) − (wall time the tail committed it): the published
 * version's watermark covers the fill's arrival batch, so its wallet's rows, the cohort step and every board are
 * committed with it. The custom-ranking figure adds the in-memory ranker's reload after the publish. Meanwhile a
 * client asks for uncached preset rankings (one every --probe-ms) and custom rankings, the presets in turn from the
 * service's app (plain pages from the version's heads in memory) and from one that reads every page from SQL
 * (preset_sql_uncached_ms: the comparison under the same refreshes); their latency is reported
 * while a refresh runs and between refreshes. CPU share: the process's CPU time (DuckDB threads included) over
 * wall × cores, and the part of it spent while refreshes ran. The event loop's delay (p50, p99, max): every request
 * waits while it is held, and a hold past the servers' keep-alive timeout reset keep-alive clients; every hold over
 * a second is listed with what happened last before it (a refresh step that ended, a publish).
 *
 *   npm run bench:freshness -- [--db PATH --wallets N --days D --seed S] [--rate 68] [--seconds 300]
 *        [--refresh-ms 0] [--probe-ms 250] [--memory-limit 5GB] [--warmup-refreshes 0] [--across-commit on|off]
 *        [--preset-heads on|off] [--pause-slice-ms 0] [--state-store on|off]
 * --state-store on (default): the engine keeps the row store of a_position_state by wallet beside the database (as
 * `npm start` does; filled, and waited for, before the tail starts: its time and size printed); off: refreshes read
 * the table, as before session 27.
 * --preset-heads off: every preset page reads SQL (the announced version's heads in memory are not offered), as before
 * session 20, for a comparison on the same machine. --pause-slice-ms N: the refresh's JavaScript steps pause (let the
 * event loop and the readers go first) only once N ms ran since the last pause, not after every step.
 * --across-commit off: the refresh's commit runs alone, as before session 18 (requests that begin during it wait for
 * DuckDB's commit lock), for a comparison on the same machine; the slow requests are grouped by moment ('commit').
 * --warmup-refreshes N: N refreshes right after the tail starts, reported apart and left out of the figures (a bench
 * venue ends a second before midnight: the first refresh closes a day for every open risk position, once a day).
 * Defaults: the demo venue of `npm start` (stop it first: it holds the DuckDB file). At full scale:
 *   npm run bench:freshness -- --db var/bench-venue-w2800000/bench.duckdb --wallets 2800000 --days 120 --seed 1
 * The tail's rows stay in the database (a later run continues after them), as they would in the service.
 */
import { cpus } from 'node:os';
import { statSync } from 'node:fs';
import { PerformanceObserver, constants as perfConstants, monitorEventLoopDelay, type PerformanceEntry } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { PRESETS, ensureWalletLinks } from '../core/rankings.ts';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { LiveTail, type TailArrival } from '../data/live-tail/tail.ts';
import { duckRunner } from '../data/runner.ts';
import { createVenueViews, migrateVenue } from '../data/schema.ts';
import { snapshotRunner } from '../data/snapshot-runner.ts';
import { AnalyticsEngine, type Published } from '../jobs/analytics/engine.ts';
import { RankerCache } from '../jobs/analytics/rankers.ts';
import { startBenchApp } from './app.ts';
import { LIVE_VENUE_ARGS, liveVenue } from './live-venue-args.ts';

const Args = z.object({
  ...LIVE_VENUE_ARGS,
  seconds: z.coerce.number().positive().default(300),
  'refresh-ms': z.coerce.number().int().min(0).default(0),
  'probe-ms': z.coerce.number().int().min(10).default(250),
  'memory-limit': z.string().default('5GB'),
  'warmup-refreshes': z.coerce.number().int().min(0).default(0),
  // 'off': the refresh commits alone, as before session 18 (a comparison on the same machine)
  'across-commit': z.enum(['on', 'off']).default('on'),
  // 'off': every preset page reads SQL, as before session 20 (the heads in memory are not offered to the API)
  'preset-heads': z.enum(['on', 'off']).default('on'),
  // a refresh's JavaScript steps pause once this many ms ran since the last pause (0: after every step)
  'pause-slice-ms': z.coerce.number().min(0).default(0),
  'state-store': z.enum(['on', 'off']).default('on'),
});
const { values } = parseArgs({
  options: Object.fromEntries(['db', 'wallets', 'days', 'seed', 'rate', 'seconds', 'refresh-ms', 'probe-ms', 'memory-limit', 'warmup-refreshes', 'across-commit', 'preset-heads', 'pause-slice-ms', 'state-store'].map((k) => [k, { type: 'string' as const }])),
});
const a = Args.parse(values);
const { venue, dbPath } = liveVenue(a);

let peakRss = 0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 200);
const { instance, conn } = await openDuckDB({ path: dbPath, threads: 2, memoryLimit: a['memory-limit'] });
await migrateVenue(conn);
await createVenueViews(conn);
await ensureWalletLinks(duckRunner(conn));
const [summary] = await queryRows<{ wallets: number; fills: number; last: Date }>(conn, `SELECT (SELECT count(*) FROM wallets) AS wallets, count(*) AS fills, max(ts) AS last FROM fills`);
process.stderr.write(`venue ${dbPath}: ${Number(summary!.wallets).toLocaleString()} wallets, ${Number(summary!.fills).toLocaleString()} fills\n`);

let tail: LiveTail | undefined;
// holds of the event loop over a second, with what last happened before each (a refresh step that ended, a publish)
let lastEvent = 'start';
const longHolds: { at_s: number; held_ms: number; after: string }[] = [];
const tOpen = performance.now();
let beatAt = performance.now();
const heartbeat = setInterval(() => {
  const now = performance.now();
  if (now - beatAt > 1000) longHolds.push({ at_s: Math.round((now - tOpen) / 1000), held_ms: Math.round(now - beatAt - 20), after: lastEvent });
  beatAt = now;
}, 20);
const venueNow = () => (tail ? new Date(tail.stats().venueTime) : new Date(summary!.last));
const storePath = `${dbPath}.state-rows.sqlite`;
const engine = await AnalyticsEngine.open(instance, {
  now: venueNow,
  ...(a['state-store'] === 'on' ? { stateStore: storePath } : {}),
  pauseSliceMs: a['pause-slice-ms'],
  log: (m) => process.stderr.write(`${m}\n`),
  onRefreshStep: (name, sec) => {
    lastEvent = `after refresh step ${name}`;
    if (sec >= 1) process.stderr.write(`    ${name} ${sec.toFixed(1)} s\n`);
  },
});
const openSeconds = (performance.now() - tOpen) / 1000;
// the row store is filled before the tail starts (the service fills it while it serves; here it is not measured)
const tFill = performance.now();
await engine.stateStoreFilled();
const stateStoreFill = engine.stateStore()
  ? { seconds: Number(((performance.now() - tFill) / 1000).toFixed(1)), ...engine.stateStore(), gib: Number((statSync(storePath).size / 2 ** 30).toFixed(2)) }
  : null;
if (stateStoreFill) process.stderr.write(`state store: ${JSON.stringify(stateStoreFill)}\n`);
const apiDb = snapshotRunner(instance, { size: 8 });
// as main.ts: the refresh's JavaScript steps let a request mid-way go first, and its commit runs across read
// transactions begun ahead of it
engine.setReaders({
  readersIdle: (ms) => apiDb.readersIdle(ms),
  // the moment a request was sent: 'commit' while a refresh commits
  acrossCommit: (commit) => {
    lastEvent = 'commit';
    return a['across-commit'] === 'on' ? apiDb.acrossCommit(commit) : commit();
  },
});
const rankers = new RankerCache(instance, 2, (m) => process.stderr.write(`${m}\n`));
await rankers.refresh();

// every preset request is computed (presetCacheMs 0): the uncached figure
const { base, bearer, close: closeApp } = await startBenchApp({
  db: apiDb,
  dbScope: apiDb.middleware,
  rankers: a['preset-heads'] === 'on' ? rankers : { at: (v: number) => rankers.at(v) },
  venueNow,
  presetCacheMs: 0,
});
// the same app with every preset page read from SQL (no heads offered), probed in turn with it: the comparison in
// the same run, under the same refreshes
const sqlApp = await startBenchApp({ db: apiDb, dbScope: apiDb.middleware, rankers: { at: (v: number) => rankers.at(v) }, venueNow, presetCacheMs: 0 });

// --- the run
const arrivals: TailArrival[] = [];
const publishes: { p: Published; wallMs: number; seconds: number; steps: Record<string, number>; pauses: number; rankerMs: number | null; cpuMs: number; stateRows: string }[] = [];
let refreshing = false;
let refreshCpuUs = 0;
let cpuAtStart = process.cpuUsage();
let cpu0 = process.cpuUsage();
let wall0 = performance.now();
// how long the event loop was held (requests wait that long; past the servers' keep-alive timeout clients were reset)
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
// the garbage collector's pauses (they hold the loop as a JavaScript step does): per kind, and those over 50 ms with
// what last happened before each
const gcKind: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
let gcPauses: { kind: string; ms: number; after: string }[] = [];
const gcObserver = new PerformanceObserver((list) => {
  for (const e of list.getEntries() as (PerformanceEntry & { detail?: { kind?: number } })[]) {
    gcPauses.push({ kind: gcKind[e.detail?.kind ?? 0] ?? 'other', ms: e.duration, after: lastEvent });
  }
});
gcObserver.observe({ entryTypes: ['gc'] });
// as main.ts: a request that reads a version before it is announced ranks with the engine it is committed with
engine.on('committing', (version, r) => rankers.stage(version, r.ranker ?? null));
engine.on('published', (p, r) => {
  lastEvent = `published v${p.version}`;
  const wallMs = Date.now();
  const rec = { p, wallMs, seconds: r.total_seconds, steps: r.seconds, pauses: 'pauses' in r ? (r.pauses ?? 0) : 0, rankerMs: null as number | null, cpuMs: 0, stateRows: 'state_rows' in r ? r.state_rows : 'build' };
  publishes.push(rec);
  const counts = 'new_legs' in r ? ` legs ${r.new_legs}, positions ${r.positions}, wallets ${r.wallets} (marks ${r.mark_wallets}, marks only ${r.mark_only_wallets}), ${r.pauses ?? 0} pauses${r.engine_patch ? `, patch placed ${r.engine_patch.reordered} took over ${r.engine_patch.reused} (rank keys ${r.engine_patch.rankKeys})` : ''}` : '';
  process.stderr.write(`  v${p.version}: refresh ${r.total_seconds.toFixed(1)} s${counts} ${JSON.stringify(r.seconds)}\n`);
  // its preset heads (read before the commit) answer the plain preset pages, its engine the custom rankings
  void rankers.published(p.version, r).then(() => {
    if (rankers.at(p.version)) rec.rankerMs = Date.now();
  });
});
tail = await LiveTail.start(conn, venue, { ratePerSecond: a.rate, speed: 1 });
tail.on('batch', (b) => arrivals.push(b));
const refreshErrors: string[] = [];
const warmups: { seconds: number; steps: Record<string, number> }[] = [];
if (a['warmup-refreshes'] > 0) {
  await new Promise((r) => setTimeout(r, 2000));
  for (let i = 0; i < a['warmup-refreshes']; i++) {
    await engine.refreshNow().catch((e: Error) => refreshErrors.push(`warm-up: ${e.message.split('\n')[0]!}`));
    const last = publishes[publishes.length - 1];
    if (last) warmups.push({ seconds: last.seconds, steps: last.steps });
  }
  // the measured window starts now
  arrivals.length = 0;
  publishes.length = 0;
  cpu0 = process.cpuUsage();
  wall0 = performance.now();
  loopDelay.reset();
  gcPauses = [];
}

// refreshes back to back (or every --refresh-ms), CPU counted per refresh
let stop = false;
const refreshLoop = (async () => {
  while (!stop) {
    refreshing = true;
    cpuAtStart = process.cpuUsage();
    try {
      lastEvent = 'refresh started';
      await engine.refreshNow();
    } catch (e) {
      refreshErrors.push((e as Error).message.split('\n')[0]!);
      process.stderr.write(`refresh failed: ${(e as Error).message}\n`);
    }
    const d = process.cpuUsage(cpuAtStart);
    refreshCpuUs += d.user + d.system;
    if (publishes.length) publishes[publishes.length - 1]!.cpuMs = (d.user + d.system) / 1000;
    refreshing = false;
    if (a['refresh-ms']) await new Promise((r) => setTimeout(r, a['refresh-ms']));
    else await new Promise((r) => setImmediate(r));
  }
})();

// the reader: uncached presets and in-memory custom rankings, tagged with whether a refresh was running
const probes: { kind: 'preset' | 'preset_sql' | 'custom'; ms: number; during: boolean; asOf: string; after: string }[] = [];
const probeErrors: string[] = [];
const customs = [
  'weights=calibration:0.6,alpha_24h:0.4&limit=50',
  'weights=realized_pnl:1,sharpe:1&active_within_days=30&limit=50',
  'weights=volume:1&min_trades=20&limit=100',
];
const probeLoop = (async () => {
  let i = 0;
  while (!stop) {
    // in turn: a preset from the service's app, a custom ranking, the same preset from the SQL-only app, a custom ranking
    const preset = i % 2 === 0;
    const kind = !preset ? 'custom' : i % 4 === 0 ? 'preset' : 'preset_sql';
    const path = preset ? `/v1/rankings/preset/${PRESETS[(i >> 2) % PRESETS.length]!.slug}?limit=50` : `/v1/rankings?${customs[(i >> 1) % customs.length]}`;
    const app = kind === 'preset_sql' ? sqlApp : { base, bearer };
    const during = refreshing;
    // what last happened when it was sent (the refresh step that had ended: the next one was running)
    const after = lastEvent.replace(/ v\d+$/, '');
    const t = performance.now();
    // a failed request (a reset keep-alive connection, a non-200) is counted and reported, and the run goes on
    let res: Response;
    let body: { as_of?: string; error?: { message: string } };
    try {
      res = await fetch(`${app.base}${path}`, { headers: app.bearer });
      body = (await res.json()) as typeof body;
    } catch (e) {
      probeErrors.push(`${path}: ${(e as Error).message}${(e as { cause?: Error }).cause ? ` (${(e as { cause?: Error }).cause!.message})` : ''}`);
      res = new Response(null, { status: 599 });
      body = {};
    }
    const ms = performance.now() - t;
    if (res.status === 200) probes.push({ kind, ms, during: during || refreshing, asOf: body.as_of ?? '', after });
    else if (res.status !== 599) probeErrors.push(`${path}: ${res.status} ${body.error?.message}`);
    i++;
    await new Promise((r) => setTimeout(r, a['probe-ms']));
  }
})();

const progress = setInterval(() => {
  const s = tail!.stats();
  const last = publishes[publishes.length - 1];
  process.stderr.write(
    `  ${((performance.now() - wall0) / 1000).toFixed(0)} s: ${s.fills} fills (${s.fillsPerSecond.toFixed(1)}/s), ${publishes.length} versions` +
      (last ? `, last v${last.p.version} refresh ${last.seconds.toFixed(1)} s` : '') +
      `, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB\n`,
  );
}, 10_000);
await new Promise((r) => setTimeout(r, a.seconds * 1000));
await tail.stop();
// one more refresh so the last arrivals are covered, then stop
stop = true;
await refreshLoop;
await probeLoop;
// a failed refresh is rolled back (the service logs it and tries again); the figures so far still print
let finalRefreshError: string | null = null;
await engine.refreshNow().catch((e: Error) => (finalRefreshError = e.message));
clearInterval(progress);
const wallS = (performance.now() - wall0) / 1000;
const cpu = process.cpuUsage(cpu0);

// --- figures
const pct = (xs: number[], p: number) => {
  if (!xs.length) return null;
  const s = [...xs].sort((x, y) => x - y);
  return Number(s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(1));
};
// (a loop, not Math.max(...xs): at 680 fills/s there is one latency per fill, too many arguments for a call)
const maxOf = (xs: number[]) => xs.reduce((m, x) => (x > m ? x : m), Number.NEGATIVE_INFINITY);
const stats = (xs: number[]) => ({ n: xs.length, p50: pct(xs, 0.5), p95: pct(xs, 0.95), p99: pct(xs, 0.99), max: xs.length ? Number(maxOf(xs).toFixed(1)) : null });
// each fill's latency: the first publish whose watermark covers its batch (weighted by the batch's fill count)
const published: number[] = [];
const ranked: number[] = [];
let uncovered = 0;
for (const b of arrivals) {
  const p = publishes.find((x) => x.p.watermark >= b.seq);
  if (!p) {
    uncovered += b.fills;
    continue;
  }
  const ms = p.wallMs - b.wallMs;
  for (let k = 0; k < b.fills; k++) published.push(ms / 1000);
  if (p.rankerMs !== null) for (let k = 0; k < b.fills; k++) ranked.push((p.rankerMs - b.wallMs) / 1000);
}
// a check that "published" means reflected: the last version covers the newest fill of a sampled wallet
const [check] = await queryRows<{ fill_ts: Date; last_fill_ts: Date | null }>(
  conn,
  `WITH f AS (SELECT taker_id, market_id, outcome_index, ts FROM fills WHERE seq = (SELECT max(seq) FROM fills) LIMIT 1)
   SELECT f.ts AS fill_ts, (SELECT max(last_fill_ts) FROM a_position_state s
     WHERE s.wallet_id = f.taker_id AND s.market_id = f.market_id) AS last_fill_ts FROM f`,
).catch(() => [undefined]);
const refreshes = publishes.map((x) => x.seconds);
const stepNames = [...new Set(publishes.flatMap((x) => Object.keys(x.steps)))];
const stepStats = Object.fromEntries(stepNames.map((k) => [k, { p50: pct(publishes.map((x) => x.steps[k] ?? 0), 0.5), max: pct(publishes.map((x) => x.steps[k] ?? 0), 1) }]));
// the uncached presets over 100 ms, grouped by the moment each was sent
const slowPresets = new Map<string, number[]>();
for (const p of probes) if (p.kind === 'preset' && p.ms > 100) slowPresets.set(p.after, [...(slowPresets.get(p.after) ?? []), p.ms]);
// the custom rankings over a second, the same way (their maximum was 19–25 s in every run of session 17)
const slowCustoms = new Map<string, number[]>();
for (const p of probes) if (p.kind === 'custom' && p.ms > 1000) slowCustoms.set(p.after, [...(slowCustoms.get(p.after) ?? []), p.ms]);
const gcKinds = [...new Set(gcPauses.map((g) => g.kind))];
const gcOver50 = new Map<string, number[]>();
for (const g of gcPauses) if (g.ms > 50) gcOver50.set(`${g.kind} ${g.after}`, [...(gcOver50.get(`${g.kind} ${g.after}`) ?? []), g.ms]);
const out = {
  bench: 'freshness',
  venue: dbPath,
  wallets: Number(summary!.wallets),
  fills_at_start: Number(summary!.fills),
  rate_fills_per_second: a.rate,
  across_commit: a['across-commit'],
  seconds: Number(wallS.toFixed(1)),
  engine_open_seconds: Number(openSeconds.toFixed(1)),
  tail_fills: tail.stats().fills,
  versions_published: publishes.length,
  refresh_errors: refreshErrors,
  probe_errors: { count: probeErrors.length, first: probeErrors.slice(0, 5) },
  event_loop_holds_over_1s: { count: longHolds.length, first: longHolds.slice(0, 20) },
  event_loop_delay_ms: { p50: Number((loopDelay.percentile(50) / 1e6).toFixed(1)), p99: Number((loopDelay.percentile(99) / 1e6).toFixed(1)), max: Number((loopDelay.max / 1e6).toFixed(1)) },
  gc_pauses_ms: Object.fromEntries(gcKinds.map((k) => {
    const ms = gcPauses.filter((g) => g.kind === k).map((g) => g.ms);
    return [k, { count: ms.length, total: Math.round(ms.reduce((s, x) => s + x, 0)), p99: pct(ms, 0.99), max: pct(ms, 1) }];
  })),
  gc_pauses_over_50ms_by_moment: Object.fromEntries([...gcOver50].map(([moment, ms]) => [moment, stats(ms)])),
  final_refresh_error: finalRefreshError,
  warmup_refreshes: warmups,
  state_store_fill: stateStoreFill,
  // where each refresh read its touched wallets' state rows (the row store, or a_position_state)
  state_rows_read_from: Object.fromEntries(['store', 'table', 'build'].map((k) => [k, publishes.filter((x) => x.stateRows === k).length])),
  refresh_seconds: stats(refreshes),
  refresh_step_seconds: stepStats,
  // the pauses of its JavaScript steps per refresh (their time: the step 'paused', inside the other steps)
  refresh_pauses: { p50: pct(publishes.map((x) => x.pauses), 0.5), max: pct(publishes.map((x) => x.pauses), 1) },
  fill_to_published_seconds: stats(published),
  fill_to_custom_ranker_seconds: stats(ranked),
  fills_not_covered: uncovered,
  newest_fill_reflected: check ? check.last_fill_ts !== null && new Date(check.last_fill_ts).getTime() >= new Date(check.fill_ts).getTime() : null,
  preset_uncached_ms: { during_refresh: stats(probes.filter((p) => p.kind === 'preset' && p.during).map((p) => p.ms)), idle: stats(probes.filter((p) => p.kind === 'preset' && !p.during).map((p) => p.ms)) },
  // the same presets, every page from SQL (the app without heads), probed in turn with the above
  preset_sql_uncached_ms: { during_refresh: stats(probes.filter((p) => p.kind === 'preset_sql' && p.during).map((p) => p.ms)), idle: stats(probes.filter((p) => p.kind === 'preset_sql' && !p.during).map((p) => p.ms)) },
  // the uncached presets over 100 ms, by what had last happened when each was sent: where the tail comes from
  preset_over_100ms_by_moment: Object.fromEntries([...slowPresets].map(([moment, ms]) => [moment, stats(ms)])),
  custom_over_1s_by_moment: Object.fromEntries([...slowCustoms].map(([moment, ms]) => [moment, stats(ms)])),
  // requests that began while a refresh committed, in a read transaction begun ahead of the commit (acrossCommit)
  requests_on_transactions_begun_ahead: apiDb.stats().tookBegunAhead,
  custom_ms: { during_refresh: stats(probes.filter((p) => p.kind === 'custom' && p.during).map((p) => p.ms)), idle: stats(probes.filter((p) => p.kind === 'custom' && !p.during).map((p) => p.ms)) },
  cpu_share_of_2_cores: Number(((cpu.user + cpu.system) / 1e6 / (wallS * Math.min(2, cpus().length))).toFixed(3)),
  cpu_share_maintenance: Number((refreshCpuUs / 1e6 / (wallS * Math.min(2, cpus().length))).toFixed(3)),
  refresh_busy_share_of_wall: Number((refreshes.reduce((s, x) => s + x, 0) / wallS).toFixed(3)),
  peak_rss_mb: Math.round(Math.max(peakRss, process.memoryUsage().rss) / 2 ** 20),
};
console.log(JSON.stringify(out, null, 2));
clearInterval(rssTimer);
clearInterval(heartbeat);
gcObserver.disconnect();
await closeApp();
await sqlApp.close();
await engine.stop();
apiDb.close();
conn.closeSync();
instance.closeSync();
process.exit(0);

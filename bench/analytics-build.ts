/**
 * Benchmark: the cold analytics build (core/analytics/build.ts fullBuild) over a generated venue — by default the
 * full-scale bench venue written by `npm run bench:venue -- --keep` (2.8M wallets, 107M fills). The venue is loaded
 * into a DuckDB file next to it once (timed apart: that is venue ingest, not analytics), then every run builds from
 * scratch as `npm start` does on first run: legs sorted for the stream, mids, the position stream, per-wallet
 * tables, risk, cohort, clusters, rank base and boards. Prints seconds per step, total and peak RSS of the process
 * (DuckDB included), and per step the peak RSS, the peak JavaScript holds (heap and array buffers), the CPU seconds of
 * the whole process and of its main thread (where the position stream and the ranking engine run): a step whose main
 * thread is busy nearly all its wall time is bound by that one thread, one whose process CPU is near twice its wall
 * time by both cores.
 *   npm run bench:analytics -- [--venue DIR] [--memory-limit 5GB] [--threads 2] [--no-rankings] [--range-legs N]
 * --range-legs: legs per range of wallets when a_legs is sorted a range at a time (default LEG_RANGE_LEGS; a venue
 * of fewer legs is sorted in one statement)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fullBuild } from '../core/analytics/build.ts';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { attachVenue } from '../data/venue.ts';
import { BoardWorker } from '../jobs/analytics/board-worker.ts';
import { metricOrdersOffThread } from '../jobs/analytics/rank-orders.ts';

const { values } = parseArgs({ options: { venue: { type: 'string' }, 'memory-limit': { type: 'string' }, threads: { type: 'string' }, 'no-rankings': { type: 'boolean' }, 'range-legs': { type: 'string' } } });
const venueDir = resolve(values.venue ?? 'var/bench-venue-w2800000');
const dbPath = join(venueDir, 'bench.duckdb');
let peak = 0;
// per step: the process's peak RSS and the peak of what JavaScript holds (its heap and array buffers), the rest being
// mostly DuckDB's
let step = 'load';
const stepPeak: Record<string, { rss_mb: number; js_mb: number; cpu_s?: number; main_cpu_s?: number }> = {};
// CPU seconds: the process's (every thread: DuckDB's too) and the main thread's (Linux: /proc/self/task/<pid>/stat
// fields 14 and 15, in clock ticks of 1/100 s)
const processCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const mainThreadCpu = () => {
  try {
    const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return (Number(rest[11]) + Number(rest[12])) / 100;
  } catch {
    return Number.NaN;
  }
};
let cpuAtStep = { p: processCpu(), m: mainThreadCpu() };
const closeStep = () => {
  const now = { p: processCpu(), m: mainThreadCpu() };
  const p = (stepPeak[step] ??= { rss_mb: 0, js_mb: 0 });
  p.cpu_s = Number((now.p - cpuAtStep.p).toFixed(1));
  p.main_cpu_s = Number((now.m - cpuAtStep.m).toFixed(1));
  cpuAtStep = now;
};
const timer = setInterval(() => {
  const m = process.memoryUsage();
  peak = Math.max(peak, m.rss);
  const p = (stepPeak[step] ??= { rss_mb: 0, js_mb: 0 });
  p.rss_mb = Math.max(p.rss_mb, Math.round(m.rss / 2 ** 20));
  p.js_mb = Math.max(p.js_mb, Math.round((m.heapTotal + m.arrayBuffers) / 2 ** 20));
}, 100);
const { instance, conn } = await openDuckDB({ path: dbPath, threads: Number(values.threads ?? 2), memoryLimit: values['memory-limit'] ?? '5GB' });
let loadSeconds: number | null = null;
const loaded = await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name = 'venue_loaded'`);
if (!loaded.length) {
  if (!existsSync(join(venueDir, 'venue'))) throw new Error(`no venue at ${venueDir}: run npm run bench:venue -- --keep`);
  const t = performance.now();
  process.stderr.write(`loading the venue into ${dbPath} ...\n`);
  await attachVenue(conn, join(venueDir, 'venue'), { materialize: true });
  await conn.run(`CREATE TABLE venue_loaded AS SELECT now() AS at`);
  await conn.run('CHECKPOINT');
  loadSeconds = Number(((performance.now() - t) / 1000).toFixed(1));
}
// a cold build: nothing of a previous run is reused (the venue tables stay)
for (const r of await queryRows<{ t: string; k: string }>(conn, `SELECT table_name AS t, table_type AS k FROM information_schema.tables WHERE table_name LIKE 'a\\_%' ESCAPE '\\'`)) {
  await conn.run(`DROP ${r.k === 'VIEW' ? 'VIEW' : 'TABLE'} IF EXISTS ${r.t}`);
}
await conn.run(`SET max_temp_directory_size = '35GB'`);
const [c] = await queryRows<{ fills: number; wallets: number; t: Date }>(conn, `SELECT count(*) AS fills, (SELECT count(*) FROM wallets) AS wallets, max(ts) AS t FROM fills`);
peak = process.memoryUsage().rss;
cpuAtStep = { p: processCpu(), m: mainThreadCpu() };
const t0 = performance.now();
const log = (name: string) => {
  closeStep();
  step = name;
  process.stderr.write(`analytics ${name} starts at ${((performance.now() - t0) / 1000).toFixed(1)} s, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB\n`);
};
// as the service's first build: the metric orders and the boards on worker threads (their CPU is the process's, not
// the main thread's)
const boards = new BoardWorker();
const report = await fullBuild(duckRunner(conn, instance), c!.t, {
  onStep: log,
  rankings: !values['no-rankings'],
  ordersOf: metricOrdersOffThread,
  boards: boards.score,
  ...(values['range-legs'] ? { legRangeLegs: Number(values['range-legs']) } : {}),
});
await boards.close();
clearInterval(timer);
peak = Math.max(peak, process.memoryUsage().rss);
const { mids: _mids, ranker: _ranker, ...rest } = report;
console.log(
  JSON.stringify(
    { bench: 'analytics:build', venue: venueDir, fills: c!.fills, venue_wallets: c!.wallets, venue_load_seconds: loadSeconds, ...rest, peak_rss_mb: Math.round(peak / 2 ** 20), peak_by_step: stepPeak },
    null,
    2,
  ),
);
conn.closeSync();
instance.closeSync();

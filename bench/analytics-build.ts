/**
 * Benchmark: the analytics build over a generated venue (default: the full-scale bench venue written by
 * `npm run bench:venue -- --keep`), reading the Parquet in place. Prints per-step seconds and peak RSS.
 *   npm run bench:analytics -- [--venue DIR] [--memory-limit 14GB] [--steps positions,calibration,alpha,features,risk] [--risk-slices 8]
 * With --steps only those build steps run (each timed alone); without it the whole build runs as `npm start` does.
 */
import { parseArgs } from 'node:util';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { analyticsBuildSteps, runAnalyticsBuild } from '../core/analytics-build.ts';
import { queryRows } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { openVenueDb } from '../data/analytics/open.ts';

const { values } = parseArgs({ options: { venue: { type: 'string' }, 'memory-limit': { type: 'string' }, steps: { type: 'string' }, 'risk-slices': { type: 'string' } } });
const riskSlices = Number(values['risk-slices'] ?? 8);
const venueDir = resolve(values.venue ?? 'var/bench-venue-w2800000');
const dbPath = resolve(venueDir, 'bench-analytics.duckdb');
await rm(dbPath, { force: true });
let peak = 0;
const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 200);
const { instance, conn } = await openVenueDb({ venueDir, db: dbPath, materialize: false, memoryLimit: values['memory-limit'] ?? '14GB' });
const db = duckRunner(conn);
const [c] = await queryRows<{ fills: number; wallets: number; t: Date }>(conn, `SELECT count(*) AS fills, (SELECT count(*) FROM wallets) AS wallets, max(ts) AS t FROM fills`);
const t0 = performance.now();
// each step is printed as it starts, so a run that dies part-way still shows where the time went
const log = (name: string) => process.stderr.write(`analytics ${name} starts at ${((performance.now() - t0) / 1000).toFixed(1)} s, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MB\n`);
let result: Record<string, unknown>;
if (values.steps) {
  const wanted = new Set(values.steps.split(','));
  const seconds: Record<string, number> = {};
  for (const step of analyticsBuildSteps(c!.t, { riskSlices }).filter((s) => wanted.has(s.name))) {
    log(step.name);
    const t = performance.now();
    await db.run(step.sql);
    for (const sql of step.more ?? []) await db.run(sql);
    seconds[step.name] = Number(((performance.now() - t) / 1000).toFixed(1));
  }
  result = { steps: seconds, total_seconds: Number(((performance.now() - t0) / 1000).toFixed(1)) };
} else {
  result = { ...(await runAnalyticsBuild(db, c!.t, log, { riskSlices })) };
}
clearInterval(timer);
peak = Math.max(peak, process.memoryUsage().rss);
console.log(JSON.stringify({ bench: 'analytics:build', venue: venueDir, fills: c!.fills, venue_wallets: c!.wallets, ...result, peak_rss_mb: Math.round(peak / 2 ** 20) }, null, 2));
conn.closeSync();
instance.closeSync();
await rm(dbPath, { force: true });

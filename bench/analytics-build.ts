/**
 * Benchmark: the analytics build over a generated venue (default: the full-scale bench venue written by
 * `npm run bench:venue -- --keep`), reading the Parquet in place. Prints per-step seconds and peak RSS.
 *   npm run bench:analytics -- [--venue DIR] [--memory-limit 16GB]
 */
import { parseArgs } from 'node:util';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { runAnalyticsBuild } from '../core/analytics-build.ts';
import { queryRows } from '../data/duckdb.ts';
import { duckRunner } from '../data/runner.ts';
import { openVenueDb } from '../data/analytics/open.ts';

const { values } = parseArgs({ options: { venue: { type: 'string' }, 'memory-limit': { type: 'string' } } });
const venueDir = resolve(values.venue ?? 'var/bench-venue-w2800000');
const dbPath = resolve(venueDir, 'bench-analytics.duckdb');
await rm(dbPath, { force: true });
let peak = 0;
const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 200);
const { instance, conn } = await openVenueDb({ venueDir, db: dbPath, materialize: false, memoryLimit: values['memory-limit'] ?? '16GB' });
const [c] = await queryRows<{ fills: number; wallets: number; t: Date }>(conn, `SELECT count(*) AS fills, (SELECT count(*) FROM wallets) AS wallets, max(ts) AS t FROM fills`);
const report = await runAnalyticsBuild(duckRunner(conn), c!.t, (name) => process.stderr.write(`analytics ${name}\n`));
clearInterval(timer);
peak = Math.max(peak, process.memoryUsage().rss);
console.log(JSON.stringify({ bench: "analytics:build", venue: venueDir, fills: c!.fills, venue_wallets: c!.wallets, ...report, peak_rss_mb: Math.round(peak / 2 ** 20) }, null, 2));
conn.closeSync();
instance.closeSync();
await rm(dbPath, { force: true });

/**
 * npm run validate -- [--venue DIR] : builds the analytics over a generated venue (the demo venue by default,
 * generating it if missing) and prints how well measured skill recovers the planted truth.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fullBuild } from '../../core/analytics/build.ts';
import { queryRows } from '../duckdb.ts';
import { duckRunner } from '../runner.ts';
import { generateVenue } from '../generator/index.ts';
import { DEFAULT_END } from '../generator/config.ts';
import { DEMO_VENUE, REAL_MARKETS_CSV } from '../generator/defaults.ts';
import { progressBar } from '../progress.ts';
import { openVenueDb } from './open.ts';
import { validityReport } from './validity.ts';

const { values } = parseArgs({ options: { venue: { type: 'string' } } });
const dir = resolve(values.venue ?? `var/demo-w${DEMO_VENUE.wallets}-d${DEMO_VENUE.days}-s${DEMO_VENUE.seed}`);
if (!existsSync(join(dir, 'manifest.json'))) {
  const bar = progressBar('venue');
  await generateVenue({ ...DEMO_VENUE, end: DEFAULT_END, realMarketsCsv: REAL_MARKETS_CSV }, dir, bar.update);
  bar.stop();
}
const { instance, conn } = await openVenueDb({ venueDir: dir, materialize: true });
const [last] = await queryRows<{ t: Date }>(conn, `SELECT max(ts) AS t FROM fills`);
const build = await fullBuild(duckRunner(conn), last!.t);
const report = await validityReport(duckRunner(conn));
console.log(JSON.stringify({ venue: dir, build_seconds: build.total_seconds, ...report }, null, 2));
conn.closeSync();
instance.closeSync();

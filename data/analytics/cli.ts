/**
 * npm run analytics:build -- [--venue DIR | --db PATH] [--as-of ISO] [--views]
 * Without either: the database of the venue `npm start` serves with the same environment (VENUE, DATA_DIR).
 * Builds the a_* analytics tables as of T (default: the latest fill) and prints step timings.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { fullBuild } from '../../core/analytics/build.ts';
import { queryRows } from '../duckdb.ts';
import { duckRunner } from '../runner.ts';
import { progressBar } from '../progress.ts';
import { openVenueDb } from './open.ts';
import { venueRoot } from '../venue-select.ts';

const Args = z
  .object({
    venue: z.string().optional(),
    db: z.string().optional(),
    'as-of': z.string().datetime({ offset: true }).optional(),
    views: z.boolean().optional(),
    'memory-limit': z.string().optional(),
  });
const { values } = parseArgs({ options: { venue: { type: 'string' }, db: { type: 'string' }, 'as-of': { type: 'string' }, views: { type: 'boolean' }, 'memory-limit': { type: 'string' } } });
const parsed = Args.safeParse(values);
if (!parsed.success) {
  console.error(`analytics:build: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'args'}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const a = parsed.data;
if (!a.venue && !a.db) a.db = join(venueRoot(process.env), 'venue.duckdb');
const t0 = performance.now();
const { instance, conn, migration } = await openVenueDb({ venueDir: a.venue, db: a.db, materialize: !a.views, memoryLimit: a['memory-limit'] });
if (migration && (migration.nullableColumns.length || migration.removedWallets.length)) console.error(`analytics:build: migrated the venue: ${JSON.stringify(migration)}`);
const loadSeconds = (performance.now() - t0) / 1000;
const [last] = await queryRows<{ t: Date | null }>(conn, `SELECT max(ts) AS t FROM fills`);
const asOf = a['as-of'] ? new Date(a['as-of']) : (last?.t ?? new Date());
const bar = progressBar('analytics');
// with the instance, the legs stream on a connection of their own (without it the whole scan is held in memory first)
const report = await fullBuild(duckRunner(conn, instance), asOf, { onStep: (name, i, n) => bar.update(name, i, n) });
bar.stop();
// the mid index and the ranking engine are the build's in-memory products, not its report (printed, they were MBs)
const { mids: _mids, ranker: _ranker, ...printed } = report;
console.log(JSON.stringify({ load_seconds: Number(loadSeconds.toFixed(2)), ...printed, peak_rss_mb: Math.round(process.memoryUsage().rss / 2 ** 20) }, null, 2));
conn.closeSync();
instance.closeSync();

/**
 * A replica process for the resolution feed's cross-process test: opens the feed on a service database (a SQLite
 * path or a PostgreSQL URL) and the venue read-only, says "ready", waits for "go" on stdin, syncs once and prints
 * how many entries it added as one JSON line.
 *   tsx test/helpers/feed-replica-child.ts <target> <venue.duckdb>
 */
import { createInterface } from 'node:readline';
import { openDuckDB } from '../../data/duckdb.ts';
import { ResolutionFeed } from '../../data/resolution-feed.ts';
import { duckRunner } from '../../data/runner.ts';

const [target, venue] = process.argv.slice(2);
const feed = await ResolutionFeed.open(target!);
const { instance, conn } = await openDuckDB({ path: venue!, threads: 1, readOnly: true });
process.stdout.write('ready\n');
const lines = createInterface({ input: process.stdin });
await new Promise<void>((go) => lines.once('line', () => go()));
lines.close();
const r = await feed.sync(duckRunner(conn));
process.stdout.write(`${JSON.stringify({ inserted: r.inserted })}\n`);
await feed.close();
conn.closeSync();
instance.closeSync();

/**
 * A builder process for the crash test: opens the analytics engine on a venue database file (resuming its state),
 * says "refreshing" on stdout and refreshes as of the given moment; says "committed" if it gets that far. The test
 * kills it with SIGKILL at a random moment in between.
 *   tsx test/helpers/engine-child.ts <db path> <as-of ms>
 */
import { AnalyticsEngine } from '../../jobs/analytics/engine.ts';
import { openDuckDB } from '../../data/duckdb.ts';

const [path, asOfMs] = process.argv.slice(2);
const { instance, conn } = await openDuckDB({ path: path!, threads: 1 });
const engine = await AnalyticsEngine.open(instance, { now: () => new Date(Number(asOfMs)) });
process.stdout.write('refreshing\n');
await engine.refreshNow();
process.stdout.write('committed\n');
await engine.stop();
conn.closeSync();
instance.closeSync();

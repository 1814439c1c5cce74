/**
 * Benchmark (diagnostic): where one refresh spends its time, statement by statement, at any scale. Optionally lets
 * the live tail append --tail-seconds of fills first (committed), then runs --runs refreshes from the committed
 * state to the newest batch, each inside a transaction that is rolled back (the same refresh can be timed again
 * after a change) unless --commit. Prints every statement that took ≥ --min-ms, the per-step seconds, and the
 * slowest statements, each with what the process read from the disk meanwhile (the page cache not counted);
 * --explain REGEX runs the statements matching it under EXPLAIN ANALYZE and prints their plans.
 *
 *   npm run bench:refresh-profile -- --db var/bench-venue-w2800000/bench.duckdb --wallets 2800000 --days 120 --seed 1
 *        [--tail-seconds 60] [--rate 68] [--runs 1] [--commit] [--no-previous] [--move-marks] [--verify-engine] [--memory-limit 8GB] [--explain REGEX]
 *        [--boards worker|here] [--state-store on|off]
 * --state-store on (default): the touched wallets' state rows are read from the row store by wallet beside the
 * database (`<db>.state-rows.sqlite`, jobs/analytics/state-store.ts), filled first when it does not hold the state
 * (its time and size printed); off: from a_position_state, as before session 27.
 * --boards here: the boards are scored on this thread in steps, as before session 26 (default: on a worker thread, as
 * the service does), for a comparison on the same machine.
 * --move-marks: each run's transaction first gets an arrival batch of mids, one for every token with a mark in a
 * market not resolved, stamped at the refresh's T and a little off the mark: the hour's mids of the live tail, which
 * move most holders' marks (rolled back with the run).
 * --verify-engine: after each run (before its rollback), the refresh's engine (patched, or loaded) is compared column
 * by column and order by order with one loaded whole from the refreshed rank base; prints the arrays that differ.
 * A bench venue ends a second before midnight: the first refresh closes a day for every open risk position; run it
 * once with --tail-seconds 2 --commit, then profile.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { z } from 'zod';
import { loadMids } from '../core/analytics/build.ts';
import { refresh, venueWatermark } from '../core/analytics/refresh.ts';
import type { ColumnarRunner } from '../core/query.ts';
import { loadRankingEngine } from '../core/ranking-boards.ts';
import { METRIC_IDS, ensureWalletLinks } from '../core/rankings.ts';
import { openDuckDB, queryRows } from '../data/duckdb.ts';
import { LiveTail } from '../data/live-tail/tail.ts';
import { duckRunner } from '../data/runner.ts';
import { createVenueViews, migrateVenue, nextVenueSeq } from '../data/schema.ts';
import { tsLiteral } from '../core/query.ts';
import { persisted } from '../jobs/analytics/engine.ts';
import { metricOrdersOffThread } from '../jobs/analytics/rank-orders.ts';
import { BoardWorker } from '../jobs/analytics/board-worker.ts';
import { SqliteStateStore, stateStamp } from '../jobs/analytics/state-store.ts';
import { statSync } from 'node:fs';
import { LIVE_VENUE_ARGS, liveVenue } from './live-venue-args.ts';

const Args = z.object({
  ...LIVE_VENUE_ARGS,
  'tail-seconds': z.coerce.number().min(0).default(0),
  runs: z.coerce.number().int().min(1).default(1),
  'min-ms': z.coerce.number().min(0).default(300),
  'memory-limit': z.string().default('8GB'),
  explain: z.string().optional(),
  commit: z.boolean().default(false),
  'no-previous': z.boolean().default(false),
  'move-marks': z.boolean().default(false),
  'verify-engine': z.boolean().default(false),
  boards: z.enum(['worker', 'here']).default('worker'),
  'state-store': z.enum(['on', 'off']).default('on'),
});
const { values } = parseArgs({
  options: {
    ...Object.fromEntries(['db', 'wallets', 'days', 'seed', 'rate', 'tail-seconds', 'runs', 'min-ms', 'memory-limit', 'explain', 'boards', 'state-store'].map((k) => [k, { type: 'string' as const }])),
    commit: { type: 'boolean' },
    'no-previous': { type: 'boolean' },
    'move-marks': { type: 'boolean' },
    'verify-engine': { type: 'boolean' },
  },
});
const a = Args.parse(values);
const { venue, dbPath } = liveVenue(a);
const explain = a.explain ? new RegExp(a.explain) : null;

const { instance, conn } = await openDuckDB({ path: dbPath, threads: 2, memoryLimit: a['memory-limit'] });
await migrateVenue(conn);
await createVenueViews(conn);
const base = duckRunner(conn, instance);
await ensureWalletLinks(base);

if (a['tail-seconds'] > 0) {
  const tail = await LiveTail.start(conn, venue, { ratePerSecond: a.rate, speed: 1 });
  await new Promise((r) => setTimeout(r, a['tail-seconds'] * 1000));
  await tail.stop();
  process.stderr.write(`tail: ${tail.stats().fills} fills appended\n`);
}

// the state to refresh from (migrated as the builder would), and the venue clock to refresh to (the newest row's
// stamp: the tail stopped there)
const opened = performance.now();
const state = await persisted(conn);
if (!state) throw new Error(`no analytics state this engine can continue in ${dbPath}: run bench:analytics first`);
process.stderr.write(`state opened (migrated if older) in ${((performance.now() - opened) / 1000).toFixed(1)} s\n`);
const from = { asOf: state.asOf, watermark: state.watermark };
const [last] = await queryRows<{ t: Date }>(conn, `SELECT greatest((SELECT max(ts) FROM fills), (SELECT as_of FROM a_meta)) AS t`);
const to = { asOf: new Date(last!.t), watermark: await venueWatermark(base) };
process.stderr.write(`from ${from.asOf.toISOString()} (batch ${from.watermark}) to ${to.asOf.toISOString()} (batch ${to.watermark})\n`);

let t = performance.now();
const previous = a['no-previous'] ? undefined : await loadRankingEngine(base, metricOrdersOffThread);
if (previous) process.stderr.write(`previous engine loaded in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);

// the row store of a_position_state by wallet, filled when it does not hold this state
let store: SqliteStateStore | null = null;
if (a['state-store'] === 'on') {
  const storePath = `${dbPath}.state-rows.sqlite`;
  store = SqliteStateStore.open(storePath);
  if (!store.holds(await stateStamp(conn))) {
    t = performance.now();
    await store.reset(await stateStamp(conn));
    const side = await instance.connect();
    await store.fill(side);
    side.closeSync();
    process.stderr.write(`state store filled in ${((performance.now() - t) / 1000).toFixed(1)} s: ${store.status().wallets} wallets, ${(statSync(storePath).size / 2 ** 30).toFixed(2)} GiB\n`);
  }
}

interface Stmt {
  step: number;
  ms: number;
  /** bytes the process read from the disk meanwhile (not from the page cache); null where the kernel does not say */
  readBytes: number | null;
  sql: string;
}
/** The bytes this process has read from the disk so far (Linux /proc/self/io), or null. */
const diskReadBytes = (): number | null => {
  try {
    const m = /^read_bytes: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
};
/** What the process read from the disk since `start` (a diskReadBytes() figure), or null. */
const diskReadSince = (start: number | null): number | null => {
  const now = diskReadBytes();
  return start === null || now === null ? null : now - start;
};
const mb = (b: number | null) => (b === null ? '' : ` (${(b / 2 ** 20).toFixed(0)} MB from disk)`);
const short = (sql: string) => sql.replace(/\s+/g, ' ').trim().slice(0, 220);

const boardWorker = a.boards === 'worker' ? new BoardWorker() : null;
for (let run = 0; run < a.runs; run++) {
  t = performance.now();
  const mids = await loadMids(base, from.watermark);
  process.stderr.write(`run ${run + 1}: mids loaded in ${((performance.now() - t) / 1000).toFixed(1)} s\n`);
  const stmts: Stmt[] = [];
  let stepNo = 0;
  const steps: [string, number][] = [];
  const timed = <R>(sql: string, f: () => Promise<R>) => async (): Promise<R> => {
    const t0 = performance.now();
    const io0 = diskReadBytes();
    const r = await f();
    stmts.push({ step: stepNo, ms: performance.now() - t0, readBytes: diskReadSince(io0), sql: short(sql) });
    return r;
  };
  const db: ColumnarRunner = {
    all: (sql, p) => timed(sql, () => base.all(sql, p))() as never,
    run: async (sql, p) => {
      if (explain?.test(sql)) {
        const t0 = performance.now();
        const rows = await base.all<{ explain_value: string }>(`EXPLAIN ANALYZE ${sql}`, p);
        stmts.push({ step: stepNo, ms: performance.now() - t0, readBytes: null, sql: short(sql) });
        process.stdout.write(`\n--- EXPLAIN ANALYZE ${short(sql)}\n${rows.map((r) => r.explain_value).join('\n')}\n`);
        return;
      }
      return timed(sql, () => base.run(sql, p))();
    },
    scan: (sql, f) => timed(sql, () => base.scan(sql, f))(),
    stream: (sql, f) => timed(sql, () => base.stream(sql, f))(),
    writer: (table, cols, select) => base.writer(table, cols, select),
  };
  // the longest the event loop was held per step (what a request waits in a service running the refresh)
  const stall = monitorEventLoopDelay({ resolution: 5 });
  const stalls: number[] = [];
  await conn.run('BEGIN TRANSACTION');
  let target = to;
  if (a['move-marks']) {
    const seq = await nextVenueSeq(conn);
    await conn.run(`INSERT INTO mids SELECT market_id, outcome_index, ${tsLiteral(to.asOf)},
        least(0.999, greatest(0.001, mark + ((hash(market_id, outcome_index, ${run}) % 41)::INTEGER - 20) / 1000.0)), ${seq}
      FROM a_marks WHERE market_id NOT IN (SELECT market_id FROM resolutions WHERE resolved_at <= ${tsLiteral(to.asOf)})`);
    target = { asOf: to.asOf, watermark: seq };
  }
  t = performance.now();
  const runRead0 = diskReadBytes();
  stall.enable();
  const report = await refresh(db, mids, from, target, {
    previous,
    ordersOf: metricOrdersOffThread,
    ...(boardWorker ? { boards: boardWorker.score } : {}),
    ...(store ? { stateStore: store } : {}),
    onStep: (name, s) => {
      steps.push([name, s]);
      stalls.push(stall.max / 1e6);
      stall.reset();
      stepNo++;
    },
  });
  stall.disable();
  const total = (performance.now() - t) / 1000;
  const runRead = diskReadSince(runRead0);
  if (a['verify-engine'] && report.ranker) {
    const whole = await loadRankingEngine(db, metricOrdersOffThread);
    const [got, want] = [report.ranker, whole];
    const differs = (x: ArrayLike<number>, y: ArrayLike<number>) => x.length !== y.length || Array.prototype.some.call(x, (v: number, i: number) => !(Object.is(v, y[i]) || v === y[i]));
    const bad: string[] = [];
    for (const k of ['walletId', 'userCode', 'tradeCount', 'lastTradeUs', 'bestCategory', 'volume', 'tagBits', 'clusterSize'] as const) if (differs(got.cols[k], want.cols[k])) bad.push(k);
    for (const id of METRIC_IDS) {
      if (differs(got.cols.measured[id], want.cols.measured[id]) || differs(got.cols.value[id], want.cols.value[id])) bad.push(`columns of ${id}`);
      if (differs(got.orders()[id], want.orders()[id])) bad.push(`order of ${id}`);
    }
    for (const g of Object.keys(got.cols.gate) as (keyof typeof got.cols.gate)[]) if (differs(got.cols.gate[g], want.cols.gate[g])) bad.push(`gate ${g}`);
    console.log(bad.length ? `engine differs from one loaded whole: ${bad.join(', ')}` : `engine verified: equal to one loaded whole (${got.cols.n} rows, every column and order)`);
  }
  await conn.run(a.commit ? 'COMMIT' : 'ROLLBACK');
  let storeSeconds = 0;
  let storeKept = '';
  if (store && a.commit) {
    const t1 = performance.now();
    storeKept = await store.committed(await stateStamp(conn));
    // too many rows to stage (its wallets to read again), or emptied: brought to hold the state, as the engine does
    if (storeKept !== 'kept') {
      const side = await instance.connect();
      await store.fill(side);
      side.closeSync();
    }
    storeSeconds = (performance.now() - t1) / 1000;
  } else store?.discard();
  const stepName = (i: number) => steps[i]?.[0] ?? 'after';
  console.log(
    `\n=== run ${run + 1}: ${total.toFixed(1)} s${mb(runRead)}; legs ${report.new_legs}, positions restreamed ${report.positions}, continued ${report.continued}, alpha-only ${report.alpha_positions}, wallets ${report.wallets} (marks ${report.mark_wallets}, marks only ${report.mark_only_wallets}), days closed ${report.days_closed}, median fills from bands ${report.fill_bands.banded} (bands dropped ${report.fill_bands.dropped})`,
  );
  if (report.engine_patch) console.log(`engine patch: ${JSON.stringify(report.engine_patch)}`);
  if (boardWorker?.last) console.log(`board worker: ${JSON.stringify(boardWorker.last)}`);
  console.log(`${report.touched_state_rows} state rows of touched wallets read from the ${report.state_rows}${a.commit && store ? `; the store kept the version (${storeKept}) in ${storeSeconds.toFixed(2)} s` : ''}`);
  console.log(`steps: ${steps.map(([n, s]) => `${n} ${s.toFixed(1)}`).join(', ')}`);
  console.log(`longest event-loop stall per step (ms): ${steps.map(([n], i) => `${n} ${Math.round(stalls[i]!)}`).join(', ')}`);
  const line = (s: Stmt) => `  [${stepName(s.step)}] ${(s.ms / 1000).toFixed(2)} s${mb(s.readBytes)}  ${s.sql}`;
  for (const s of stmts) if (s.ms >= a['min-ms']) console.log(line(s));
  console.log('slowest:');
  for (const s of [...stmts].sort((x, y) => y.ms - x.ms).slice(0, 12)) console.log(line(s));
  if (a.commit) break;
}
await boardWorker?.close();
await store?.close();
conn.closeSync();
instance.closeSync();

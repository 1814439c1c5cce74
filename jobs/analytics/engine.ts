/**
 * The analytics builder: keeps the a_* tables of a venue database live. On open it resumes from the persisted
 * state (a_meta: as_of, watermark, version) or, when there is none (or it was written by another engine schema),
 * runs a full build. Then it refreshes on a schedule: each refresh reads the venue clock and the newest arrival
 * batch, runs core/analytics/refresh.ts inside one transaction on its own connection and commits — readers on other
 * connections see the previous version until the commit and the whole new one after it (DuckDB snapshot
 * isolation) — then announces the version ('published').
 *
 * Venue rows removed after they arrived (a reorg the venue sync undid: venue_retractions) cannot be refreshed away
 * (a refresh only adds what arrived): the next refresh is a full build instead, in the same one transaction, and
 * a_retractions_seen remembers the newest removal the state accounts for.
 *
 * A crash mid-refresh loses nothing: the transaction never committed, the next start resumes from the last
 * committed state and the rows it had not seen are still after its watermark. Refreshes never overlap; if one
 * takes longer than the interval the next starts right after it.
 *
 * The engine checkpoints the database itself, right after each publish. DuckDB otherwise checkpoints inside the
 * commit that finds its write-ahead log past a threshold, which a refresh's writes always pass: the refresh's own
 * commit (seconds to a minute at full scale, before readers can see the version) or, when a reader's snapshot was
 * open then, the live tail's next one. So while the engine runs, the automatic checkpoint is off for the whole
 * database (a global setting), and the log holds at most one refresh's writes and the tail's since.
 */
import { EventEmitter } from 'node:events';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { fullBuild, loadMids, migrationSteps, type BuildReport } from '../../core/analytics/build.ts';
import type { MidIndex } from '../../core/analytics/mid-index.ts';
import type { RankingEngine } from '../../core/ranking-engine.ts';
import { refresh, refreshTarget, venueWatermark, type RefreshReport, type StateMark } from '../../core/analytics/refresh.ts';
import { loadPresetHeads, type PresetHeads } from '../../core/preset-rankings.ts';
import type { QueryRunner } from '../../core/query.ts';
import { queryRows, sqlString } from '../../data/duckdb.ts';
import { metricOrdersOffThread } from './rank-orders.ts';
import { BoardWorker } from './board-worker.ts';
import { SqliteStateStore, stateStamp, type StateStoreStatus } from './state-store.ts';
import { slicedPause, yieldToEventLoop } from '../../core/steps.ts';
import { duckRunner } from '../../data/runner.ts';
import { readersFirstPause, type SnapshotRunner } from '../../data/snapshot-runner.ts';

export interface Published {
  version: number;
  asOf: Date;
  builtAt: Date;
  watermark: number;
}

export interface EngineEvents {
  /**
   * a version is about to be committed (its number, its report): DuckDB lets new transactions read a commit before
   * the committer's call returns, so a request can read the version before 'published' — the custom rankings' ranker
   * of it is staged here (jobs/analytics/rankers.ts stage)
   */
  committing: [number, RefreshReport | BuildReport];
  published: [Published, RefreshReport | BuildReport];
  /** a checkpoint ended (after a publish, after a failed refresh, on opening): the current version and its seconds */
  checkpointed: [Published, number];
  /** a refresh that start() ran failed (it is logged either way; the next one tries again) */
  error: [Error];
}

/**
 * DuckDB's automatic-checkpoint threshold while an engine runs: beyond any log a refresh writes, so only the engine's
 * own CHECKPOINT after a publish writes the log into the database file.
 */
export const ENGINE_CHECKPOINT_THRESHOLD = '1TB';

/**
 * How long the checkpoint after a publish waits for older transactions to end before it leaves the work to the next
 * (the next refresh waits for it: a short wait). After CHECKPOINT_SKIPS_BEFORE_WAITING skips in a row (a stream's
 * snapshot, renewed every 30 s, can be older than every publish) it waits CHECKPOINT_LONG_PATIENCE_MS: longer than
 * any snapshot is held, so the log is written out at least that often.
 */
export const CHECKPOINT_PATIENCE_MS = 5_000;
export const CHECKPOINT_LONG_PATIENCE_MS = 45_000;
export const CHECKPOINT_SKIPS_BEFORE_WAITING = 3;

export interface EngineOptions {
  /** the venue clock: every refresh is as of this moment */
  now: () => Date;
  log?: (msg: string) => void;
  /** progress of a full build (step name, index, count) */
  onBuildStep?: (name: string, i: number, n: number) => void;
  /** each refresh step as it ends (name, seconds): benchmarks */
  onRefreshStep?: (name: string, seconds: number) => void;
  /** run a full build even when a state exists */
  rebuild?: boolean;
  /** new fills a refresh takes in at most (a backlog goes in several versions): default MAX_REFRESH_FILLS */
  maxRefreshFills?: number;
  /** how long a checkpoint waits for transactions older than the publish: default CHECKPOINT_PATIENCE_MS */
  checkpointPatienceMs?: number;
  /** and after CHECKPOINT_SKIPS_BEFORE_WAITING skips in a row: default CHECKPOINT_LONG_PATIENCE_MS */
  checkpointLongPatienceMs?: number;
  /**
   * the pause between a refresh's JavaScript steps (the patch, the boards, the sharp cut-off): a service that reads
   * the same database gives readersFirstPause (data/snapshot-runner.ts), here or later by setReaders. Default: a turn
   * of the event loop
   */
  pause?: () => Promise<void>;
  /**
   * pause only once this many milliseconds of a refresh's JavaScript steps ran since the last pause (core/steps.ts
   * slicedPause): a computation of many short steps pauses about once a slice. Default 0: after every step
   */
  pauseSliceMs?: number;
  /**
   * how a refresh's COMMIT runs: a service whose readers share the database gives their acrossCommit
   * (data/snapshot-runner.ts), so that requests arriving meanwhile do not wait for the commit's lock; here or later by
   * setReaders. Default: the commit alone
   */
  acrossCommit?: <T>(commit: () => Promise<T>) => Promise<T>;
  /**
   * a file for a_position_state by wallet (state-store.ts): refreshes read their touched wallets' state rows from it
   * instead of scanning the table. Filled in the background after the open (and after any full build); absent: none.
   * `heavyRows`: the rows that make a wallet keep them in slots (default HEAVY_ROWS; tests make it small); `retryMs`:
   * the waits before a failed fill is tried again (default STORE_FILL_RETRY_MS); `stageMaxRows`: the most state rows a
   * refresh stages (default STAGE_MAX_ROWS)
   */
  stateStore?: string | { path: string; heavyRows?: number; stageMaxRows?: number; retryMs?: readonly number[] };
}

/**
 * How long after a failed fill of the row store the engine empties it and fills it again, then after each failure
 * that follows (the last wait repeats): a full disk or a database error must not leave refreshes reading the table
 * until the next start.
 */
const STORE_FILL_RETRY_MS = [30_000, 120_000, 600_000] as const;

/** A pause that counts its calls and the time spent in them (the report's `paused` and `pauses`). */
function countedPause(pause: () => Promise<void>): { pause: () => Promise<void>; ms: number; count: number } {
  const c = {
    ms: 0,
    count: 0,
    pause: async () => {
      const t = performance.now();
      await pause();
      c.ms += performance.now() - t;
      c.count++;
    },
  };
  return c;
}

/**
 * The preset boards' heads of the version a refresh is about to commit, read inside its transaction: the service
 * answers plain preset pages from them once it announces the version (jobs/analytics/rankers.ts). Timed as the step
 * 'heads'.
 */
async function timedHeads(
  db: QueryRunner,
  report: RefreshReport | BuildReport,
  pause: (() => Promise<void>) | undefined,
  log: (m: string) => void,
  onStep?: (name: string, seconds: number) => void,
): Promise<PresetHeads | undefined> {
  const t = performance.now();
  // a row the heads cannot assemble (a malformed address) costs the heads, not the version: its plain presets read
  // SQL. (Their statements read the tables this refresh has just written; one failing would abort the transaction.)
  const heads = await loadPresetHeads(db, pause).catch((e: Error) => {
    log(`analytics: preset heads not read (plain presets will read SQL): ${e.message}`);
    return undefined;
  });
  report.seconds.heads = Number(((performance.now() - t) / 1000).toFixed(3));
  onStep?.('heads', report.seconds.heads);
  return heads;
}

/**
 * The persisted state's mark, or null when there is none this engine can continue; a state of an older engine schema
 * is migrated first when there are migrations from it.
 */
export async function persisted(conn: DuckDBConnection): Promise<(StateMark & { version: number; builtAt: Date }) | null> {
  const tables = await queryRows<{ t: string }>(conn, `SELECT table_name AS t FROM information_schema.tables WHERE table_name IN ('a_meta', 'a_legs') AND table_schema = 'main'`);
  if (tables.length < 2) return null;
  const cols = await queryRows<{ c: string }>(conn, `SELECT column_name AS c FROM information_schema.columns WHERE table_name = 'a_meta' AND column_name = 'engine_schema'`);
  if (!cols.length) return null;
  const [m] = await queryRows<{ as_of: Date; watermark: number; version: number; built_at: Date; engine_schema: number }>(
    conn,
    `SELECT as_of, watermark, version, built_at, engine_schema FROM a_meta LIMIT 1`,
  );
  if (!m) return null;
  // an older schema with migrations all the way: migrate in one transaction (a failure leaves the state as it was)
  const steps = migrationSteps(Number(m.engine_schema));
  if (!steps) return null;
  if (steps.length) {
    await conn.run('BEGIN TRANSACTION');
    try {
      for (const sql of steps) await conn.run(sql);
      await conn.run('COMMIT');
    } catch (e) {
      await conn.run('ROLLBACK').catch(() => {});
      throw e;
    }
  }
  return { asOf: new Date(m.as_of), watermark: Number(m.watermark), version: Number(m.version), builtAt: new Date(m.built_at) };
}

/** max(seq) of a table that may not exist (0: no table, or no row). */
async function maxSeq(conn: DuckDBConnection, table: string): Promise<number> {
  const t = await queryRows(conn, `SELECT 1 FROM information_schema.tables WHERE table_name = '${table}' AND table_schema = 'main'`);
  if (!t.length) return 0;
  const [r] = await queryRows<{ s: number | null }>(conn, `SELECT max(seq) AS s FROM ${table}`);
  return Number(r?.s ?? 0);
}

/** The newest venue removal (its arrival seq; 0: none, or a venue that never removes rows). */
const latestRetraction = (conn: DuckDBConnection) => maxSeq(conn, 'venue_retractions');
/** The newest removal the analytics state accounts for (it was built after it). */
const seenRetraction = (conn: DuckDBConnection) => maxSeq(conn, 'a_retractions_seen');

async function markRetractionSeen(conn: DuckDBConnection, seq: number): Promise<void> {
  await conn.run(`CREATE OR REPLACE TABLE a_retractions_seen AS SELECT ${seq}::BIGINT AS seq`);
}

export class AnalyticsEngine extends EventEmitter<EngineEvents> {
  private mark!: StateMark;
  private current!: Published;
  private mids!: MidIndex;
  /** the ranking engine of the committed state (the next refresh patches it); null after a restart */
  private ranker: RankingEngine | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** the database's automatic-checkpoint threshold before the engine turned it off, restored by stop() */
  private thresholdBefore: string | null = null;
  /** checkpoints given up in a row (their changes wait in the log for the next) */
  private checkpointSkips = 0;
  private readonly log: (m: string) => void;
  private pause: (() => Promise<void>) | undefined;
  private acrossCommit: <T>(commit: () => Promise<T>) => Promise<T>;
  /** scores the boards of each build and refresh on a worker thread (this thread hands their rows to DuckDB) */
  private readonly boards = new BoardWorker();
  /** a_position_state by wallet, and its fill while one runs */
  private store: SqliteStateStore | null = null;
  private filling: Promise<boolean> | null = null;
  /** the waits before a failed fill is tried again, and the failures in a row so far */
  private fillRetryMs: readonly number[] = STORE_FILL_RETRY_MS;
  private fillFailures = 0;
  private fillRetry: NodeJS.Timeout | null = null;
  /** the committed versions' state rows being kept in the store (keepInStore) */
  private keeping: Promise<void> = Promise.resolve();

  private constructor(
    private readonly conn: DuckDBConnection,
    private readonly instance: DuckDBInstance,
    private readonly opts: EngineOptions,
  ) {
    super();
    this.log = opts.log ?? (() => {});
    this.pause = opts.pause;
    this.acrossCommit = opts.acrossCommit ?? ((commit) => commit());
  }

  /**
   * The readers of the same database, from the next refresh on (a service: once they exist): its JavaScript steps
   * let them go first (readersFirstPause), and its commit runs across their read transactions (acrossCommit).
   */
  setReaders(readers: Pick<SnapshotRunner, 'readersIdle' | 'acrossCommit'>): void {
    this.pause = readersFirstPause(readers);
    this.acrossCommit = (commit) => readers.acrossCommit(commit);
  }

  /** Open the engine on its own connection of `instance`: resume the persisted state or build it. */
  static async open(instance: DuckDBInstance, opts: EngineOptions): Promise<AnalyticsEngine> {
    const conn = await instance.connect();
    const engine = new AnalyticsEngine(conn, instance, opts);
    await engine.init();
    // after the first build (its many commits checkpoint as usual), and the state it built or resumed is written out
    const [setting] = await queryRows<{ s: string }>(conn, `SELECT current_setting('checkpoint_threshold') AS s`);
    engine.thresholdBefore = setting!.s;
    await conn.run(`SET checkpoint_threshold = '${ENGINE_CHECKPOINT_THRESHOLD}'`);
    await engine.checkpoint();
    if (opts.stateStore) {
      const { path, retryMs, ...sizes } = typeof opts.stateStore === 'string' ? { path: opts.stateStore } : opts.stateStore;
      if (retryMs?.length) engine.fillRetryMs = retryMs;
      // an optional cache: if it cannot be opened, refreshes read the table
      try {
        engine.store = SqliteStateStore.open(path, sizes);
        await engine.fillUnlessHeld(engine.store);
      } catch (e) {
        engine.log(`analytics: no state rows by wallet (refreshes read the table): ${(e as Error).message}`);
        engine.store = null;
      }
    }
    return engine;
  }

  private async init(): Promise<void> {
    const db = duckRunner(this.conn);
    const state = this.opts.rebuild ? null : await persisted(this.conn);
    if (state) {
      const t = performance.now();
      this.mids = await loadMids(db, state.watermark);
      this.mark = state;
      this.current = { version: state.version, asOf: state.asOf, builtAt: state.builtAt, watermark: state.watermark };
      this.log(`analytics: resumed version ${state.version} as of ${state.asOf.toISOString()} (mids loaded in ${((performance.now() - t) / 1000).toFixed(1)} s)`);
      return;
    }
    const asOf = this.opts.now();
    const retraction = await latestRetraction(this.conn);
    // outside a transaction, the legs can stream on a connection of their own: without one, the whole leg scan (200M
    // rows at full scale) is held in memory before the first batch. A rebuild inside a refresh's transaction cannot
    // (another connection would not see the legs it writes) and keeps db
    const report = await fullBuild(duckRunner(this.conn, this.instance), asOf, { onStep: this.opts.onBuildStep, ordersOf: metricOrdersOffThread, boards: this.boards.score });
    await markRetractionSeen(this.conn, retraction);
    this.mids = report.mids;
    this.ranker = report.ranker ?? null;
    this.mark = { asOf, watermark: report.watermark };
    this.current = { version: 1, asOf, builtAt: new Date(), watermark: report.watermark };
    this.log(`analytics: full build as of ${asOf.toISOString()} in ${report.total_seconds.toFixed(1)} s (${report.wallets.toLocaleString()} wallets, ${report.positions.toLocaleString()} positions)`);
  }

  /** The last committed version. */
  published(): Published {
    return this.current;
  }

  /** Refresh now (after any refresh in progress); resolves with the report once the new version is committed and checkpointed. */
  refreshNow(): Promise<RefreshReport | BuildReport | null> {
    const run = this.running.then(() => this.refreshOnce());
    this.running = run.catch(() => undefined);
    return run;
  }

  private async refreshOnce(): Promise<RefreshReport | BuildReport | null> {
    if (this.stopped) return null;
    const db = duckRunner(this.conn);
    const now = this.opts.now();
    // a clock that went back (a restart of an older clock) never moves the state back
    const asOf = now.getTime() < this.mark.asOf.getTime() ? this.mark.asOf : now;
    await this.conn.run('BEGIN TRANSACTION');
    let report: RefreshReport | BuildReport;
    try {
      const retraction = await latestRetraction(this.conn);
      if (retraction > (await seenRetraction(this.conn))) {
        // rows it had seen were removed: rebuild as of now, published like a refresh
        this.log(`analytics: venue rows were removed (arrival ${retraction}): full build`);
        const built = await fullBuild(db, asOf, { ordersOf: metricOrdersOffThread, boards: this.boards.score });
        await this.conn.run(`UPDATE a_meta SET version = ${this.current.version + 1}`);
        await markRetractionSeen(this.conn, retraction);
        // (a failed commit reloads the mids below)
        this.mids = built.mids;
        built.heads = await timedHeads(db, built, this.pause, this.log, this.opts.onRefreshStep);
        await this.commitVersion(built, { asOf, watermark: built.watermark });
        report = built;
      } else {
        const to = await refreshTarget(db, this.mark, asOf, await venueWatermark(db), this.opts.maxRefreshFills);
        const paused = countedPause(this.pause ?? yieldToEventLoop);
        const pause = slicedPause(paused.pause, this.opts.pauseSliceMs ?? 0);
        const refreshed = await refresh(db, this.mids, this.mark, to, {
          ordersOf: metricOrdersOffThread,
          boards: this.boards.score,
          previous: this.ranker ?? undefined,
          onStep: this.opts.onRefreshStep,
          pause,
          ...(this.store ? { stateStore: this.store } : {}),
        });
        refreshed.heads = await timedHeads(db, refreshed, pause, this.log, this.opts.onRefreshStep);
        // inside the steps above, not a step of its own: how often the JavaScript steps paused, and how long in all
        refreshed.seconds.paused = Number((paused.ms / 1000).toFixed(3));
        refreshed.pauses = paused.count;
        if (this.store && !refreshed.state_rows_staged)
          this.log(`analytics: ${refreshed.touched_state_rows} state rows touched, more than the store stages: their wallets are read again after the commit`);
        await this.commitVersion(refreshed, to);
        report = refreshed;
      }
    } catch (e) {
      this.store?.discard();
      await this.conn.run('ROLLBACK').catch(() => {});
      // the refresh may have added the new mids to the in-memory index: rebuild it from the committed watermark
      this.mids = await loadMids(db, this.mark.watermark);
      // the venue rows that arrived meanwhile are in the log: refreshes that keep failing must not let it grow
      await this.checkpoint();
      throw e;
    }
    if (this.store) await this.keepInStore(this.store, report);
    // off the publish path: readers already see the version; they go on reading while it runs, the tail's commits wait
    const seconds = await this.checkpoint();
    if (seconds !== null) report.seconds.checkpoint = seconds;
    return report;
  }

  /**
   * Keep the committed version's staged state rows in the row store, in the background: during the checkpoint and the
   * next refresh's first steps (that refresh waits for it before it reads the store: PositionStateStore.settled).
   * Kept in one piece after the checkpoint, it added ~2.4 s to every cycle at full scale. A version committed without
   * its rows staged (a full build) empties the store: filled again meanwhile. The version is published whatever happens
   * here (the store is a cache: a failure costs it, not the refresh). Its time: the step `state_store`, added to the
   * report when it ends.
   */
  private async keepInStore(store: SqliteStateStore, report: RefreshReport | BuildReport): Promise<void> {
    const t = performance.now();
    const stamp = await stateStamp(this.conn).catch((e: Error) => e);
    let kept: Promise<'kept' | 'stale' | 'reset'>;
    if (stamp instanceof Error) {
      // not kept: the store no longer follows (the next version committed empties it); what was staged goes
      store.discard();
      kept = Promise.reject(stamp);
    } else kept = store.committed(stamp, this.pause);
    const before = this.keeping;
    // after the keeps before it (the store chains its own; this chain is what stop() and a fill's retry wait for),
    // and never rejected: nothing awaits it until then
    this.keeping = Promise.all([before, kept.catch(() => undefined)]).then(async () => {
      try {
        // emptied (filled again), or wallets to read again (by the fill running, if one is)
        if ((await kept) !== 'kept') this.fillPending(store);
      } catch (e) {
        this.log(`analytics: state rows by wallet not kept: ${(e as Error).message}`);
      }
      try {
        report.seconds.state_store = Number(((performance.now() - t) / 1000).toFixed(3));
        this.opts.onRefreshStep?.('state_store', report.seconds.state_store);
      } catch (e) {
        this.log(`analytics: a refresh step listener failed: ${(e as Error).message}`);
      }
    });
  }

  /** Resolves once the versions committed so far are kept in the row store (at once without a store). */
  async stateStoreKept(): Promise<void> {
    await this.keeping;
  }

  /**
   * Commit the open transaction as the next version, at `mark`: 'committing' before the COMMIT (its ranker staged),
   * the COMMIT across the readers' transactions begun ahead of it, then the version announced before those end (a
   * request that begins after them reads it, and the listeners have it by then). The commit is part of the latency a
   * reader sees (it writes the log; the checkpoint comes after the publish): timed as the step 'commit'.
   */
  private commitVersion(report: RefreshReport | BuildReport, mark: StateMark): Promise<void> {
    return this.acrossCommit(async () => {
      this.emit('committing', this.current.version + 1, report);
      const c0 = performance.now();
      await this.conn.run('COMMIT');
      report.seconds.commit = Number(((performance.now() - c0) / 1000).toFixed(3));
      this.opts.onRefreshStep?.('commit', report.seconds.commit);
      this.mark = mark;
      this.ranker = report.ranker ?? null;
      this.current = { version: this.current.version + 1, asOf: mark.asOf, builtAt: new Date(), watermark: mark.watermark };
      this.emit('published', this.current, report);
    });
  }

  /**
   * Write the log into the database file; seconds it took (waits included), or null when it gave up (logged: the
   * version stands, and the next checkpoint writes these changes too). DuckDB refuses a checkpoint while a
   * transaction is open that began before a commit that changed or deleted rows (a request that started before the
   * publish: its snapshot may need the rows the checkpoint would drop); the live tail's appends do not count. Those
   * requests end within a request's time (a stream's snapshot within 30 s), and requests that begin after the publish
   * do not stand in the way, so it tries again for a while (the patience above). `FORCE CHECKPOINT` would wait too,
   * but hold every new transaction back meanwhile: every request would wait for the slowest one.
   */
  private async checkpoint(): Promise<number | null> {
    const t = performance.now();
    const patience =
      this.checkpointSkips >= CHECKPOINT_SKIPS_BEFORE_WAITING
        ? (this.opts.checkpointLongPatienceMs ?? CHECKPOINT_LONG_PATIENCE_MS)
        : (this.opts.checkpointPatienceMs ?? CHECKPOINT_PATIENCE_MS);
    for (let wait = 25; ; wait = Math.min(2 * wait, 1000)) {
      try {
        await this.conn.run('CHECKPOINT');
        break;
      } catch (e) {
        const message = (e as Error).message.split('\n')[0]!;
        const busy = /other (write )?transactions/i.test(message);
        if (!busy || this.stopped || performance.now() - t > patience) {
          this.checkpointSkips++;
          this.log(`analytics: checkpoint skipped after ${((performance.now() - t) / 1000).toFixed(1)} s (${this.checkpointSkips} in a row): ${message}`);
          return null;
        }
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    this.checkpointSkips = 0;
    const seconds = Number(((performance.now() - t) / 1000).toFixed(3));
    // a listener's error must not turn a published version (or a refresh's own error) into another failure
    try {
      this.opts.onRefreshStep?.('checkpoint', seconds);
      this.emit('checkpointed', this.current, seconds);
    } catch (e) {
      this.log(`analytics: a checkpoint listener failed: ${(e as Error).message}`);
    }
    return seconds;
  }

  /** Refresh every `everyMs` (measured from the end of the previous refresh). */
  start(everyMs: number): void {
    const loop = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.refreshNow()
          .catch((e: Error) => {
            this.log(`analytics: refresh failed: ${e.message}`);
            // an 'error' nobody listens to would end the process: a full disk would have stopped the service, not
            // one refresh (the next one tries again)
            if (this.listenerCount('error') > 0) this.emit('error', e);
          })
          .finally(loop);
      }, everyMs);
    };
    loop();
  }

  /** The row store of a_position_state (null: none), and whether a fill runs. */
  stateStore(): (StateStoreStatus & { filling: boolean }) | null {
    return this.store ? { ...this.store.status(), filling: this.filling !== null } : null;
  }

  /**
   * Resolves once no fill of the row store runs (filled, failed or stopped: stateStore() says which; at once without a
   * store).
   */
  async stateStoreFilled(): Promise<void> {
    // a version kept meanwhile may reset the store and start a fill
    await this.keeping;
    // (a fill that ends may have one chained after it: fillPending)
    while (this.filling) {
      await this.filling;
      await new Promise((r) => setImmediate(r));
    }
  }

  /**
   * Unless a fill runs, fill the store (its work pending: a copy after a reset, wallets to read again) in the
   * background; if one runs, look again once it ends (it may have ended just before this work came).
   */
  private fillPending(store: SqliteStateStore): void {
    if (this.stopped || this.store !== store) return;
    if (this.filling) void this.filling.then(() => this.fillPending(store));
    else if (store.pendingFill()) this.fillStore(store);
  }

  /**
   * Fill the row store in the background, on a connection of its own (each slice in a transaction of its own, at the
   * version committed then). A fill that a reset overtook ends; fillPending starts the next one after it.
   */
  private fillStore(store: SqliteStateStore): void {
    const t = performance.now();
    const run = (async () => {
      const conn = await this.instance.connect();
      try {
        return await store.fill(conn, { pause: () => (this.pause ?? yieldToEventLoop)(), stopped: () => this.stopped });
      } finally {
        conn.closeSync();
      }
    })();
    const done = run.then(
      (filled) => {
        // (before anything chained on it runs: fillPending then sees no fill running)
        if (this.filling === done) this.filling = null;
        if (filled) {
          // a retry armed for an earlier fill is not needed any more
          this.fillFailures = 0;
          if (this.fillRetry) clearTimeout(this.fillRetry);
          this.fillRetry = null;
          this.log(`analytics: state rows by wallet filled in ${((performance.now() - t) / 1000).toFixed(1)} s`);
        }
        return filled;
      },
      (e: Error) => {
        // refreshes go on reading a_position_state; the store is emptied and filled again after a while
        if (this.filling === done) this.filling = null;
        this.retryFill(store, `not filled`, e);
        return false;
      },
    );
    this.filling = done;
  }

  /** Unless the store holds the committed state: empty it, following that state, and fill it in the background. */
  private async fillUnlessHeld(store: SqliteStateStore): Promise<void> {
    const stamp = await stateStamp(this.conn);
    if (store.holds(stamp)) return;
    await store.reset(stamp);
    this.fillPending(store);
  }

  /**
   * Empty the store and fill it again after a wait (fillRetryMs, longer after each failure in a row): between
   * refreshes (the reset reads the committed stamp on the engine's connection) and after the versions being kept. A
   * fill started meanwhile (a reset by a failed keep) makes this one unneeded.
   */
  private retryFill(store: SqliteStateStore, what: string, e: Error): void {
    const wait = this.fillRetryMs[Math.min(this.fillFailures++, this.fillRetryMs.length - 1)]!;
    this.log(`analytics: state rows by wallet ${what} (filled again in ${(wait / 1000).toFixed(1)} s): ${e.message}`);
    if (this.stopped) return;
    if (this.fillRetry) clearTimeout(this.fillRetry);
    this.fillRetry = setTimeout(() => {
      this.fillRetry = null;
      const retry = this.running.then(async () => {
        await this.keeping;
        if (this.stopped || this.store !== store || this.filling) return;
        // (filled meanwhile by a reset's fill: nothing to do)
        await this.fillUnlessHeld(store).catch((e: Error) => this.retryFill(store, 'not emptied', e));
      });
      this.running = retry.catch(() => undefined);
    }, wait);
    this.fillRetry.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.fillRetry) clearTimeout(this.fillRetry);
    await this.running;
    await this.stateStoreKept();
    await this.stateStoreFilled();
    await this.store?.close();
    await this.boards.close();
    // the database may stay open (the tail, the readers): its commits checkpoint on their own again
    if (this.thresholdBefore)
      await this.conn
        .run(`SET checkpoint_threshold = ${sqlString(this.thresholdBefore)}`)
        .catch((e: Error) => this.log(`analytics: DuckDB's checkpoint threshold not restored (commits will not checkpoint on their own): ${e.message}`));
    this.conn.closeSync();
  }
}

/**
 * Schedules:
 *
 * 1. The daily preset snapshots (jobs/snapshots.ts). At start, and then shortly after every UTC midnight, every
 *    complete UTC day from `firstDay` through yesterday that the store does not hold for every preset is computed and
 *    stored, oldest first. The store is insert-only, so a run that finds nothing missing writes nothing, and a day
 *    that was half written (a crash) only gets its missing presets. A day is complete at the next UTC midnight; the
 *    run waits `graceMs` past it for late rows stamped before midnight. The timer wakes at most every `maxSleepMs`
 *    (one hour) and re-checks, so a suspended host or a clock jump only delays a run. A failed run is retried after
 *    `retryMs`. Timers are unref'd: they never keep the process alive.
 *
 * 2. Optionally, the resolution feed sync (data/resolution-feed.ts) every `everyMs`, so the feed log assigns seqs
 *    soon after resolutions land even when nobody polls GET /v1/resolutions.
 */
import type { DuckDBInstance } from '@duckdb/node-api';
import type { QueryRunner } from '../core/query.ts';
import { PRESETS } from '../core/rankings.ts';
import type { ResolutionFeed } from '../data/resolution-feed.ts';
import type { SnapshotStore } from '../data/snapshot-store.ts';
import { currentCatalog, snapshotDay } from './snapshots.ts';

const DAY_MS = 86_400_000;

export const SNAPSHOT_SCHEDULE_DEFAULTS = {
  /** days snapshotted on first start when the store is empty and no firstDay is given (ending yesterday) */
  backfillDays: 7,
  /** wait after UTC midnight before snapshotting the day that just ended */
  graceMs: 5 * 60_000,
  /** retry delay after a failed run */
  retryMs: 5 * 60_000,
  /** longest sleep between checks */
  maxSleepMs: 60 * 60_000,
} as const;

export interface SnapshotScheduleOptions {
  /** the DuckDB instance holding the venue (snapshots are computed on their own connections) */
  instance?: DuckDBInstance;
  /** catalog of the venue tables; default: the instance's current database */
  venueCatalog?: string;
  store: SnapshotStore;
  now?: () => Date;
  log?: (msg: string) => void;
  /** earliest day kept (YYYY-MM-DD). Default: the earliest day stored, else `backfillDays` days ending yesterday. */
  firstDay?: string;
  backfillDays?: number;
  graceMs?: number;
  retryMs?: number;
  maxSleepMs?: number;
  /** compute and store one day (default: jobs/snapshots.ts snapshotDay on `instance`); injected by tests */
  snapshotDay?: (day: string, now: Date) => Promise<{ created: number }>;
}

export interface SnapshotRunResult {
  /** days found missing (in whole or in part) and computed, oldest first */
  days: string[];
  /** preset snapshots written */
  created: number;
}

export interface SnapshotSchedule {
  /** run a catch-up now (joins a run in progress) */
  runNow(): Promise<SnapshotRunResult>;
  /** stop the timer; resolves when a run in progress has finished */
  stop(): Promise<void>;
}

export const dayOf = (t: Date | number): string => new Date(typeof t === 'number' ? t : t.getTime()).toISOString().slice(0, 10);
const dayMs = (day: string): number => {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day) || Number.isNaN(Date.parse(`${day}T00:00:00Z`)) || dayOf(Date.parse(`${day}T00:00:00Z`)) !== day) {
    throw new Error(`not a day: ${day}`);
  }
  return Date.parse(`${day}T00:00:00Z`);
};

/** The last complete UTC day at `now`. */
export function lastCompleteDay(now: Date): string {
  return dayOf(Math.floor(now.getTime() / DAY_MS) * DAY_MS - DAY_MS);
}

/** Days from..to inclusive (empty when from > to). */
export function daysBetween(from: string, to: string): string[] {
  const out: string[] = [];
  for (let t = dayMs(from), end = dayMs(to); t <= end; t += DAY_MS) out.push(dayOf(t));
  return out;
}

/** Days in [firstDay, lastCompleteDay(now)] that some preset has no stored snapshot for. */
export async function missingSnapshotDays(store: SnapshotStore, now: Date, firstDay: string): Promise<string[]> {
  const stored = (await Promise.all(PRESETS.map((p) => store.days(p.slug)))).map((days) => new Set(days));
  return daysBetween(firstDay, lastCompleteDay(now)).filter((d) => stored.some((s) => !s.has(d)));
}

async function defaultFirstDay(store: SnapshotStore, now: Date, backfillDays: number): Promise<string> {
  const earliest = (await Promise.all(PRESETS.map((p) => store.days(p.slug))))
    .map((days) => days[0])
    .filter((d): d is string => d !== undefined)
    .sort()[0];
  if (earliest) return earliest;
  return dayOf(dayMs(lastCompleteDay(now)) - (Math.max(1, backfillDays) - 1) * DAY_MS);
}

/** Milliseconds until the next check: the next UTC midnight plus grace, at most maxSleepMs, at least 1 s. */
export function nextWakeMs(now: Date, graceMs: number, maxSleepMs: number): number {
  const t = now.getTime();
  const nextMidnight = Math.floor(t / DAY_MS) * DAY_MS + DAY_MS;
  let target = nextMidnight + graceMs;
  // still inside today's grace window: today's run time has not come yet
  if (t < nextMidnight - DAY_MS + graceMs) target = nextMidnight - DAY_MS + graceMs;
  return Math.max(1000, Math.min(maxSleepMs, target - t));
}

/**
 * Catch up once: every missing complete day from firstDay through yesterday, oldest first. Days whose grace
 * window has not passed yet (yesterday, in the first graceMs after midnight) wait for the next run.
 */
export async function catchUpSnapshots(opts: SnapshotScheduleOptions): Promise<SnapshotRunResult> {
  const now = (opts.now ?? (() => new Date()))();
  const graceMs = opts.graceMs ?? SNAPSHOT_SCHEDULE_DEFAULTS.graceMs;
  const effectiveNow = new Date(now.getTime() - graceMs);
  const firstDay = opts.firstDay ?? (await defaultFirstDay(opts.store, effectiveNow, opts.backfillDays ?? SNAPSHOT_SCHEDULE_DEFAULTS.backfillDays));
  const days = await missingSnapshotDays(opts.store, effectiveNow, firstDay);
  if (!days.length) return { days: [], created: 0 };
  const compute = opts.snapshotDay ?? (await defaultSnapshotDay(opts));
  let created = 0;
  for (const day of days) {
    const started = Date.now();
    const r = await compute(day, (opts.now ?? (() => new Date()))());
    created += r.created;
    opts.log?.(`snapshots: ${day} stored ${r.created} preset boards in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
  return { days, created };
}

async function defaultSnapshotDay(opts: SnapshotScheduleOptions): Promise<(day: string, now: Date) => Promise<{ created: number }>> {
  const instance = opts.instance;
  if (!instance) throw new Error('startSnapshotSchedule needs a DuckDB instance (or a snapshotDay function)');
  const catalog = opts.venueCatalog ?? (await currentCatalog(instance));
  return async (day, now) => {
    const r = await snapshotDay(instance, catalog, opts.store, day, now);
    const mismatched = r.results.filter((x) => !x.identical).map((x) => x.preset);
    if (mismatched.length) opts.log?.(`snapshots: ${day} recomputed differently from the stored boards of ${mismatched.join(', ')} (stored kept)`);
    return { created: r.results.filter((x) => x.created).length };
  };
}

/** Start the daily snapshot schedule: a catch-up now, then after every UTC midnight. */
export function startSnapshotSchedule(opts: SnapshotScheduleOptions): SnapshotSchedule {
  const now = opts.now ?? (() => new Date());
  const graceMs = opts.graceMs ?? SNAPSHOT_SCHEDULE_DEFAULTS.graceMs;
  const retryMs = opts.retryMs ?? SNAPSHOT_SCHEDULE_DEFAULTS.retryMs;
  const maxSleepMs = opts.maxSleepMs ?? SNAPSHOT_SCHEDULE_DEFAULTS.maxSleepMs;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  let running: Promise<SnapshotRunResult> | null = null;

  const runNow = (): Promise<SnapshotRunResult> => {
    if (running) return running;
    const run = catchUpSnapshots({ ...opts, now }).finally(() => {
      running = null;
    });
    running = run;
    return run;
  };
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(wake, ms);
    timer.unref();
  };
  function wake(): void {
    timer = null;
    runNow().then(
      () => schedule(nextWakeMs(now(), graceMs, maxSleepMs)),
      (err: unknown) => {
        opts.log?.(`snapshots: run failed (retry in ${Math.round(retryMs / 1000)} s): ${err instanceof Error ? err.message : String(err)}`);
        schedule(retryMs);
      },
    );
  }
  wake();
  return {
    runNow,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running?.catch(() => undefined);
    },
  };
}

/** Sync the resolution feed log from the venue every `everyMs` (and once now). */
export function startResolutionFeedSync(opts: { db: QueryRunner; feed: ResolutionFeed; everyMs?: number; log?: (msg: string) => void }): { stop(): Promise<void> } {
  const everyMs = opts.everyMs ?? 15_000;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<unknown> | null = null;
  function tick(): void {
    timer = null;
    running = opts.feed
      .sync(opts.db)
      .then(
        (r) => {
          if (r.inserted) opts.log?.(`resolution feed: +${r.inserted} (total ${r.total}${r.pending ? `, ${r.pending} waiting for their market` : ''})`);
        },
        (err: unknown) => opts.log?.(`resolution feed: sync failed: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        running = null;
        if (!stopped) {
          timer = setTimeout(tick, everyMs);
          timer.unref();
        }
      });
  }
  tick();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await running;
    },
  };
}

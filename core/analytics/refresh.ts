/**
 * The incremental refresh: from the state of the last build or refresh (as of T_old, having seen venue rows up to
 * arrival batch W_old) to T_new and the newest batch W_new, recompute only what changed, with the same statements
 * as the full build, so that the state after a refresh equals a full build as of T_new (test/core/analytics-
 * live.test.ts proves it on random event streams).
 *
 * What changes, and why (the dirty rules):
 *  1. positions with a new leg (arrived after W_old, stamped at or before T_new) or a leg that became visible
 *     (stamped in (T_old, T_new]): continued from their stored state (a_position_state keeps the stream's unrounded
 *     state) with only those legs when they all come after the last leg streamed and no other rule restreams the
 *     position — the stream then reads the same legs in the same order from the same state as a restream —, else
 *     restreamed;
 *  2. positions with a fill whose 1 h or 24 h alpha horizon fell due in (T_old, T_new]: their alpha sums get those
 *     fills' terms folded on in stream order (alpha-due.ts: the same doubles a restream gives), unless another rule
 *     restreams them; their wallets get their alpha row again;
 *  3. positions in a market whose resolution became visible: restreamed (labels, holds, alpha to resolution);
 *  4. a mid that arrived late (stamped at or before T_old): positions on its token with a leg from 24 h before it on
 *     are restreamed (every lookup at or after it may change), the inventory legs valued after it are revalued, and
 *     its token's holders' daily returns are recomputed when it falls in a completed day;
 *  5. tokens whose latest mid moved: their positions' marks and unrealized P&L (no restream), for the wallets holding
 *     shares of them in a market not resolved;
 *  6. wallets of any of these: their per-wallet rows (a wallet whose only change is its marks: its P&L row, moved by the
 *     change of its unrealized P&L; one whose only change is a horizon: its alpha row); and every wallet's cohort-wide
 *     figures;
 *  7. risk: each completed day that passed closes (risk.ts dayCloseSql); a late row stamped in a completed day
 *     recomputes its wallet's days through the position stream; the statistics follow.
 *  8. clusters: the pairs of wallets whose moments or cells changed (clusters.ts refreshClusters says why exactly).
 *  9. a_wallet_metrics and the rank base: the rows of the wallets of 6, of a sharp tag the moved cutoff turns on or off
 *     and (rank base) of a changed cluster or link; the percentiles (a_wallet_pctiles) and the boards are recomputed
 *     whole (cohort-wide by nature). The ranking engine that scores the boards is the previous version's patched
 *     with the rank-base rows that changed (ranking-patch.ts). A day that closed moves every wallet's risk: then
 *     these are written whole and the engine is loaded (so it is after a restart, with no previous engine).
 */
import { A_LEGS, CLUSTER_RULES, refreshClusters } from '../clusters.ts';
import { refreshRankBase, writeRankBase } from '../rankings.ts';
import { loadRankColumns } from '../rank-columns.ts';
import { loadRankingEngine, stepBoardScoring, writeBoards, type BoardScoring, type OrdersOf } from '../ranking-boards.ts';
import type { RankingEngine } from '../ranking-engine.ts';
import type { PresetHeads } from '../preset-rankings.ts';
import { drainPausing, slicedPause, yieldToEventLoop } from '../steps.ts';
import { patchSteps, type PatchFigures } from '../ranking-patch.ts';
import { sharpCutoffSteps } from '../tags.ts';
import { roundedSql, tsLiteral, type AsOf, type ColumnarRunner } from '../query.ts';
import { openUnrealizedPnlSql } from '../positions.ts';
import {
  BEST_CATEGORY_SQL,
  LEG_SCAN_COLUMNS,
  feedStream,
  keySlices,
  loadMarketFacts,
  rankedDeviates,
  tableSinks,
  venueWatermark,
  walletTableStatements,
  writeMarks,
} from './build.ts';
import { pnlSumsUpdateSql, refreshCohortSql, writeCohortSql } from './cohort.ts';
import { HORIZON_FILLS_TABLE, LEGS_ORDER, LEGS_TABLE, LEG_STREAM_COLUMNS, appendHorizonFillsSql, appendLegsSql, inventoryLegsSql, pruneHorizonFillsSql } from './legs.ts';
import { POSITION_STATE_COLUMNS, positionsSql, walletPositionsSql } from './positions.ts';
import type { MidIndex } from './mid-index.ts';
import { tokenOf } from './mid-index.ts';
import { ALPHA_HORIZON_US, DAY_US, PositionStream, type PositionOut } from './position-stream.ts';
import { DAY_VALUES_DDL, RISK_WINDOW_DAYS, dayCloseSql, dayCloseTokensSql, pruneRiskDailySql, riskStatsSql, riskWindow } from './risk.ts';
import { addBandsSql, refreshBands, type FillBandRules } from './median-fill.ts';
import { HOLDS_READ_COLUMNS, alphaSql, medianFillSql, visibleFillSizes, type WalletScope } from './wallets.ts';
import { ALPHA_SUM_KEYS, AlphaCatchUp, type AlphaSums } from './alpha-due.ts';
import {
  STAGED_SLOTS,
  STAGED_TURNED_HEAVY,
  STAGED_WHOLE,
  STATE_SLOT_SQL,
  STATE_STAMP_SQL,
  STATE_WIDTH,
  scanStateRows,
  stateRowsSql,
  stateRowsWriter,
  type PositionStateStore,
} from './state-rows.ts';

/** What a state is as of: the venue clock T and the last arrival batch seen. */
export interface StateMark {
  asOf: Date;
  watermark: number;
}

export interface RefreshReport {
  /** the ranking engine the boards were scored with (this state's rank base) */
  ranker?: RankingEngine;
  /** every preset board's head as a page shows it, read by the builder before its commit (jobs/analytics/engine.ts) */
  heads?: PresetHeads;
  as_of: string;
  watermark: number;
  seconds: Record<string, number>;
  total_seconds: number;
  new_legs: number;
  /** positions restreamed whole */
  positions: number;
  /** positions continued from their stored state with their new legs only */
  continued: number;
  /** positions not restreamed whose alpha horizons fell due (their sums folded on) */
  alpha_positions: number;
  mark_wallets: number;
  /** wallets whose only change was their marks: their P&L rows moved by the change of their unrealized P&L */
  mark_only_wallets: number;
  wallets: number;
  days_closed: number;
  late_wallets: number;
  /** heavy wallets whose median fill came from their band, and those whose band lost it (read from their legs) */
  fill_bands: { banded: number; dropped: number };
  /** what the patch of the previous engine changed and took over (absent: the engine was loaded whole) */
  engine_patch?: PatchFigures;
  /** how many times its JavaScript steps paused (a builder counts them; `seconds.paused`: the time in them) */
  pauses?: number;
  /** where the touched wallets' state rows were read: the row store by wallet, or a_position_state (state-rows.ts) */
  state_rows: 'store' | 'table';
  /** the touched wallets' state rows read (and, with a store, staged after the stream) */
  touched_state_rows: number;
  /**
   * the touched wallets' rows were staged for the row store (false: no store, or more than its stageMaxRows: their
   * ids were, and the store reads them again from the table after the commit)
   */
  state_rows_staged: boolean;
}

/** The refresh's temporary working tables, dropped when it ends. */
const REFRESH_WORK_TABLES = ['revalue', 'revalued', 'new_mids', 'late_mids', 'new_legs', 'new_pos', 'restream_pos', 'cont_pos', 'rewritten_pos', 'replaced_pos', 'cont_state', 'cont_legs', 'touched_wallets', 'touched_state', 'streamed_state', 'dirty_pos', 'mark_wallets', 'dirty_legs', 'late_legs', 'late_wallets', 'full_wallets',
  'scoped_positions', 'scoped_fill_legs', 'scoped_holds', 'scoped_median_fill', 'leg_wallets', 'band_median', 'due_legs', 'alpha_due', 'alpha_only', 'mark_only', 'clusters_before', 'rank_changed', 'metrics_changed', 'day_values', 'day_legs', 'mark_tokens', 'marks_before', 'pnl_moved', 'rewritten_wallets', 'state_after', 'staged_slots', 'staged_wallets'];

/** alpha_due: a_position_state's key and horizon-sum columns, as the state declares them. */
const ALPHA_DUE_COLUMNS = POSITION_STATE_COLUMNS.filter((c): c is Extract<(typeof POSITION_STATE_COLUMNS)[number], readonly [keyof AlphaSums, string]> =>
  (ALPHA_SUM_KEYS as readonly string[]).includes(c[0]));

/** Wallets read from the state row store at a time; a pause once 15 ms of reading ran (STORE_READ_SLICE_MS). */
const STORE_READ_WALLETS = 8;
const STORE_READ_SLICE_MS = 15;

const us = (d: Date) => d.getTime() * 1000;
const tsUs = (x: number) => `make_timestamp(${Math.round(x)}::BIGINT)`;

/** The day-end value of a token as the stream computes it (risk.ts): payout once resolved by then, else the mid. */
function dayEndValue(mids: MidIndex, resolvedAt: number, payout: number, token: number, eod: number): number {
  if (!Number.isNaN(resolvedAt) && resolvedAt <= eod) return payout;
  const m = mids.at(token, eod);
  return Number.isNaN(m) ? 0 : m;
}

export interface RefreshOptions {
  riskDays?: number;
  /** how the metric orders of a freshly loaded engine are computed (a service: off its event loop) */
  ordersOf?: OrdersOf;
  /** the ranking engine of the `from` state (its a_rank_base): patched with the changed wallets instead of a reload */
  previous?: RankingEngine;
  /** each step's name and seconds as it ends */
  onStep?: (name: string, seconds: number) => void;
  /** the pause between the steps of its JavaScript computations (a service: readers first); default a turn of the loop */
  pause?: () => Promise<void>;
  /** which wallets keep a band of fill sizes around their median, and how wide (median-fill.ts; default FILL_BAND) */
  fillBand?: FillBandRules;
  /** how the boards are scored (a service: on a worker thread); default here, in steps with `pause` between them */
  boards?: BoardScoring;
  /**
   * a_position_state by wallet (state-rows.ts): read instead of the table when it holds the `from` version, and handed
   * the touched wallets' rows as they are after this refresh
   */
  stateStore?: PositionStateStore;
}

/**
 * SQL (a SELECT of wallet_id) of the wallets whose sharp tag the cutoff's move from `cutoffBefore` to `cutoffAfter`
 * turns on or off (+Infinity: no cutoff); null when the cutoff did not move.
 */
function cutoffBandSql(cutoffBefore: number, cutoffAfter: number): string | null {
  const lo = Math.min(cutoffBefore, cutoffAfter);
  const hi = Math.max(cutoffBefore, cutoffAfter);
  return lo < hi ? `SELECT wallet_id FROM a_calibration WHERE calibration_ranked AND skill_deviate >= '${lo}'::DOUBLE AND skill_deviate < '${hi}'::DOUBLE` : null;
}

/**
 * SQL (a SELECT of wallet_id) of the a_wallet_metrics rows a refresh changes when no day closed: the wallets with new
 * per-wallet rows (dirty_wallets) and those whose sharp tag the cutoff's move turns on or off. Every other column of
 * a row is a function of the wallet's own per-wallet rows (the percentiles are in a_wallet_pctiles).
 */
export function metricsChangedSql(cutoffBefore: number, cutoffAfter: number, own = 'dirty_wallets'): string {
  return `SELECT DISTINCT wallet_id FROM (${ownRowsChangedSql(cutoffBefore, cutoffAfter, own)}) ORDER BY wallet_id`;
}

/**
 * The wallets with new per-wallet rows (listed in `own`: dirty_wallets, or those of them whose rows are rewritten
 * whole) and those the cut-off's move re-tags (a UNION ALL, repeats possible).
 */
function ownRowsChangedSql(cutoffBefore: number, cutoffAfter: number, own: string): string {
  const band = cutoffBandSql(cutoffBefore, cutoffAfter);
  return `SELECT wallet_id FROM ${own} ${band ? `UNION ALL ${band}` : ''}`;
}

/**
 * SQL (a SELECT of wallet_id) of the rank-base rows a refresh changes, when no day closed, before the rank base is
 * rewritten: the wallets with new per-wallet rows (dirty_wallets), a changed cluster (clusters_before vs a_clusters),
 * a changed link (wallet_links vs the rank base's linked_user_id), or a sharp tag turned on or off by the cutoff's
 * move from `cutoffBefore` to `cutoffAfter` (+Infinity: no cutoff). Every other column of the rank base is a
 * function of the wallet's own rows.
 */
export function rankChangedSql(cutoffBefore: number, cutoffAfter: number, own = 'dirty_wallets'): string {
  return `SELECT DISTINCT wallet_id FROM (
      ${ownRowsChangedSql(cutoffBefore, cutoffAfter, own)}
      UNION ALL SELECT wallet_id FROM clusters_before b FULL JOIN a_clusters a USING (wallet_id)
        WHERE a.cluster_id IS DISTINCT FROM b.cluster_id OR a.cluster_size IS DISTINCT FROM b.cluster_size
      UNION ALL SELECT wallet_id FROM wallet_links l FULL JOIN (SELECT wallet_id, linked_user_id AS user_id FROM a_rank_base WHERE linked_user_id IS NOT NULL) b
        USING (wallet_id) WHERE l.user_id IS DISTINCT FROM b.user_id)
    ORDER BY wallet_id`;
}

export async function refresh(db: ColumnarRunner, mids: MidIndex, from: StateMark, to: StateMark, opts: RefreshOptions = {}): Promise<RefreshReport> {
  const t0 = performance.now();
  const pause = opts.pause ?? yieldToEventLoop;
  const seconds: Record<string, number> = {};
  const timed = async <R>(name: string, f: () => Promise<R>): Promise<R> => {
    const t = performance.now();
    const r = await f();
    seconds[name] = Number(((performance.now() - t) / 1000).toFixed(3));
    opts.onStep?.(name, seconds[name]!);
    return r;
  };
  const riskDays = opts.riskDays ?? RISK_WINDOW_DAYS;
  const Told = tsLiteral(from.asOf);
  const Tnew = tsLiteral(to.asOf);
  const W0 = from.watermark;
  const W1 = to.watermark;
  const newRows = `seq > ${W0} AND seq <= ${W1}`;
  const d1Old = riskWindow(us(from.asOf), riskDays).d1;
  const d1New = riskWindow(us(to.asOf), riskDays).d1;

  // the sharp cutoff of the `from` state (NULL: none): wallets between it and the new one change their tag
  const [before] = await db.all<{ c: number | null }>(`SELECT sharp_min_deviate AS c FROM a_meta`);
  const [stamp] = await db.all<{ version: number; built_at_us: number }>(STATE_STAMP_SQL);
  const fromVersion = Number(stamp?.version);
  const store = opts.stateStore;
  let stateRows: RefreshReport['state_rows'] = 'table';
  // the wallets whose state rows this refresh reads, ascending: read once, when the store needs them
  let touched: Int32Array | null = null;
  const touchedIds = async () => (touched ??= await walletIds(db, 'touched_wallets'));
  const cutoffBefore = before?.c === null || before?.c === undefined ? Number.POSITIVE_INFINITY : Number(before.c);

  // the state is as of T_new from here on (the a_positions view reads it); readers see it at the commit
  await db.run(`UPDATE a_meta SET as_of = ${Tnew}, watermark = ${W1}, version = version + 1`);

  // --- venue rows that arrived: legs, mids
  const newLegs = await timed('legs', async () => {
    for (const sql of appendLegsSql(W0, W1)) await db.run(sql);
    for (const sql of appendHorizonFillsSql(W0, W1, Tnew)) await db.run(sql);
    const [n] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM ${LEGS_TABLE} WHERE ${newRows}`);
    return Number(n?.n ?? 0);
  });
  const lateMids: { token: number; ts: number }[] = [];
  const newMids: { token: number; ts: number }[] = [];
  const movedTokens = new Set<number>();
  await timed('mids', () =>
    db.scan(`SELECT market_id, outcome_index, epoch_us(ts)::DOUBLE AS ts, mid FROM mids WHERE ${newRows} ORDER BY market_id, outcome_index, ts, mid`, (b) => {
      const m = b.int('market_id');
      const o = b.u8('outcome_index');
      const t = b.f64('ts');
      const v = b.f64('mid');
      for (let i = 0; i < b.n; i++) {
        mids.add(m[i]!, o[i]!, t[i]!, v[i]!);
        const token = tokenOf(m[i]!, o[i]!);
        movedTokens.add(token);
        newMids.push({ token, ts: t[i]! });
        if (t[i]! <= us(from.asOf)) lateMids.push({ token, ts: t[i]! });
      }
    }),
  );
  // future-stamped mids that became visible also move marks
  await db.scan(`SELECT DISTINCT market_id, outcome_index FROM mids WHERE seq <= ${W0} AND ts > ${Told} AND ts <= ${Tnew}`, (b) => {
    const m = b.int('market_id');
    const o = b.u8('outcome_index');
    for (let i = 0; i < b.n; i++) movedTokens.add(tokenOf(m[i]!, o[i]!));
  });

  // --- a new mid revalues the inventory legs stamped at or after it on its token (their events whole): an inventory
  // leg is valued at the mids at or before its own time, whenever either arrives
  const writeMidTable = async (name: string, rows: { token: number; ts: number }[]) => {
    await db.run(`CREATE OR REPLACE TEMP TABLE ${name} (token INTEGER, ts_us DOUBLE)`);
    const w = await db.writer(name, [
      { name: 'token', type: 'INTEGER' },
      { name: 'ts_us', type: 'DOUBLE' },
    ]);
    for (const l of rows) {
      w.set(0, l.token);
      w.set(1, l.ts);
      w.next();
    }
    await w.close();
  };
  let revalued = 0;
  if (newMids.length) {
    revalued = await timed('revalue', async () => {
      await writeMidTable('new_mids', newMids);
      await db.run(`CREATE OR REPLACE TEMP TABLE revalue AS
        SELECT DISTINCT l.tx_hash, l.log_index FROM ${LEGS_TABLE} l JOIN (SELECT token, min(ts_us) AS ts_us FROM new_mids GROUP BY token) m
          ON l.market_id * 2 + l.outcome_index = m.token
        WHERE l.kind = 0 AND epoch_us(l.ts) >= m.ts_us`);
      const [c] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM revalue`);
      const n = Number(c?.n ?? 0);
      if (n === 0) return 0;
      await db.run(`CREATE OR REPLACE TEMP TABLE revalued AS SELECT * FROM (${inventoryLegsSql(`(i.tx_hash, i.log_index) IN (SELECT (tx_hash, log_index) FROM revalue) AND i.seq <= ${W1}`, true)}) WHERE kind = 0`);
      await db.run(`DELETE FROM ${LEGS_TABLE} WHERE kind = 0 AND (tx_hash, log_index) IN (SELECT (tx_hash, log_index) FROM revalue)`);
      await db.run(`INSERT INTO ${LEGS_TABLE} SELECT * FROM revalued`);
      return n;
    });
  }
  if (lateMids.length) await writeMidTable('late_mids', lateMids);

  // --- dirty positions: restreamed whole, or continued from their stored state with their new legs only
  let touchedRows = 0;
  const { positions, continued } = await timed('dirty', async () => {
    const h1 = `INTERVAL ${ALPHA_HORIZON_US.h1 / 1e6} SECOND`;
    const h24 = `INTERVAL ${ALPHA_HORIZON_US.h24 / 1e6} SECOND`;
    // 1. the legs not streamed yet: arrived now, or arrived before and stamped in (T_old, T_new] (became visible);
    // two scans, each pruned by its own column's zone maps (a_legs is in wallet order, then appended)
    await db.run(`CREATE OR REPLACE TEMP TABLE new_legs AS
        SELECT * FROM ${LEGS_TABLE} WHERE ${newRows} AND ts <= ${Tnew}
        UNION ALL SELECT * FROM ${LEGS_TABLE} WHERE seq <= ${W0} AND ts > ${Told} AND ts <= ${Tnew}`);
    await db.run(`CREATE OR REPLACE TEMP TABLE new_pos AS SELECT wallet_id, market_id, outcome_index, min(ts) AS first_new FROM new_legs GROUP BY ALL`);
    // the rules that change a position's past: restreamed (a pass per rule: each rule's filters go into its scan)
    const parts = [
      // 3. resolutions that became visible
      `SELECT wallet_id, market_id, outcome_index FROM ${LEGS_TABLE} WHERE ts <= ${Tnew} AND market_id IN (
         SELECT market_id FROM resolutions WHERE resolved_at <= ${Tnew} AND (${newRows} OR resolved_at > ${Told}))`,
    ];
    if (lateMids.length) {
      // 4. late mids: every lookup at or after the mid may change (alpha looks 24 h ahead, contrarian 24 h back)
      parts.push(`SELECT l.wallet_id, l.market_id, l.outcome_index FROM ${LEGS_TABLE} l JOIN late_mids m ON l.market_id * 2 + l.outcome_index = m.token
        WHERE l.ts <= ${Tnew} GROUP BY ALL HAVING max(epoch_us(l.ts)) >= min(m.ts_us) - ${ALPHA_HORIZON_US.h24}`);
    }
    if (revalued > 0) {
      // every position of a revalued inventory event
      parts.push(`SELECT DISTINCT l.wallet_id, l.market_id, l.outcome_index FROM ${LEGS_TABLE} l SEMI JOIN revalue r USING (tx_hash, log_index) WHERE l.ts <= ${Tnew}`);
    }
    await db.run(`CREATE OR REPLACE TEMP TABLE restream_pos AS SELECT DISTINCT * FROM (${parts.join(' UNION ALL ')})`);
    // 2. horizons that fell due (read below in LEGS_ORDER): the due fills of positions not restreamed get their alpha
    // terms folded on (alpha-due.ts) before any continuation streams the new legs after them
    // (a_horizon_fills holds every fill leg whose 24 h horizon was after T_old, in time order: a small range scan)
    await db.run(`CREATE OR REPLACE TEMP TABLE due_legs AS SELECT wallet_id, market_id, outcome_index, ts, log_index, kind, q, price, size_usdc
      FROM ${HORIZON_FILLS_TABLE} WHERE seq <= ${W0} AND ts <= ${Told}
        AND ((ts + ${h1} > ${Told} AND ts + ${h1} <= ${Tnew}) OR (ts + ${h24} > ${Told} AND ts + ${h24} <= ${Tnew}))`);
    await db.run(pruneHorizonFillsSql(Tnew));
    // every state row of the wallets these rules touch, read once: the continuation's states, the due horizons' sums
    // and the per-wallet step's positions come from this copy (each of those reads scanned all 64M rows at full scale)
    await db.run(`CREATE OR REPLACE TEMP TABLE touched_wallets AS
        SELECT wallet_id FROM new_pos UNION SELECT wallet_id FROM restream_pos UNION SELECT wallet_id FROM due_legs`);
    // the version this refresh starts from may still be being kept (the engine lets this refresh begin meanwhile)
    await store?.settled();
    if (store?.holds({ version: fromVersion, builtAtUs: Number(stamp?.built_at_us) })) {
      const ids = await touchedIds();
      await db.run(`CREATE OR REPLACE TEMP TABLE touched_state AS SELECT * FROM a_position_state LIMIT 0`);
      // a few wallets at a time, pausing every 15 ms: the market makers among them hold thousands of positions each
      // (256 wallets between pauses held the service 225–304 ms at full scale, 32 wallets up to ~220 ms)
      const w = await stateRowsWriter(db, 'touched_state');
      const step = slicedPause(pause, STORE_READ_SLICE_MS);
      try {
        for (let k = 0; k < ids.length; k += STORE_READ_WALLETS) {
          w.append(store.read(ids.subarray(k, k + STORE_READ_WALLETS)));
          await w.ready();
          await step();
        }
        stateRows = 'store';
      } catch (e) {
        // a value that does not decode: the store is filled again, this refresh reads the table
        store.readFailed(e as Error);
      } finally {
        await w.close();
      }
    }
    if (stateRows === 'table') {
      await db.run(`CREATE OR REPLACE TEMP TABLE touched_state AS SELECT * FROM a_position_state WHERE wallet_id IN (SELECT wallet_id FROM touched_wallets)`);
    }
    // a position with new legs continues when they all come after its last streamed leg (then a restream would read
    // the same legs in the same order from the same state) and no other rule restreams it. A position without a row
    // has streamed no leg (a wallet that only redeemed has a row); one with a row from before schema 4 is restreamed.
    await db.run(`CREATE OR REPLACE TEMP TABLE cont_pos AS
      SELECT n.wallet_id, n.market_id, n.outcome_index FROM new_pos n
        LEFT JOIN (SELECT wallet_id, market_id, outcome_index, raw_shares IS NOT NULL AS resumable, last_leg_ts FROM touched_state) s
          USING (wallet_id, market_id, outcome_index)
        ANTI JOIN restream_pos r USING (wallet_id, market_id, outcome_index)
      WHERE s.resumable IS NULL OR (s.resumable AND n.first_new > s.last_leg_ts)`);
    await db.run(`CREATE OR REPLACE TEMP TABLE dirty_pos AS SELECT DISTINCT * FROM (
        SELECT wallet_id, market_id, outcome_index FROM new_pos ANTI JOIN cont_pos USING (wallet_id, market_id, outcome_index)
        UNION ALL SELECT * FROM restream_pos)`);
    await db.run(`DELETE FROM due_legs WHERE (wallet_id, market_id, outcome_index) IN (SELECT (wallet_id, market_id, outcome_index) FROM dirty_pos)`);
    // every position whose state row the stream writes again (restreamed or continued)
    await db.run(`CREATE OR REPLACE TEMP TABLE rewritten_pos AS SELECT * FROM dirty_pos UNION ALL SELECT * FROM cont_pos`);
    const [c] = await db.all<{ n: number; k: number; t: number }>(`SELECT (SELECT count(*) FROM dirty_pos) AS n, (SELECT count(*) FROM cont_pos) AS k, (SELECT count(*) FROM touched_state) AS t`);
    touchedRows = Number(c?.t ?? 0);
    return { positions: Number(c?.n ?? 0), continued: Number(c?.k ?? 0) };
  });

  // --- marks that moved: the a_positions view reads them; the wallets holding those tokens get new P&L sums
  const markWallets = await timed('marks', async () => {
    if (movedTokens.size === 0) return 0;
    // the marks before (a row per token: small), to tell how much each holder's unrealized P&L moved
    await db.run(`CREATE OR REPLACE TEMP TABLE marks_before AS SELECT * FROM a_marks`);
    await writeMarks(db, mids, to.asOf, movedTokens);
    // a mark moves unrealized P&L only of a position holding shares in a market not resolved by T_new (positionPnlSql:
    // resolved positions use the payout, and an empty position's unrealized P&L is -cost_basis whatever the mark);
    // each holder's change of it, summed: a wallet whose only change is its marks adds it to its P&L sums (below)
    await db.run(`CREATE OR REPLACE TEMP TABLE mark_wallets AS
      SELECT wallet_id, sum(${openUnrealizedPnlSql('k.mark')} - ${openUnrealizedPnlSql('b.mark')}) AS unrealized_change
      FROM a_position_state s LEFT JOIN a_marks k USING (market_id, outcome_index) LEFT JOIN marks_before b USING (market_id, outcome_index)
      WHERE s.shares <> 0 AND s.first_ts IS NOT NULL AND s.market_id * 2 + s.outcome_index IN (SELECT t FROM mark_tokens)
        AND s.market_id NOT IN (SELECT market_id FROM resolutions WHERE resolved_at <= ${Tnew})
      GROUP BY wallet_id`);
    const [c] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM mark_wallets`);
    return Number(c?.n ?? 0);
  });

  // --- horizons that fell due on positions not restreamed: their alpha sums, folded on in stream order (before a
  // continuation streams the position's new legs after them)
  const alphaPositions = await timed('alpha_due', async () => {
    await db.run(`CREATE OR REPLACE TEMP TABLE alpha_due (${ALPHA_DUE_COLUMNS.map(([n, t]) => `${n} ${t}`).join(', ')})`);
    const sums: AlphaSums[] = [];
    const markets = await loadMarketFacts(db, to.asOf);
    const catchUp = new AlphaCatchUp(mids, markets, us(from.asOf), us(to.asOf), (x) => sums.push(x));
    await db.scan(
      `SELECT d.wallet_id, d.market_id, d.outcome_index, epoch_us(d.ts)::DOUBLE AS ts, d.q, d.price, d.size_usdc AS size,
          s.a1_num, s.a1_den, s.a1_n, s.a24_num, s.a24_den, s.a24_n
        FROM due_legs d JOIN touched_state s USING (wallet_id, market_id, outcome_index)
        ORDER BY d.wallet_id, d.market_id, d.outcome_index, d.ts, d.log_index, d.kind IN (1, 2), d.q DESC`,
      (b) => catchUp.push(b),
    );
    catchUp.finish();
    if (sums.length) {
      const w = await db.writer('alpha_due', ALPHA_DUE_COLUMNS.map(([name, type]) => ({ name, type })));
      for (let k = 0; k < sums.length; k++) {
        const x = sums[k]!;
        ALPHA_DUE_COLUMNS.forEach(([name], j) => w.set(j, x[name]));
        w.next();
        // a pause every 64k rows: in a full-scale refresh (session 17) these rows, written in one piece, held the
        // service's loop 4 s (its garbage collection included)
        if ((k & 0xffff) === 0xffff) await pause();
      }
      await w.close();
      // the copy only: a_position_state gets these rows back whole in the stream step (below)
      await db.run(`UPDATE touched_state s SET a1_num = d.a1_num, a1_den = d.a1_den, a1_n = d.a1_n, a24_num = d.a24_num, a24_den = d.a24_den, a24_n = d.a24_n
        FROM alpha_due d WHERE s.wallet_id = d.wallet_id AND s.market_id = d.market_id AND s.outcome_index = d.outcome_index`);
    }
    return sums.length;
  });

  // --- restream the dirty positions (their whole histories), continue the others from their stored state
  await timed('stream', async () => {
    const markets = await loadMarketFacts(db, to.asOf);
    const keyIn = (t: string) => `(wallet_id, market_id, outcome_index) IN (SELECT (wallet_id, market_id, outcome_index) FROM ${t})`;
    // the state rows the stream writes again (one scan of the table for both kinds), and those whose only change is
    // their due horizons' sums, written back whole from the copy. Not an UPDATE: the checkpoint after the publish
    // rewrites every updated column of each row group holding an updated row, and these rows are spread over all of
    // them (a test table of 20M rows: 15–18 s for an update of six columns in 5,000 rows, 0.3–0.5 s for the rows
    // deleted and appended); a restreamed position's every hold row, a continued one's current episode's (below)
    await db.run(`CREATE OR REPLACE TEMP TABLE replaced_pos AS SELECT * FROM rewritten_pos UNION SELECT wallet_id, market_id, outcome_index FROM alpha_due`);
    await db.run(`DELETE FROM a_position_state WHERE ${keyIn('replaced_pos')}`);
    if (alphaPositions > 0) {
      await db.run(`INSERT INTO a_position_state SELECT * FROM touched_state
        SEMI JOIN alpha_due USING (wallet_id, market_id, outcome_index) ANTI JOIN rewritten_pos USING (wallet_id, market_id, outcome_index)`);
    }
    await db.run(`DELETE FROM a_holds WHERE ${keyIn('dirty_pos')}`);
    const resume = new Map<string, PositionOut>();
    if (continued > 0) {
      await db.run(`CREATE OR REPLACE TEMP TABLE cont_state AS SELECT * FROM touched_state SEMI JOIN cont_pos USING (wallet_id, market_id, outcome_index)`);
      const state = await scanStateRows(db, stateRowsSql('cont_state'));
      for (let i = 0; i < state.n; i++) {
        const p = {} as Record<string, number | null>;
        POSITION_STATE_COLUMNS.forEach(([n], c) => {
          const v = state.values[i * STATE_WIDTH + c]!;
          p[n] = Number.isNaN(v) ? null : v;
        });
        resume.set(`${p.wallet_id}:${p.market_id}:${p.outcome_index}`, p as unknown as PositionOut);
      }
      await db.run(`DELETE FROM a_holds h USING cont_state c
        WHERE h.wallet_id = c.wallet_id AND h.market_id = c.market_id AND h.outcome_index = c.outcome_index AND h.episode = c.episodes`);
    }
    // the rows written also go to streamed_state: with touched_state, the per-wallet step's positions
    const sinks = await tableSinks(db, us(to.asOf), { positions: true, risk: false, positionsCopy: 'streamed_state' });
    const stream = new PositionStream({ T: us(to.asOf), mids, markets, resume: (w, m, o) => resume.get(`${w}:${m}:${o}`) }, sinks);
    const feed = async (legs: string) => {
      for (const [lo, hi] of await keySlices(db, legs, 'wallet_id')) {
        await feedStream(db, `SELECT ${LEG_SCAN_COLUMNS} FROM ${legs} WHERE wallet_id >= ${lo} AND wallet_id < ${hi} ORDER BY ${LEGS_ORDER}`, stream);
      }
    };
    if (positions > 0) {
      // the dirty wallets' legs first (one integer key), then their dirty positions' (a three-column semi-join over
      // every leg took 24 s at full scale)
      await db.run(`CREATE OR REPLACE TEMP TABLE dirty_legs AS SELECT l.* FROM (
          SELECT ${LEG_STREAM_COLUMNS} FROM ${LEGS_TABLE} WHERE wallet_id IN (SELECT DISTINCT wallet_id FROM dirty_pos) AND ts <= ${Tnew}) l
        SEMI JOIN dirty_pos d USING (wallet_id, market_id, outcome_index)`);
      await feed('dirty_legs');
    }
    if (continued > 0) {
      await db.run(`CREATE OR REPLACE TEMP TABLE cont_legs AS SELECT * FROM new_legs SEMI JOIN cont_pos USING (wallet_id, market_id, outcome_index)`);
      await feed('cont_legs');
    }
    stream.finish();
    await sinks.close();
  });

  // --- for the row store (it keeps them once this version commits): the touched wallets' state rows as they are now
  // (the copy, due horizons folded on, without the positions the stream wrote again, and those it wrote); a light
  // wallet's all, a heavy one's slots holding a position whose row changed (replaced_pos), each slot whole
  let staged = false;
  if (store) {
    await timed('state_rows', async () => {
      // too many to hold (their count bounds the rows staged from above): the touched wallets' ids instead, read
      // again by the store from the committed table, in the background
      const [c] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM streamed_state`);
      if (touchedRows + Number(c?.n ?? 0) > store.stageMaxRows) {
        store.stageStale(fromVersion + 1, await touchedIds());
        return;
      }
      const H = store.heavyRows;
      await db.run(`CREATE OR REPLACE TEMP TABLE state_after AS
        SELECT * FROM touched_state ANTI JOIN rewritten_pos USING (wallet_id, market_id, outcome_index) UNION ALL SELECT * FROM streamed_state`);
      await db.run(`CREATE OR REPLACE TEMP TABLE staged_slots AS SELECT DISTINCT wallet_id, ${STATE_SLOT_SQL} AS slot FROM replaced_pos`);
      await db.run(`CREATE OR REPLACE TEMP TABLE staged_wallets AS SELECT * FROM (
          SELECT wallet_id, CASE WHEN a.n < ${H} THEN ${STAGED_WHOLE} WHEN coalesce(b.n, 0) < ${H} THEN ${STAGED_TURNED_HEAVY} ELSE ${STAGED_SLOTS} END AS mode
          FROM (SELECT wallet_id, count(*) AS n FROM state_after GROUP BY ALL) a LEFT JOIN (SELECT wallet_id, count(*) AS n FROM touched_state GROUP BY ALL) b USING (wallet_id))
        WHERE mode <> ${STAGED_SLOTS} OR wallet_id IN (SELECT wallet_id FROM staged_slots)`);
      const rows = await scanStateRows(db, stateRowsSql(`(SELECT s.* FROM state_after s JOIN staged_wallets w USING (wallet_id)
          LEFT JOIN staged_slots c ON c.wallet_id = s.wallet_id AND c.slot = ${STATE_SLOT_SQL.replace('market_id', 's.market_id')}
        WHERE w.mode <> ${STAGED_SLOTS} OR c.slot IS NOT NULL)`));
      const wallets: number[] = [];
      const modes: number[] = [];
      await db.scan(`SELECT wallet_id, mode FROM staged_wallets ORDER BY wallet_id`, (b) => {
        const w = b.int('wallet_id');
        const m = b.int('mode');
        for (let i = 0; i < b.n; i++) {
          wallets.push(w[i]!);
          modes.push(m[i]!);
        }
      });
      store.stage(fromVersion + 1, Int32Array.from(wallets), Uint8Array.from(modes), rows);
      staged = true;
    });
  }

  // --- risk: close the days that completed, then recompute wallets hit by late rows in completed days
  const daysClosed = await timed('day_close', async () => {
    let n = 0;
    if (d1New <= d1Old) return 0;
    const markets = await loadMarketFacts(db, to.asOf);
    for (let day = d1Old; day < d1New; day += DAY_US) {
      await db.run(DAY_VALUES_DDL);
      const w = await db.writer('day_values', [
        { name: 'market_id', type: 'INTEGER' },
        { name: 'outcome_index', type: 'UTINYINT' },
        { name: 'v_prev', type: 'DOUBLE' },
        { name: 'v_cur', type: 'DOUBLE' },
      ]);
      await db.scan(dayCloseTokensSql(day), (b) => {
        const m = b.int('market_id');
        const o = b.u8('outcome_index');
        for (let i = 0; i < b.n; i++) {
          const token = tokenOf(m[i]!, o[i]!);
          const at = markets.resolvedAt[m[i]!] ?? Number.NaN;
          const pay = markets.payout[token] ?? 0;
          w.set(0, m[i]!);
          w.set(1, o[i]!);
          w.set(2, dayEndValue(mids, at, pay, token, day));
          w.set(3, dayEndValue(mids, at, pay, token, day + DAY_US));
          w.next();
        }
      });
      await w.close();
      for (const sql of dayCloseSql(day, Tnew)) await db.run(sql);
      n++;
    }
    await db.run(pruneRiskDailySql(us(to.asOf), riskDays));
    return n;
  });

  // late rows in completed days: legs stamped before the old window's end that arrived now, late mids in completed
  // days (their token's holders), resolutions stamped in completed days that arrived now
  const lateWallets = await timed('late_risk', async () => {
    const lateParts = [
      `SELECT DISTINCT wallet_id FROM ${LEGS_TABLE} WHERE ${newRows} AND ts < ${tsUs(d1Old)}`,
      `SELECT DISTINCT l.wallet_id FROM ${LEGS_TABLE} l WHERE l.market_id IN (
         SELECT market_id FROM resolutions WHERE ${newRows} AND resolved_at < ${tsUs(d1Old)})`,
    ];
    if (lateMids.some((m) => m.ts < d1Old)) {
      lateParts.push(`SELECT DISTINCT l.wallet_id FROM ${LEGS_TABLE} l JOIN late_mids m ON l.market_id * 2 + l.outcome_index = m.token WHERE m.ts_us < ${d1Old}`);
    }
    await db.run(`CREATE OR REPLACE TEMP TABLE late_wallets AS SELECT DISTINCT wallet_id FROM (${lateParts.join(' UNION ALL ')})`);
    const [c] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM late_wallets`);
    const n = Number(c?.n ?? 0);
    if (n === 0) return 0;
    const markets = await loadMarketFacts(db, to.asOf);
    // their risk rows again, from their whole histories (their positions and holds were restreamed above if changed)
    await db.run(`DELETE FROM a_risk_daily WHERE wallet_id IN (SELECT wallet_id FROM late_wallets)`);
    await db.run(`DELETE FROM a_risk_pos WHERE wallet_id IN (SELECT wallet_id FROM late_wallets)`);
    const sinks = await tableSinks(db, us(to.asOf), { positions: false, risk: true });
    const stream = new PositionStream({ T: us(to.asOf), mids, markets, risk: { days: riskDays } }, sinks);
    await db.run(`CREATE OR REPLACE TEMP TABLE late_legs AS SELECT ${LEG_STREAM_COLUMNS} FROM ${LEGS_TABLE} l SEMI JOIN late_wallets w USING (wallet_id) WHERE l.ts <= ${Tnew}`);
    for (const [lo, hi] of await keySlices(db, 'late_legs', 'wallet_id')) {
      await feedStream(db, `SELECT ${LEG_SCAN_COLUMNS} FROM late_legs WHERE wallet_id >= ${lo} AND wallet_id < ${hi} ORDER BY ${LEGS_ORDER}`, stream);
    }
    stream.finish();
    await sinks.close();
    return n;
  });

  // --- per-wallet rows of every wallet touched
  let fillBands = { banded: 0, dropped: 0 };
  let markOnly = 0;
  const wallets = await timed('wallets', async () => {
    // full_wallets get every per-wallet row again, from their positions, fill legs and holds read once (each
    // statement would otherwise scan the whole tables)
    await db.run(`CREATE OR REPLACE TEMP TABLE full_wallets AS SELECT DISTINCT wallet_id FROM (
        SELECT wallet_id FROM dirty_pos UNION ALL SELECT wallet_id FROM cont_pos UNION ALL SELECT wallet_id FROM late_wallets)`);
    await db.run(`CREATE OR REPLACE TEMP TABLE dirty_wallets AS SELECT wallet_id FROM full_wallets
        ${markWallets > 0 ? 'UNION SELECT wallet_id FROM mark_wallets WHERE unrealized_change <> 0' : ''} ${alphaPositions > 0 ? 'UNION SELECT wallet_id FROM alpha_due' : ''}`);
    const inScope = `wallet_id IN (SELECT wallet_id FROM full_wallets)`;
    // the state rows first, then the view's joins (the view filtered afterwards joined all 64M rows at full scale)
    // touched_state (alpha sums folded on) without the rows the stream replaced, the rows it wrote, and the rows of a
    // wallet only late_risk touched (rarely any)
    const lateOnly = `(SELECT wallet_id FROM full_wallets EXCEPT SELECT wallet_id FROM touched_wallets)`;
    await db.run(`CREATE OR REPLACE TEMP TABLE scoped_positions AS ${positionsSql(`(
        SELECT * FROM (SELECT * FROM touched_state WHERE ${inScope}) ANTI JOIN rewritten_pos USING (wallet_id, market_id, outcome_index)
        UNION ALL SELECT * FROM streamed_state
        UNION ALL SELECT * FROM a_position_state WHERE wallet_id IN ${lateOnly})`)}`);
    // the median fill: a heavy wallet's from its band (its new fill sizes merged in), every other one's from its legs
    // (at full scale the market makers' legs were half of all legs, copied and sorted at every refresh)
    fillBands = await refreshBands(db, 'full_wallets', 'new_legs', opts.fillBand);
    await db.run(`CREATE OR REPLACE TEMP TABLE leg_wallets AS SELECT wallet_id FROM full_wallets ${fillBands.banded > 0 ? 'EXCEPT SELECT wallet_id FROM band_median' : ''}`);
    await db.run(`CREATE OR REPLACE TEMP TABLE scoped_fill_legs AS SELECT wallet_id, kind, ts, size_usdc FROM ${LEGS_TABLE} WHERE kind IN (1, 2) AND wallet_id IN (SELECT wallet_id FROM leg_wallets)`);
    // the columns read only: a_holds whole is 2.2 GB at full scale, and this copy read it from the disk every refresh
    await db.run(`CREATE OR REPLACE TEMP TABLE scoped_holds AS SELECT ${HOLDS_READ_COLUMNS} FROM a_holds WHERE ${inScope}`);
    const scope: WalletScope = { table: 'full_wallets', positions: 'scoped_positions', fillLegs: 'scoped_fill_legs', holds: 'scoped_holds' };
    await db.run(`CREATE OR REPLACE TEMP TABLE scoped_median_fill AS ${medianFillSql({ ...scope, table: 'leg_wallets' }, Tnew)} ${fillBands.banded > 0 ? 'UNION ALL SELECT * FROM band_median' : ''}`);
    scope.medianFill = 'scoped_median_fill';
    // a wallet read from its legs that is heavy now gets a band (one whose band lost its median, again)
    for (const sql of addBandsSql(visibleFillSizes('true', Tnew, 'scoped_fill_legs'), opts.fillBand)) await db.run(sql);
    for (const s of walletTableStatements(to.asOf, scope)) {
      await db.run(`DELETE FROM ${s.table} WHERE ${inScope}`);
      await db.run(`INSERT INTO ${s.table} SELECT * FROM (${s.select})`);
    }
    await db.run(`DELETE FROM a_best_category WHERE ${inScope}`);
    await db.run(`INSERT INTO a_best_category ${BEST_CATEGORY_SQL} AND ${inScope}`);
    // a wallet not in full_wallets whose only change is a horizon that fell due gets its alpha row again (its state
    // rows are in touched_state, with the sums folded on)
    if (alphaPositions > 0) {
      await db.run(`CREATE OR REPLACE TEMP TABLE alpha_only AS SELECT wallet_id FROM alpha_due EXCEPT SELECT wallet_id FROM full_wallets`);
      await db.run(`DELETE FROM a_alpha WHERE wallet_id IN (SELECT wallet_id FROM alpha_only)`);
      await db.run(`INSERT INTO a_alpha SELECT * FROM (${alphaSql({ table: 'alpha_only', positions: `(${walletPositionsSql('alpha_only', 'touched_state')})` })})`);
    }
    if (markWallets > 0) {
      // a wallet whose only change is its marks: no position of it changed but in unrealized P&L, so its P&L row moves
      // by that change, summed (rounded as pnlSql rounds its sums: the positions' figures are whole micro-USDC, so any
      // order of adding them gives the same sum), and nothing else in it moves. At full scale the hour's mids moved
      // 1.86M wallets' marks, and reading their rows again from every position made the wallets step 41 s (now ~15 s).
      await db.run(`CREATE OR REPLACE TEMP TABLE mark_only AS SELECT * FROM mark_wallets ANTI JOIN full_wallets USING (wallet_id) WHERE unrealized_change <> 0`);
      await db.run(`UPDATE a_pnl p SET unrealized_pnl = ${roundedSql('p.unrealized_pnl + m.unrealized_change', 6)}, total_pnl = ${roundedSql('p.total_pnl + m.unrealized_change', 6)}
        FROM mark_only m WHERE p.wallet_id = m.wallet_id`);
      const [k] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM mark_only`);
      markOnly = Number(k?.n ?? 0);
    }
    const [c] = await db.all<{ n: number }>(`SELECT count(*) AS n FROM dirty_wallets`);
    return Number(c?.n ?? 0);
  });
  await timed('risk', async () => {
    // a shifted window changes every wallet's statistics; otherwise only the late wallets'
    if (daysClosed > 0) {
      await db.run(`DELETE FROM a_risk`);
      await db.run(`INSERT INTO a_risk ${riskStatsSql(us(to.asOf), { all: true }, riskDays)}`);
    } else if (lateWallets > 0) {
      await db.run(`DELETE FROM a_risk WHERE wallet_id IN (SELECT wallet_id FROM late_wallets)`);
      await db.run(`INSERT INTO a_risk ${riskStatsSql(us(to.asOf), { table: 'late_wallets' }, riskDays)}`);
    }
  });

  // --- cohort-wide
  const deviates = await rankedDeviates(db);
  const sharpMinDeviate = await drainPausing(sharpCutoffSteps(deviates), pause);
  // a day that closed moved every wallet's risk window: the cohort tables, the rank base and the engine are written
  // whole; otherwise only the rows that changed
  const incremental = daysClosed === 0;
  // wallets whose only change is their P&L sums (their marks moved, nothing else of theirs): their a_wallet_metrics and
  // rank-base rows get those columns (after the rows rewritten whole), not the whole row again
  const pnlOnly = incremental && markOnly > 0;
  if (pnlOnly) {
    await db.run(`CREATE OR REPLACE TEMP TABLE pnl_moved AS SELECT wallet_id FROM mark_only ${alphaPositions > 0 ? 'EXCEPT SELECT wallet_id FROM alpha_due' : ''}`);
    await db.run(`CREATE OR REPLACE TEMP TABLE rewritten_wallets AS SELECT wallet_id FROM dirty_wallets EXCEPT SELECT wallet_id FROM pnl_moved`);
  }
  const own = pnlOnly ? 'rewritten_wallets' : 'dirty_wallets';
  await timed('metrics', async () => {
    if (!incremental) {
      for (const sql of writeCohortSql(sharpMinDeviate)) await db.run(sql);
      return;
    }
    await db.run(`CREATE OR REPLACE TEMP TABLE metrics_changed AS ${metricsChangedSql(cutoffBefore, sharpMinDeviate, own)}`);
    for (const sql of refreshCohortSql(sharpMinDeviate, 'metrics_changed', pnlOnly ? 'pnl_moved' : undefined)) await db.run(sql);
  });
  // the rank-base rows that change need the clusters as they were, to tell whose changed
  if (incremental) await db.run(`CREATE OR REPLACE TEMP TABLE clusters_before AS SELECT * FROM a_clusters`);
  await timed('clusters', () => refreshClusters(db, from, to, CLUSTER_RULES, A_LEGS));
  if (incremental) await db.run(`CREATE OR REPLACE TEMP TABLE rank_changed AS ${rankChangedSql(cutoffBefore, sharpMinDeviate, own)}`);
  await timed('rank_base', async () => {
    if (!incremental) return writeRankBase(db);
    await refreshRankBase(db, 'rank_changed');
    if (pnlOnly) await db.run(pnlSumsUpdateSql('a_rank_base', 'pnl_moved'));
  });
  // the ranking engine: the previous one patched with the changed rows, or loaded whole (a day closed; a restart)
  let enginePatch: PatchFigures | undefined;
  const ranker = await timed('engine', async () => {
    if (!incremental || !opts.previous) return loadRankingEngine(db, opts.ordersOf);
    const delta = await loadRankColumns(db, 'a_rank_base', { where: `wallet_id IN (SELECT wallet_id FROM rank_changed ${pnlOnly ? 'UNION SELECT wallet_id FROM pnl_moved' : ''})` });
    // in steps, with the event loop let run between them (the service answers requests meanwhile)
    const patched = await drainPausing(patchSteps(opts.previous, delta), pause);
    enginePatch = patched.figures;
    return patched.engine;
  });
  await timed('boards', () => writeBoards(db, ranker, to.asOf, opts.boards ?? stepBoardScoring(pause)));
  const cutoff = Number.isFinite(sharpMinDeviate) ? String(sharpMinDeviate) : 'NULL';
  // the working tables live in the connection until dropped: at full scale they held gigabytes from one refresh to
  // the next (dirty_wallets stays: it is small and names the wallets this refresh recomputed)
  for (const t of REFRESH_WORK_TABLES) await db.run(`DROP TABLE IF EXISTS ${t}`);
  const total = Number(((performance.now() - t0) / 1000).toFixed(3));
  await db.run(`UPDATE a_meta SET built_at = now(), sharp_min_deviate = ${cutoff}::DOUBLE, ranked_wallets = ${deviates.length}, refresh_seconds = ${total}`);
  return {
    ranker,
    as_of: to.asOf.toISOString(),
    watermark: W1,
    seconds,
    total_seconds: total,
    new_legs: newLegs,
    positions,
    continued,
    alpha_positions: alphaPositions,
    mark_wallets: markWallets,
    mark_only_wallets: markOnly,
    wallets,
    days_closed: daysClosed,
    late_wallets: lateWallets,
    fill_bands: fillBands,
    ...(enginePatch ? { engine_patch: enginePatch } : {}),
    state_rows: stateRows,
    touched_state_rows: touchedRows,
    state_rows_staged: staged,
  };
}

/** The wallet ids of `table` (a temporary table of wallet_id), ascending. */
async function walletIds(db: ColumnarRunner, table: string): Promise<Int32Array> {
  const parts: Int32Array[] = [];
  await db.scan(`SELECT wallet_id FROM ${table} ORDER BY wallet_id`, (b) => parts.push(b.int('wallet_id').slice(0, b.n)));
  const out = new Int32Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * New fills a refresh takes in at most. At full scale (2.8M wallets, an 8 GB DuckDB limit) a refresh of ~634k new legs
 * (~317k fills: a backlog of 680 fills/s) ran out of memory in its per-wallet and cluster steps and rolled back, and
 * the next one, with a larger backlog still, again: a backlog (the live tail faster than the maintenance, or a restart
 * after downtime) is taken in several versions instead. One of 444k legs passed.
 */
export const MAX_REFRESH_FILLS = 200_000;

/**
 * Where a refresh from `from` goes: the newest arrival batch `newest` and the clock `now`; or, when more than `cap`
 * fills arrived after from.watermark, the last batch that keeps within `cap` (at least one batch), as of the latest
 * time stamped on the fills it takes in (never before from.asOf, never after `now`). Rows of those batches stamped
 * after that time become visible later, as any future-stamped row does.
 */
export async function refreshTarget(db: ColumnarRunner, from: StateMark, now: Date, newest: number, cap = MAX_REFRESH_FILLS): Promise<StateMark> {
  const batches = await db.all<{ seq: number; n: number; t: number }>(
    `SELECT seq, count(*) AS n, epoch_us(max(ts))::DOUBLE AS t FROM fills WHERE seq > ${from.watermark} AND seq <= ${newest} GROUP BY seq ORDER BY seq`,
  );
  const total = batches.reduce((a, b) => a + Number(b.n), 0);
  if (total <= cap) return { asOf: now, watermark: newest };
  let taken = 0;
  let watermark = from.watermark;
  let lastUs = from.asOf.getTime() * 1000;
  for (const b of batches) {
    if (taken > 0 && taken + Number(b.n) > cap) break;
    taken += Number(b.n);
    watermark = Number(b.seq);
    lastUs = Math.max(lastUs, Number(b.t));
  }
  return { asOf: new Date(Math.min(now.getTime(), Math.floor(lastUs / 1000))), watermark };
}

export { venueWatermark };
export type { AsOf };

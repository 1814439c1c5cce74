/**
 * The stored boards: a RankingEngine loaded over the current a_rank_base scores every preset into a_board_rank and
 * a_board_meta (the rows and order boardSql defines, core/rankings.ts; the view a_board adds the rank-base columns).
 */
import { BOARD_META_DDL, BOARD_RANK_COLUMNS, BOARD_RANK_DDL, BOARD_TOP_RANKS, METRIC_IDS, PRESETS, RankingConfig, boardMetaRow, writeBoardViews, type ExplainCounts, type MetricId } from './rankings.ts';
import type { AsOf, ColumnarRunner } from './query.ts';
import { loadRankColumns, type RankColumns } from './rank-columns.ts';
import { metricOrders } from './ranking-orders.ts';
import { RankingEngine } from './ranking-engine.ts';
import { drainPausing, yieldToEventLoop } from './steps.ts';

/** How a caller computes the metric orders of loaded columns (a service: off its event loop). */
export type OrdersOf = (cols: RankColumns) => Promise<Record<MetricId, Int32Array>>;

/** A RankingEngine over the current a_rank_base (read on `db`, so inside its transaction). */
export async function loadRankingEngine(db: ColumnarRunner, ordersOf?: OrdersOf): Promise<RankingEngine> {
  const cols = await loadRankColumns(db, 'a_rank_base', { shared: ordersOf !== undefined });
  return new RankingEngine(cols, ordersOf ? await ordersOf(cols) : metricOrders(cols));
}

/** The boards of the current a_rank_base: load its engine, score every preset with it; returns the engine. */
export async function scoreBoards(db: ColumnarRunner, asOf: AsOf, ordersOf?: OrdersOf, scoring?: BoardScoring): Promise<RankingEngine> {
  const engine = await loadRankingEngine(db, ordersOf);
  await writeBoards(db, engine, asOf, scoring);
  return engine;
}

/** A slice of a board in rank order, as stored: its first rank, wallets, composites, each metric's percentile (NaN: not measured). */
export interface BoardSlice {
  firstRank: number;
  wallets: Int32Array;
  composite: Float64Array;
  /** in METRIC_IDS order */
  pct: Float64Array[];
}

/**
 * How the preset boards are scored: every preset of PRESETS in turn, each one's slices in rank order handed to
 * `onSlice` (the next slice waits for the promise it returns), then the explain counts of each. By default in this
 * thread, in steps with a pause between them (stepBoardScoring); a service scores them on a worker thread
 * (jobs/analytics/board-worker.ts), so that its event loop stays free to hand the writer's rows to DuckDB.
 */
export type BoardScoring = (engine: RankingEngine, asOfUs: number, onSlice: (presetNo: number, slice: BoardSlice) => Promise<void> | void) => Promise<ExplainCounts[]>;

/** A slice of `engine`'s board rows (boardSteps' onRows), wallets looked up; `copy`: every array its own. */
function boardSlice(engine: RankingEngine, rows: Int32Array, composite: Float64Array, pct: Partial<Record<MetricId, Float64Array>>, firstRank: number, copy: boolean): BoardSlice {
  const wallet = engine.cols.walletId;
  const wallets = new Int32Array(rows.length);
  for (let k = 0; k < rows.length; k++) wallets[k] = wallet[rows[k]!]!;
  const own = (x: Float64Array) => (copy ? x.slice() : x);
  return { firstRank, wallets, composite: own(composite), pct: METRIC_IDS.map((id) => own(pct[id]!)) };
}

/** The boards scored in this thread, in steps with `pause` between them (after the last slice's promise). */
export function stepBoardScoring(pause: () => Promise<void> = yieldToEventLoop): BoardScoring {
  return async (engine, asOfUs, onSlice) => {
    const explains: ExplainCounts[] = [];
    for (const [presetNo, p] of PRESETS.entries()) {
      let handed: Promise<void> | void;
      // a preset after the other, each in steps: a service answers requests meanwhile (scoring every preset at once
      // held its event loop for 16 s at full scale)
      const steps = engine.boardSteps(RankingConfig.parse(p.config), asOfUs, (rows, composite, pct, firstRank) => {
        handed = onSlice(presetNo, boardSlice(engine, rows, composite, pct, firstRank, false));
      });
      const paced = async () => {
        await handed;
        await pause();
      };
      explains.push(await drainPausing(steps, paced));
    }
    return explains;
  };
}

/**
 * The boards scored at once, a slice after the other (on a worker thread: it has no event loop to keep free). Each
 * slice's arrays are its own, so they can be transferred.
 */
export function scoreEveryBoard(engine: RankingEngine, asOfUs: number, onSlice: (presetNo: number, slice: BoardSlice) => void): ExplainCounts[] {
  return PRESETS.map((p, presetNo) =>
    engine.board(RankingConfig.parse(p.config), asOfUs, (rows, composite, pct, firstRank) => onSlice(presetNo, boardSlice(engine, rows, composite, pct, firstRank, true))),
  );
}

/**
 * Score every preset into a_board_rank and a_board_meta with the in-memory engine: the rows, ranks, composites and
 * percentiles boardSql gives (core/rankings.ts buildBoards, the SQL definition; test/core/ranking-engine.test.ts holds
 * them equal), at a fraction of the cost: each preset is a few passes over the columns. The rows' other columns are
 * their wallets' rank-base columns (the view a_board): not written again, but for each preset's first `top` rows
 * (a_board_top).
 */
export async function writeBoards(db: ColumnarRunner, engine: RankingEngine, asOf: AsOf, scoring: BoardScoring = stepBoardScoring(), top = BOARD_TOP_RANKS): Promise<void> {
  await db.run(BOARD_META_DDL);
  // the writer takes no text: it takes the preset's number, and its INSERTs name it. Straight into a_board_rank, in
  // the order written, (preset, rank): a page's rank range is found by the zone maps. (Through a temp table and one
  // copy in its order, the copy alone took 1.7 s of a 6.7–8.4 s boards step at full scale.)
  // a percentile not measured (NaN) is stored as NULL
  const columns = [
    { name: 'preset_no', type: 'INTEGER' as const },
    ...BOARD_RANK_COLUMNS.slice(1).map(([name, type]) => ({ name, type: type as 'INTEGER' | 'DOUBLE', nanIsNull: name.startsWith('pct_') })),
  ];
  const slugs = `[${PRESETS.map((p) => `'${p.slug}'`).join(', ')}]`;
  await db.run(BOARD_RANK_DDL);
  const w = await db.writer('a_board_rank', columns, `${slugs}[preset_no + 1], ${BOARD_RANK_COLUMNS.slice(1).map(([n]) => n).join(', ')}`);
  // a slice's preset and ranks, handed to the writer as columns with its wallets, scores and percentiles
  let presets = new Int32Array(0);
  let ranks = new Int32Array(0);
  const explains = await scoring(engine, asOf.getTime() * 1000, (presetNo, s) => {
    const n = s.wallets.length;
    if (presets.length < n) [presets, ranks] = [new Int32Array(n), new Int32Array(n)];
    presets.fill(presetNo, 0, n);
    for (let k = 0; k < n; k++) ranks[k] = s.firstRank + k;
    w.columns(n, [presets.subarray(0, n), ranks.subarray(0, n), s.wallets, s.composite, ...s.pct]);
    // the next slice waits while the writer has many rows queued for the database (it stores them meanwhile)
    return w.ready?.();
  });
  await w.close();
  await db.run(`INSERT INTO a_board_meta VALUES ${PRESETS.map((p, k) => boardMetaRow(p.slug, explains[k]!, top)).join(', ')}`);
  await writeBoardViews(db, top);
}

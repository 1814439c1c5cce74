/**
 * The stored boards: a RankingEngine loaded over the current a_rank_base scores every preset into a_board_rank and
 * a_board_meta (the rows and order boardSql defines, core/rankings.ts; the view a_board adds the rank-base columns).
 */
import { BOARD_META_DDL, BOARD_RANK_COLUMNS, BOARD_RANK_DDL, BOARD_TOP_RANKS, METRIC_IDS, PRESETS, RankingConfig, boardMetaRow, writeBoardViews, type MetricId } from './rankings.ts';
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
export async function scoreBoards(db: ColumnarRunner, asOf: AsOf, ordersOf?: OrdersOf): Promise<RankingEngine> {
  const engine = await loadRankingEngine(db, ordersOf);
  await writeBoards(db, engine, asOf);
  return engine;
}

/**
 * Score every preset into a_board_rank and a_board_meta with the in-memory engine: the rows, ranks, composites and
 * percentiles boardSql gives (core/rankings.ts buildBoards, the SQL definition; test/core/ranking-engine.test.ts holds
 * them equal), at a fraction of the cost: each preset is a few passes over the columns. The rows' other columns are
 * their wallets' rank-base columns (the view a_board): not written again, but for each preset's first `top` rows
 * (a_board_top).
 */
export async function writeBoards(db: ColumnarRunner, engine: RankingEngine, asOf: AsOf, pause: () => Promise<void> = yieldToEventLoop, top = BOARD_TOP_RANKS): Promise<void> {
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
  const wallet = engine.cols.walletId;
  await db.run(BOARD_RANK_DDL);
  const w = await db.writer('a_board_rank', columns, `${slugs}[preset_no + 1], ${BOARD_RANK_COLUMNS.slice(1).map(([n]) => n).join(', ')}`);
  // between steps, also wait while the writer has many rows queued for the database (it stores them meanwhile)
  const paced = async () => {
    await w.ready?.();
    await pause();
  };
  const meta: string[] = [];
  // a slice's preset, ranks and wallets, handed to the writer as columns with the scores and percentiles
  let presets = new Int32Array(0);
  let ranks = new Int32Array(0);
  let wallets = new Int32Array(0);
  for (const [presetNo, p] of PRESETS.entries()) {
    const cfg = RankingConfig.parse(p.config);
    // scored in steps, with a pause between them: a service answers requests meanwhile (scoring every preset at once
    // held its event loop for 16 s at full scale); the rows come in rank order, a preset after the other
    const e = await drainPausing(engine.boardSteps(cfg, asOf.getTime() * 1000, (rows, composite, pct, firstRank) => {
      const n = rows.length;
      if (presets.length < n) [presets, ranks, wallets] = [new Int32Array(n), new Int32Array(n), new Int32Array(n)];
      presets.fill(presetNo, 0, n);
      for (let k = 0; k < n; k++) {
        ranks[k] = firstRank + k;
        wallets[k] = wallet[rows[k]!]!;
      }
      w.columns(n, [presets.subarray(0, n), ranks.subarray(0, n), wallets.subarray(0, n), composite, ...METRIC_IDS.map((id) => pct[id]!)]);
    }), paced);
    meta.push(boardMetaRow(p.slug, e, top));
  }
  await w.close();
  await db.run(`INSERT INTO a_board_meta VALUES ${meta.join(', ')}`);
  await writeBoardViews(db, top);
}

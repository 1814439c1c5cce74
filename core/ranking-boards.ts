/**
 * The stored boards: a RankingEngine loaded over the current a_rank_base scores every preset into a_board and
 * a_board_meta (the rows, columns and order boardSql defines, core/rankings.ts).
 */
import { METRIC_IDS, METRICS, PRESETS, ROW_COLUMNS, RankingConfig, type MetricId } from './rankings.ts';
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
 * Score every preset into a_board and a_board_meta with the in-memory engine: the rows, columns and order boardSql
 * gives (core/rankings.ts buildBoards, the SQL definition; test/core/ranking-engine.test.ts holds them equal), at a
 * fraction of the cost: each preset is a few passes over the columns, then one join writes every preset's rows.
 */
export async function writeBoards(db: ColumnarRunner, engine: RankingEngine, asOf: AsOf, pause: () => Promise<void> = yieldToEventLoop): Promise<void> {
  await db.run(`CREATE OR REPLACE TABLE a_board_meta (preset VARCHAR, cohort_size BIGINT, gate_counts BIGINT[], scored BIGINT, total_rows BIGINT)`);
  const pctCols = METRIC_IDS.map((id) => ({ name: `pct_${id}`, type: 'DOUBLE' as const }));
  const columns = [
    { name: 'preset_no', type: 'INTEGER' as const },
    { name: 'wallet_id', type: 'INTEGER' as const },
    { name: 'rank', type: 'INTEGER' as const },
    { name: 'composite_score', type: 'DOUBLE' as const },
    ...pctCols,
  ];
  const metricCols = METRIC_IDS.map((id) => `(${METRICS[id].measured}) AS ms_${id}, (${METRICS[id].value})::DOUBLE AS val_${id}, b.pct_${id}`);
  const wallet = engine.cols.walletId;
  // every preset's rows go to one narrow table, then one join with the wide rank base writes them all: a join per
  // preset scanned the 2.8M-row rank base ten times (10-29 s each at full scale)
  await db.run(`CREATE OR REPLACE TEMP TABLE board_rows (${columns.map((c) => `${c.name} ${c.type}`).join(', ')})`);
  const w = await db.writer('board_rows', columns);
  // between steps, also wait while the writer has many rows queued for the database (it stores them meanwhile)
  const paced = async () => {
    await w.ready?.();
    await pause();
  };
  const meta: string[] = [];
  for (const [presetNo, p] of PRESETS.entries()) {
    const cfg = RankingConfig.parse(p.config);
    // scored in steps, with a pause between them: a service answers requests meanwhile (scoring every preset at once
    // held its event loop for 16 s at full scale)
    const e = await drainPausing(engine.boardSteps(cfg, asOf.getTime() * 1000, (rows, composite, pct, firstRank) => {
      const byMetric = METRIC_IDS.map((id) => pct[id]!);
      for (let k = 0; k < rows.length; k++) {
        w.set(0, presetNo);
        w.set(1, wallet[rows[k]!]!);
        w.set(2, firstRank + k);
        w.set(3, composite[k]!);
        for (let j = 0; j < byMetric.length; j++) {
          const x = byMetric[j]![k]!;
          w.set(4 + j, Number.isNaN(x) ? null : x);
        }
        w.next();
      }
    }), paced);
    meta.push(`('${p.slug}', ${e.cohort}, [${e.counts.join(',')}]::BIGINT[], ${e.scored}, ${e.total})`);
  }
  await w.close();
  await db.run(`INSERT INTO a_board_meta VALUES ${meta.join(', ')}`);
  const slugs = `[${PRESETS.map((p) => `'${p.slug}'`).join(', ')}]`;
  await db.run(`CREATE OR REPLACE TABLE a_board AS
    SELECT ${slugs}[b.preset_no + 1] AS preset, b.rank, wallet_id, r.user_key, r.last_trade_at, r.best_category,
      ${ROW_COLUMNS.map((c) => `r.${c}`).join(', ')}, ${metricCols.join(', ')}, b.composite_score
    FROM board_rows b JOIN a_rank_base r USING (wallet_id) ORDER BY b.preset_no, b.rank`);
  await db.run(`DROP TABLE IF EXISTS board_rows`);
}

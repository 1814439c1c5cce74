/**
 * Preset rankings (GET /v1/rankings/preset/:slug, the MCP tool, the agent route): a version's stored board, narrowed
 * and re-sorted by the overrides (core/rankings.ts defines the boards; docs/rankings.md).
 *
 * A plain page within a board's head (no narrowing, composite order, the ranks a_board_top holds) is what nearly every
 * request asks for. A caller that holds the announced version's heads in memory (`PresetHeads`, loaded by
 * `loadPresetHeads` from the same tables, for the version the service announces) answers it without a DuckDB
 * statement: while a refresh runs, each statement waits for DuckDB's threads and for the refresh's commit (full scale,
 * session 19: p99 318 ms, seconds during a big commit, for four statements of ~3 ms each). Every other page reads SQL.
 * Both give the same response (test/core/rankings.test.ts).
 */
import { z } from 'zod';
import type { QueryRunner } from './query.ts';
import { tsLiteral } from './query.ts';
import {
  METRIC_IDS,
  PAGE_ROW_COLUMNS,
  PRESETS,
  PresetOverrides,
  RankingConfig,
  assembleRows,
  assembleRowsWith,
  boardHead,
  boardMeta,
  boardMetricColumns,
  boardPageColumns,
  breakdownIdsFor,
  buildMeta,
  copyFitnessVerdict,
  explainCounts,
  linkedWallets,
  presetBySlug,
  response,
  sortExpr,
  type BoardMeta,
  type ExplainCounts,
  type MetricId,
  type RankerSource,
  type RankingResponse,
  type RankingRow,
} from './rankings.ts';

/** One preset's head in memory: its a_board_meta row and its first `top_rows` rows, assembled with every metric. */
export interface PresetHead {
  meta: BoardMeta;
  /** rank order; each row's breakdown holds every metric (a page keeps the ones it shows) */
  rows: RankingRow[];
}

/** Every preset's head of one analytics version. */
export interface PresetHeads {
  version: number;
  asOf: Date;
  boards: ReadonlyMap<string, PresetHead>;
}

/** A stored board's explain counts. */
function storedExplain(m: BoardMeta): ExplainCounts {
  return { cohort: Number(m.cohort_size), counts: [...(m.gate_counts as unknown as number[])].map(Number), scored: Number(m.scored), total: Number(m.total_rows) };
}

/**
 * Every preset's head of the version `db` reads (one read transaction: a_meta, a_board_meta and a_board_top of one
 * version), as a page shows them. `pause` runs between presets (a builder: readers first).
 */
export async function loadPresetHeads(db: QueryRunner, pause: () => Promise<void> = async () => {}): Promise<PresetHeads> {
  const meta = await buildMeta(db);
  if (meta.version === undefined) throw new Error('a_meta has no version');
  // every preset's counts in one read
  const metas = new Map((await db.all<BoardMeta & { preset: string }>(`SELECT * FROM a_board_meta`)).map((m) => [m.preset, m]));
  const stored: { slug: string; meta: BoardMeta; rows: Record<string, unknown>[] }[] = [];
  for (const p of PRESETS) {
    const m = metas.get(p.slug);
    if (!m) continue;
    const rows = await db.all<Record<string, unknown>>(
      `SELECT ${boardPageColumns(METRIC_IDS)} FROM a_board_top WHERE preset = '${p.slug}' AND rank <= ${Number(m.top_rows)} ORDER BY rank`,
    );
    stored.push({ slug: p.slug, meta: m, rows });
    await pause();
  }
  // the wallets of every head's users in one statement; each head assembled apart (readers go between)
  const linked = await linkedWallets(db, stored.flatMap((b) => b.rows));
  const boards = new Map<string, PresetHead>();
  for (const b of stored) {
    boards.set(b.slug, { meta: b.meta, rows: assembleRowsWith(b.rows, linked, METRIC_IDS, copyFitnessVerdict) });
    await pause();
  }
  return { version: meta.version, asOf: meta.as_of, boards };
}

/** A head row with only the breakdown a page shows (in its order). */
function pageRow(r: RankingRow, breakdown: readonly MetricId[]): RankingRow {
  const b: Record<string, number | null> = {};
  const ms: Record<string, boolean> = {};
  for (const id of breakdown) {
    b[id] = r.breakdown[id] ?? null;
    ms[id] = r.breakdown_measured[id] ?? false;
  }
  return { ...r, breakdown: b, breakdown_measured: ms };
}

/**
 * A preset's board rows as a page shows them (PAGE_ROW_COLUMNS, rank, composite, the breakdown's percentiles and
 * measured flags), for the stored ranks matching `where` (a condition on a_board_rank), in rank order: the ranks from
 * a_board_rank, then the wallets' own columns from a_rank_base by their ids. DuckDB plans the ids as a join over a
 * scan of the rank base's page columns (full scale: ~20 ms for 50 ids, ~110 ms for 500); the view would join every
 * row of the board.
 */
async function boardPageRows(db: QueryRunner, slug: string, where: string, breakdown: readonly MetricId[]): Promise<Record<string, unknown>[]> {
  const ranks = await db.all<Record<string, unknown>>(
    `SELECT ${['wallet_id', 'rank', 'composite_score', ...breakdown.map((id) => `pct_${id}`)].join(', ')} FROM a_board_rank WHERE preset = '${slug}' AND ${where} ORDER BY rank`,
  );
  if (!ranks.length) return [];
  const wide = await db.all<Record<string, unknown>>(
    `SELECT ${[...PAGE_ROW_COLUMNS, ...boardMetricColumns(breakdown, false)].join(', ')} FROM a_rank_base WHERE wallet_id IN (${ranks.map((r) => Number(r.wallet_id)).join(',')})`,
  );
  const byId = new Map(wide.map((r) => [Number(r.wallet_id), r]));
  return ranks.map((r) => ({ ...byId.get(Number(r.wallet_id)), ...r }));
}

/**
 * A preset ranking: the stored board, narrowed and re-sorted by the overrides. `now` sets snapshot_age_seconds.
 * `source`: the announced version's heads in memory (jobs/analytics/rankers.ts); a plain page within a head is
 * answered from them.
 */
export async function presetRanking(
  db: QueryRunner,
  slug: string,
  overridesInput: z.input<typeof PresetOverrides>,
  now: Date,
  source?: Pick<RankerSource, 'presetHeads'>,
): Promise<RankingResponse> {
  const t0 = performance.now();
  const preset = presetBySlug(slug);
  const ov = PresetOverrides.parse(overridesInput);
  const narrowed = ov.active_within_days !== undefined || ov.best_category !== undefined;
  const cfg = RankingConfig.parse({
    ...preset.config,
    cohort: { ...(preset.config.cohort ?? {}), ...(ov.active_within_days !== undefined ? { active_within_days: ov.active_within_days } : {}), ...(ov.best_category ? { best_category: ov.best_category } : {}) },
    sort_by: ov.sort_by ?? 'composite',
    limit: ov.limit,
    offset: ov.offset,
    extra_metrics: ov.extra_metrics,
  });
  const breakdown = breakdownIdsFor(cfg);

  // a plain page within the head of the announced version's board: from memory, no statement
  const heads = narrowed || cfg.sort_by !== 'composite' ? null : (source?.presetHeads?.() ?? null);
  const head = heads?.boards.get(preset.slug);
  if (heads && head && boardHead(head.meta, cfg.offset + cfg.limit) === 'a_board_top') {
    const rows = head.rows.filter((r) => r.rank > cfg.offset && r.rank <= cfg.offset + cfg.limit).map((r) => pageRow(r, breakdown));
    return response(cfg, rows, storedExplain(head.meta), heads.asOf, now, t0);
  }

  const meta = await buildMeta(db);
  const where = [`preset = '${preset.slug}'`];
  if (ov.active_within_days !== undefined) where.push(`last_trade_at > ${tsLiteral(meta.as_of)} - INTERVAL ${ov.active_within_days} DAY`);
  if (ov.best_category !== undefined) where.push(`best_category = '${ov.best_category.replace(/'/g, "''")}'`);
  const order = cfg.sort_by === 'composite' ? 'rank' : `${sortExpr(cfg.sort_by, cfg.sort_dir)}, rank`;
  // The boards are stored in (preset, rank) order: the plain view is a rank range (zone maps skip the rest), read whole
  // from a_board_top within its ranks; a narrowed or re-sorted view picks its wallet ids with a narrow top-N first.
  let board: Record<string, unknown>[];
  // the stored counts (read once: the head's extent and the explain of a view not narrowed)
  const stored = narrowed ? undefined : await boardMeta(db, preset.slug);
  if (!narrowed && cfg.sort_by === 'composite') {
    const range = `rank > ${cfg.offset} AND rank <= ${cfg.offset + cfg.limit}`;
    board =
      boardHead(stored, cfg.offset + cfg.limit) === 'a_board_top'
        ? await db.all(`SELECT ${boardPageColumns(breakdown)} FROM a_board_top WHERE preset = '${preset.slug}' AND ${range} ORDER BY rank`)
        : await boardPageRows(db, preset.slug, range, breakdown);
  } else {
    // the filters and the sort are on rank-base columns: the page's ids through the view, then its rows as above
    const ids = (await db.all<{ wallet_id: number }>(`SELECT wallet_id FROM a_board WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${cfg.limit} OFFSET ${cfg.offset}`)).map((r) => Number(r.wallet_id));
    const rows = ids.length ? await boardPageRows(db, preset.slug, `wallet_id IN (${ids.join(',')})`, breakdown) : [];
    const byId = new Map(rows.map((r) => [Number(r.wallet_id), r]));
    board = ids.map((id) => byId.get(id)!);
  }
  const e = !narrowed ? storedExplain(stored!) : await explainCounts(db, cfg, meta.as_of, `a_board WHERE ${where.join(' AND ')}`);
  // overrides keep the preset's ranks; re-sorted or narrowed boards are renumbered from offset + 1
  const renumber = narrowed || cfg.sort_by !== 'composite';
  const rowsBoard = renumber ? board.map((b, i) => ({ ...b, rank: cfg.offset + i + 1 })) : board;
  const rows = await assembleRows(db, rowsBoard, breakdown, copyFitnessVerdict);
  return response(cfg, rows, e, meta.as_of, now, t0);
}

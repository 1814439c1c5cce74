/**
 * Rankings engine (methodology "Rankings"; docs/rankings.md): a ranking = cohort filters + gates + weighted metrics.
 * Each metric becomes a percentile within the gated cohort among the rows where it is measured (direction aware:
 * lower calibration excess is better); composite = sum(w * pct) / sum(w) over the row's measured weighted metrics.
 * Wallets of one user collapse into one row (the user's best-scoring wallet represents it, the others are listed).
 *
 * Presets are scored once per analytics build into `a_board_rank` (every catalogue metric's percentile is stored, so
 * extra_metrics cost nothing at query time); the view `a_board` adds each row's rank-base columns. A preset request
 * (core/preset-rankings.ts) filters and re-sorts the board and reads at most `limit` base rows. Custom rankings run
 * the same SQL at request time.
 */
import { getAddress } from 'viem';
import { z } from 'zod';
import { MIN_RESOLVED_MARKETS } from './calibration.ts';
import { dropRelation, tsLiteral, type AsOf, type QueryRunner } from './query.ts';
import { SMART_MONEY_TAGS } from './tags.ts';
import { narrowedTo, scopeSql, type WalletScope } from './analytics/wallets.ts';
import { COPY_RULES, verdictFor } from './trader/index.ts';
import { verdictInputsFromRow } from './wallet-style.ts';
import type { PresetHeads } from './preset-rankings.ts';

// ---------------------------------------------------------------------------------------------------------------
// Metric catalogue and gateable fields
// ---------------------------------------------------------------------------------------------------------------

export interface MetricDef {
  /** SQL over a_rank_base */
  value: string;
  better: 'higher' | 'lower';
  /** SQL predicate: the metric is measured for this wallet */
  measured: string;
  description: string;
}

const MIN_ALPHA_FILLS = 10;

export const METRICS = {
  calibration: { value: 'calibration_excess_z', better: 'lower', measured: 'calibration_ranked AND calibration_excess_z IS NOT NULL', description: `Calibration excess in standard errors (z); measured from ${MIN_RESOLVED_MARKETS} resolved markets` },
  calibration_excess: { value: 'calibration_excess', better: 'lower', measured: 'calibration_ranked AND calibration_excess IS NOT NULL', description: 'Mean (entry price - outcome) over resolved positions; negative beats the price' },
  best_category_calibration: { value: 'best_category_z', better: 'lower', measured: 'best_category_z IS NOT NULL', description: 'Calibration z in the wallet\'s best category (>= 10 resolved markets there)' },
  brier: { value: 'brier', better: 'lower', measured: 'brier IS NOT NULL', description: 'Raw Brier score of entries (reported, not a skill measure on its own)' },
  alpha_1h: { value: 'alpha_1h_cents', better: 'higher', measured: `n_alpha_1h >= ${MIN_ALPHA_FILLS}`, description: 'Mean move of the mid in the trade\'s favour 1 h after entry, cents per share' },
  alpha_24h: { value: 'alpha_24h_cents', better: 'higher', measured: `n_alpha_24h >= ${MIN_ALPHA_FILLS}`, description: 'Same, 24 h after entry' },
  alpha_res: { value: 'alpha_res_cents', better: 'higher', measured: `n_alpha_res >= ${MIN_ALPHA_FILLS}`, description: 'Payout minus entry price at resolution, cents per share' },
  sharpe: { value: 'sharpe', better: 'higher', measured: 'sharpe IS NOT NULL', description: 'Annualized Sharpe ratio of daily mark-to-market returns, trailing 90 days' },
  sortino: { value: 'sortino', better: 'higher', measured: 'sortino IS NOT NULL', description: 'Annualized Sortino ratio, trailing 90 days' },
  max_drawdown: { value: 'max_drawdown', better: 'lower', measured: 'max_drawdown IS NOT NULL', description: 'Maximum drawdown of the compounded daily return index, trailing 90 days' },
  realized_pnl: { value: 'realized_pnl', better: 'higher', measured: 'realized_pnl IS NOT NULL', description: 'Realized P&L in USDC (resolution realizes the payout)' },
  total_pnl: { value: 'total_pnl', better: 'higher', measured: 'total_pnl IS NOT NULL', description: 'Realized plus unrealized P&L in USDC' },
  roi: { value: 'total_pnl / nullif(lifetime_volume_usdc, 0)', better: 'higher', measured: 'lifetime_volume_usdc > 0 AND total_pnl IS NOT NULL', description: 'Total P&L per dollar traded' },
  volume: { value: 'lifetime_volume_usdc', better: 'higher', measured: 'lifetime_volume_usdc IS NOT NULL', description: 'Lifetime traded notional, USDC' },
  trade_count: { value: 'trade_count', better: 'higher', measured: 'trade_count IS NOT NULL', description: 'Number of fills' },
  markets_traded: { value: 'markets_traded', better: 'higher', measured: 'markets_traded IS NOT NULL', description: 'Distinct markets traded' },
  win_rate: { value: 'win_rate_pct', better: 'higher', measured: 'win_rate_pct IS NOT NULL', description: 'Share of resolved positions won (0.01 USD band)' },
  early_entry: { value: 'median_entry_age', better: 'lower', measured: 'n_entry_positions >= 10 AND median_entry_age IS NOT NULL', description: 'Median entry age as a share of market lifetime (earlier is better)' },
  contrarian: { value: 'contrarian_buy_share', better: 'higher', measured: 'n_buys >= 20 AND contrarian_buy_share IS NOT NULL', description: 'Share of buys after a 5-cent drop of the mid over 24 h' },
} as const satisfies Record<string, MetricDef>;
export type MetricId = keyof typeof METRICS;
export const METRIC_IDS = Object.keys(METRICS) as MetricId[];
export const MetricIdSchema = z.enum(METRIC_IDS as [MetricId, ...MetricId[]]);

/** Fields a gate can test (SQL over a_rank_base), and their type. A null value fails every gate. */
export const GATE_FIELDS = {
  calibration_ranked: { sql: 'calibration_ranked', type: 'boolean' },
  calibration_excess_z: { sql: 'calibration_excess_z', type: 'number' },
  calibration_excess: { sql: 'calibration_excess', type: 'number' },
  n_resolved_markets: { sql: 'n_resolved_markets', type: 'number' },
  trade_count: { sql: 'trade_count', type: 'number' },
  markets_traded: { sql: 'markets_traded', type: 'number' },
  lifetime_volume_usdc: { sql: 'lifetime_volume_usdc', type: 'number' },
  realized_pnl: { sql: 'realized_pnl', type: 'number' },
  total_pnl: { sql: 'total_pnl', type: 'number' },
  win_rate_pct: { sql: 'win_rate_pct', type: 'number' },
  risk_days: { sql: 'risk_days', type: 'number' },
  sharpe: { sql: 'sharpe', type: 'number' },
  max_drawdown: { sql: 'max_drawdown', type: 'number' },
  alpha_1h_cents: { sql: 'alpha_1h_cents', type: 'number' },
  alpha_24h_cents: { sql: 'alpha_24h_cents', type: 'number' },
  alpha_res_cents: { sql: 'alpha_res_cents', type: 'number' },
  n_alpha_1h: { sql: 'n_alpha_1h', type: 'number' },
  n_alpha_24h: { sql: 'n_alpha_24h', type: 'number' },
  taker_share: { sql: 'taker_share', type: 'number' },
  contrarian_buy_share: { sql: 'contrarian_buy_share', type: 'number' },
  best_category_markets: { sql: 'best_category_markets', type: 'number' },
  best_category_z: { sql: 'best_category_z', type: 'number' },
  copies_badly: { sql: 'copies_badly', type: 'boolean' },
  in_cluster: { sql: '(cluster_size > 1)', type: 'boolean' },
} as const;
export type GateField = keyof typeof GATE_FIELDS;
const GATE_FIELD_IDS = Object.keys(GATE_FIELDS) as GateField[];

const OPS = { gte: '>=', gt: '>', lte: '<=', lt: '<', eq: '=', ne: '<>' } as const;

// ---------------------------------------------------------------------------------------------------------------
// The config (custom rankings, GET /v1/rankings and POST /v1/agent/rankings/custom)
// ---------------------------------------------------------------------------------------------------------------

export const ROW_CAP = 500;
export const DEFAULT_LIMIT = 50;
const CATEGORY = z.string().trim().toLowerCase().regex(/^[a-z][a-z0-9_-]{0,39}$/, 'a category id: lowercase letters, digits, _ or -');

export const Gate = z
  .object({
    field: z.enum(GATE_FIELD_IDS as [GateField, ...GateField[]]),
    op: z.enum(['gte', 'gt', 'lte', 'lt', 'eq', 'ne']),
    value: z.union([z.number().finite(), z.boolean()]),
    label: z.string().trim().min(1).max(60).optional(),
  })
  .strict()
  .superRefine((g, ctx) => {
    const type = GATE_FIELDS[g.field].type;
    if (type === 'boolean' && (typeof g.value !== 'boolean' || (g.op !== 'eq' && g.op !== 'ne'))) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `${g.field} is a boolean: use op eq or ne with true or false` });
    }
    if (type === 'number' && typeof g.value !== 'number') ctx.addIssue({ code: 'custom', path: ['value'], message: `${g.field} is a number` });
  });
export type Gate = z.infer<typeof Gate>;

export const Cohort = z
  .object({
    active_within_days: z.number().int().min(1).max(3650).optional(),
    best_category: CATEGORY.optional(),
    min_trades: z.number().int().min(0).optional(),
    min_volume_usdc: z.number().min(0).optional(),
    tags_any: z.array(z.enum(SMART_MONEY_TAGS)).min(1).max(SMART_MONEY_TAGS.length).optional(),
    exclude_clusters: z.boolean().optional(),
  })
  .strict();
export type Cohort = z.infer<typeof Cohort>;

const SortBy = z.union([z.literal('composite'), MetricIdSchema]);

export const RankingConfig = z
  .object({
    cohort: Cohort.default({}),
    gates: z.array(Gate).max(12).default([]),
    weights: z
      .partialRecord(MetricIdSchema, z.number().min(0).max(100))
      .refine((w) => Object.values(w).some((x) => (x ?? 0) > 0), { message: 'at least one metric needs a weight above 0' }),
    sort_by: SortBy.default('composite'),
    /** asc / desc on the raw metric or composite; default: best first */
    sort_dir: z.enum(['best_first', 'worst_first']).default('best_first'),
    limit: z.number().int().min(1).max(ROW_CAP).default(DEFAULT_LIMIT),
    offset: z.number().int().min(0).max(100_000).default(0),
    extra_metrics: z.array(MetricIdSchema).max(METRIC_IDS.length).default([]),
  })
  .strict();
export type RankingConfig = z.infer<typeof RankingConfig>;
export type RankingConfigInput = z.input<typeof RankingConfig>;

/** The comma-separated extra_metrics query parameter: unknown ids are an error that lists the valid ones. */
export function parseExtraMetrics(raw: string | undefined | null): MetricId[] {
  if (raw === undefined || raw === null || raw.trim() === '') return [];
  const ids = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))];
  const unknown = ids.filter((id) => !(id in METRICS));
  if (unknown.length) {
    throw new RankingError('invalid_extra_metrics', `unknown metric id${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, { valid: METRIC_IDS });
  }
  return ids as MetricId[];
}

export class RankingError extends Error {
  constructor(
    readonly code: 'unknown_preset' | 'invalid_extra_metrics' | 'analytics_missing' | 'invalid_ranking',
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Presets
// ---------------------------------------------------------------------------------------------------------------

export interface Preset {
  slug: string;
  title: string;
  purpose: string;
  forecasting: boolean;
  config: RankingConfigInput;
}

/** Every forecasting preset starts with these: the 30-resolved-markets rule and beating the price on average. */
const FORECASTING_GATES: Gate[] = [
  { field: 'calibration_ranked', op: 'eq', value: true, label: `at least ${MIN_RESOLVED_MARKETS} resolved markets` },
  { field: 'calibration_excess_z', op: 'lte', value: 0, label: 'beats the price on average (z <= 0)' },
];

export const PRESETS: readonly Preset[] = [
  {
    slug: 'sharp-forecasters',
    title: 'Sharp forecasters',
    purpose: 'Wallets whose picks beat the price they paid by the most standard errors: the purest skill board.',
    forecasting: true,
    config: { gates: [...FORECASTING_GATES, { field: 'calibration_excess_z', op: 'lte', value: -1, label: 'at least 1 standard error better than the price' }], weights: { calibration: 0.7, alpha_res: 0.3 } },
  },
  {
    slug: 'copy-ready',
    title: 'Copy-ready edge',
    purpose: 'Skilled wallets a follower can actually mirror: edge that shows within 24 h, no scalping, market making or thin-market habits.',
    forecasting: true,
    config: {
      gates: [...FORECASTING_GATES, { field: 'copies_badly', op: 'eq', value: false, label: 'copies well (no scalper / maker / thin-market flag)' }, { field: 'n_alpha_24h', op: 'gte', value: 10, label: '24 h alpha measured on 10+ entries' }],
      weights: { calibration: 0.45, alpha_24h: 0.35, sharpe: 0.2 },
    },
  },
  {
    slug: 'early-movers',
    title: 'Early movers',
    purpose: 'Forecasters whose entries are followed by the price within the hour, and who enter early in a market\'s life.',
    forecasting: true,
    config: { gates: [...FORECASTING_GATES, { field: 'n_alpha_1h', op: 'gte', value: 10, label: '1 h alpha measured on 10+ entries' }], weights: { calibration: 0.4, alpha_1h: 0.4, early_entry: 0.2 } },
  },
  {
    slug: 'risk-adjusted-forecasters',
    title: 'Risk-adjusted forecasters',
    purpose: 'Calibrated wallets whose daily returns are smooth: high Sharpe and Sortino, shallow drawdowns.',
    forecasting: true,
    config: { gates: [...FORECASTING_GATES, { field: 'risk_days', op: 'gte', value: 10, label: 'risk measured on 10+ days' }], weights: { calibration: 0.4, sharpe: 0.25, sortino: 0.15, max_drawdown: 0.2 } },
  },
  {
    slug: 'high-stakes-forecasters',
    title: 'High-stakes forecasters',
    purpose: 'Calibrated wallets that put real money behind their views.',
    forecasting: true,
    config: { gates: [...FORECASTING_GATES, { field: 'lifetime_volume_usdc', op: 'gte', value: 25_000, label: 'lifetime volume of $25k or more' }], weights: { calibration: 0.5, volume: 0.25, realized_pnl: 0.25 } },
  },
  {
    slug: 'category-specialists',
    title: 'Category specialists',
    purpose: 'Wallets with a proven edge inside one category; combine with best_category to browse one field.',
    forecasting: true,
    config: {
      gates: [...FORECASTING_GATES, { field: 'best_category_markets', op: 'gte', value: 10, label: '10+ resolved markets in the best category' }, { field: 'best_category_z', op: 'lte', value: -1, label: 'beats the price in that category by 1+ standard error' }],
      weights: { best_category_calibration: 0.6, calibration: 0.25, alpha_res: 0.15 },
    },
  },
  {
    slug: 'contrarian-edge',
    title: 'Contrarian edge',
    purpose: 'Forecasters who buy after drops and are right to: calibration first, contrarian habit second.',
    forecasting: true,
    config: { gates: [...FORECASTING_GATES, { field: 'contrarian_buy_share', op: 'gte', value: 0.2, label: 'at least 20% of buys follow a 5-cent drop' }], weights: { calibration: 0.5, alpha_res: 0.3, contrarian: 0.2 } },
  },
  {
    slug: 'active-forecasters',
    title: 'Active forecasters',
    purpose: 'Calibrated wallets that traded in the last 14 days: who is good and still at it.',
    forecasting: true,
    config: { cohort: { active_within_days: 14 }, gates: [...FORECASTING_GATES], weights: { calibration: 0.5, alpha_24h: 0.3, trade_count: 0.2 } },
  },
  {
    slug: 'top-pnl',
    title: 'Top P&L',
    purpose: 'Who made the most money, with risk and return on volume alongside. Not a skill board: luck and size count.',
    forecasting: false,
    config: { gates: [{ field: 'trade_count', op: 'gte', value: 20, label: '20+ fills' }], weights: { realized_pnl: 0.5, roi: 0.3, sharpe: 0.2 } },
  },
  {
    slug: 'whales',
    title: 'Whales',
    purpose: 'The largest traders by volume and clip size, with their P&L.',
    forecasting: false,
    config: { gates: [{ field: 'lifetime_volume_usdc', op: 'gte', value: 50_000, label: 'lifetime volume of $50k or more' }], weights: { volume: 0.7, realized_pnl: 0.3 } },
  },
];

/** The flagship board: what a ranking with no preset or config named means (the purest skill board). */
export const FLAGSHIP_PRESET = 'sharp-forecasters';

export function presetBySlug(slug: string): Preset {
  const p = PRESETS.find((x) => x.slug === slug);
  if (!p) throw new RankingError('unknown_preset', `unknown preset: ${slug}`, { valid: PRESETS.map((x) => x.slug) });
  return p;
}

/** Query overrides on a preset: they narrow the cohort or change the sort; they do not re-normalize percentiles. */
export const PresetOverrides = z
  .object({
    active_within_days: z.coerce.number().int().min(1).max(3650).optional(),
    best_category: CATEGORY.optional(),
    sort_by: SortBy.optional(),
    limit: z.coerce.number().int().min(1).max(ROW_CAP).default(DEFAULT_LIMIT),
    offset: z.coerce.number().int().min(0).max(100_000).default(0),
    extra_metrics: z.array(MetricIdSchema).default([]),
  })
  .strict();
export type PresetOverrides = z.infer<typeof PresetOverrides>;

// ---------------------------------------------------------------------------------------------------------------
// SQL
// ---------------------------------------------------------------------------------------------------------------

function literal(v: number | boolean): string {
  return typeof v === 'boolean' ? String(v) : `'${v}'::DOUBLE`;
}

export function gateCondition(g: Gate): string {
  return `${g.field} ${OPS[g.op]} ${g.value}`;
}

function gateSql(g: Gate): string {
  return `coalesce(${GATE_FIELDS[g.field].sql} ${OPS[g.op]} ${literal(g.value)}, false)`;
}

function cohortSql(c: Cohort, asOf: AsOf): string {
  const parts = ['trade_count > 0'];
  if (c.active_within_days !== undefined) parts.push(`last_trade_at > ${tsLiteral(asOf)} - INTERVAL ${c.active_within_days} DAY`);
  if (c.best_category !== undefined) parts.push(`best_category = '${c.best_category.replace(/'/g, "''")}'`);
  if (c.min_trades !== undefined) parts.push(`trade_count >= ${c.min_trades}`);
  if (c.min_volume_usdc !== undefined) parts.push(`lifetime_volume_usdc >= ${literal(c.min_volume_usdc)}`);
  if (c.tags_any?.length) parts.push(`list_has_any(smart_money_tags, [${c.tags_any.map((t) => `'${t}'`).join(', ')}])`);
  if (c.exclude_clusters) parts.push('cluster_size = 1');
  return parts.join(' AND ');
}

/** Base columns a ranking row shows (identity, headline numbers, cluster, verdict inputs): stored in the board so a
 * request reads one narrow range of the board and never the 2.8M-row base table. */
export const ROW_COLUMNS = [
  'address', 'username', 'pseudonym', 'profile_image', 'verified', 'linked_user_id', 'lifetime_volume_usdc', 'realized_pnl',
  'trade_count', 'markets_traded', 'win_rate_pct', 'brier', 'cluster_address', 'cluster_size', 'n_fills', 'taker_share',
  'median_clip_usd', 'two_sided_share', 'thin_fill_share', 'n_closed_holds', 'median_hold_hours', 'calibration_ranked',
  'n_resolved_markets', 'calibration_excess_z', 'skill_deviate', 'alpha_24h_cents', 'smart_money_tags',
] as const;

/** Explain gates after the configured ones: a row needs a measured weighted metric, and a user is one row. */
export const IMPLICIT_GATES = {
  scored: { label: 'scored: at least one weighted metric measured', condition: 'composite_score IS NOT NULL' },
  per_user: { label: 'one row per user (best-scoring wallet)', condition: 'rank within user = 1' },
} as const;

/**
 * SQL of a full board: every row of the gated cohort with its composite, every catalogue metric's percentile and
 * measured flag, one row per user, ranked. Columns: rank, wallet_id, user_key, composite_score, pct_<m>, ms_<m>,
 * val_<m>, plus last_trade_at and best_category (so overrides can filter the stored board).
 */
export function boardSql(cfg: RankingConfig, asOf: AsOf, base = 'a_rank_base', metrics: readonly MetricId[] = METRIC_IDS): string {
  const gates = cfg.gates.map(gateSql);
  const pass = gates.length ? gates.join(' AND ') : 'true';
  const weights = Object.entries(cfg.weights).filter(([, w]) => (w ?? 0) > 0) as [MetricId, number][];
  const pctCols = metrics.map((id) => {
    const m: MetricDef = METRICS[id];
    const dir = m.better === 'higher' ? 'ASC' : 'DESC';
    return `(${m.measured}) AS ms_${id}, (${m.value})::DOUBLE AS val_${id},
      CASE WHEN ${m.measured} THEN CASE WHEN count(*) OVER (PARTITION BY (${m.measured})) = 1 THEN 100.0
        ELSE 100.0 * percent_rank() OVER (PARTITION BY (${m.measured}) ORDER BY (${m.value})::DOUBLE ${dir}) END END AS pct_${id}`;
  });
  const num = weights.map(([id, w]) => `coalesce(${w} * pct_${id}, 0)`).join(' + ');
  const den = weights.map(([id, w]) => `CASE WHEN ms_${id} THEN ${w} ELSE 0 END`).join(' + ');
  const sort = sortExpr(cfg.sort_by, cfg.sort_dir);
  return `WITH gated AS (SELECT * FROM ${base} WHERE ${cohortSql(cfg.cohort, asOf)} AND ${pass}),
    pct AS (SELECT wallet_id, user_key, last_trade_at, best_category, ${ROW_COLUMNS.join(', ')}, ${pctCols.join(',\n      ')} FROM gated),
    scored AS (SELECT *, round((${num}) / nullif(${den}, 0), 9) AS composite_score FROM pct),
    per_user AS (
      SELECT * FROM scored WHERE composite_score IS NOT NULL
      QUALIFY row_number() OVER (PARTITION BY user_key ORDER BY composite_score DESC, wallet_id) = 1)
    SELECT row_number() OVER (ORDER BY ${sort}, wallet_id)::INTEGER AS rank, * FROM per_user`;
}

/**
 * What a board stores per row (a_board_rank): the preset, the rank, the wallet, its composite and every catalogue
 * metric's percentile, in (preset, rank) order. Everything else a board row shows is a function of the wallet's
 * rank-base row alone, so it is read from a_rank_base (the view a_board, BOARD_VIEW_SQL) instead of being written
 * again with every refresh: stored whole, the boards were 1.9M rows of ~90 columns at full scale, written, logged
 * and checkpointed each refresh.
 */
export const BOARD_RANK_COLUMNS: readonly (readonly [string, 'VARCHAR' | 'INTEGER' | 'DOUBLE'])[] = [
  ['preset', 'VARCHAR'],
  ['rank', 'INTEGER'],
  ['wallet_id', 'INTEGER'],
  ['composite_score', 'DOUBLE'],
  ...METRIC_IDS.map((id) => [`pct_${id}`, 'DOUBLE'] as const),
];

export const BOARD_RANK_DDL = `CREATE OR REPLACE TABLE a_board_rank (${BOARD_RANK_COLUMNS.map(([n, t]) => `${n} ${t}`).join(', ')})`;

/** A metric's measured flag and value as a board row shows them (ms_<m>, val_<m>), over rank-base columns. */
export function boardMetricColumns(ids: readonly MetricId[], values = true): string[] {
  return ids.flatMap((id) => [`(${METRICS[id].measured}) AS ms_${id}`, ...(values ? [`(${METRICS[id].value})::DOUBLE AS val_${id}`] : [])]);
}

/**
 * a_board: every board row with its wallet's rank-base columns — the columns and order boardSql gives. A page reads
 * a_board_top, or a_board_rank and then its wallets in a_rank_base (boardPageRows), not this join.
 */
export const BOARD_VIEW_SQL = `CREATE OR REPLACE VIEW a_board AS
  SELECT b.preset, b.rank, wallet_id, r.user_key, r.last_trade_at, r.best_category, ${ROW_COLUMNS.map((c) => `r.${c}`).join(', ')},
    ${METRIC_IDS.map((id) => [...boardMetricColumns([id]), `b.pct_${id}`].join(', ')).join(', ')}, b.composite_score
  FROM a_board_rank b JOIN a_rank_base r USING (wallet_id)`;

/**
 * The ranks of each preset whose rows are also stored whole, in a_board_top: the pages most read. A page within them
 * is one read of a rank range (full scale: ~12 ms for 50 rows); past them, the stored ranks and then their wallets by
 * id (boardPageRows: ~26 ms for 50 rows, ~150 ms for 500).
 */
export const BOARD_TOP_RANKS = 1000;

/** a_board_meta: each preset's explain counts, and how many of its first rows a_board_top holds (top_rows). */
export const BOARD_META_DDL = `CREATE OR REPLACE TABLE a_board_meta (preset VARCHAR, cohort_size BIGINT, gate_counts BIGINT[], scored BIGINT, total_rows BIGINT, top_rows BIGINT)`;

/** a_board_meta's row of a preset: its explain counts, and the rows a_board_top holds of its `e.total`. */
export function boardMetaRow(slug: string, e: ExplainCounts, top: number): string {
  return `('${slug}', ${e.cohort}, [${e.counts.join(',')}]::BIGINT[], ${e.scored}, ${e.total}, ${Math.min(e.total, top)})`;
}

/** a_board_top: every column of a_board, for the first `top` ranks of each preset. */
export const boardTopSql = (top: number) => `CREATE OR REPLACE TABLE a_board_top AS SELECT * FROM a_board WHERE rank <= ${top} ORDER BY preset, rank`;

/**
 * Once a_board_rank holds every preset: the view a_board over it (a state of engine schema 4 or older stored the board
 * whole, as a table) and the head of each board stored whole (a_board_top).
 */
export async function writeBoardViews(db: QueryRunner, top: number): Promise<void> {
  await dropRelation(db, 'a_board');
  await db.run(BOARD_VIEW_SQL);
  await db.run(boardTopSql(top));
}

/** A preset's row of a_board_meta. */
export interface BoardMeta {
  cohort_size: number;
  gate_counts: number[];
  scored: number;
  total_rows: number;
  top_rows: number;
}

/** a_board_meta's row of a preset (undefined: none stored). */
export async function boardMeta(db: QueryRunner, slug: string): Promise<BoardMeta | undefined> {
  return (await db.all<BoardMeta>(`SELECT * FROM a_board_meta WHERE preset = '${slug}'`))[0];
}

/**
 * The relation to read a preset's ranks up to `upTo` from, by its a_board_meta row: a_board_top when it holds them (or
 * the whole board), else the view a_board.
 */
export function boardHead(m: BoardMeta | undefined, upTo: number): 'a_board_top' | 'a_board' {
  return m && (upTo <= Number(m.top_rows) || Number(m.top_rows) >= Number(m.total_rows)) ? 'a_board_top' : 'a_board';
}

export function sortExpr(sortBy: 'composite' | MetricId, dir: 'best_first' | 'worst_first'): string {
  if (sortBy === 'composite') return `composite_score ${dir === 'best_first' ? 'DESC' : 'ASC'}`;
  const better = METRICS[sortBy].better;
  const desc = (better === 'higher') === (dir === 'best_first');
  return `val_${sortBy} ${desc ? 'DESC' : 'ASC'} NULLS LAST`;
}

export interface ExplainCounts {
  cohort: number;
  /** rows remaining after each configured gate, in order */
  counts: number[];
  scored: number;
  total: number;
}

/**
 * One aggregate pass over the cohort: its size, the rows remaining after each gate in order, and the rows with a
 * measured weighted metric; `total` counts the rows of the finished board (`boardFrom`: a FROM clause).
 */
export async function explainCounts(db: QueryRunner, cfg: RankingConfig, asOf: AsOf, boardFrom: string): Promise<ExplainCounts> {
  const gates = cfg.gates.map(gateSql);
  const cols = gates.map((_, i) => `count(*) FILTER (WHERE ${gates.slice(0, i + 1).join(' AND ')}) AS g${i}`);
  const [c] = await db.all<Record<string, number>>(
    `SELECT count(*) AS cohort, ${[...cols, `count(*) FILTER (WHERE ${gates.join(' AND ') || 'true'} AND ${scoredPredicate(cfg)}) AS scored`].join(', ')},
      (SELECT count(*) FROM ${boardFrom}) AS total
    FROM a_rank_base WHERE ${cohortSql(cfg.cohort, asOf)}`,
  );
  return { cohort: Number(c!.cohort), counts: gates.map((_, i) => Number(c![`g${i}`])), scored: Number(c!.scored), total: Number(c!.total) };
}

// ---------------------------------------------------------------------------------------------------------------
// Build: base table and preset boards
// ---------------------------------------------------------------------------------------------------------------

/**
 * a_rank_base: one row per wallet with a fill: wallet metrics, identity, copy style, best category, cluster and
 * user. Needs a_wallet_metrics, a_style, a_best_category, a_clusters and wallet_links (created empty if missing).
 */
export function rankBaseSql(): string {
  return `CREATE OR REPLACE TABLE a_rank_base AS ${rankBaseSelectSql({ all: true })} ORDER BY wallet_id`;
}

/**
 * The rank-base rows of the wallets of `scope`. A refresh's few wallets (a table scope): each per-wallet table joined
 * is narrowed to them first (the rows of 7,000 wallets at full scale: 1.8–2.5 s → 0.45 s); not the cluster's own
 * wallet (cw), which is another wallet.
 */
function rankBaseSelectSql(scope: WalletScope): string {
  const of = (t: string) => narrowedTo(t, scope);
  return `SELECT m.*, w.address, w.username, w.pseudonym, w.profile_image, w.verified,
      s.n_fills, s.median_clip_usd, s.two_sided_share, s.thin_fill_share, s.n_closed_holds, s.median_hold_hours,
      ${copiesBadlySql()} AS copies_badly,
      b.best_category, b.best_category_z, b.best_category_markets,
      coalesce(c.cluster_id, m.wallet_id) AS cluster_key, coalesce(c.cluster_size, 1)::INTEGER AS cluster_size,
      coalesce(cw.address, w.address) AS cluster_address,
      coalesce(l.user_id, 'w:' || w.address) AS user_key, l.user_id AS linked_user_id
    FROM a_wallet_metrics m JOIN ${of('wallets')} w USING (wallet_id)
      LEFT JOIN ${of('a_style')} s USING (wallet_id) LEFT JOIN ${of('a_best_category')} b USING (wallet_id)
      LEFT JOIN ${of('a_clusters')} c USING (wallet_id) LEFT JOIN wallets cw ON cw.wallet_id = c.cluster_id LEFT JOIN wallet_links l USING (wallet_id)
    WHERE m.trade_count > 0 AND ${scopeSql(scope, 'm.wallet_id')}`;
}

/**
 * (Re)write a_rank_base, with an index on wallet_id: a custom ranking's page reads its ~50 rows by wallet id, and
 * without the index DuckDB decompresses every row group of a 2.8M-row wide table for them (1.3 s vs ~60 ms measured).
 */
export async function writeRankBase(db: QueryRunner): Promise<void> {
  await ensureWalletLinks(db);
  await db.run(rankBaseSql());
  await db.run(`CREATE INDEX a_rank_base_wallet ON a_rank_base (wallet_id)`);
}

/**
 * Replace the rank-base rows of the wallets listed in `table` (a refresh: the rows it changed, refresh.ts
 * rankChangedSql); every other row is a function of rows that did not change. The index follows the rows.
 */
export async function refreshRankBase(db: QueryRunner, table: string): Promise<void> {
  await ensureWalletLinks(db);
  await db.run(`DELETE FROM a_rank_base WHERE wallet_id IN (SELECT wallet_id FROM ${table})`);
  await db.run(`INSERT INTO a_rank_base ${rankBaseSelectSql({ table })}`);
}

/** copyFlags() of core/trader/verdict.ts in SQL (any flag = copies badly), over a_wallet_metrics m and a_style s. */
export function copiesBadlySql(): string {
  const r = COPY_RULES;
  return `coalesce(s.n_fills >= ${r.minFillsForStyle} AND (
      (s.n_closed_holds >= ${r.minClosedHolds} AND s.median_hold_hours < ${r.scalperMaxMedianHoldHours})
      OR (m.taker_share < ${r.makerMaxTakerShare} AND (coalesce(s.two_sided_share, 0) >= ${r.makerMinTwoSidedShare} OR s.median_clip_usd < ${r.tinyClipUsd}))
      OR coalesce(s.thin_fill_share >= ${r.thinMaxFillShare}, false)), false)`;
}

export async function ensureWalletLinks(db: QueryRunner): Promise<void> {
  await db.run(`CREATE TABLE IF NOT EXISTS wallet_links (wallet_id INTEGER NOT NULL, user_id VARCHAR NOT NULL)`);
}

/**
 * Score every preset into a_board_rank (its explain counts into a_board_meta, its first `top` rows whole into
 * a_board_top) as of the build's T, in SQL.
 */
export async function buildBoards(db: QueryRunner, asOf: AsOf, top = BOARD_TOP_RANKS): Promise<void> {
  await db.run(BOARD_META_DDL);
  await db.run(BOARD_RANK_DDL);
  for (const p of PRESETS) {
    const cfg = RankingConfig.parse(p.config);
    await db.run(`INSERT INTO a_board_rank SELECT '${p.slug}', ${BOARD_RANK_COLUMNS.slice(1).map(([n]) => n).join(', ')} FROM (${boardSql(cfg, asOf)}) ORDER BY rank`);
    const e = await explainCounts(db, cfg, asOf, `a_board_rank WHERE preset = '${p.slug}'`);
    await db.run(`INSERT INTO a_board_meta VALUES ${boardMetaRow(p.slug, e, top)}`);
  }
  await writeBoardViews(db, top);
}

function scoredPredicate(cfg: RankingConfig): string {
  const ids = (Object.entries(cfg.weights) as [MetricId, number][]).filter(([, w]) => w > 0).map(([id]) => `(${METRICS[id].measured})`);
  return ids.length ? `(${ids.join(' OR ')})` : 'false';
}

// ---------------------------------------------------------------------------------------------------------------
// Response
// ---------------------------------------------------------------------------------------------------------------

const Display = z.object({ username: z.string().nullable(), pseudonym: z.string(), profile_image: z.string().nullable(), verified: z.boolean() });
const VerdictShape = z.object({
  overall: z.number(),
  tone: z.enum(['good', 'caution', 'bad']),
  title: z.string(),
  topTag: z.object({ label: z.string(), tone: z.enum(['good', 'caution', 'bad']), title: z.string() }),
  copyRecommended: z.boolean(),
  copiesBadly: z.boolean(),
});
export const RankingRow = z.object({
  rank: z.number().int(),
  proxy_wallet: z.string(),
  user_id: z.string(),
  wallet_count: z.number().int(),
  wallets: z.array(
    z.object({ proxy_wallet: z.string(), realized_pnl: z.number(), lifetime_volume_usdc: z.number(), trade_count: z.number().int(), win_rate_pct: z.number().nullable(), display: Display }),
  ),
  display: Display,
  composite_score: z.number(),
  lifetime_volume_usdc: z.number(),
  realized_pnl: z.number(),
  trade_count: z.number().int(),
  markets_traded: z.number().int(),
  win_rate_pct: z.number().nullable(),
  brier: z.number().nullable(),
  last_trade_at: z.string(),
  breakdown: z.record(z.string(), z.number().nullable()),
  breakdown_measured: z.record(z.string(), z.boolean()),
  verdict: VerdictShape,
  cluster_id: z.string(),
  cluster_size: z.number().int(),
});
export type RankingRow = z.infer<typeof RankingRow>;

export const RankingResponse = z.object({
  rows: z.array(RankingRow),
  total_rows: z.number().int(),
  cohort_size: z.number().int(),
  normalized_weights: z.record(z.string(), z.number()),
  gated_out_count: z.number().int(),
  query_ms: z.number().int(),
  snapshot_age_seconds: z.number().int(),
  rows_capped_at: z.number().int(),
  explain: z.object({
    cohort_size: z.number().int(),
    gates: z.array(z.object({ label: z.string(), condition: z.string(), dropped: z.number().int(), remaining: z.number().int() })),
  }),
});
export type RankingResponse = z.infer<typeof RankingResponse>;

/** Builds a ranking row's verdict from its a_rank_base row (wired to the copy-fitness verdict). */
export type VerdictOf = (base: Record<string, unknown>) => z.infer<typeof VerdictShape>;

/** The copy-fitness verdict of the row's wallet (core/trader/verdict.ts verdictFor over its a_rank_base row). */
export const copyFitnessVerdict: VerdictOf = (base) => verdictFor(verdictInputsFromRow(base));

export function normalizedWeights(weights: RankingConfig['weights']): Record<string, number> {
  const entries = Object.entries(weights).filter(([, w]) => (w ?? 0) > 0) as [string, number][];
  const sum = entries.reduce((s, [, w]) => s + w, 0);
  return Object.fromEntries(entries.map(([k, w]) => [k, w / sum]));
}

/** The explain funnel of a config from its counts: cohort → each gate → scored → one row per user. */
export function explainGates(cfg: RankingConfig, { cohort, counts, scored, total }: ExplainCounts) {
  const gates: RankingResponse['explain']['gates'] = [];
  let before = cohort;
  cfg.gates.forEach((g, i) => {
    const remaining = counts[i] ?? 0;
    gates.push({ label: g.label ?? gateCondition(g), condition: gateCondition(g), dropped: before - remaining, remaining });
    before = remaining;
  });
  gates.push({ label: IMPLICIT_GATES.scored.label, condition: IMPLICIT_GATES.scored.condition, dropped: before - scored, remaining: scored });
  gates.push({ label: IMPLICIT_GATES.per_user.label, condition: IMPLICIT_GATES.per_user.condition, dropped: scored - total, remaining: total });
  return gates;
}

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));

function clusterId(address: string): string {
  return `cl_${address.slice(2, 14).toLowerCase()}`;
}

/**
 * The rank-base columns a ranking row is built from (assembleRows: ROW_COLUMNS, the wallet and its last trade). A
 * custom ranking's page reads only these: DuckDB joins a `wallet_id IN (...)` list against every row of the base, and
 * the time goes with the columns it carries (at 2.8M rows: 40 ms for all 60, 20 for these).
 */
export const PAGE_ROW_COLUMNS = ['wallet_id', 'last_trade_at', ...ROW_COLUMNS];

/** A stored board's columns a page reads (PAGE_ROW_COLUMNS, its rank and composite, and the breakdown's). */
export function boardPageColumns(breakdown: readonly MetricId[]): string {
  return [...PAGE_ROW_COLUMNS, 'rank', 'composite_score', ...breakdown.flatMap((id) => [`pct_${id}`, `ms_${id}`])].join(', ');
}

/** The wallets of the users of `board`'s rows (users with several wallets), each with its own numbers, by user. */
export async function linkedWallets(db: QueryRunner, board: readonly Record<string, unknown>[]): Promise<Map<string, Record<string, unknown>[]>> {
  const users = [...new Set(board.filter((r) => r.linked_user_id !== null && r.linked_user_id !== undefined).map((r) => String(r.linked_user_id)))];
  const rows = users.length
    ? await db.all<Record<string, unknown>>(
        `SELECT l.user_id, w.wallet_id, w.address, w.username, w.pseudonym, w.profile_image, w.verified,
           coalesce(m.realized_pnl, 0) AS realized_pnl, coalesce(m.lifetime_volume_usdc, 0) AS lifetime_volume_usdc,
           coalesce(m.trade_count, 0) AS trade_count, m.win_rate_pct
         FROM wallet_links l JOIN wallets w USING (wallet_id) LEFT JOIN a_wallet_metrics m USING (wallet_id)
         WHERE l.user_id IN (${users.map((u) => `'${u.replace(/'/g, "''")}'`).join(',')}) ORDER BY l.user_id, w.wallet_id`,
      )
    : [];
  const byUser = new Map<string, Record<string, unknown>[]>();
  for (const r of rows) byUser.set(String(r.user_id), [...(byUser.get(String(r.user_id)) ?? []), r]);
  return byUser;
}

export async function assembleRows(db: QueryRunner, board: Record<string, unknown>[], breakdownIds: readonly MetricId[], verdictOf: VerdictOf): Promise<RankingRow[]> {
  return board.length ? assembleRowsWith(board, await linkedWallets(db, board), breakdownIds, verdictOf) : [];
}

/** A page's rows as the API shows them, from its board rows and the wallets of its users (linkedWallets). */
export function assembleRowsWith(
  board: readonly Record<string, unknown>[],
  linked: ReadonlyMap<string, Record<string, unknown>[]>,
  breakdownIds: readonly MetricId[],
  verdictOf: VerdictOf,
): RankingRow[] {
  const display = (r: Record<string, unknown>) => ({
    username: (r.username as string | null) ?? null,
    pseudonym: String(r.pseudonym),
    profile_image: (r.profile_image as string | null) ?? null,
    verified: Boolean(r.verified),
  });
  const walletEntry = (r: Record<string, unknown>) => ({
    proxy_wallet: getAddress(String(r.address)),
    realized_pnl: Number(r.realized_pnl ?? 0),
    lifetime_volume_usdc: Number(r.lifetime_volume_usdc ?? 0),
    trade_count: Number(r.trade_count ?? 0),
    win_rate_pct: num(r.win_rate_pct),
    display: display(r),
  });
  return board.map((b) => {
    const r = b;
    const userId = r.linked_user_id === null || r.linked_user_id === undefined ? null : String(r.linked_user_id);
    const wallets = userId ? (linked.get(userId) ?? []).map(walletEntry) : [walletEntry(r)];
    const breakdown: Record<string, number | null> = {};
    const measured: Record<string, boolean> = {};
    for (const id of breakdownIds) {
      breakdown[id] = num(b[`pct_${id}`]);
      measured[id] = Boolean(b[`ms_${id}`]);
    }
    return {
      rank: Number(b.rank),
      proxy_wallet: getAddress(String(r.address)),
      user_id: userId ?? `w:${String(r.address).toLowerCase()}`,
      wallet_count: wallets.length,
      wallets,
      display: display(r),
      composite_score: Number(b.composite_score),
      lifetime_volume_usdc: Number(r.lifetime_volume_usdc ?? 0),
      realized_pnl: Number(r.realized_pnl ?? 0),
      trade_count: Number(r.trade_count ?? 0),
      markets_traded: Number(r.markets_traded ?? 0),
      // null = not measured (no resolved position); a measured 0 passes through
      win_rate_pct: num(r.win_rate_pct),
      brier: num(r.brier),
      last_trade_at: iso(r.last_trade_at),
      breakdown,
      breakdown_measured: measured,
      verdict: verdictOf(r),
      cluster_id: clusterId(String(r.cluster_address ?? r.address)),
      cluster_size: Number(r.cluster_size ?? 1),
    };
  });
}

export async function buildMeta(db: QueryRunner): Promise<{ as_of: Date; version?: number }> {
  const meta = await db.all<{ as_of: Date; version?: number }>(`SELECT * FROM a_meta`).catch(() => []);
  if (!meta.length) throw new RankingError('analytics_missing', 'no analytics build: run npm run analytics:build');
  const m = meta[0]!;
  return { as_of: m.as_of, version: m.version === undefined || m.version === null ? undefined : Number(m.version) };
}

export function breakdownIdsFor(cfg: RankingConfig): MetricId[] {
  const weighted = (Object.entries(cfg.weights) as [MetricId, number][]).filter(([, w]) => w > 0).map(([id]) => id);
  return [...new Set([...weighted, ...cfg.extra_metrics])];
}

/**
 * A ranking computed in memory over one analytics version's rank base (core/ranking-engine.ts implements it): the
 * same rows, order, composite, percentiles and explain counts as boardSql, in a few linear passes.
 */
export interface Ranker {
  /** the a_meta.version whose a_rank_base it holds */
  readonly version: number;
  rankPage(cfg: RankingConfig, asOf: Date, breakdown: readonly MetricId[]): {
    walletIds: number[];
    ranks: number[];
    composite: number[];
    pct: Partial<Record<MetricId, (number | null)[]>>;
    measured: Partial<Record<MetricId, boolean[]>>;
    explain: ExplainCounts;
  };
}

/** Rankers by version (the builder keeps the latest few loaded); null when none is loaded for it. */
export interface RankerSource {
  at(version: number): Ranker | null;
  /**
   * Every preset's head of the version the service announces, in memory (core/preset-rankings.ts): plain preset pages
   * are answered from it; null while none is loaded for that version.
   */
  presetHeads?(): PresetHeads | null;
}

/**
 * A custom ranking as of the analytics version the request reads: by the in-memory ranker of that version when one
 * is loaded (milliseconds over millions of wallets), else the whole pipeline in SQL over a_rank_base. Both give the
 * same answer (test/core/ranking-engine.test.ts).
 */
let customBoardSeq = 0;

export async function customRanking(
  db: QueryRunner,
  input: RankingConfigInput,
  now: Date,
  verdictOf: VerdictOf = copyFitnessVerdict,
  rankers?: RankerSource,
): Promise<RankingResponse> {
  const t0 = performance.now();
  const parsed = RankingConfig.safeParse(input);
  if (!parsed.success) throw new RankingError('invalid_ranking', 'invalid ranking config', { issues: parsed.error.issues });
  const cfg = parsed.data;
  const meta = await buildMeta(db);
  const ranker = rankers && meta.version !== undefined ? rankers.at(meta.version) : null;
  if (ranker) {
    const breakdown = breakdownIdsFor(cfg);
    const page = ranker.rankPage(cfg, meta.as_of, breakdown);
    const ids = page.walletIds;
    const wide = ids.length ? await db.all<Record<string, unknown>>(`SELECT ${PAGE_ROW_COLUMNS.join(', ')} FROM a_rank_base WHERE wallet_id IN (${ids.join(',')})`) : [];
    const byId = new Map(wide.map((r) => [Number(r.wallet_id), r]));
    const board = ids.map((id, k) => {
      const row: Record<string, unknown> = { ...byId.get(id)!, rank: page.ranks[k], composite_score: page.composite[k] };
      for (const m of breakdown) {
        row[`pct_${m}`] = page.pct[m]![k];
        row[`ms_${m}`] = page.measured[m]![k];
      }
      return row;
    });
    const rows = await assembleRows(db, board, breakdown, verdictOf);
    return response(cfg, rows, page.explain, meta.as_of, now, t0);
  }
  // a custom board scores only the metrics it weighs, shows or sorts by (presets store every metric)
  const needed = [...new Set([...breakdownIdsFor(cfg), ...(cfg.sort_by === 'composite' ? [] : [cfg.sort_by])])];
  // one temp table per call: concurrent custom rankings on one connection must not share (and drop) a board
  const table = `custom_board_${++customBoardSeq}`;
  await db.run(`CREATE OR REPLACE TEMP TABLE ${table} AS ${boardSql(cfg, meta.as_of, 'a_rank_base', needed)}`);
  try {
    const board = await db.all<Record<string, unknown>>(`SELECT * FROM ${table} ORDER BY rank LIMIT ${cfg.limit} OFFSET ${cfg.offset}`);
    const e = await explainCounts(db, cfg, meta.as_of, table);
    const rows = await assembleRows(db, board, breakdownIdsFor(cfg), verdictOf);
    return response(cfg, rows, e, meta.as_of, now, t0);
  } finally {
    await db.run(`DROP TABLE IF EXISTS ${table}`);
  }
}

export function response(cfg: RankingConfig, rows: RankingRow[], e: ExplainCounts, asOf: Date, now: Date, t0: number): RankingResponse {
  const { cohort, total } = e;
  const gates = explainGates(cfg, e);
  return {
    rows,
    total_rows: total,
    cohort_size: cohort,
    normalized_weights: normalizedWeights(cfg.weights),
    gated_out_count: cohort - total,
    query_ms: Math.round(performance.now() - t0),
    snapshot_age_seconds: Math.max(0, Math.round((now.getTime() - asOf.getTime()) / 1000)),
    rows_capped_at: cfg.limit,
    explain: { cohort_size: cohort, gates },
  };
}

/** The presets list (GET /v1/rankings/presets). */
export function presetList() {
  return PRESETS.map((p) => {
    const cfg = RankingConfig.parse(p.config);
    return {
      slug: p.slug,
      title: p.title,
      purpose: p.purpose,
      forecasting: p.forecasting,
      cohort: cfg.cohort,
      gates: cfg.gates.map((g) => ({ label: g.label ?? gateCondition(g), condition: gateCondition(g) })),
      weights: cfg.weights,
      normalized_weights: normalizedWeights(cfg.weights),
      sort_by: cfg.sort_by,
    };
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------------------------------------------

export const SNAPSHOT_TOP_K = 100;

export interface SnapshotRow {
  rank: number;
  key: string;
  composite: number;
}

/** The top K of a preset board, as a snapshot stores it (key = EIP-55 proxy wallet of the row). */
export async function presetTopK(db: QueryRunner, slug: string, k = SNAPSHOT_TOP_K): Promise<SnapshotRow[]> {
  presetBySlug(slug);
  const rows = await db.all<{ rank: number; address: string; composite_score: number }>(
    `SELECT b.rank, w.address, b.composite_score FROM a_board_rank b JOIN wallets w USING (wallet_id) WHERE b.preset = '${slug}' ORDER BY b.rank LIMIT ${k}`,
  );
  return rows.map((r) => ({ rank: Number(r.rank), key: getAddress(r.address), composite: Number(r.composite_score) }));
}

/** The end of a UTC day as an as-of moment: the last microsecond stamped on that day. */
export function endOfDay(day: string): Date {
  const d = z.string().regex(/^\d{4}-\d{2}-\d{2}$/).parse(day);
  const t = Date.parse(`${d}T00:00:00Z`);
  if (Number.isNaN(t)) throw new RankingError('invalid_ranking', `not a date: ${day}`);
  return new Date(t + 86_400_000 - 1);
}

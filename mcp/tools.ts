/**
 * The MCP tool catalog over the core: few, distinct verb_noun tools, each with a zod input and output schema (the
 * output an object at the top level), a description that says what it returns, what it costs and its limits, and a
 * size cap so that no answer floods an agent's context (MAX_RESULT_CHARS of JSON; a list that would exceed it comes
 * back shorter, with `truncated` saying so and a cursor to continue).
 *
 * Transport-free: mcp/server.ts registers these on an McpServer, decides who pays, and turns errors into isError
 * results. docs/mcp.md is the reference.
 */
import type { RankerSource } from '../core/rankings.ts';
import { TOOL_PRICES } from '../gateway/payment/pricing.ts';
import { createHash } from 'node:crypto';
import { getAddress } from 'viem';
import { z, ZodError } from 'zod';
import { CalibrationScope } from '../core/calibration.ts';
import {
  DEFAULT_FLOW_WINDOW_HOURS,
  MAX_FLOW_WINDOW_HOURS,
  MarketConsensus,
  MarketError,
  MarketFlow,
  PublicTopHolder,
  marketConsensus,
  marketFlow,
  marketIdByConditionId,
  toPublicTopHolders,
  topHolders,
} from '../core/market.ts';
import type { Feature } from '../core/plans.ts';
import {
  ADDRESS_RE,
  PublicError,
  PublicMarketTeaser,
  PublicSearch,
  SEARCH_LIMIT,
  SEARCH_QUERY_MAX,
  TID_RE,
  TidIndex,
  buildAsOf,
  publicMarketTeaser,
  publicSearch,
  publicT,
} from '../core/public/index.ts';
import type { QueryRunner } from '../core/query.ts';
import {
  GATE_FIELDS,
  METRICS,
  METRIC_IDS,
  MetricIdSchema,
  FLAGSHIP_PRESET,
  PRESETS,
  RankingConfig,
  RankingError,
  customRanking,
  presetList,
  type RankingResponse,
} from '../core/rankings.ts';
import { presetRanking } from '../core/preset-rankings.ts';
import { SIGNAL_TYPES, SIGNALS_SINCE_HOURS, SignalError, SmartMoneySignals, smartMoneySignals } from '../core/signals.ts';
import { SMART_MONEY_TAGS } from '../core/tags.ts';
import {
  BUDGET_RULES,
  CopyFitness,
  POSITION_STATUSES,
  TraderCalibration,
  TraderPlaybook,
  TraderPosition,
  copyFitness,
  resolveTrader,
  traderCalibration,
  traderPlaybook,
  traderPositions,
} from '../core/trader/index.ts';

// ---------------------------------------------------------------------------------------------------------------
// Names, prices, caps
// ---------------------------------------------------------------------------------------------------------------

export const TOOL_NAMES = ['list_presets', 'rank_traders', 'get_trader', 'get_trader_positions', 'get_market', 'get_smart_money_signals', 'search'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Tools that never cost anything (discovery). */
export const FREE_TOOLS: readonly ToolName[] = ['list_presets', 'search'];
/**
 * Price keys of the `prices` map: every paid tool's name, plus `rank_traders.custom` for a rank_traders call with a
 * custom config (the spec prices custom rankings above presets); without it, custom calls cost `rank_traders`.
 */
export const PAID_PRICE_KEYS = ['rank_traders', 'get_trader', 'get_trader_positions', 'get_market', 'get_smart_money_signals'] as const;
export const OPTIONAL_PRICE_KEYS = ['rank_traders.custom'] as const;

/**
 * Prices (USD per call) matching the spec's agent tier: preset rankings 0.01, custom rankings 0.05, trader playbook
 * 0.01, market flow 0.005. Positions and signals have no published price; these are placeholders. The HTTP server
 * takes its prices from the gateway's price table; stdio uses these for the descriptions only (stdio is free).
 */
/** The gateway's price list for tools (one source for REST, x402 and MCP prices). */
export const DEFAULT_TOOL_PRICES: Readonly<Record<string, string>> = TOOL_PRICES;

/** Largest JSON (characters) a tool answers with: ~6k tokens, well under the ~25k clients reject. */
export const MAX_RESULT_CHARS = 20_000;
export const RANK_ROWS_MAX = 25;
export const POSITIONS_LIMIT = { min: 1, max: 100, default: 25 } as const;
export const SIGNALS_MCP_LIMIT = { min: 1, max: 50, default: 20 } as const;
export const MARKET_TOP_HOLDERS = 10;

// ---------------------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------------------

/** A business or validation error of a tool: becomes an isError result, never a protocol error. */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

export interface ToolErrorBody {
  error: string;
  message: string;
  [k: string]: unknown;
}

const issuesOf = (e: ZodError) => e.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));

/** Any error as the body of an isError result; `internal` for the unexpected (whose details stay in the log). */
export function toolErrorBody(e: unknown): ToolErrorBody {
  if (e instanceof ToolError) return { error: e.code, message: e.message, ...e.details };
  if (e instanceof RankingError) {
    switch (e.code) {
      case 'unknown_preset':
        return { error: 'not_found', message: e.message, valid_presets: e.details.valid };
      case 'invalid_extra_metrics':
        return { error: 'invalid_extra_metrics', message: e.message, valid_metrics: e.details.valid };
      case 'invalid_ranking': {
        const issues = (e.details.issues as ZodError['issues'] | undefined) ?? [];
        return { error: 'invalid_request', message: `${e.message}: ${issues.map((i) => `${i.message} at ${i.path.join('.') || '(root)'}`).join('; ')}`, issues: issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })) };
      }
      case 'analytics_missing':
        return { error: 'analytics_missing', message: e.message };
    }
  }
  if (e instanceof MarketError || e instanceof PublicError || e instanceof SignalError) return { error: e.code, message: e.message };
  if (e instanceof ZodError) {
    const issues = issuesOf(e);
    return { error: 'invalid_request', message: issues.map((i) => (i.path ? `${i.message} at ${i.path}` : i.message)).join('; '), issues };
  }
  if (e instanceof RangeError) return { error: 'invalid_request', message: e.message };
  return { error: 'internal', message: 'internal error' };
}

// ---------------------------------------------------------------------------------------------------------------
// Context and helpers
// ---------------------------------------------------------------------------------------------------------------

export interface ToolContext {
  db: QueryRunner;
  /** in-memory rankers of the latest analytics versions (jobs/analytics/rankers.ts); without them custom rankings run in SQL */
  rankers?: RankerSource;
  /** the venue's clock ("as of now") */
  now: () => Date;
  /** opaque trader ids of search results (shared by every request of a process) */
  tids: TidIndex;
}

/** The T of a call: the caller's clock, never before the analytics build (core/public/shared.ts publicT). */
async function asOfNow(ctx: ToolContext): Promise<{ T: Date; build: Date | null }> {
  const build = await buildAsOf(ctx.db);
  return { T: publicT(ctx.now(), build), build };
}

const Truncated = z
  .object({
    reason: z.string(),
    requested: z.number().int(),
    returned: z.number().int(),
  })
  .nullable()
  .describe('null when the page is complete; otherwise why fewer rows than requested came back (continue with next_cursor)');
type Truncated = z.infer<typeof Truncated>;

const jsonSize = (v: unknown) => JSON.stringify(v).length;
const sizeReason = `size cap: answers are kept under ${MAX_RESULT_CHARS.toLocaleString('en-US')} characters of JSON`;

/**
 * A page that fits under MAX_RESULT_CHARS: fetched with `limit` rows; while its JSON is too large, fetched again
 * with proportionally fewer rows (the source's own cursor then continues exactly after the last row returned).
 */
async function fitPage<O>(limit: number, fetch: (limit: number) => Promise<O>, rows: (o: O) => number): Promise<{ page: O; truncated: Truncated }> {
  let l = limit;
  let page = await fetch(l);
  for (let i = 0; i < 8; i++) {
    const s = jsonSize(page);
    const n = rows(page);
    if (s <= MAX_RESULT_CHARS - 500 || n <= 1) break;
    l = Math.max(1, Math.min(n - 1, Math.floor(((n * (MAX_RESULT_CHARS - 500)) / s) * 0.95)));
    page = await fetch(l);
  }
  return { page, truncated: l < limit ? { reason: sizeReason, requested: limit, returned: rows(page) } : null };
}

/** The longest prefix of `items` whose built answer fits under MAX_RESULT_CHARS. */
function fitPrefix<T, O>(items: T[], build: (items: T[]) => O): { out: O; kept: number } {
  let out = build(items);
  if (jsonSize(out) <= MAX_RESULT_CHARS - 500) return { out, kept: items.length };
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (jsonSize(build(items.slice(0, mid))) <= MAX_RESULT_CHARS - 500) lo = mid;
    else hi = mid - 1;
  }
  out = build(items.slice(0, lo));
  return { out, kept: lo };
}

const TraderRef = z
  .string()
  .trim()
  .max(64)
  .refine((s) => ADDRESS_RE.test(s) || TID_RE.test(s), 'trader must be a proxy wallet (0x + 40 hex, any case) or a tid from search (t_ + 22 characters)')
  .describe('proxy wallet (0x + 40 hex, any case) or an opaque tid returned by search');

interface ResolvedTrader {
  /** lowercase proxy wallet */
  address: string;
  /** what the answer shows: the EIP-55 address, or the tid when asked by tid (a tid is never unmasked) */
  shown: string;
}

async function resolveRef(ctx: ToolContext, ref: string): Promise<ResolvedTrader> {
  if (TID_RE.test(ref)) {
    const address = await ctx.tids.resolve(ctx.db, ref);
    if (!address) throw new ToolError('not_found', `unknown trader ${ref}`);
    return { address, shown: ref };
  }
  const who = await resolveTrader(ctx.db, ref);
  if (!who) throw new ToolError('not_found', `unknown trader ${getAddress(ref.toLowerCase())}: no wallet with this proxy address has traded on the venue`);
  return { address: who.address, shown: getAddress(who.address) };
}

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number.isFinite(Number(v)) ? Number(v) : null);
const iso = (v: unknown): string | null => (v === null || v === undefined ? null : v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
const annotationsFor = (title: string) => ({ title, readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });

// ---------------------------------------------------------------------------------------------------------------
// Tool specs
// ---------------------------------------------------------------------------------------------------------------

export interface ToolSpec<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> {
  name: ToolName;
  title: string;
  /** what the tool returns and its limits (the cost sentence is appended from the prices) */
  summary: string;
  input: I;
  output: O;
  /** the key of `prices` this call is charged under; null: free */
  priceKey(args: z.output<I>, prices: Readonly<Record<string, string>>): string | null;
  /** plan features an API-key caller needs for this call */
  features(args: z.output<I>): Feature[];
  run(args: z.output<I>, ctx: ToolContext): Promise<z.output<O>>;
}

function defineTool<I extends z.ZodObject, O extends z.ZodObject>(spec: ToolSpec<I, O>): ToolSpec {
  return spec as unknown as ToolSpec;
}

// --- list_presets ------------------------------------------------------------------------------------------------

const ListPresetsOutput = z.object({
  presets: z.array(
    z.object({
      slug: z.string(),
      title: z.string(),
      purpose: z.string(),
      forecasting: z.boolean(),
      gates: z.array(z.object({ label: z.string(), condition: z.string() })),
      normalized_weights: z.record(z.string(), z.number()),
    }),
  ),
  metrics: z.array(z.object({ id: z.string(), better: z.enum(['higher', 'lower']), description: z.string() })),
  gate_fields: z.array(z.object({ field: z.string(), type: z.enum(['number', 'boolean']) })),
  smart_money_tags: z.array(z.string()),
});

const listPresets = defineTool({
  name: 'list_presets',
  title: 'List ranking presets',
  summary:
    'Lists the named ranking presets (slug, title, purpose, gates, metric weights) plus the metric catalogue, gateable fields and smart-money tags a custom rank_traders config can use. Small, static answer; call it before rank_traders.',
  input: z.strictObject({}),
  output: ListPresetsOutput,
  priceKey: () => null,
  features: () => [],
  run: async () => ({
    presets: presetList().map((p) => ({ slug: p.slug, title: p.title, purpose: p.purpose, forecasting: p.forecasting, gates: p.gates, normalized_weights: p.normalized_weights })),
    metrics: METRIC_IDS.map((id) => ({ id, better: METRICS[id].better, description: METRICS[id].description })),
    gate_fields: Object.entries(GATE_FIELDS).map(([field, g]) => ({ field, type: g.type })),
    smart_money_tags: [...SMART_MONEY_TAGS],
  }),
});

// --- rank_traders ------------------------------------------------------------------------------------------------

const PRESET_SLUGS = PRESETS.map((p) => p.slug) as [string, ...string[]];
const Verdict = z.object({ overall: z.number(), tone: z.enum(['good', 'caution', 'bad']), title: z.string(), copyRecommended: z.boolean(), copiesBadly: z.boolean() });

export const RankRow = z.object({
  rank: z.number().int(),
  proxy_wallet: z.string().describe('EIP-55 proxy wallet of the row (a user with several wallets: its best-scoring one)'),
  label: z.string().describe('username, else the venue pseudonym'),
  verified: z.boolean(),
  composite_score: z.number().describe('0-100: weighted mean of the measured metric percentiles'),
  breakdown: z.record(z.string(), z.number().nullable()).describe('percentile (0-100) per weighted or extra metric within the gated cohort; null = not measured'),
  realized_pnl: z.number(),
  lifetime_volume_usdc: z.number(),
  trade_count: z.number().int(),
  markets_traded: z.number().int(),
  win_rate_pct: z.number().nullable().describe('null = no resolved position (unmeasured), never 0'),
  brier: z.number().nullable().describe('null = unmeasured'),
  last_trade_at: z.string(),
  verdict: Verdict,
  wallet_count: z.number().int(),
  cluster_size: z.number().int().describe('wallets trading in lockstep with this one (1 = none)'),
});
export type RankRow = z.infer<typeof RankRow>;

const RankTradersOutput = z.object({
  kind: z.enum(['preset', 'custom']),
  preset: z.string().nullable(),
  title: z.string().nullable(),
  as_of: z.string().describe('as-of time of the analytics build the ranking is scored on'),
  snapshot_age_seconds: z.number().int(),
  total_rows: z.number().int(),
  cohort_size: z.number().int(),
  gated_out_count: z.number().int(),
  normalized_weights: z.record(z.string(), z.number()),
  gates: z.array(z.object({ label: z.string(), condition: z.string(), dropped: z.number().int(), remaining: z.number().int() })),
  offset: z.number().int(),
  rows: z.array(RankRow).max(RANK_ROWS_MAX),
  rows_capped_at: z.number().int(),
  next_cursor: z.string().nullable(),
  truncated: Truncated,
});
type RankTradersOutput = z.infer<typeof RankTradersOutput>;

const RankOverrides = z.strictObject({
  active_within_days: z.number().int().min(1).max(3650).optional().describe('only wallets that traded in the last N days'),
  best_category: z.string().max(40).optional().describe('only wallets whose best category is this (e.g. politics, sports)'),
  sort_by: z.union([z.literal('composite'), MetricIdSchema]).optional().describe('re-sort the board by one metric (ranks renumbered)'),
  extra_metrics: z.array(MetricIdSchema).max(METRIC_IDS.length).optional().describe('extra metric percentiles per row (API-key callers need a plan with extra_metrics)'),
});

const RankInput = z.strictObject({
  preset: z.enum(PRESET_SLUGS).optional().describe(`a preset slug (list_presets); give preset or config, not both; with neither, the flagship preset ${FLAGSHIP_PRESET}`),
  overrides: RankOverrides.optional().describe('with preset only: narrow or re-sort the stored board'),
  config: RankingConfig.omit({ limit: true, offset: true }).optional().describe('a custom ranking: cohort filters, gates, metric weights (list_presets lists the ids)'),
  limit: z.number().int().min(1).max(RANK_ROWS_MAX).default(10).describe(`rows per page, 1-${RANK_ROWS_MAX}`),
  cursor: z.string().max(200).optional().describe('next_cursor of the previous page of the same ranking'),
});

const RankCursor = z.strictObject({ v: z.literal(1), o: z.number().int().min(0).max(100_000), h: z.string() });

function rankingHash(args: z.output<typeof RankInput>): string {
  return createHash('sha256').update(JSON.stringify({ p: args.preset ?? null, ov: args.overrides ?? null, c: args.config ?? null })).digest('base64url').slice(0, 16);
}

function compactRow(r: RankingResponse['rows'][number]): RankRow {
  return {
    rank: r.rank,
    proxy_wallet: r.proxy_wallet,
    label: r.display.username ?? r.display.pseudonym,
    verified: r.display.verified,
    composite_score: r.composite_score,
    breakdown: r.breakdown,
    realized_pnl: r.realized_pnl,
    lifetime_volume_usdc: r.lifetime_volume_usdc,
    trade_count: r.trade_count,
    markets_traded: r.markets_traded,
    win_rate_pct: r.win_rate_pct,
    brier: r.brier,
    last_trade_at: r.last_trade_at,
    verdict: { overall: r.verdict.overall, tone: r.verdict.tone, title: r.verdict.title, copyRecommended: r.verdict.copyRecommended, copiesBadly: r.verdict.copiesBadly },
    wallet_count: r.wallet_count,
    cluster_size: r.cluster_size,
  };
}

const rankTraders = defineTool({
  name: 'rank_traders',
  title: 'Rank traders',
  summary:
    `Ranks the venue's traders by skill: a named preset (list_presets) with optional overrides, or a custom config (cohort filters, gates, metric weights); called with no arguments, it ranks by the flagship preset ${FLAGSHIP_PRESET} (wallets whose picks beat the price by the most standard errors), 10 rows. Returns compact rows (rank, EIP-55 proxy wallet, composite 0-100, per-metric percentiles, P&L, volume, win rate and Brier — null means unmeasured, never 0 — copy verdict), the cohort size and how many wallets each gate dropped. At most ${RANK_ROWS_MAX} rows per call (default 10); page with next_cursor. Scored on the latest analytics build (as_of, snapshot_age_seconds).`,
  input: RankInput,
  output: RankTradersOutput,
  priceKey: (a, prices) => (a.config ? (prices['rank_traders.custom'] !== undefined ? 'rank_traders.custom' : 'rank_traders') : 'rank_traders'),
  features: (a) => ((a.overrides?.extra_metrics?.length ?? 0) > 0 || (a.config?.extra_metrics?.length ?? 0) > 0 ? ['extra_metrics'] : []),
  run: async (args, ctx): Promise<RankTradersOutput> => {
    if (args.preset !== undefined && args.config !== undefined) throw new ToolError('invalid_request', 'give either preset (a slug from list_presets) or config (a custom ranking), not both');
    // the fewest arguments an agent can send rank by the flagship board (same cursor as naming it)
    const a = args.config === undefined && args.preset === undefined ? { ...args, preset: FLAGSHIP_PRESET } : args;
    if (a.overrides && !a.preset) throw new ToolError('invalid_request', 'overrides apply to a preset; put cohort filters and sort_by in config for a custom ranking');
    const hash = rankingHash(a);
    let offset = 0;
    if (a.cursor !== undefined) {
      let c: z.infer<typeof RankCursor>;
      try {
        c = RankCursor.parse(JSON.parse(Buffer.from(a.cursor, 'base64url').toString('utf8')));
      } catch {
        throw new ToolError('invalid_request', 'invalid cursor');
      }
      if (c.h !== hash) throw new ToolError('invalid_request', 'invalid cursor: it belongs to another ranking (same preset, overrides and config are needed)');
      offset = c.o;
    }
    const { T, build } = await asOfNow(ctx);
    const r = a.preset
      ? // no heads in memory: the tool read its as-of from its snapshot above, and the board must be of that version
        await presetRanking(ctx.db, a.preset, { ...(a.overrides ?? {}), limit: a.limit, offset }, T)
      : await customRanking(ctx.db, { ...a.config!, limit: a.limit, offset }, T, undefined, ctx.rankers);
    const preset = a.preset ? PRESETS.find((p) => p.slug === a.preset)! : null;
    const rows = r.rows.map(compactRow);
    const build_ = (kept: RankRow[], truncated: Truncated): RankTradersOutput => ({
      kind: preset ? 'preset' : 'custom',
      preset: preset?.slug ?? null,
      title: preset?.title ?? null,
      as_of: (build ?? T).toISOString(),
      snapshot_age_seconds: r.snapshot_age_seconds,
      total_rows: r.total_rows,
      cohort_size: r.cohort_size,
      gated_out_count: r.gated_out_count,
      normalized_weights: r.normalized_weights,
      gates: r.explain.gates,
      offset,
      rows: kept,
      rows_capped_at: RANK_ROWS_MAX,
      next_cursor:
        offset + kept.length < r.total_rows ? Buffer.from(JSON.stringify({ v: 1, o: offset + kept.length, h: hash }), 'utf8').toString('base64url') : null,
      truncated,
    });
    const { kept } = fitPrefix(rows, (k) => build_(k, null));
    return build_(rows.slice(0, kept), kept < rows.length ? { reason: sizeReason, requested: a.limit, returned: kept } : null);
  },
});

// --- get_trader --------------------------------------------------------------------------------------------------

const TRADER_SECTIONS = ['profile', 'calibration', 'playbook', 'copy_fitness'] as const;

const Profile = z.object({
  label: z.string(),
  username: z.string().nullable(),
  pseudonym: z.string(),
  verified: z.boolean(),
  /** null: no metrics in the analytics build (no fill as of the build) */
  metrics: z
    .object({
      labels_as_of: z.string(),
      trade_count: z.number().int(),
      markets_traded: z.number().int(),
      lifetime_volume_usdc: z.number(),
      realized_pnl: z.number().nullable(),
      total_pnl: z.number().nullable(),
      win_rate_pct: z.number().nullable(),
      n_resolved_markets: z.number().int(),
      calibration_ranked: z.boolean(),
      calibration_excess_z: z.number().nullable(),
      calibration_excess_z_pctile: z.number().nullable(),
      brier: z.number().nullable(),
      smart_money_tags: z.array(z.string()),
      first_trade_at: z.string().nullable(),
      last_trade_at: z.string().nullable(),
      cluster_size: z.number().int(),
    })
    .nullable()
    .describe('headline figures of the analytics build; null when the wallet has no metrics there; a null figure is unmeasured, never 0'),
});

const GetTraderOutput = z.object({
  trader: z.string().describe('EIP-55 proxy wallet, or the tid it was asked by'),
  as_of: z.string(),
  sections: z.array(z.enum(TRADER_SECTIONS)),
  profile: Profile.optional(),
  calibration: TraderCalibration.optional(),
  playbook: TraderPlaybook.optional(),
  copy_fitness: CopyFitness.optional(),
});
type GetTraderOutput = z.infer<typeof GetTraderOutput>;

async function profileOf(ctx: ToolContext, address: string, build: Date | null): Promise<z.infer<typeof Profile>> {
  const [w] = await ctx.db.all<Record<string, unknown>>(`SELECT wallet_id, username, pseudonym, verified FROM wallets WHERE address = $1 LIMIT 1`, [address]);
  if (!w) throw new ToolError('not_found', `unknown trader ${getAddress(address)}`);
  const base = { label: (w.username as string | null) ?? String(w.pseudonym), username: (w.username as string | null) ?? null, pseudonym: String(w.pseudonym), verified: Boolean(w.verified) };
  if (!build) return { ...base, metrics: null };
  const [t] = await ctx.db.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM information_schema.tables WHERE table_name = 'a_rank_base'`);
  const [m] = await ctx.db.all<Record<string, unknown>>(
    `SELECT m.*, ${Number(t?.n) > 0 ? '(SELECT cluster_size FROM a_rank_base rb WHERE rb.wallet_id = m.wallet_id)' : '1'} AS cluster_size,
      (SELECT calibration_excess_z_pctile FROM a_wallet_pctiles pc WHERE pc.wallet_id = m.wallet_id) AS calibration_excess_z_pctile
    FROM a_wallet_metrics m WHERE m.wallet_id = ${Number(w.wallet_id)}`,
  );
  if (!m) return { ...base, metrics: null };
  const ranked = Boolean(m.calibration_ranked);
  return {
    ...base,
    metrics: {
      labels_as_of: build.toISOString(),
      trade_count: Number(m.trade_count ?? 0),
      markets_traded: Number(m.markets_traded ?? 0),
      lifetime_volume_usdc: Number(m.lifetime_volume_usdc ?? 0),
      realized_pnl: numOrNull(m.realized_pnl),
      total_pnl: numOrNull(m.total_pnl),
      win_rate_pct: numOrNull(m.win_rate_pct),
      n_resolved_markets: Number(m.n_resolved_markets ?? 0),
      calibration_ranked: ranked,
      // below the resolved-market minimum the calibration is unmeasured: null, never a score
      calibration_excess_z: ranked ? numOrNull(m.calibration_excess_z) : null,
      calibration_excess_z_pctile: ranked ? numOrNull(m.calibration_excess_z_pctile) : null,
      brier: numOrNull(m.brier),
      smart_money_tags: ((m.smart_money_tags as string[] | null) ?? []).map(String),
      first_trade_at: iso(m.first_trade_at),
      last_trade_at: iso(m.last_trade_at),
      cluster_size: Number(m.cluster_size ?? 1),
    },
  };
}

const getTrader = defineTool({
  name: 'get_trader',
  title: 'Get a trader',
  summary:
    `One trader by proxy wallet or search tid, in the sections asked for (default profile + playbook): profile (headline P&L, volume, win rate, calibration z and percentile, smart-money tags; null = unmeasured), calibration (10 bins of entry price vs outcome, Brier, calibration excess; scope all|30d|90d|365d|category:<name>), playbook (categories, entry band, holds, style, clips, rhythm, edge, 3-5 plain rules), copy_fitness (hold times, entry prices, taker share, clip sizes, liquidity, verdict, budget fit for follower_budget_usd, default ${BUDGET_RULES.defaultBudgetUsd}). As of now, no lookahead. Asked by tid, the wallet stays masked. API-key callers need a plan with metrics_full for copy_fitness. All four sections together stay under ${MAX_RESULT_CHARS.toLocaleString('en-US')} characters.`,
  input: z.strictObject({
    trader: TraderRef,
    sections: z.array(z.enum(TRADER_SECTIONS)).min(1).max(TRADER_SECTIONS.length).default(['profile', 'playbook']).describe('any of profile, calibration, playbook, copy_fitness'),
    calibration_scope: CalibrationScope.optional().describe('calibration section: all (default), 30d, 90d, 365d or category:<name>'),
    follower_budget_usd: z.number().positive().max(1e9).optional().describe('copy_fitness section: the follower budget to fit'),
  }),
  output: GetTraderOutput,
  priceKey: () => 'get_trader',
  features: (a) => (a.sections.includes('copy_fitness') ? ['metrics_full'] : []),
  run: async (a, ctx): Promise<GetTraderOutput> => {
    const who = await resolveRef(ctx, a.trader);
    const { T, build } = await asOfNow(ctx);
    const sections = [...new Set(a.sections)];
    const out: GetTraderOutput = { trader: who.shown, as_of: T.toISOString(), sections };
    const gone = () => new ToolError('not_found', `unknown trader ${who.shown}`);
    for (const s of sections) {
      if (s === 'profile') out.profile = await profileOf(ctx, who.address, build);
      if (s === 'calibration') {
        const c = await traderCalibration(ctx.db, who.address, T, a.calibration_scope ?? 'all');
        if (!c) throw gone();
        out.calibration = { ...c, proxy_wallet: who.shown };
      }
      if (s === 'playbook') {
        const p = await traderPlaybook(ctx.db, who.address, T);
        if (!p) throw gone();
        out.playbook = { ...p, proxy_wallet: who.shown };
      }
      if (s === 'copy_fitness') {
        const c = await copyFitness(ctx.db, who.address, T, a.follower_budget_usd === undefined ? {} : { followerBudgetUsd: a.follower_budget_usd });
        if (!c) throw gone();
        out.copy_fitness = { ...c, proxy_wallet: who.shown };
      }
    }
    return out;
  },
});

// --- get_trader_positions ----------------------------------------------------------------------------------------

const PositionsOutput = z.object({
  trader: z.string(),
  as_of: z.string(),
  total_rows: z.number().int().describe('positions matching the status filter, over all pages'),
  rows: z.array(TraderPosition).max(POSITIONS_LIMIT.max),
  next_cursor: z.string().nullable(),
  truncated: Truncated,
});
type PositionsOutput = z.infer<typeof PositionsOutput>;

const getTraderPositions = defineTool({
  name: 'get_trader_positions',
  title: "Get a trader's positions",
  summary: `One trader's positions (per market and outcome: status OPEN|WON|LOST|REDEEMABLE|VOID, winner_outcome, shares, average and entry price, cost, mark, realized / unrealized / total P&L, dates), newest activity first, as of now. Optional status filter; limit ${POSITIONS_LIMIT.min}-${POSITIONS_LIMIT.max} (default ${POSITIONS_LIMIT.default}), fewer when a page would exceed the size cap (see truncated); page with next_cursor (it pins the first page's time).`,
  input: z.strictObject({
    trader: TraderRef,
    status: z.array(z.enum(POSITION_STATUSES)).min(1).max(POSITION_STATUSES.length).optional().describe('keep these statuses; all when omitted'),
    limit: z.number().int().min(POSITIONS_LIMIT.min).max(POSITIONS_LIMIT.max).default(POSITIONS_LIMIT.default),
    cursor: z.string().max(1024).optional().describe('next_cursor of the previous page'),
  }),
  output: PositionsOutput,
  priceKey: () => 'get_trader_positions',
  features: () => [],
  run: async (a, ctx): Promise<PositionsOutput> => {
    const who = await resolveRef(ctx, a.trader);
    const { T } = await asOfNow(ctx);
    const { page, truncated } = await fitPage(
      a.limit,
      async (limit) => {
        const p = await traderPositions(ctx.db, who.address, T, { status: a.status, limit, cursor: a.cursor });
        if (!p) throw new ToolError('not_found', `unknown trader ${who.shown}`);
        return p;
      },
      (p) => p.rows.length,
    );
    return { trader: who.shown, as_of: page.as_of, total_rows: page.total_rows, rows: page.rows, next_cursor: page.next_cursor, truncated };
  },
});

// --- get_market --------------------------------------------------------------------------------------------------

const MARKET_SECTIONS = ['teaser', 'flow', 'consensus'] as const;

const ConsensusSection = MarketConsensus.extend({
  top_holders: z.array(PublicTopHolder).max(MARKET_TOP_HOLDERS),
  note: z.string(),
});

const GetMarketOutput = z.object({
  condition_id: z.string(),
  as_of: z.string(),
  sections: z.array(z.enum(MARKET_SECTIONS)),
  teaser: PublicMarketTeaser.optional(),
  flow: MarketFlow.optional(),
  consensus: ConsensusSection.optional(),
});
type GetMarketOutput = z.infer<typeof GetMarketOutput>;

const getMarket = defineTool({
  name: 'get_market',
  title: 'Get a market',
  summary: `One market by condition id, in the sections asked for (default all): teaser (title, state, winner, YES mid and its age, 24 h volume and fills, holders and smart-money holders, consensus, top 5 holders by pseudonym), flow (net buying and selling by cohort — liquidity providers, sharp, whale, other smart money, everyone else — per outcome over window_hours, default ${DEFAULT_FLOW_WINDOW_HOURS}, at most ${MAX_FLOW_WINDOW_HOURS}; mid change over the window), consensus (the Brier-weighted YES cost basis of current holders — a cost basis, not a forecast — with the mid and the top ${MARKET_TOP_HOLDERS} holders by pseudonym). Wallet labels come from the analytics build; as of now.`,
  input: z.strictObject({
    condition_id: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'condition_id must be 0x followed by 64 hex digits').describe('the market condition id, 0x + 64 hex'),
    sections: z.array(z.enum(MARKET_SECTIONS)).min(1).max(MARKET_SECTIONS.length).default(['teaser', 'flow', 'consensus']),
    window_hours: z.number().positive().max(MAX_FLOW_WINDOW_HOURS).default(DEFAULT_FLOW_WINDOW_HOURS).describe('flow section: the window in hours'),
  }),
  output: GetMarketOutput,
  priceKey: () => 'get_market',
  features: () => [],
  run: async (a, ctx): Promise<GetMarketOutput> => {
    const conditionId = a.condition_id.toLowerCase();
    const marketId = await marketIdByConditionId(ctx.db, conditionId);
    if (marketId === null) throw new ToolError('not_found', `unknown market ${conditionId}`);
    const { T } = await asOfNow(ctx);
    const sections = [...new Set(a.sections)];
    const out: GetMarketOutput = { condition_id: conditionId, as_of: T.toISOString(), sections };
    for (const s of sections) {
      if (s === 'teaser') out.teaser = await publicMarketTeaser(ctx.db, conditionId, T);
      if (s === 'flow') out.flow = await marketFlow(ctx.db, marketId, T, a.window_hours);
      if (s === 'consensus') {
        const c = await marketConsensus(ctx.db, marketId, T);
        const holders = toPublicTopHolders(await topHolders(ctx.db, marketId, T, MARKET_TOP_HOLDERS));
        out.consensus = { ...c, top_holders: holders, note: 'service_consensus_yes is the Brier-weighted average price current holders paid for YES: a cost basis, not a forecast' };
      }
    }
    return out;
  },
});

// --- get_smart_money_signals -------------------------------------------------------------------------------------

const SignalsOutput = SmartMoneySignals.extend({ truncated: Truncated });
type SignalsOutput = z.infer<typeof SignalsOutput>;

const getSignals = defineTool({
  name: 'get_smart_money_signals',
  title: 'Get smart-money signals',
  summary: `Recent smart-money signals, newest first: taker fills of at least 5,000 USD by wallets with a positive smart-money tag (whale, sharp, early_bird, contrarian). Each carries signal_type (large_buy when the taker bought the outcome token, exit when it sold), trader_proxy, smart_money_tags, condition_id, title, outcome_side, price, size_usdc, tx_hash, ts and log_index — the webhook event signal.smart_money's data. Window since_hours ${SIGNALS_SINCE_HOURS.min}-${SIGNALS_SINCE_HOURS.max} (default ${SIGNALS_SINCE_HOURS.default}) before now; filters by tags, signal types, one market; limit ${SIGNALS_MCP_LIMIT.min}-${SIGNALS_MCP_LIMIT.max} (default ${SIGNALS_MCP_LIMIT.default}); page with next_cursor. Tags come from the analytics build (labels_as_of).`,
  input: z.strictObject({
    since_hours: z.number().int().min(SIGNALS_SINCE_HOURS.min).max(SIGNALS_SINCE_HOURS.max).default(SIGNALS_SINCE_HOURS.default),
    limit: z.number().int().min(SIGNALS_MCP_LIMIT.min).max(SIGNALS_MCP_LIMIT.max).default(SIGNALS_MCP_LIMIT.default),
    tags: z.array(z.enum(SMART_MONEY_TAGS)).min(1).max(SMART_MONEY_TAGS.length).optional().describe('keep signals whose wallet has any of these tags'),
    signal_types: z.array(z.enum(SIGNAL_TYPES)).min(1).max(SIGNAL_TYPES.length).optional(),
    condition_id: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'condition_id must be 0x followed by 64 hex digits').optional().describe('one market'),
    cursor: z.string().max(512).optional().describe('next_cursor of the previous page'),
  }),
  output: SignalsOutput,
  priceKey: () => 'get_smart_money_signals',
  features: () => [],
  run: async (a, ctx): Promise<SignalsOutput> => {
    const { T } = await asOfNow(ctx);
    const { page, truncated } = await fitPage(
      a.limit,
      (limit) => smartMoneySignals(ctx.db, T, { sinceHours: a.since_hours, limit, tags: a.tags, signalTypes: a.signal_types, conditionId: a.condition_id, cursor: a.cursor }),
      (p) => p.signals.length,
    );
    return { ...page, truncated };
  },
});

// --- search ------------------------------------------------------------------------------------------------------

const search = defineTool({
  name: 'search',
  title: 'Search traders, events and markets',
  summary: `Finds traders (by username or proxy wallet), events and markets (by text, slug, condition id or token id). Traders come back as an opaque tid (never the wallet) with label and headline P&L / volume: pass the tid to get_trader or get_trader_positions. Markets come back with their condition_id for get_market. q up to ${SEARCH_QUERY_MAX} characters; limit ${SEARCH_LIMIT.min}-${SEARCH_LIMIT.max} (default ${SEARCH_LIMIT.default}).`,
  input: z.strictObject({
    q: z.string().trim().min(1).max(SEARCH_QUERY_MAX).describe('an address, condition id, token id, username or market text'),
    limit: z.number().int().min(SEARCH_LIMIT.min).max(SEARCH_LIMIT.max).default(SEARCH_LIMIT.default),
  }),
  output: PublicSearch,
  priceKey: () => null,
  features: () => [],
  run: async (a, ctx) => publicSearch(ctx.db, a.q, a.limit, ctx.now(), ctx.tids),
});

/** Every tool, in catalog order. */
export const TOOLS: readonly ToolSpec[] = [listPresets, rankTraders, getTrader, getTraderPositions, getMarket, getSignals, search];

export function toolSpec(name: ToolName): ToolSpec {
  const t = TOOLS.find((x) => x.name === name);
  if (!t) throw new Error(`no tool ${name}`);
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// Prices and descriptions
// ---------------------------------------------------------------------------------------------------------------

const PRICE_RE = /^(0|[1-9]\d{0,5})(\.\d{1,6})?$/;

/** Throws unless every paid tool has a price (USD, a decimal string such as "0.01"). */
export function checkPrices(prices: Readonly<Record<string, string>>): void {
  for (const k of [...PAID_PRICE_KEYS, ...OPTIONAL_PRICE_KEYS]) {
    const p = prices[k];
    if (p === undefined) {
      if ((OPTIONAL_PRICE_KEYS as readonly string[]).includes(k)) continue;
      throw new Error(`no price for the paid MCP tool ${k}`);
    }
    if (!PRICE_RE.test(p)) throw new Error(`the price of ${k} must be a decimal USD amount such as "0.01", got ${JSON.stringify(p)}`);
  }
}

export function costSentence(spec: ToolSpec, prices: Readonly<Record<string, string>>): string {
  if (FREE_TOOLS.includes(spec.name)) return 'Cost: free.';
  const base = prices[spec.name];
  const custom = spec.name === 'rank_traders' ? prices['rank_traders.custom'] : undefined;
  const price = custom !== undefined && custom !== base ? `$${base} per call with a preset, $${custom} with a custom config` : `$${base} per call`;
  return `Cost: ${price} for keyless callers over HTTP (x402: pay in _meta["x402/payment"], receipt in _meta["x402/payment-response"]); free with an API key (Authorization: Bearer) within its plan, and over stdio.`;
}

export function toolDescription(spec: ToolSpec, prices: Readonly<Record<string, string>>): string {
  return `${spec.summary} ${costSentence(spec, prices)}`;
}

export interface CatalogEntry {
  name: ToolName;
  title: string;
  description: string;
  /** USD per call for keyless HTTP callers; null: free */
  price_usd: string | null;
  /** rank_traders with a custom config, when priced apart */
  price_usd_custom?: string;
}

/** The tool catalog (names, descriptions, prices) for docs and /x402/info-style listings. */
export function mcpToolCatalog(prices: Readonly<Record<string, string>> = DEFAULT_TOOL_PRICES): CatalogEntry[] {
  return TOOLS.map((t) => {
    const free = FREE_TOOLS.includes(t.name);
    const e: CatalogEntry = { name: t.name, title: t.title, description: toolDescription(t, prices), price_usd: free ? null : (prices[t.name] ?? null) };
    if (t.name === 'rank_traders' && prices['rank_traders.custom'] !== undefined) e.price_usd_custom = prices['rank_traders.custom'];
    return e;
  });
}

export { annotationsFor };

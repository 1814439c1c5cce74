/**
 * Rankings in memory: the rank base (one row per wallet with a fill) as typed columns, and for every metric the
 * order of its measured rows, kept from one analytics version to the next. A ranking — a preset's board or any
 * custom RankingConfig — is then a few linear passes over 2.8M rows instead of a sort per metric:
 *
 *  1. cohort and gates: one pass marks the gated rows (and counts the explain funnel as it goes);
 *  2. percentiles: for each weighted metric, one pass over its precomputed order counts the gated rows seen so far,
 *     which is exactly percent_rank within the gated cohort's measured rows (ties share a rank);
 *  3. composite = sum(w * pct) / sum(w) over the row's measured weighted metrics, rounded as the SQL does;
 *  4. one row per user (its best-scoring wallet), then the page by selection (no full sort).
 *
 * It computes what boardSql (core/rankings.ts, the SQL definition) computes; test/core/ranking-engine.test.ts holds
 * the two equal on random configs. Pure: no I/O; the caller loads the columns (rankingColumnsSql) and reads the
 * display fields of the page's rows.
 */
import { GATE_FIELDS, METRIC_IDS, METRICS, type ExplainCounts, type GateField, type MetricId, type Ranker, type RankingConfig } from './rankings.ts';
import type { ColumnarRunner } from './query.ts';
import { SMART_MONEY_TAGS } from './tags.ts';

const DAY_US = 86_400_000_000;

/** SQL (a SELECT over a_rank_base) of every column the engine reads, in wallet order. */
export function rankingColumnsSql(base = 'a_rank_base'): string {
  const metricCols = METRIC_IDS.map((id) => {
    const m = METRICS[id];
    return `coalesce((${m.measured}), false) AS "ms_${id}", coalesce((${m.value})::DOUBLE, 'NaN'::DOUBLE) AS "val_${id}"`;
  });
  const gateCols = (Object.keys(GATE_FIELDS) as GateField[]).map((f) => `coalesce((${GATE_FIELDS[f].sql})::DOUBLE, 'NaN'::DOUBLE) AS "gate_${f}"`);
  const tags = SMART_MONEY_TAGS.map((t, i) => `CASE WHEN list_contains(smart_money_tags, '${t}') THEN ${1 << i} ELSE 0 END`).join(' + ');
  return `SELECT wallet_id, (dense_rank() OVER (ORDER BY user_key) - 1)::INTEGER AS user_code,
      coalesce(trade_count, 0)::DOUBLE AS trade_count, coalesce(epoch_us(last_trade_at)::DOUBLE, 'NaN'::DOUBLE) AS last_trade_us,
      coalesce(list_position(${categoriesListSql(base)}, best_category) - 1, -1)::INTEGER AS category_code,
      coalesce(lifetime_volume_usdc, 'NaN'::DOUBLE) AS lifetime_volume_usdc,
      (${tags})::INTEGER AS tag_bits, coalesce(cluster_size, 1)::INTEGER AS cluster_size,
      ${[...metricCols, ...gateCols].join(',\n      ')}
    FROM ${base} WHERE trade_count > 0 ORDER BY wallet_id`;
}

/** SQL of the best categories present, as a sorted list (their codes are positions in it). */
export function categoriesListSql(base = 'a_rank_base'): string {
  return `(SELECT coalesce(list(DISTINCT best_category ORDER BY best_category), []) FROM ${base} WHERE best_category IS NOT NULL)`;
}

/** The rank base as columns (row i is the i-th wallet in wallet order). NaN stands for SQL NULL. */
export interface RankColumns {
  n: number;
  walletId: Int32Array;
  /** users: rows of one user share a code (a wallet without a user is its own user) */
  userCode: Int32Array;
  tradeCount: Float64Array;
  lastTradeUs: Float64Array;
  bestCategory: Int32Array;
  categories: string[];
  volume: Float64Array;
  tagBits: Int32Array;
  clusterSize: Int32Array;
  measured: Record<MetricId, Uint8Array>;
  value: Record<MetricId, Float64Array>;
  gate: Record<GateField, Float64Array>;
}


/** A ranked page: row indices in rank order with their composite and breakdown percentiles. */
export interface RankedPage {
  rows: number[];
  ranks: number[];
  composite: number[];
  /** per breakdown metric: the page rows' percentile within the gated cohort (null = not measured) */
  pct: Partial<Record<MetricId, (number | null)[]>>;
  explain: ExplainCounts;
}

const round9 = (x: number) => Math.round(x * 1e9) / 1e9;

const OPS: Record<string, (a: number, b: number) => boolean> = {
  gte: (a, b) => a >= b,
  gt: (a, b) => a > b,
  lte: (a, b) => a <= b,
  lt: (a, b) => a < b,
  eq: (a, b) => a === b,
  ne: (a, b) => a !== b,
};

export class RankingEngine {
  /** per metric: measured rows sorted by value ascending */
  private readonly order: Record<MetricId, Int32Array>;
  /** users with several rows: user code -> rows */
  private readonly multi: Map<number, number[]>;

  constructor(readonly cols: RankColumns) {
    this.order = {} as Record<MetricId, Int32Array>;
    for (const id of METRIC_IDS) this.order[id] = sortedMeasured(cols.measured[id], cols.value[id]);
    const byUser = new Map<number, number[]>();
    for (let i = 0; i < cols.n; i++) {
      const u = cols.userCode[i]!;
      const list = byUser.get(u);
      if (list) list.push(i);
      else byUser.set(u, [i]);
    }
    this.multi = new Map([...byUser].filter(([, rows]) => rows.length > 1));
  }

  /** The row of a wallet (binary search: rows are in wallet order), or -1. */
  rowOf(walletId: number): number {
    const w = this.cols.walletId;
    let lo = 0;
    let hi = this.cols.n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const v = w[mid]!;
      if (v === walletId) return mid;
      if (v < walletId) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Rows in the cohort (1) before the gates; `gateMask` then keeps those passing every gate, counting the funnel. */
  private cohort(cfg: RankingConfig, asOfUs: number): Uint8Array {
    const c = this.cols;
    const mask = new Uint8Array(c.n);
    const co = cfg.cohort;
    const since = co.active_within_days !== undefined ? asOfUs - co.active_within_days * DAY_US : Number.NEGATIVE_INFINITY;
    // -2: no category filter; a category absent from the base matches no row (not the rows without a category, -1)
    const present = co.best_category !== undefined ? c.categories.indexOf(co.best_category) : -2;
    const cat = present === -1 ? -3 : present;
    let tagMask = 0;
    for (const t of co.tags_any ?? []) tagMask |= 1 << SMART_MONEY_TAGS.indexOf(t);
    for (let i = 0; i < c.n; i++) {
      if (!(c.tradeCount[i]! > 0)) continue;
      if (co.active_within_days !== undefined && !(c.lastTradeUs[i]! > since)) continue;
      if (cat !== -2 && c.bestCategory[i] !== cat) continue;
      if (co.min_trades !== undefined && !(c.tradeCount[i]! >= co.min_trades)) continue;
      if (co.min_volume_usdc !== undefined && !(c.volume[i]! >= co.min_volume_usdc)) continue;
      if (tagMask && !(c.tagBits[i]! & tagMask)) continue;
      if (co.exclude_clusters && c.clusterSize[i] !== 1) continue;
      mask[i] = 1;
    }
    return mask;
  }

  /** Apply the gates in order to the cohort mask (in place); the rows remaining after each. */
  private gates(cfg: RankingConfig, mask: Uint8Array): { cohort: number; counts: number[] } {
    const c = this.cols;
    let cohort = 0;
    for (let i = 0; i < c.n; i++) cohort += mask[i]!;
    const counts: number[] = [];
    for (const g of cfg.gates) {
      const col = c.gate[g.field];
      const op = OPS[g.op]!;
      const v = typeof g.value === 'boolean' ? (g.value ? 1 : 0) : g.value;
      let left = 0;
      for (let i = 0; i < c.n; i++) {
        if (!mask[i]) continue;
        const x = col[i]!;
        // a null fails every gate (SQL: coalesce(field op value, false))
        if (Number.isNaN(x) || !op(x, v)) mask[i] = 0;
        else left++;
      }
      counts.push(left);
    }
    return { cohort, counts };
  }

  /** percent_rank (0-100) of every gated measured row of a metric; NaN elsewhere. One pass over its order. */
  private percentiles(id: MetricId, mask: Uint8Array): Float64Array {
    const c = this.cols;
    const out = new Float64Array(c.n).fill(Number.NaN);
    const order = this.order[id];
    const val = c.value[id];
    let n = 0;
    for (let k = 0; k < order.length; k++) if (mask[order[k]!]) n++;
    if (n === 0) return out;
    const higherBetter = METRICS[id].better === 'higher';
    // walk in the direction of the SQL ORDER BY: ascending for higher-is-better, descending otherwise
    let seen = 0;
    let rank = 0;
    let prev = Number.NaN;
    const len = order.length;
    for (let k = 0; k < len; k++) {
      const i = order[higherBetter ? k : len - 1 - k]!;
      if (!mask[i]) continue;
      const v = val[i]!;
      if (seen === 0 || v !== prev) {
        rank = seen;
        prev = v;
      }
      out[i] = n === 1 ? 100 : (100 * rank) / (n - 1);
      seen++;
    }
    return out;
  }

  /**
   * Rank `cfg` as of T: the page [offset, offset + limit) of the board, its explain counts and the page rows'
   * breakdown percentiles (weighted metrics and extra_metrics).
   */
  rank(cfg: RankingConfig, asOfUs: number, breakdown: readonly MetricId[]): RankedPage {
    const c = this.cols;
    const mask = this.cohort(cfg, asOfUs);
    const { cohort, counts } = this.gates(cfg, mask);
    const weights = (Object.entries(cfg.weights) as [MetricId, number][]).filter(([, w]) => (w ?? 0) > 0);
    const needed = [...new Set<MetricId>([...weights.map(([id]) => id), ...breakdown])];
    const pct = new Map<MetricId, Float64Array>(needed.map((id) => [id, this.percentiles(id, mask)]));
    // composite per gated row; scored = at least one weighted metric measured
    const composite = new Float64Array(c.n).fill(Number.NaN);
    let scored = 0;
    for (let i = 0; i < c.n; i++) {
      if (!mask[i]) continue;
      let num = 0;
      let den = 0;
      for (const [id, w] of weights) {
        if (!c.measured[id][i]) continue;
        num += w * pct.get(id)![i]!;
        den += w;
      }
      if (den > 0) {
        composite[i] = round9(num / den);
        scored++;
      }
    }
    // one row per user: its best composite (ties: the smaller wallet id)
    for (const rows of this.multi.values()) {
      let best = -1;
      for (const i of rows) {
        if (Number.isNaN(composite[i]!)) continue;
        if (best < 0 || composite[i]! > composite[best]! || (composite[i] === composite[best] && c.walletId[i]! < c.walletId[best]!)) best = i;
      }
      for (const i of rows) if (i !== best) composite[i] = Number.NaN;
    }
    // the sort key: composite, or a metric's raw value (nulls last), best first unless worst_first
    const sortMetric = cfg.sort_by === 'composite' ? null : cfg.sort_by;
    const desc = sortMetric === null ? cfg.sort_dir === 'best_first' : (METRICS[sortMetric].better === 'higher') === (cfg.sort_dir === 'best_first');
    const keyOf = sortMetric === null ? composite : c.value[sortMetric];
    const candidates: number[] = [];
    for (let i = 0; i < c.n; i++) if (!Number.isNaN(composite[i]!)) candidates.push(i);
    const total = candidates.length;
    const before = (a: number, b: number) => {
      const ka = keyOf[a]!;
      const kb = keyOf[b]!;
      const na = Number.isNaN(ka);
      const nb = Number.isNaN(kb);
      if (na !== nb) return na ? 1 : -1; // nulls last, both directions
      if (!na && ka !== kb) return desc ? kb - ka : ka - kb;
      return c.walletId[a]! - c.walletId[b]!;
    };
    const want = Math.min(total, cfg.offset + cfg.limit);
    const top = selectTop(candidates, want, before);
    const pageRows = top.slice(cfg.offset, cfg.offset + cfg.limit);
    const page: RankedPage = {
      rows: pageRows,
      ranks: pageRows.map((_, k) => cfg.offset + k + 1),
      composite: pageRows.map((i) => composite[i]!),
      pct: {},
      explain: { cohort, counts, scored, total },
    };
    for (const id of breakdown) {
      const p = pct.get(id)!;
      page.pct[id] = pageRows.map((i) => (Number.isNaN(p[i]!) ? null : p[i]!));
    }
    return page;
  }
}

/** A RankingEngine over the rank base of one analytics version: the Ranker customRanking uses. */
export class VersionRanker implements Ranker {
  constructor(
    readonly version: number,
    readonly engine: RankingEngine,
  ) {}

  rankPage(cfg: RankingConfig, asOf: Date, breakdown: readonly MetricId[]): ReturnType<Ranker['rankPage']> {
    const page = this.engine.rank(cfg, asOf.getTime() * 1000, breakdown);
    const c = this.engine.cols;
    const measured: Partial<Record<MetricId, boolean[]>> = {};
    for (const id of breakdown) measured[id] = page.rows.map((i) => c.measured[id][i] === 1);
    return { walletIds: page.rows.map((i) => c.walletId[i]!), ranks: page.ranks, composite: page.composite, pct: page.pct, measured, explain: page.explain };
  }
}

/**
 * Indices of measured rows sorted by value ascending, ties in row order: the keys are sorted natively (a typed
 * array sort), then each row goes to the first free slot of its key's run (a binary search): O(n log n) without a
 * comparator call per pair.
 */
export function sortedMeasured(measured: Uint8Array, value: Float64Array): Int32Array {
  const ok = (i: number) => measured[i] === 1 && !Number.isNaN(value[i]!);
  let n = 0;
  for (let i = 0; i < measured.length; i++) if (ok(i)) n++;
  const keys = new Float64Array(n);
  let k = 0;
  for (let i = 0; i < measured.length; i++) if (ok(i)) keys[k++] = value[i]!;
  keys.sort();
  const taken = new Int32Array(n);
  const idx = new Int32Array(n);
  for (let i = 0; i < measured.length; i++) {
    if (!ok(i)) continue;
    const v = value[i]!;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (keys[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    idx[lo + taken[lo]!++] = i;
  }
  return idx;
}

/** The first `k` of `items` in `before` order, sorted (quickselect the k-th, then sort the k). */
function selectTop(items: number[], k: number, before: (a: number, b: number) => number): number[] {
  if (k <= 0) return [];
  if (k >= items.length) return items.slice().sort(before);
  const a = items.slice();
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    const pivot = a[(lo + hi) >> 1]!;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (before(a[i]!, pivot) < 0) i++;
      while (before(a[j]!, pivot) > 0) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k - 1 <= j) hi = j;
    else if (k - 1 >= i) lo = i;
    else break;
  }
  return a.slice(0, k).sort(before);
}

/** Read the rank base into columns (one scan per wallet slice of ~1M rows). */
export async function loadRankColumns(db: ColumnarRunner, base = 'a_rank_base'): Promise<RankColumns> {
  const [meta] = await db.all<{ n: number; cats: string[] }>(`SELECT (SELECT count(*) FROM ${base} WHERE trade_count > 0) AS n, ${categoriesListSql(base)} AS cats`);
  const n = Number(meta?.n ?? 0);
  const f64 = () => new Float64Array(n);
  const cols: RankColumns = {
    n,
    walletId: new Int32Array(n),
    userCode: new Int32Array(n),
    tradeCount: f64(),
    lastTradeUs: f64(),
    bestCategory: new Int32Array(n),
    categories: [...((meta?.cats as unknown as string[]) ?? [])],
    volume: f64(),
    tagBits: new Int32Array(n),
    clusterSize: new Int32Array(n),
    measured: Object.fromEntries(METRIC_IDS.map((id) => [id, new Uint8Array(n)])) as Record<MetricId, Uint8Array>,
    value: Object.fromEntries(METRIC_IDS.map((id) => [id, f64()])) as Record<MetricId, Float64Array>,
    gate: Object.fromEntries((Object.keys(GATE_FIELDS) as GateField[]).map((g) => [g, f64()])) as Record<GateField, Float64Array>,
  };
  let row = 0;
  // user codes are dense over the whole base, so they are computed once, then the columns are read in slices
  await db.run(`CREATE OR REPLACE TEMP TABLE rank_columns AS ${rankingColumnsSql(base)}`);
  const slice = 1_000_000;
  for (let off = 0; off < n; off += slice) {
    await db.scan(`SELECT * EXCLUDE (wallet_id), wallet_id::INTEGER AS wallet_id FROM rank_columns ORDER BY wallet_id LIMIT ${slice} OFFSET ${off}`, (b) => {
      const copy = <T extends Int32Array | Float64Array | Uint8Array>(dst: T, src: ArrayLike<number>) => dst.set(src as never, row);
      copy(cols.walletId, b.int('wallet_id'));
      copy(cols.userCode, b.int('user_code'));
      copy(cols.tradeCount, b.f64('trade_count'));
      copy(cols.lastTradeUs, b.f64('last_trade_us'));
      copy(cols.bestCategory, b.int('category_code'));
      copy(cols.volume, b.f64('lifetime_volume_usdc'));
      copy(cols.tagBits, b.int('tag_bits'));
      copy(cols.clusterSize, b.int('cluster_size'));
      for (const id of METRIC_IDS) {
        copy(cols.measured[id], b.u8(`ms_${id}`));
        copy(cols.value[id], b.f64(`val_${id}`));
      }
      for (const g of Object.keys(GATE_FIELDS) as GateField[]) copy(cols.gate[g], b.f64(`gate_${g}`));
      row += b.n;
    });
  }
  await db.run(`DROP TABLE IF EXISTS rank_columns`);
  return cols;
}

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
import { GATE_FIELDS, METRIC_IDS, METRICS, PRESETS, ROW_COLUMNS, RankingConfig, type ExplainCounts, type GateField, type MetricId, type Ranker } from './rankings.ts';
import type { AsOf, ColumnarRunner } from './query.ts';
import { SMART_MONEY_TAGS } from './tags.ts';

const DAY_US = 86_400_000_000;
/** Up to this many rows, page percentiles are counted in row order (pagePercentiles); beyond, by walking the orders. */
const PAGE_PASS_MAX_ROWS = 2048;
/** Rows per onRows call of a board (a writer's loop over them holds the event loop ~10 ms) */
const BOARD_SLICE_ROWS = 25_000;

/** A board's rows in rank order, a slice at a time: row indexes, composites, every metric's percentiles. */
export type BoardRows = (rows: Int32Array, composite: Float64Array, pct: Partial<Record<MetricId, Float64Array>>, firstRank: number) => void;

/** SQL (a SELECT over a_rank_base) of every column the engine reads, in wallet order. */
export function rankingColumnsSql(base = 'a_rank_base', where = 'true'): string {
  const metricCols = METRIC_IDS.map((id) => {
    const m = METRICS[id];
    return `coalesce((${m.measured}), false) AS "ms_${id}", coalesce((${m.value})::DOUBLE, 'NaN'::DOUBLE) AS "val_${id}"`;
  });
  const gateCols = (Object.keys(GATE_FIELDS) as GateField[]).map((f) => `coalesce((${GATE_FIELDS[f].sql})::DOUBLE, 'NaN'::DOUBLE) AS "gate_${f}"`);
  const tags = SMART_MONEY_TAGS.map((t, i) => `CASE WHEN list_contains(smart_money_tags, '${t}') THEN ${1 << i} ELSE 0 END`).join(' + ');
  return `SELECT wallet_id,
      coalesce(trade_count, 0)::DOUBLE AS trade_count, coalesce(epoch_us(last_trade_at)::DOUBLE, 'NaN'::DOUBLE) AS last_trade_us,
      coalesce(list_position(${categoriesListSql(base, where)}, best_category) - 1, -1)::INTEGER AS category_code,
      coalesce(lifetime_volume_usdc, 'NaN'::DOUBLE) AS lifetime_volume_usdc,
      (${tags})::INTEGER AS tag_bits, coalesce(cluster_size, 1)::INTEGER AS cluster_size,
      ${[...metricCols, ...gateCols].join(',\n      ')}
    FROM ${base} WHERE trade_count > 0 AND (${where}) ORDER BY wallet_id`;
}

/** SQL of the best categories present, as a sorted list (their codes are positions in it). */
export function categoriesListSql(base = 'a_rank_base', where = 'true'): string {
  return `(SELECT coalesce(list(DISTINCT best_category ORDER BY best_category), []) FROM ${base} WHERE best_category IS NOT NULL AND trade_count > 0 AND (${where}))`;
}

/** The first index in sorted[0, n) whose value is not below v (n when none). */
export function lowerBound(sorted: ArrayLike<number>, v: number, n = sorted.length): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index of v in a sorted array of distinct values, or -1. */
export function indexOfSorted(sorted: ArrayLike<number>, v: number): number {
  const i = lowerBound(sorted, v);
  return i < sorted.length && sorted[i] === v ? i : -1;
}

/**
 * User codes of rows in wallet order: rows of one linked user share a code (the row of its first wallet); every
 * other row is its own user (code = its row). Only equality of codes matters to the engine.
 */
export function userCodes(walletId: Int32Array, links: ReadonlyMap<number, string>): Int32Array {
  const code = new Int32Array(walletId.length);
  for (let i = 0; i < code.length; i++) code[i] = i;
  const rowOf = (w: number) => indexOfSorted(walletId, w);
  const first = new Map<string, number>();
  const rows = [...links].map(([w, u]) => [rowOf(w), u] as const).filter(([r]) => r >= 0).sort((a, b) => a[0] - b[0]);
  for (const [r, u] of rows) {
    const f = first.get(u);
    if (f === undefined) first.set(u, r);
    else code[r] = f;
  }
  return code;
}

/** The rank base as columns (row i is the i-th wallet in wallet order). NaN stands for SQL NULL. */
export interface RankColumns {
  n: number;
  walletId: Int32Array;
  /** users: rows of one user share a code (a wallet without a user is its own user): userCodes(walletId, links) */
  userCode: Int32Array;
  /** wallet id -> its linked user (wallet_links), for the rows' wallets that have one */
  links: Map<number, string>;
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

/** What score() leaves: see RankingEngine.score. */
interface Scored {
  mask: Uint8Array;
  composite: Float64Array;
  before: (a: number, b: number) => number;
  /** what `before` sorts by (NaN last) and in which direction; ties by row (wallet id) */
  sortKey: Float64Array;
  desc: boolean;
  explain: ExplainCounts;
}

/** Run a generator of steps to its end (the synchronous form of a stepped computation). */
function drain<R>(steps: Generator<void, R>): R {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/** Run a generator of steps to its end, awaiting `pause` between steps (the asynchronous form of drain). */
async function drainPausing<R>(steps: Generator<void, R>, pause: () => Promise<void>): Promise<R> {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await pause();
  }
}

/** A pause between the steps of a long computation, so the event loop runs what waits (a timer: core does no I/O). */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));

export class RankingEngine {
  /** per metric: measured rows sorted by value ascending */
  private readonly order: Record<MetricId, Int32Array>;
  /** users with several rows, as runs: the rows of multi-user k are multiRows[multiStart[k] .. multiStart[k + 1]) */
  private readonly multiStart: Int32Array;
  private readonly multiRows: Int32Array;
  /** scratch columns reused by every rank() (synchronous, so never shared by two calls at once) */
  private readonly mask: Uint8Array;
  private readonly num: Float64Array;
  private readonly den: Float64Array;
  /** row -> its position among the rows whose percentiles are wanted (-1 elsewhere); allocated on first use */
  private slot: Int32Array | null = null;

  /** `orders`: each metric's measured rows in value order (metricOrders; a service computes them off its event loop) */
  constructor(
    readonly cols: RankColumns,
    orders: Record<MetricId, Int32Array> = metricOrders(cols),
  ) {
    this.order = orders;
    // rows grouped by user: count per user, keep users with more than one row
    let users = 0;
    for (let i = 0; i < cols.n; i++) users = Math.max(users, cols.userCode[i]! + 1);
    const perUser = new Int32Array(users);
    for (let i = 0; i < cols.n; i++) perUser[cols.userCode[i]!]!++;
    const slot = new Int32Array(users).fill(-1);
    let multi = 0;
    let rows = 0;
    for (let u = 0; u < users; u++) {
      if (perUser[u]! > 1) {
        slot[u] = multi++;
        rows += perUser[u]!;
      }
    }
    this.multiStart = new Int32Array(multi + 1);
    for (let u = 0; u < users; u++) if (slot[u]! >= 0) this.multiStart[slot[u]! + 1] = perUser[u]!;
    for (let k = 0; k < multi; k++) this.multiStart[k + 1]! += this.multiStart[k]!;
    this.multiRows = new Int32Array(rows);
    const fill = this.multiStart.slice(0, multi);
    for (let i = 0; i < cols.n; i++) {
      const k = slot[cols.userCode[i]!]!;
      if (k >= 0) this.multiRows[fill[k]!++] = i;
    }
    this.mask = new Uint8Array(cols.n);
    this.num = new Float64Array(cols.n);
    this.den = new Float64Array(cols.n);
  }

  /** Each metric's measured rows in value order (read-only: a patch merges them into the next engine's). */
  orders(): Readonly<Record<MetricId, Int32Array>> {
    return this.order;
  }

  /** The row of a wallet (binary search: rows are in wallet order), or -1. */
  rowOf(walletId: number): number {
    return indexOfSorted(this.cols.walletId, walletId);
  }

  /** Rows in the cohort (1) before the gates (in the scratch mask); `gates` then keeps those passing every gate. */
  private cohort(cfg: RankingConfig, asOfUs: number): Uint8Array {
    const c = this.cols;
    const n = c.n;
    const mask = this.mask;
    const co = cfg.cohort;
    // the default cohort is every row with a trade: one pass; each filter is its own pass over the survivors
    const tradeCount = c.tradeCount;
    for (let i = 0; i < n; i++) mask[i] = tradeCount[i]! > 0 ? 1 : 0;
    const keep = (test: (i: number) => boolean) => {
      for (let i = 0; i < n; i++) if (mask[i] && !test(i)) mask[i] = 0;
    };
    if (co.active_within_days !== undefined) {
      const since = asOfUs - co.active_within_days * DAY_US;
      const last = c.lastTradeUs;
      keep((i) => last[i]! > since);
    }
    if (co.best_category !== undefined) {
      // a category absent from the base matches no row (not the rows without a category, -1)
      const present = c.categories.indexOf(co.best_category);
      const cat = present === -1 ? -3 : present;
      const best = c.bestCategory;
      keep((i) => best[i] === cat);
    }
    if (co.min_trades !== undefined) {
      const min = co.min_trades;
      keep((i) => tradeCount[i]! >= min);
    }
    if (co.min_volume_usdc !== undefined) {
      const min = co.min_volume_usdc;
      const vol = c.volume;
      keep((i) => vol[i]! >= min);
    }
    let tagMask = 0;
    for (const t of co.tags_any ?? []) tagMask |= 1 << SMART_MONEY_TAGS.indexOf(t);
    if (tagMask) {
      const bits = c.tagBits;
      keep((i) => (bits[i]! & tagMask) !== 0);
    }
    if (co.exclude_clusters) {
      const size = c.clusterSize;
      keep((i) => size[i] === 1);
    }
    return mask;
  }

  /** Apply the gates in order to the cohort mask (in place); the rows remaining after each. */
  private gates(cfg: RankingConfig, mask: Uint8Array): { cohort: number; counts: number[] } {
    const c = this.cols;
    const n = c.n;
    let cohort = 0;
    for (let i = 0; i < n; i++) cohort += mask[i]!;
    const counts: number[] = [];
    for (const g of cfg.gates) {
      const col = c.gate[g.field];
      const v = typeof g.value === 'boolean' ? (g.value ? 1 : 0) : g.value;
      // one loop per operator (no call per row); a null (NaN) fails every gate, as SQL's coalesce(field op value, false)
      let left = 0;
      switch (g.op) {
        case 'gte':
          for (let i = 0; i < n; i++) if (mask[i]) (col[i]! >= v ? left++ : (mask[i] = 0));
          break;
        case 'gt':
          for (let i = 0; i < n; i++) if (mask[i]) (col[i]! > v ? left++ : (mask[i] = 0));
          break;
        case 'lte':
          for (let i = 0; i < n; i++) if (mask[i]) (col[i]! <= v ? left++ : (mask[i] = 0));
          break;
        case 'lt':
          for (let i = 0; i < n; i++) if (mask[i]) (col[i]! < v ? left++ : (mask[i] = 0));
          break;
        case 'eq':
          for (let i = 0; i < n; i++) if (mask[i]) (col[i]! === v ? left++ : (mask[i] = 0));
          break;
        case 'ne':
          for (let i = 0; i < n; i++) if (mask[i]) (col[i]! !== v && !Number.isNaN(col[i]!) ? left++ : (mask[i] = 0));
          break;
        default:
          throw new Error(`unknown gate operator ${String(g.op)}`);
      }
      counts.push(left);
    }
    return { cohort, counts };
  }

  /**
   * One pass over a metric's order: percent_rank (0-100) of every gated measured row within them, added with
   * `weight` to the composite sums; when `out` is given, the percentile of each row with a slot (`slot[i] >= 0`) is
   * written to out[slot[i]] (rows not measured keep what `out` held).
   */
  private percentiles(id: MetricId, mask: Uint8Array, weight: number, out: { slot: Int32Array; pct: Float64Array } | null): void {
    const order = this.order[id];
    const val = this.cols.value[id];
    const measured = this.cols.measured[id];
    const len = order.length;
    // the gated rows in the order (measured, not NaN): counted in row order, sequential reads instead of a random
    // access per ordered row
    let n = 0;
    for (let i = 0; i < mask.length; i++) if (mask[i] && measured[i] === 1 && val[i] === val[i]) n++;
    if (n === 0) return;
    const num = this.num;
    const den = this.den;
    const slot = out?.slot;
    const pct = out?.pct;
    // walk in the direction of the SQL ORDER BY: ascending for higher-is-better, descending otherwise
    const higherBetter = METRICS[id].better === 'higher';
    let seen = 0;
    let rank = 0;
    let prev = Number.NaN;
    for (let k = 0; k < len; k++) {
      const i = order[higherBetter ? k : len - 1 - k]!;
      if (!mask[i]) continue;
      const v = val[i]!;
      if (seen === 0 || v !== prev) {
        rank = seen;
        prev = v;
      }
      const p = n === 1 ? 100 : (100 * rank) / (n - 1);
      if (weight > 0) {
        num[i]! += weight * p;
        den[i]! += weight;
      }
      if (slot && slot[i]! >= 0) pct![slot[i]!] = p;
      seen++;
    }
  }

  /**
   * Score `cfg` as of T: the gated mask, every row's composite (NaN where not scored or not its user's best row),
   * the explain counts and the board order (`before`). The composite column is the engine's scratch: valid until the
   * next call.
   */
  private score(cfg: RankingConfig, asOfUs: number): Scored {
    return drain(this.scoreSteps(cfg, asOfUs));
  }

  /** score() in steps: it yields after the cohort and gates and after each weighted metric's walk. */
  private *scoreSteps(cfg: RankingConfig, asOfUs: number): Generator<void, Scored> {
    const mask = this.cohort(cfg, asOfUs);
    const { cohort, counts } = this.gates(cfg, mask);
    yield;
    const num = this.num.fill(0);
    const den = this.den.fill(0);
    for (const [id, w] of Object.entries(cfg.weights) as [MetricId, number][]) {
      if ((w ?? 0) > 0) {
        this.percentiles(id, mask, w, null);
        yield;
      }
    }
    return this.composite(cfg, mask, num, den, cohort, counts);
  }

  /** The composite, one row per user, the board order (the rest of score()). */
  private composite(cfg: RankingConfig, mask: Uint8Array, num: Float64Array, den: Float64Array, cohort: number, counts: number[]): Scored {
    const c = this.cols;
    const n = c.n;
    // composite = sum(w * pct) / sum(w) over the measured weighted metrics; scored = at least one of them measured
    // (den > 0 only on gated rows). `num` becomes the composite column, NaN where unscored.
    const composite = num;
    let scored = 0;
    for (let i = 0; i < n; i++) {
      if (den[i]! > 0) {
        composite[i] = round9(num[i]! / den[i]!);
        scored++;
      } else composite[i] = Number.NaN;
    }
    // one row per user: its best composite (ties: the smaller wallet id)
    const ms = this.multiStart;
    const mr = this.multiRows;
    const wid = c.walletId;
    for (let k = 0; k + 1 < ms.length; k++) {
      let best = -1;
      for (let j = ms[k]!; j < ms[k + 1]!; j++) {
        const i = mr[j]!;
        if (Number.isNaN(composite[i]!)) continue;
        if (best < 0 || composite[i]! > composite[best]! || (composite[i] === composite[best] && wid[i]! < wid[best]!)) best = i;
      }
      for (let j = ms[k]!; j < ms[k + 1]!; j++) if (mr[j] !== best) composite[mr[j]!] = Number.NaN;
    }
    // the sort key: composite, or a metric's raw value (nulls last), best first unless worst_first
    const sortMetric = cfg.sort_by === 'composite' ? null : cfg.sort_by;
    const desc = sortMetric === null ? cfg.sort_dir === 'best_first' : (METRICS[sortMetric].better === 'higher') === (cfg.sort_dir === 'best_first');
    const keyOf = sortMetric === null ? composite : c.value[sortMetric];
    const before = (a: number, b: number) => {
      const ka = keyOf[a]!;
      const kb = keyOf[b]!;
      const na = Number.isNaN(ka);
      const nb = Number.isNaN(kb);
      if (na !== nb) return na ? 1 : -1; // nulls last, both directions
      if (!na && ka !== kb) return desc ? kb - ka : ka - kb;
      return wid[a]! - wid[b]!;
    };
    let total = 0;
    for (let i = 0; i < n; i++) if (!Number.isNaN(composite[i]!)) total++;
    return { mask, composite, before, sortKey: keyOf, desc, explain: { cohort, counts, scored, total } };
  }

  /** Percentiles of `rows` (within the gated mask) for each metric, NaN where not measured. */
  private rowPercentiles(mask: Uint8Array, rows: ArrayLike<number>, metrics: readonly MetricId[]): Partial<Record<MetricId, Float64Array>> {
    return drain(this.rowPercentileSteps(mask, rows, metrics));
  }

  /** rowPercentiles in steps: a yield after each metric's walk. */
  private *rowPercentileSteps(mask: Uint8Array, rows: ArrayLike<number>, metrics: readonly MetricId[]): Generator<void, Partial<Record<MetricId, Float64Array>>> {
    // a page: count, in row order, the gated values below (above) each of the page's values — sequential reads,
    // where walking a metric's order reads every row at random; a board (many rows) walks each order once
    if (rows.length <= PAGE_PASS_MAX_ROWS) return Object.fromEntries(metrics.map((id) => [id, this.pagePercentiles(id, mask, rows)]));
    this.slot ??= new Int32Array(this.cols.n).fill(-1);
    const slot = this.slot;
    for (let k = 0; k < rows.length; k++) slot[rows[k]!] = k;
    const out: Partial<Record<MetricId, Float64Array>> = {};
    try {
      for (const id of metrics) {
        const pct = new Float64Array(rows.length).fill(Number.NaN);
        this.percentiles(id, mask, 0, { slot, pct });
        out[id] = pct;
        yield;
      }
    } finally {
      for (let k = 0; k < rows.length; k++) slot[rows[k]!] = -1;
    }
    return out;
  }

  /**
   * The percentile of each of `rows` for one metric, as `percentiles` computes it (percent_rank within the gated
   * measured rows: the count of those strictly before the row's value in the metric's direction, over n - 1), by one
   * pass in row order over the gated rows with a binary search among the page's distinct values.
   */
  private pagePercentiles(id: MetricId, mask: Uint8Array, rows: ArrayLike<number>): Float64Array {
    const val = this.cols.value[id];
    const measured = this.cols.measured[id];
    const out = new Float64Array(rows.length).fill(Number.NaN);
    const ok = (i: number) => measured[i] === 1 && val[i] === val[i];
    const wanted: number[] = [];
    for (let k = 0; k < rows.length; k++) if (ok(rows[k]!)) wanted.push(val[rows[k]!]!);
    if (!wanted.length) return out;
    // distinct page values ascending (-0 and 0 are one value, as in the walk)
    const th = Float64Array.from(new Set(wanted.map((v) => (v === 0 ? 0 : v)))).sort();
    const t = th.length;
    // at[j]: gated values whose first page value >= them is th[j] (j = t: above every page value)
    const at = new Float64Array(t + 1);
    const equal = new Float64Array(t);
    let n = 0;
    for (let i = 0; i < mask.length; i++) {
      if (!mask[i] || measured[i] !== 1) continue;
      const v = val[i]!;
      if (v !== v) continue;
      n++;
      const lo = lowerBound(th, v);
      if (lo < t && th[lo] === v) equal[lo]!++;
      else at[lo]!++;
    }
    // below[j] = gated values < th[j]; above[j] = gated values > th[j]
    const below = new Float64Array(t);
    let acc = 0;
    for (let j = 0; j < t; j++) {
      acc += at[j]!;
      below[j] = acc;
      acc += equal[j]!;
    }
    const higherBetter = METRICS[id].better === 'higher';
    for (let k = 0; k < rows.length; k++) {
      const r = rows[k]!;
      if (!mask[r] || !ok(r)) continue;
      const lo = lowerBound(th, val[r]!); // a page value: present in th
      const rank = higherBetter ? below[lo]! : n - below[lo]! - equal[lo]!;
      out[k] = n === 1 ? 100 : (100 * rank) / (n - 1);
    }
    return out;
  }

  /**
   * Rank `cfg` as of T: the page [offset, offset + limit) of the board, its explain counts and the page rows'
   * breakdown percentiles (weighted metrics and extra_metrics).
   */
  rank(cfg: RankingConfig, asOfUs: number, breakdown: readonly MetricId[]): RankedPage {
    const { mask, composite, before, explain } = this.score(cfg, asOfUs);
    const want = Math.min(explain.total, cfg.offset + cfg.limit);
    const pageRows = topK(composite, want, before).slice(cfg.offset, cfg.offset + cfg.limit);
    return {
      rows: pageRows,
      ranks: pageRows.map((_, k) => cfg.offset + k + 1),
      composite: pageRows.map((i) => composite[i]!),
      pct: Object.fromEntries(Object.entries(this.rowPercentiles(mask, pageRows, breakdown)).map(([id, p]) => [id, Array.from(p, (x) => (Number.isNaN(x) ? null : x))])),
      explain,
    };
  }

  /**
   * The whole board of `cfg` (what boardSql stores for a preset): every ranked row in rank order with its
   * composite, handed to `onRows` in slices of up to `sliceRows` rows with every metric's percentile (NaN = not measured).
   */
  board(cfg: RankingConfig, asOfUs: number, onRows: BoardRows, sliceRows = BOARD_SLICE_ROWS): ExplainCounts {
    return drain(this.boardSteps(cfg, asOfUs, onRows, sliceRows));
  }

  /**
   * board() in steps of at most a metric's walk (~65 ms at 2.8M) or a slice of rows: a service scores its boards
   * between requests (writeBoards pauses at each yield). The engine's scratch columns are the board's until it ends,
   * so only an engine no request ranks with (a version not yet published) is scored this way.
   */
  *boardSteps(cfg: RankingConfig, asOfUs: number, onRows: BoardRows, sliceRows = BOARD_SLICE_ROWS): Generator<void, ExplainCounts> {
    const { mask, composite, sortKey, desc, explain } = yield* this.scoreSteps(cfg, asOfUs);
    yield;
    const ranked = boardOrder(composite, sortKey, desc);
    const scores = new Float64Array(ranked.length);
    for (let k = 0; k < ranked.length; k++) scores[k] = composite[ranked[k]!]!;
    yield;
    // every metric's percentile of every ranked row: one walk per metric for the whole board
    const pct = yield* this.rowPercentileSteps(mask, ranked, METRIC_IDS);
    for (let a = 0; a < ranked.length; a += sliceRows) {
      const len = Math.min(sliceRows, ranked.length - a);
      const slice = Object.fromEntries(METRIC_IDS.map((id) => [id, pct[id]!.subarray(a, a + len)]));
      onRows(ranked.subarray(a, a + len), scores.subarray(a, a + len), slice, a + 1);
      yield;
    }
    return explain;
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

/** Every metric's measured rows in value order (what a RankingEngine walks for percentiles). */
export function metricOrders(cols: RankColumns): Record<MetricId, Int32Array> {
  return Object.fromEntries(METRIC_IDS.map((id) => [id, sortedMeasured(cols.measured[id], cols.value[id])])) as Record<MetricId, Int32Array>;
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
    const lo = lowerBound(keys, value[i]!);
    idx[lo + taken[lo]!++] = i;
  }
  return idx;
}

/**
 * The rows whose composite is not NaN in board order (score's `before`: `key` best first, NaN keys last, ties by row,
 * which is wallet order), without a comparator call per pair: the keys (negated when descending) go through
 * sortedMeasured's native sort, then the NaN keys follow in row order. A comparator sort of 2.8M rows took seconds
 * per preset.
 */
export function boardOrder(composite: Float64Array, key: Float64Array, desc: boolean): Int32Array {
  const n = composite.length;
  const keyed = new Uint8Array(n);
  const value = new Float64Array(n);
  let total = 0;
  let nulls = 0;
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(composite[i]!)) continue;
    total++;
    const k = key[i]!;
    if (Number.isNaN(k)) nulls++;
    else {
      keyed[i] = 1;
      value[i] = desc ? -k : k;
    }
  }
  const out = new Int32Array(total);
  out.set(sortedMeasured(keyed, value));
  let at = total - nulls;
  if (nulls) for (let i = 0; i < n; i++) if (!Number.isNaN(composite[i]!) && Number.isNaN(key[i]!)) out[at++] = i;
  return out;
}

/**
 * The first `k` rows (in `before` order, sorted) among those whose `composite` is not NaN: one pass with a bounded
 * heap whose root is the worst row kept, so most rows cost one comparison with it.
 */
function topK(composite: Float64Array, k: number, before: (a: number, b: number) => number): number[] {
  if (k <= 0) return [];
  const heap = new Int32Array(k);
  let size = 0;
  // sift: the heap keeps the worst kept row (greatest in `before` order) at the root
  const down = (at: number) => {
    const x = heap[at]!;
    for (;;) {
      const l = 2 * at + 1;
      if (l >= size) break;
      const r = l + 1;
      const c = r < size && before(heap[r]!, heap[l]!) > 0 ? r : l;
      if (before(heap[c]!, x) <= 0) break;
      heap[at] = heap[c]!;
      at = c;
    }
    heap[at] = x;
  };
  const n = composite.length;
  for (let i = 0; i < n; i++) {
    if (Number.isNaN(composite[i]!)) continue;
    if (size < k) {
      let at = size++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (before(heap[parent]!, i) >= 0) break;
        heap[at] = heap[parent]!;
        at = parent;
      }
      heap[at] = i;
    } else if (before(i, heap[0]!) < 0) {
      heap[0] = i;
      down(0);
    }
  }
  return Array.from(heap.subarray(0, size)).sort(before);
}

/**
 * Read the rank base into columns (one scan per wallet slice of ~1M rows); `where` (a condition on the base) reads
 * only some rows — a patch's changed wallets (core/ranking-patch.ts).
 */
export async function loadRankColumns(db: ColumnarRunner, base = 'a_rank_base', opts: { shared?: boolean; where?: string } = {}): Promise<RankColumns> {
  const where = opts.where ?? 'true';
  const [meta] = await db.all<{ n: number; cats: string[] }>(`SELECT (SELECT count(*) FROM ${base} WHERE trade_count > 0 AND (${where})) AS n, ${categoriesListSql(base, where)} AS cats`);
  const n = Number(meta?.n ?? 0);
  // shared: the metric columns live in SharedArrayBuffers, so a worker thread can order them without a copy
  const f64 = () => new Float64Array(n);
  const sharedF64 = () => (opts.shared ? new Float64Array(new SharedArrayBuffer(8 * n)) : f64());
  const sharedU8 = () => (opts.shared ? new Uint8Array(new SharedArrayBuffer(n)) : new Uint8Array(n));
  const cols: RankColumns = {
    n,
    walletId: new Int32Array(n),
    userCode: new Int32Array(n),
    links: new Map(),
    tradeCount: f64(),
    lastTradeUs: f64(),
    bestCategory: new Int32Array(n),
    categories: [...((meta?.cats as unknown as string[]) ?? [])],
    volume: f64(),
    tagBits: new Int32Array(n),
    clusterSize: new Int32Array(n),
    measured: Object.fromEntries(METRIC_IDS.map((id) => [id, sharedU8()])) as Record<MetricId, Uint8Array>,
    value: Object.fromEntries(METRIC_IDS.map((id) => [id, sharedF64()])) as Record<MetricId, Float64Array>,
    gate: Object.fromEntries((Object.keys(GATE_FIELDS) as GateField[]).map((g) => [g, f64()])) as Record<GateField, Float64Array>,
  };
  let row = 0;
  // the columns go to a table stored in wallet order; its wallet ids are read whole (they give the slice bounds),
  // then the columns slice by slice, each a range scan (zone maps skip the rest; a scan returns rows in stored order)
  await db.run(`CREATE OR REPLACE TEMP TABLE rank_columns AS ${rankingColumnsSql(base, where)}`);
  await db.scan(`SELECT wallet_id::INTEGER AS wallet_id FROM rank_columns`, (b) => {
    cols.walletId.set(b.int('wallet_id') as Int32Array, row);
    row += b.n;
  });
  const slice = 1_000_000;
  row = 0;
  for (let off = 0; off < n; off += slice) {
    const lo = cols.walletId[off]!;
    const hi = off + slice < n ? `AND wallet_id < ${cols.walletId[off + slice]!}` : '';
    await db.scan(`SELECT * EXCLUDE (wallet_id) FROM rank_columns WHERE wallet_id >= ${lo} ${hi}`, (b) => {
      const copy = <T extends Int32Array | Float64Array | Uint8Array>(dst: T, src: ArrayLike<number>) => dst.set(src as never, row);
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
  if (row !== n) throw new Error(`rank columns: read ${row} rows of ${n}`);
  await db.run(`DROP TABLE IF EXISTS rank_columns`);
  // users: the linked wallets only (few), grouped in memory instead of a sort of every row's user key
  const linked = await db.all<{ wallet_id: number; user_id: string }>(
    `SELECT wallet_id, linked_user_id AS user_id FROM ${base} WHERE linked_user_id IS NOT NULL AND trade_count > 0 AND (${where})`,
  );
  for (const l of linked) cols.links.set(Number(l.wallet_id), String(l.user_id));
  cols.userCode = userCodes(cols.walletId, cols.links);
  return cols;
}

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
    }), pause);
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

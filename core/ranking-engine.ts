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
  private readonly pctScratch: Float64Array[] = [];

  constructor(readonly cols: RankColumns) {
    this.order = {} as Record<MetricId, Int32Array>;
    for (const id of METRIC_IDS) this.order[id] = sortedMeasured(cols.measured[id], cols.value[id]);
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
   * One pass over a metric's order: percent_rank (0-100) of every gated measured row, added with `weight` to the
   * composite sums, and written to `out` (when given; its other rows are left as they were).
   */
  private percentiles(id: MetricId, mask: Uint8Array, weight: number, out: Float64Array | null): void {
    const order = this.order[id];
    const val = this.cols.value[id];
    const len = order.length;
    let n = 0;
    for (let k = 0; k < len; k++) n += mask[order[k]!]!;
    if (n === 0) return;
    const num = this.num;
    const den = this.den;
    // walk in the direction of the SQL ORDER BY: ascending for higher-is-better, descending otherwise
    const higherBetter = METRICS[id].better === 'higher';
    const scale = n === 1 ? 0 : 100 / (n - 1);
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
      const p = n === 1 ? 100 : rank * scale;
      if (out) out[i] = p;
      if (weight > 0) {
        num[i]! += weight * p;
        den[i]! += weight;
      }
      seen++;
    }
  }

  /**
   * Rank `cfg` as of T: the page [offset, offset + limit) of the board, its explain counts and the page rows'
   * breakdown percentiles (weighted metrics and extra_metrics).
   */
  rank(cfg: RankingConfig, asOfUs: number, breakdown: readonly MetricId[]): RankedPage {
    const c = this.cols;
    const n = c.n;
    const mask = this.cohort(cfg, asOfUs);
    const { cohort, counts } = this.gates(cfg, mask);
    const weightOf = new Map((Object.entries(cfg.weights) as [MetricId, number][]).filter(([, w]) => (w ?? 0) > 0));
    const needed = [...new Set<MetricId>([...weightOf.keys(), ...breakdown])];
    const num = this.num.fill(0);
    const den = this.den.fill(0);
    // a percentile column per breakdown metric (NaN = not measured or not gated), from reused scratch buffers
    const pct = new Map<MetricId, Float64Array>();
    breakdown.forEach((id, k) => {
      this.pctScratch[k] ??= new Float64Array(n);
      pct.set(id, this.pctScratch[k]!.fill(Number.NaN));
    });
    for (const id of needed) this.percentiles(id, mask, weightOf.get(id) ?? 0, pct.get(id) ?? null);
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
    const want = Math.min(total, cfg.offset + cfg.limit);
    const top = topK(composite, want, before);
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

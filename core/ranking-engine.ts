/**
 * Rankings in memory: the rank base (one row per wallet with a fill) as typed columns, and for every metric the
 * order of its measured rows, kept from one analytics version to the next. A ranking — a preset's board or any
 * custom RankingConfig — is then a few linear passes over 2.8M rows instead of a sort per metric:
 *
 *  1. cohort and gates: a branch-free pass per filter and gate marks the gated rows (counting the explain funnel as
 *     it goes), then the gated rows are listed: every later pass reads them only;
 *  2. ranks: for each weighted metric, each gated row's rank among the gated rows — none to count for the whole
 *     cohort (the row's rank key: where its run of equal values starts or ends in the metric's precomputed order);
 *     one walk of the order (the mask read as bits) writing each row's rank at the row when many rows are gated; the
 *     gated rows sorted by their rank keys (a radix sort) when few are;
 *  3. composite = sum(w * pct) / sum(w) over the row's measured weighted metrics, rounded as the SQL does, compact
 *     over the gated rows, reading every column in row order (two weighted metrics: one pass for both);
 *  4. one row per user (its best-scoring wallet), then the page by selection (no full sort); the page's breakdown
 *     percentiles are lookups too.
 *
 * It computes what boardSql (core/rankings.ts, the SQL definition) computes; test/core/ranking-engine.test.ts holds
 * the two equal on random configs. Pure: no I/O; the caller loads the columns (core/rank-columns.ts) and reads the
 * display fields of the page's rows. Its orders are core/ranking-orders.ts's; the stored boards it scores,
 * core/ranking-boards.ts.
 */
import { METRIC_IDS, METRICS, RankingConfig, type ExplainCounts, type MetricId, type Ranker } from './rankings.ts';
import { SMART_MONEY_TAGS } from './tags.ts';
import { drain, drainPausing, yieldToEventLoop } from './steps.ts';
import { columnLike, type RankColumns } from './rank-columns.ts';
import { boardOrderSteps, indexOfSorted, metricOrders } from './ranking-orders.ts';

const DAY_US = 86_400_000_000;
/** Rows per onRows call of a board (a writer's loop over them holds the event loop ~10 ms) */
const BOARD_SLICE_ROWS = 25_000;
/** Rows per step of a metric's percentiles over many rows (a board's: a random read per row, ~100 ms on a slow day) */
const PERCENTILE_SLICE_ROWS = 1 << 19;
/** Positions of a metric's order per step of its rank keys */
const RANK_KEY_SLICE = 1 << 19;
/** Bits of a rank key sorted per radix pass (sortedRanksSteps): two passes below 4M positions */
const RADIX_BITS = 11;
const RADIX_MASK = (1 << RADIX_BITS) - 1;

/** A board's rows in rank order, a slice at a time: row indexes, composites, every metric's percentiles. */
export type BoardRows = (rows: Int32Array, composite: Float64Array, pct: Partial<Record<MetricId, Float64Array>>, firstRank: number) => void;

/** A ranked page: row indices in rank order with their composite and breakdown percentiles. */
export interface RankedPage {
  rows: number[];
  ranks: number[];
  composite: number[];
  /** per breakdown metric: the page rows' percentile within the gated cohort (null = not measured) */
  pct: Partial<Record<MetricId, (number | null)[]>>;
  explain: ExplainCounts;
}

/**
 * x rounded to 9 decimals as Math.round(x * 1e9) / 1e9 (half up), to the bit: the ceiling, less one when it is more
 * than half above. Math.round was the slowest step of a composite pass (~10 ns a row here, this ~3 ns).
 */
export const round9 = (x: number): number => {
  const y = x * 1e9;
  const c = Math.ceil(y);
  return (c - +(c - 0.5 > y)) / 1e9;
};

/**
 * percent_rank (0-100) of a row with `rank` rows strictly before its value (in the metric's direction: ties share a
 * rank) among n, as SQL's percent_rank() OVER (ORDER BY value) gives it. Every percentile of the engine is this
 * expression, so a composite and a breakdown agree to the last bit.
 */
const percentRank = (rank: number, n: number) => (n === 1 ? 100 : (100 * rank) / (n - 1));

/** What score() leaves: see RankingEngine.score. */
interface Scored {
  mask: Uint8Array;
  /** the gated rows, ascending */
  gated: Int32Array;
  /** the gated rows' composites, compact: the g-th gated row's at g (NaN where not scored or not its user's best row) */
  composite: Float64Array;
  /**
   * what the board is ordered by, by row (best first in direction `desc`, NaN last; ties by row, which is wallet
   * order); null: the composite
   */
  sortKey: Float64Array | null;
  desc: boolean;
  explain: ExplainCounts;
  /** the metrics whose gated counts (gatedCounts) hold for this mask */
  counted: Map<MetricId, GatedCounts>;
}

/**
 * A metric's gated measured rows (RankingEngine.gatedCounts): n of them, and each one's rank — the gated rows
 * strictly before it in the metric's direction (percentRank's `rank`) — at the row itself in `byRow`; null when every
 * row is gated, where the rank is the row's rank key itself (higher is better) or n less it (lower is better).
 */
interface GatedCounts {
  n: number;
  byRow: Int32Array | null;
}

/** A weighted metric of a ranking, with its gated counts (at least one gated row measured). */
interface Weighted {
  id: MetricId;
  weight: number;
  counts: GatedCounts;
}

/** A weighted metric prepared for a pass over the gated rows (RankingEngine.termOf). */
interface PassTerm {
  /** the metric's rank keys: row i is measured where key[i] <= len */
  key: Int32Array;
  len: number;
  src: Int32Array;
  flip: number;
  keep: number;
  base: number;
  div: number;
  /** [0, weight] */
  sel: Float64Array;
}

/** Row i's rank among the gated rows (its rank key r; a row measured in the metric). */
const gatedRank = ({ n, byRow }: GatedCounts, i: number, r: number, higherBetter: boolean): number => (byRow !== null ? byRow[i]! : higherBetter ? r : n - r);

/** Rank keys of some metrics with their run edges (RankingEngine.computedRankKeys, adoptRankKeys). */
export type RankKeys = Partial<Record<MetricId, { key: Int32Array; edges: Int32Array }>>;

export class RankingEngine {
  /** per metric: measured rows sorted by value ascending */
  private readonly order: Record<MetricId, Int32Array>;
  /** users with several rows, as runs: the rows of multi-user k are multiRows[multiStart[k] .. multiStart[k + 1]) */
  private readonly multiStart: Int32Array;
  private readonly multiRows: Int32Array;
  /** scratch columns reused by every rank() (synchronous, so never shared by two calls at once) */
  private readonly mask: Uint8Array;
  /** the composite sums of the last score's gated rows (the g-th gated row at g); num then holds its composites */
  private readonly num: Float64Array;
  private readonly den: Float64Array;
  /** a board's composite by row (NaN where not scored; a ranked page keeps the gated rows' compact) */
  private readonly composite: Float64Array;
  /** every row has a trade (how loadRankColumns reads the base): the default cohort is then every row */
  private readonly allTraded: boolean;
  /** the last score's gated rows, ascending (one slot more than rows: the branch-free fill writes one past the last) */
  private readonly gatedScratch: Int32Array;
  /** a board's row -> its place in rank order, -1 between calls (rowPercentileSteps; allocated on first use) */
  private placeScratch: Int32Array | null = null;
  /**
   * per metric, on first use: each measured row's rank key, a position in the metric's order — where its run of
   * equal values starts (higher is better: the rows before it are worse) or ends (lower is better: the rows from
   * there on are worse); len + 1 for a row not measured (len = the order's length: a slot past the counts, so the
   * passes need no branch on it)
   */
  private readonly rankKeys = new Map<MetricId, Int32Array>();
  /**
   * per metric, with its rank keys: a bit per position of its order, set where a run of equal values starts (higher
   * is better) or ends (lower is better) — where a walk of the order takes a new rank
   */
  private readonly runEdges = new Map<MetricId, Int32Array>();
  /** the last score's gated mask, a bit per row (32 rows a word), packed on first use by a walk (gatedCounts) */
  private readonly maskBits: Int32Array;
  private maskBitsPacked = false;
  /** sortScratch's columns (allocated on first use) */
  private sorting: [Int32Array, Int32Array, Int32Array, Int32Array] | null = null;
  /** a radix pass's counts by digit */
  private readonly digitCounts = new Int32Array(1 << RADIX_BITS);
  /**
   * scratch rank columns (GatedCounts.byRow) the score's metrics take in turn, kept for the next score: as many as
   * the most metrics one score counted, 4 bytes a row each (at most 19 x 11 MB at 2.8M rows). A fresh column per
   * metric and ranking cost a garbage collection nearly every ranking (a fifth of a gated ranking weighting every
   * metric when only four were kept). A column holds stale ranks where the score writes none: rows it never reads
   * (not gated), or rows not measured, which add 0 x a finite rank
   */
  private readonly rankScratch: Int32Array[] = [];
  private rankScratchUsed = 0;

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
    this.composite = new Float64Array(cols.n);
    let traded = 0;
    for (let i = 0; i < cols.n; i++) traded += +(cols.tradeCount[i]! > 0);
    this.allTraded = traded === cols.n;
    this.gatedScratch = new Int32Array(cols.n + 1);
    this.maskBits = new Int32Array((cols.n + 31) >>> 5);
  }

  /**
   * Compute every metric's rank keys now, in steps of `slice` positions (~250 ms per metric at 2.8M rows on a slow
   * day, whole), instead of on the first ranking that needs them: a service warms a loaded version between requests,
   * so few requests pay for them.
   */
  async warm(pause: () => Promise<void> = yieldToEventLoop, slice = RANK_KEY_SLICE): Promise<void> {
    for (const id of METRIC_IDS) await drainPausing(this.rankKeySteps(id, slice), pause);
  }

  /**
   * Take over `prev`'s rank keys of each metric whose order and values are the very arrays of this engine's (a patch
   * that moved nothing in them and added no row: core/ranking-patch.ts). The keys are a function of those two alone
   * and are never written once set, so both engines read the same ones; computing them again cost ~250 ms and 11 MB
   * per metric at 2.8M rows. Returns how many it took.
   */
  takeOverRankKeys(prev: RankingEngine): number {
    const same: RankKeys = {};
    for (const [id, k] of Object.entries(prev.computedRankKeys()) as [MetricId, NonNullable<RankKeys[MetricId]>][])
      if (prev.order[id] === this.order[id] && prev.cols.value[id] === this.cols.value[id]) same[id] = k;
    return this.adoptRankKeys(same);
  }

  /** The rank keys computed so far, each with its run edges (to hand to an engine over the same columns and orders). */
  computedRankKeys(): RankKeys {
    const out: RankKeys = {};
    for (const [id, key] of this.rankKeys) out[id] = { key, edges: this.runEdges.get(id)! };
    return out;
  }

  /**
   * Take over rank keys computed by an engine over the very same columns and orders — the board worker's, over this
   * engine's arrays in shared memory (jobs/analytics/board-worker.ts) — for each metric that has none yet. The keys
   * are a function of the order and values alone. Returns how many it took.
   */
  adoptRankKeys(keys: RankKeys): number {
    let taken = 0;
    for (const id of METRIC_IDS) {
      const k = keys[id];
      if (!k || this.rankKeys.has(id)) continue;
      if (k.key.length !== this.cols.n) throw new Error(`rank keys of ${id}: ${k.key.length} rows for ${this.cols.n}`);
      this.rankKeys.set(id, k.key);
      this.runEdges.set(id, k.edges);
      taken++;
    }
    return taken;
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
    this.maskBitsPacked = false;
    this.rankScratchUsed = 0;
    // the default cohort is every row with a trade; each filter is its own loop, branch-free (mask &= +(test)): which
    // rows pass is as good as random in wallet order, and a branch on it is mispredicted half the time (8x slower)
    const tradeCount = c.tradeCount;
    if (this.allTraded) mask.fill(1);
    else for (let i = 0; i < n; i++) mask[i] = +(tradeCount[i]! > 0);
    if (co.active_within_days !== undefined) {
      const since = asOfUs - co.active_within_days * DAY_US;
      const last = c.lastTradeUs;
      for (let i = 0; i < n; i++) mask[i]! &= +(last[i]! > since);
    }
    if (co.best_category !== undefined) {
      // a category absent from the base matches no row (not the rows without a category, -1)
      const present = c.categories.indexOf(co.best_category);
      const cat = present === -1 ? -3 : present;
      const best = c.bestCategory;
      for (let i = 0; i < n; i++) mask[i]! &= +(best[i] === cat);
    }
    if (co.min_trades !== undefined) {
      const min = co.min_trades;
      for (let i = 0; i < n; i++) mask[i]! &= +(tradeCount[i]! >= min);
    }
    if (co.min_volume_usdc !== undefined) {
      const min = co.min_volume_usdc;
      const vol = c.volume;
      for (let i = 0; i < n; i++) mask[i]! &= +(vol[i]! >= min);
    }
    let tagMask = 0;
    for (const t of co.tags_any ?? []) tagMask |= 1 << SMART_MONEY_TAGS.indexOf(t);
    if (tagMask) {
      const bits = c.tagBits;
      for (let i = 0; i < n; i++) mask[i]! &= +((bits[i]! & tagMask) !== 0);
    }
    if (co.exclude_clusters) {
      const size = c.clusterSize;
      for (let i = 0; i < n; i++) mask[i]! &= +(size[i] === 1);
    }
    return mask;
  }

  /** Apply the gates in order to the cohort mask (in place); the rows remaining after each. */
  private gates(cfg: RankingConfig, mask: Uint8Array): { cohort: number; counts: number[]; gated: Int32Array } {
    const c = this.cols;
    const n = c.n;
    let cohort = 0;
    for (let i = 0; i < n; i++) cohort += mask[i]!;
    const counts: number[] = [];
    for (const g of cfg.gates) {
      const col = c.gate[g.field];
      const v = typeof g.value === 'boolean' ? (g.value ? 1 : 0) : g.value;
      // one loop per operator (no call per row), branch-free like the cohort's; a null (NaN) fails every gate, as
      // SQL's coalesce(field op value, false)
      let left = 0;
      switch (g.op) {
        case 'gte':
          for (let i = 0; i < n; i++) left += mask[i]! &= +(col[i]! >= v);
          break;
        case 'gt':
          for (let i = 0; i < n; i++) left += mask[i]! &= +(col[i]! > v);
          break;
        case 'lte':
          for (let i = 0; i < n; i++) left += mask[i]! &= +(col[i]! <= v);
          break;
        case 'lt':
          for (let i = 0; i < n; i++) left += mask[i]! &= +(col[i]! < v);
          break;
        case 'eq':
          for (let i = 0; i < n; i++) left += mask[i]! &= +(col[i]! === v);
          break;
        case 'ne':
          for (let i = 0; i < n; i++) left += mask[i]! &= +(col[i]! !== v) & +(col[i] === col[i]);
          break;
        default:
          throw new Error(`unknown gate operator ${String(g.op)}`);
      }
      counts.push(left);
    }
    // the gated rows, ascending (branch-free: every row is written, the count moves on only past a gated one)
    const g = counts.length ? counts[counts.length - 1]! : cohort;
    const gated = this.gatedScratch;
    if (g === n) for (let i = 0; i < n; i++) gated[i] = i;
    else
      for (let i = 0, k = 0; i < n; i++) {
        gated[k] = i;
        k += mask[i]!;
      }
    return { cohort, counts, gated: gated.subarray(0, g) };
  }

  /**
   * Each measured row's rank key in the metric's order (see rankKeys): for a higher-is-better metric the start of
   * its run of equal values, for a lower-is-better one its end. One pass over the order, kept for the engine's life.
   */
  private rankKeyOf(id: MetricId): Int32Array {
    const have = this.rankKeys.get(id);
    if (have) return have;
    drain(this.rankKeySteps(id));
    return this.rankKeys.get(id)!;
  }

  /**
   * rankKeyOf in steps, when the metric's keys are not computed yet: the pass over the order a slice at a time (it
   * writes at random rows: ~250 ms at 2.8M on a slow day).
   */
  private *rankKeySteps(id: MetricId, slice = RANK_KEY_SLICE): Generator<void, void> {
    if (this.rankKeys.has(id)) return;
    const order = this.order[id];
    const val = this.cols.value[id];
    const len = order.length;
    // shared memory when the columns are: a board worker's keys come back to the service's engine without a copy
    const key = columnLike(this.cols.walletId, this.cols.n).fill(len + 1);
    const edges = columnLike(this.cols.walletId, (len + 31) >>> 5);
    // -0 and 0 are one value (v !== prev is false), as everywhere ties are compared
    if (METRICS[id].better === 'higher') {
      let start = 0;
      // the previous position's value kept, not read again: each read is at a random row (half the walk's misses)
      let before = len > 0 ? val[order[0]!]! : 0;
      for (let a = 0; a < len; a += slice) {
        const stop = Math.min(len, a + slice);
        for (let k = a; k < stop; k++) {
          const row = order[k]!;
          const v = val[row]!;
          if (v !== before) start = k;
          before = v;
          key[row] = start;
          if (start === k) edges[k >>> 5]! |= 1 << (k & 31);
        }
        yield;
      }
    } else {
      let end = len;
      let after = len > 0 ? val[order[len - 1]!]! : 0;
      for (let b = len; b > 0; b -= slice) {
        const stop = Math.max(0, b - slice);
        for (let k = b - 1; k >= stop; k--) {
          const row = order[k]!;
          const v = val[row]!;
          if (v !== after) end = k + 1;
          after = v;
          key[row] = end;
          if (end === k + 1) edges[k >>> 5]! |= 1 << (k & 31);
        }
        yield;
      }
    }
    // set once whole: a ranking drained meanwhile (another caller) computes its own
    this.rankKeys.set(id, key);
    this.runEdges.set(id, edges);
    yield;
  }

  /**
   * Count a metric's gated measured rows and rank each (GatedCounts). The whole cohort: nothing to count. Many gated
   * rows: one walk of the order (gatedRanksByRow). Few: the gated rows sorted by rank key (gatedRanksBySort).
   */
  private gatedCounts(id: MetricId, mask: Uint8Array, gated: Int32Array): GatedCounts {
    const len = this.order[id].length;
    // the whole cohort (no filter or gate took a row): every position counts, nothing to count
    if (gated.length === this.cols.n) return { n: len, byRow: null };
    // the ranks go to the engine's scratch columns (takeRankScratch)
    return gated.length * 2 >= len ? this.gatedRanksByRow(id, mask) : this.gatedRanksBySort(id, gated);
  }

  /**
   * gatedCounts for few gated rows: their ranks from the rows sorted by rank key (sortedRanksSteps), written at the
   * rows. It replaced counts at the keys and a prefix sum over every position of the order: two passes over 2.8M
   * positions for a board's ~100k gated rows, ~5 ms a metric, 190 times a board set.
   */
  private gatedRanksBySort(id: MetricId, gated: Int32Array): GatedCounts {
    const { rank, carried: row, n } = drain(this.sortedRanksSteps(id, gated, true));
    const byRow = this.takeRankScratch();
    for (let g = 0; g < n; g++) byRow[row[g]!] = rank[g]!;
    // a row not measured adds 0 x its rank: any finite one
    for (let g = n; g < gated.length; g++) byRow[row[g]!] = 0;
    return { n, byRow };
  }

  /**
   * The gated rows sorted by their rank keys in `id` (an LSD radix sort, 11 bits a pass), each carrying its row
   * (`rows`) or its index among the gated rows, and each one's rank among the n measured ones (the others, key len +
   * 1, sort last): rows of one key are a run and share its rank — higher is better, where the run starts (the gated
   * rows with a smaller key: worse); lower is better, n less where it ends (the rows with a larger key). In the
   * engine's scratch columns: valid until the next call. In steps of `slice` rows per loop.
   */
  private *sortedRanksSteps(id: MetricId, gated: Int32Array, rows: boolean, slice = PERCENTILE_SLICE_ROWS): Generator<void, { rank: Int32Array; carried: Int32Array; n: number }> {
    const len = this.order[id].length;
    const rk = this.rankKeyOf(id);
    const m = gated.length;
    let [key, carried, key2, carried2] = this.sortScratch();
    if (m > key.length) throw new Error(`rank keys sorted for ${m} of ${this.cols.n} rows: more than half`);
    for (let a = 0; a < m; a += slice) {
      for (let g = a; g < Math.min(m, a + slice); g++) {
        const i = gated[g]!;
        key[g] = rk[i]!;
        carried[g] = rows ? i : g;
      }
      yield;
    }
    const count = this.digitCounts;
    for (let shift = 0; len + 1 >= 2 ** shift; shift += RADIX_BITS) {
      count.fill(0);
      for (let g = 0; g < m; g++) count[(key[g]! >>> shift) & RADIX_MASK]!++;
      for (let d = 0, sum = 0; d < count.length; d++) {
        const c = count[d]!;
        count[d] = sum;
        sum += c;
      }
      yield;
      for (let a = 0; a < m; a += slice) {
        for (let g = a; g < Math.min(m, a + slice); g++) {
          const at = count[(key[g]! >>> shift) & RADIX_MASK]!++;
          key2[at] = key[g]!;
          carried2[at] = carried[g]!;
        }
        yield;
      }
      [key, key2] = [key2, key];
      [carried, carried2] = [carried2, carried];
    }
    let n = m;
    while (n > 0 && key[n - 1]! > len) n--;
    // each key becomes its rank, in place: forwards from a run's start (higher is better), backwards from its end
    const higher = METRICS[id].better === 'higher';
    let edge = higher ? 0 : n;
    let last = n > 0 ? key[higher ? 0 : n - 1]! : 0;
    for (let a = 0; a < n; a += slice) {
      for (let s = a; s < Math.min(n, a + slice); s++) {
        const g = higher ? s : n - 1 - s;
        const k = key[g]!;
        if (k !== last) edge = higher ? g : g + 1;
        last = k;
        key[g] = higher ? edge : n - edge;
      }
      yield;
    }
    return { rank: key, carried, n };
  }

  /**
   * A board's percentiles of a metric it did not weight, at its rows' places (`placeOfGated`: each gated row's place
   * in the board, -1 when not in it): each percentile written from the ranks of the gated rows sorted by rank key
   * (sortedRanksSteps), in steps of `slice` rows. Through gatedCounts, a metric cost three reads at scattered rows per gated
   * row (its key for the count, its rank written and read back, its key again) against one here: ~6.7 ms against
   * ~3.5 ms a metric for a board of 87k rows at full scale.
   */
  private *boardPercentilesBySortSteps(id: MetricId, gated: Int32Array, placeOfGated: Int32Array, pct: Float64Array, slice: number): Generator<void, void> {
    const { rank, carried, n } = yield* this.sortedRanksSteps(id, gated, false, slice);
    for (let a = 0; a < gated.length; a += slice) {
      for (let g = a; g < Math.min(gated.length, a + slice); g++) {
        const at = placeOfGated[carried[g]!]!;
        if (at >= 0) pct[at] = g < n ? percentRank(rank[g]!, n) : Number.NaN;
      }
      yield;
    }
  }

  /**
   * gatedCounts for many gated rows: one walk of the metric's order (backwards for lower is better) counting the gated
   * rows passed, which writes each row's rank at the row — the count where its run began. The mask is read as bits
   * (2.8M rows in 350 KB, in cache where the byte mask was not), and the writes at random rows cost less than the
   * reads at random positions a count by position needs later (measured: the walk and a composite pass ~30% faster).
   */
  private gatedRanksByRow(id: MetricId, mask: Uint8Array): GatedCounts {
    const order = this.order[id];
    const len = order.length;
    this.rankKeyOf(id);
    const edges = this.runEdges.get(id)!;
    const bits = this.packedMask(mask);
    // every row of the order is written (a row not gated too: no branch); a row not measured keeps a stale rank
    const byRow = this.takeRankScratch();
    // forwards for higher is better, backwards for lower (from the best end: the rows passed are the better ones)
    const forwards = METRICS[id].better === 'higher';
    let acc = 0;
    let run = 0;
    for (let s = 0; s < len; s++) {
      const k = forwards ? s : len - 1 - s;
      const row = order[k]!;
      const edge = (edges[k >>> 5]! >>> (k & 31)) & 1;
      // bit operations, not edge x acc + (1 - edge) x run: an integer product of 0 is a branch in V8 (its minus-zero
      // check), taken where the run edges fall, at random for a metric with many ties
      const take = -edge;
      run = (acc & take) | (run & ~take);
      byRow[row] = run;
      acc += (bits[row >>> 5]! >>> (row & 31)) & 1;
    }
    return { n: acc, byRow };
  }

  /**
   * sortedRanksSteps' four columns (keys, carried, and a second of each), kept for the engine's life: half the rows
   * each (22 MB at 2.8M rows)
   */
  private sortScratch(): [Int32Array, Int32Array, Int32Array, Int32Array] {
    // sorted only when fewer than half the rows are gated (gatedCounts, rowPercentileSteps)
    if (!this.sorting) this.sorting = [0, 1, 2, 3].map(() => new Int32Array((this.cols.n >>> 1) + 1)) as [Int32Array, Int32Array, Int32Array, Int32Array];
    return [...this.sorting];
  }

  /** A rank column for this score (rankScratch). */
  private takeRankScratch(): Int32Array {
    const k = this.rankScratchUsed++;
    if (k < this.rankScratch.length) return this.rankScratch[k]!;
    const col = new Int32Array(this.cols.n);
    this.rankScratch.push(col);
    return col;
  }

  /** The score's gated mask as bits (maskBits), packed once per score. */
  private packedMask(mask: Uint8Array): Int32Array {
    const bits = this.maskBits;
    if (this.maskBitsPacked) return bits;
    const n = this.cols.n;
    for (let w = 0, i = 0; w < bits.length; w++) {
      let x = 0;
      for (let b = 0; b < 32 && i < n; b++, i++) x |= mask[i]! << b;
      bits[w] = x;
    }
    this.maskBitsPacked = true;
    return bits;
  }

  /**
   * A weighted metric as a pass reads it (PassTerm): its percentile of row i is (100 x rank) / div with rank =
   * base + ((src[i] ^ flip) & keep) — the rank key itself (higher is better) or n less it ((n + 1) + ~key), the gated
   * rank by row, or 1 for every row when n is 1 (percentRank's 100 / 1) —, and its contribution sel[measured] x that
   * percentile: sel[1] is the weight, sel[0] is 0, which is `ok x weight` to the bit. Every value the loop needs is
   * then an int32 bit operation or a float64 operation: a Smi weight (1, 2: most weights) made `ok x weight` an
   * integer multiplication with V8's minus-zero check, a branch on whether the row is measured — mispredicted at
   * random — that made a pass up to 5x slower than the arithmetic.
   */
  private termOf({ id, weight, counts }: Weighted): PassTerm {
    const { n, byRow } = counts;
    const lowerWhole = byRow === null && METRICS[id].better !== 'higher';
    const key = this.rankKeyOf(id);
    return {
      key,
      len: this.order[id].length,
      src: byRow ?? key,
      flip: lowerWhole ? -1 : 0,
      keep: n === 1 ? 0 : -1,
      base: n === 1 ? 1 : lowerWhole ? n + 1 : 0,
      div: n === 1 ? 1 : n - 1,
      sel: Float64Array.of(0, weight),
    };
  }

  /**
   * Add `weight` x each gated measured row's percentile of `id` to the composite sums of the gated rows (num[g],
   * den[g] for the g-th gated row): the metric left over after the four- and two-metric passes, or the only one.
   * The first metric's pass writes the sums (0 + x is +0 or x), so they need no clearing pass.
   */
  private addWeighted(t: PassTerm, gated: Int32Array, first: boolean): void {
    const { key, len, src, flip, keep, base, div, sel } = t;
    const num = this.num;
    const den = this.den;
    // branch-free on whether a row is measured (as good as random): a row not measured has a finite rank (its key,
    // or a stale count) and adds 0 x p. 1 x w x p is w x p exactly and x + 0 is x, so the sums are the same doubles
    // as percentRank's; the branch on `first` goes the same way for every row
    for (let g = 0; g < gated.length; g++) {
      const i = gated[g]!;
      const x = sel[+(key[i]! <= len)]!;
      const p = (100 * (base + ((src[i]! ^ flip) & keep))) / div;
      num[g] = (first ? 0 : num[g]!) + x * p;
      den[g] = (first ? 0 : den[g]!) + x;
    }
  }

  /**
   * Four weighted metrics added to the sums in one pass, the same additions in the same order as two pairPass 'sums'
   * passes, so the same doubles: the sums are read and written once for four metrics. Memory traffic is what a pass
   * costs once it is branch-free (termOf): a config weighting every metric over the whole cohort 247 → 189 ms.
   */
  private quadPass(ta: PassTerm, tb: PassTerm, tc: PassTerm, td: PassTerm, gated: Int32Array, first: boolean): void {
    const num = this.num;
    const den = this.den;
    const [ka, la, sa, fa, ma, ba, da, wa] = [ta.key, ta.len, ta.src, ta.flip, ta.keep, ta.base, ta.div, ta.sel];
    const [kb, lb, sb, fb, mb, bb, db, wb] = [tb.key, tb.len, tb.src, tb.flip, tb.keep, tb.base, tb.div, tb.sel];
    const [kc, lc, sc, fc, mc, bc, dc, wc] = [tc.key, tc.len, tc.src, tc.flip, tc.keep, tc.base, tc.div, tc.sel];
    const [kd, ld, sd, fd, md, bd, dd, wd] = [td.key, td.len, td.src, td.flip, td.keep, td.base, td.div, td.sel];
    for (let g = 0; g < gated.length; g++) {
      const i = gated[g]!;
      const xa = wa[+(ka[i]! <= la)]!;
      const xb = wb[+(kb[i]! <= lb)]!;
      const xc = wc[+(kc[i]! <= lc)]!;
      const xd = wd[+(kd[i]! <= ld)]!;
      const pa = (100 * (ba + ((sa[i]! ^ fa) & ma))) / da;
      const pb = (100 * (bb + ((sb[i]! ^ fb) & mb))) / db;
      const pc = (100 * (bc + ((sc[i]! ^ fc) & mc))) / dc;
      const pd = (100 * (bd + ((sd[i]! ^ fd) & md))) / dd;
      num[g] = (first ? 0 : num[g]!) + xa * pa + xb * pb + xc * pc + xd * pd;
      den[g] = (first ? 0 : den[g]!) + xa + xb + xc + xd;
    }
  }

  /**
   * Two weighted metrics in one pass over the gated rows: x_a then x_b added to each row's sums, the same additions
   * in the same order as two addWeighted passes, so the same doubles. `to`: 'sums' writes the sums (from zero when
   * `first`, else onto them: two metrics left after the four-metric passes); 'composites' (exactly two metrics) writes the
   * composites themselves into num (compact) and returns the rows scored: the sums stay in registers, where a pass
   * per metric and a composite pass read and wrote four columns of doubles more. The branches on `to` and `first` go
   * the same way for every row.
   */
  private pairPass(ta: PassTerm, tb: PassTerm, gated: Int32Array, to: 'sums' | 'composites', first: boolean): number {
    const num = this.num;
    const den = this.den;
    const [ka, la, sa, fa, ma, ba, da, wa] = [ta.key, ta.len, ta.src, ta.flip, ta.keep, ta.base, ta.div, ta.sel];
    const [kb, lb, sb, fb, mb, bb, db, wb] = [tb.key, tb.len, tb.src, tb.flip, tb.keep, tb.base, tb.div, tb.sel];
    const onto = !first && to === 'sums';
    const composites = to === 'composites';
    let scored = 0;
    for (let g = 0; g < gated.length; g++) {
      const i = gated[g]!;
      const xa = wa[+(ka[i]! <= la)]!;
      const xb = wb[+(kb[i]! <= lb)]!;
      const pa = (100 * (ba + ((sa[i]! ^ fa) & ma))) / da;
      const pb = (100 * (bb + ((sb[i]! ^ fb) & mb))) / db;
      const sn = (onto ? num[g]! : 0) + xa * pa + xb * pb;
      const sd = (onto ? den[g]! : 0) + xa + xb;
      if (composites) {
        scored += +(sd > 0);
        num[g] = round9(sn / sd);
      } else {
        num[g] = sn;
        den[g] = sd;
      }
    }
    return scored;
  }

  /**
   * Score `cfg` as of T: the gated mask and rows, the gated rows' composites (compact; NaN where not scored or not
   * its user's best row), the explain counts and the board's sort key. The columns are the engine's scratch: valid until the next
   * call.
   */
  private score(cfg: RankingConfig, asOfUs: number): Scored {
    return drain(this.scoreSteps(cfg, asOfUs));
  }

  /** score() in steps: it yields after the cohort and gates and after each weighted metric's walk. */
  private *scoreSteps(cfg: RankingConfig, asOfUs: number): Generator<void, Scored> {
    const mask = this.cohort(cfg, asOfUs);
    const { cohort, counts, gated } = this.gates(cfg, mask);
    yield;
    const counted = new Map<MetricId, GatedCounts>();
    const weighted: Weighted[] = [];
    for (const [id, w] of Object.entries(cfg.weights) as [MetricId, number][]) {
      if ((w ?? 0) > 0) {
        yield* this.rankKeySteps(id);
        const counts = this.gatedCounts(id, mask, gated);
        counted.set(id, counts);
        // a metric no gated row is measured in adds nothing to any row
        if (counts.n > 0) weighted.push({ id, weight: w, counts });
        yield;
      }
    }
    // composite = sum(w * pct) / sum(w) over the measured weighted metrics, compact over the gated rows (every later
    // pass reads the gated rows only; written by row, it cost a fill and a scatter of n doubles, and the page's pass
    // read it at random); scored = at least one of them measured (0 / 0 is NaN: unscored without a branch)
    const g = gated.length;
    const num = this.num;
    const den = this.den;
    const composite = num.subarray(0, g);
    let scored = 0;
    const terms = weighted.map((w) => this.termOf(w));
    if (terms.length === 2) scored = this.pairPass(terms[0]!, terms[1]!, gated, 'composites', true);
    else {
      // four metrics per pass into the sums (a quarter of the passes over them; three go with a fourth of weight 0,
      // which adds +0 or -0: the same sums), then two, then one
      for (let k = 0; k < terms.length; ) {
        const left = terms.length - k;
        if (left >= 3) this.quadPass(terms[k]!, terms[k + 1]!, terms[k + 2]!, left > 3 ? terms[k + 3]! : { ...terms[k + 2]!, sel: Float64Array.of(0, 0) }, gated, k === 0);
        else if (left === 2) this.pairPass(terms[k]!, terms[k + 1]!, gated, 'sums', k === 0);
        else this.addWeighted(terms[k]!, gated, k === 0);
        k += Math.min(left, 4);
        yield;
      }
      // no weighted metric measured in the gated rows: every sum is 0
      if (!weighted.length) {
        num.fill(0, 0, g);
        den.fill(0, 0, g);
      }
      for (let k = 0; k < g; k++) {
        scored += +(den[k]! > 0);
        composite[k] = round9(num[k]! / den[k]!);
      }
    }
    return this.ordered(cfg, mask, gated, composite, scored, cohort, counts, counted);
  }

  /** One row per user, the board order (the rest of score()). `composite`: the gated rows', compact (score's). */
  private ordered(cfg: RankingConfig, mask: Uint8Array, gated: Int32Array, composite: Float64Array, scored: number, cohort: number, counts: number[], counted: Map<MetricId, GatedCounts>): Scored {
    let total = scored;
    // one row per user: its best composite (ties: the smaller wallet id, the first of its rows: they are ascending,
    // in wallet order). A gated row's composite is at its position among the gated rows (a binary search: users
    // with several wallets are few)
    const ms = this.multiStart;
    const mr = this.multiRows;
    const whole = gated.length === this.cols.n;
    for (let k = 0; k + 1 < ms.length; k++) {
      let best = -1;
      for (let j = ms[k]!; j < ms[k + 1]!; j++) {
        const i = mr[j]!;
        if (!mask[i]) continue;
        const at = whole ? i : indexOfSorted(gated, i);
        const v = composite[at]!;
        if (v === v && (best < 0 || v > composite[best]!)) best = at;
      }
      if (best < 0) continue;
      for (let j = ms[k]!; j < ms[k + 1]!; j++) {
        const i = mr[j]!;
        if (!mask[i]) continue;
        const at = whole ? i : indexOfSorted(gated, i);
        if (at !== best && composite[at] === composite[at]) {
          composite[at] = Number.NaN;
          total--;
        }
      }
    }
    // the sort key: composite, or a metric's raw value (nulls last), best first unless worst_first
    const sortMetric = cfg.sort_by === 'composite' ? null : cfg.sort_by;
    const desc = sortMetric === null ? cfg.sort_dir === 'best_first' : (METRICS[sortMetric].better === 'higher') === (cfg.sort_dir === 'best_first');
    const sortKey = sortMetric === null ? null : this.cols.value[sortMetric];
    return { mask, gated, composite, sortKey, desc, explain: { cohort, counts, scored, total }, counted };
  }

  /** Percentiles of `rows` (within the gated mask) for each metric, NaN where not measured. */
  private rowPercentiles(mask: Uint8Array, gated: Int32Array, rows: ArrayLike<number>, metrics: readonly MetricId[], counted: Map<MetricId, GatedCounts>): Partial<Record<MetricId, Float64Array>> {
    return drain(this.rowPercentileSteps(mask, gated, rows, metrics, counted));
  }

  /**
   * rowPercentiles in steps: a yield after each metric. A metric the score already counted for this mask (a weighted
   * one) costs a lookup per row; another costs its counting passes first. `distinct`: `rows` has no row twice (a
   * board's ranked rows), so they are visited in row order and each percentile is written to its row's place: a
   * board's rows come in rank order, and reading the metric's columns at random rows for each of them cost more than
   * one write at a random place (19 metrics over 1.9M board rows: ~3 s of every refresh at full scale). A board's rows
   * are gated rows: a metric it did not weight is ranked from its gated rows sorted by key (boardPercentilesBySortSteps)
   * when they are few.
   */
  private *rowPercentileSteps(mask: Uint8Array, gated: Int32Array, rows: ArrayLike<number>, metrics: readonly MetricId[], counted: Map<MetricId, GatedCounts>, sliceRows = PERCENTILE_SLICE_ROWS, distinct = false): Generator<void, Partial<Record<MetricId, Float64Array>>> {
    const out: Partial<Record<MetricId, Float64Array>> = {};
    // the rows ascending (asc), the place in `rows` of each (placeOf), and of each gated row (-1: not in `rows`)
    let asc: Int32Array | null = null;
    let placeOf: Int32Array | null = null;
    let placeOfGated: Int32Array | null = null;
    if (distinct) {
      // (-1 everywhere between calls: a board of the whole cohort would otherwise allocate 11 MB per preset)
      const place = (this.placeScratch ??= new Int32Array(this.cols.n).fill(-1));
      for (let k = 0; k < rows.length; k++) place[rows[k]!] = k;
      asc = new Int32Array(rows.length);
      placeOf = new Int32Array(rows.length);
      placeOfGated = new Int32Array(gated.length);
      let m = 0;
      // a board's rows are gated rows: only those are looked at
      for (let g = 0; g < gated.length; g++) {
        const i = gated[g]!;
        const at = place[i]!;
        placeOfGated[g] = at;
        if (at < 0) continue;
        asc[m] = i;
        placeOf[m++] = at;
        place[i] = -1;
      }
      if (m !== rows.length) throw new Error('board percentiles: rows that are not gated');
      yield;
    }
    for (const id of metrics) {
      yield* this.rankKeySteps(id);
      let counts = counted.get(id);
      if (counts === undefined && placeOfGated !== null && gated.length < this.cols.n && gated.length * 2 < this.order[id].length) {
        // a board's metric it did not weight, with few gated rows: its percentiles straight from the sorted keys
        const pct = new Float64Array(rows.length);
        yield* this.boardPercentilesBySortSteps(id, gated, placeOfGated, pct, sliceRows);
        out[id] = pct;
        yield;
        continue;
      }
      if (counts === undefined) {
        counted.set(id, (counts = this.gatedCounts(id, mask, gated)));
        yield;
      }
      const rk = this.rankKeyOf(id);
      const len = this.order[id].length;
      const higherBetter = METRICS[id].better === 'higher';
      // the rows in the order visited (ascending when distinct), each percentile written to its place in `rows`; in
      // slices, as many rows are read
      const visit = asc ?? rows;
      const pct = new Float64Array(rows.length);
      for (let a = 0; a < visit.length; a += sliceRows) {
        const end = Math.min(visit.length, a + sliceRows);
        for (let k = a; k < end; k++) {
          const i = visit[k]!;
          const r = rk[i]!;
          pct[placeOf === null ? k : placeOf[k]!] = counts.n === 0 || r > len ? Number.NaN : percentRank(gatedRank(counts, i, r, higherBetter), counts.n);
        }
        if (end < visit.length) yield;
      }
      out[id] = pct;
      yield;
    }
    return out;
  }

  /**
   * Rank `cfg` as of T: the page [offset, offset + limit) of the board, its explain counts and the page rows'
   * breakdown percentiles (weighted metrics and extra_metrics).
   */
  rank(cfg: RankingConfig, asOfUs: number, breakdown: readonly MetricId[]): RankedPage {
    const { mask, gated, composite, sortKey, desc, explain, counted } = this.score(cfg, asOfUs);
    const want = Math.min(explain.total, cfg.offset + cfg.limit);
    const page = topK(gated, composite, sortKey, desc, want).slice(cfg.offset, cfg.offset + cfg.limit);
    const pageRows = page.map((at) => gated[at]!);
    return {
      rows: pageRows,
      ranks: pageRows.map((_, k) => cfg.offset + k + 1),
      composite: page.map((at) => composite[at]!),
      pct: Object.fromEntries(Object.entries(this.rowPercentiles(mask, gated, pageRows, breakdown, counted)).map(([id, p]) => [id, Array.from(p, (x) => (Number.isNaN(x) ? null : x))])),
      explain,
    };
  }

  /**
   * The whole board of `cfg` (what boardSql stores for a preset): every ranked row in rank order with its
   * composite, handed to `onRows` in slices of up to `sliceRows` rows with every metric's percentile (NaN = not measured).
   */
  board(cfg: RankingConfig, asOfUs: number, onRows: BoardRows, sliceRows = BOARD_SLICE_ROWS, percentileSlice = PERCENTILE_SLICE_ROWS): ExplainCounts {
    return drain(this.boardSteps(cfg, asOfUs, onRows, sliceRows, percentileSlice));
  }

  /**
   * board() in steps of at most a metric's walk (~65 ms at 2.8M) or a slice of rows: a service scores its boards
   * between requests (writeBoards pauses at each yield). The engine's scratch columns are the board's until it ends,
   * so only an engine no request ranks with (a version not yet published) is scored this way.
   */
  *boardSteps(cfg: RankingConfig, asOfUs: number, onRows: BoardRows, sliceRows = BOARD_SLICE_ROWS, percentileSlice = PERCENTILE_SLICE_ROWS): Generator<void, ExplainCounts> {
    const scored = yield* this.scoreSteps(cfg, asOfUs);
    const { mask, gated, desc, explain, counted } = scored;
    // the composite by row, as boardOrder sorts it
    const composite = this.composite.fill(Number.NaN);
    for (let k = 0; k < gated.length; k++) composite[gated[k]!] = scored.composite[k]!;
    yield;
    const ranked = yield* boardOrderSteps(composite, scored.sortKey ?? composite, desc, percentileSlice, gated);
    const scores = new Float64Array(ranked.length);
    for (let k = 0; k < ranked.length; k++) scores[k] = composite[ranked[k]!]!;
    yield;
    // every metric's percentile of every ranked row
    const pct = yield* this.rowPercentileSteps(mask, gated, ranked, METRIC_IDS, counted, percentileSlice, true);
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

/**
 * The first `k` gated rows in board order whose composite is not NaN, as positions among `gated` (ascending rows):
 * `composite` is the gated rows' (compact), `rowKey` the sort key by row, or null to sort by the composite; best
 * first in direction `desc`, NaN keys last, ties by row. One pass with a bounded heap whose root is the worst row
 * kept. Rows come in ascending order, so a row tied with the root comes after it: most rows cost one comparison of
 * their key with the root's, inline.
 */
function topK(gated: Int32Array, composite: Float64Array, rowKey: Float64Array | null, desc: boolean, k: number): number[] {
  if (k <= 0) return [];
  const keyAt = rowKey === null ? (at: number) => composite[at]! : (at: number) => rowKey[gated[at]!]!;
  /** a before b in board order (a - b < 0 on ties: positions follow wallet order) */
  const before = (a: number, b: number): number => {
    const ka = keyAt(a);
    const kb = keyAt(b);
    const na = ka !== ka;
    const nb = kb !== kb;
    if (na !== nb) return na ? 1 : -1; // nulls last, both directions
    if (!na && ka !== kb) return desc ? kb - ka : ka - kb;
    return a - b;
  };
  const heap = new Int32Array(k);
  let size = 0;
  // sift: the heap keeps the worst kept row (last in board order) at the root
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
  const push = (at: number) => {
    if (size < k) {
      let h = size++;
      while (h > 0) {
        const parent = (h - 1) >> 1;
        if (before(heap[parent]!, at) >= 0) break;
        heap[h] = heap[parent]!;
        h = parent;
      }
      heap[h] = at;
    } else {
      heap[0] = at;
      down(0);
    }
    return keyAt(heap[0]!);
  };
  // a row comes before the root only with a key strictly better than the root's, or any key when the root's is NaN
  // (two loops, so that a row costs no call: the key is read inline)
  let rootKey = Number.NaN;
  const n = gated.length;
  if (rowKey === null)
    for (let at = 0; at < n; at++) {
      const v = composite[at]!;
      if (v !== v) continue;
      if (size === k && rootKey === rootKey && (desc ? v <= rootKey : v >= rootKey)) continue;
      rootKey = push(at);
    }
  else
    for (let at = 0; at < n; at++) {
      if (composite[at] !== composite[at]) continue;
      const v = rowKey[gated[at]!]!;
      if (size === k && (v !== v || (rootKey === rootKey && (desc ? v <= rootKey : v >= rootKey)))) continue;
      rootKey = push(at);
    }
  return Array.from(heap.subarray(0, size)).sort(before);
}

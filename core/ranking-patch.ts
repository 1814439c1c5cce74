/**
 * The next analytics version's RankingEngine without reading the whole rank base again: the previous version's
 * engine plus the rows that changed (the changed and new wallets' columns, read by loadRankColumns with a `where`).
 * Every column is merged in wallet order in one pass; each metric's order is the previous order without the changed
 * rows (renumbered), merged with the changed rows' own order — O(n) per metric instead of a sort. The result equals
 * loading the new rank base whole (test/core/ranking-engine.test.ts), so boards and custom rankings do not change.
 *
 * Rows never leave the rank base (a wallet with a fill keeps it), so a patch only replaces and inserts rows.
 */
import { METRIC_IDS, type GateField, type MetricId } from './rankings.ts';
import { RankingEngine } from './ranking-engine.ts';
import { columnLike, userCodes, type Column, type RankColumns } from './rank-columns.ts';
import { inOrder, sortedMeasuredSteps } from './ranking-orders.ts';
import { drain } from './steps.ts';

/**
 * Rows of an order merged or placed per step (a power of two): each reads values at random rows, so a slice of 512k
 * took 300-680 ms on a busy machine when a delta of 1.85M rows changed every order (bench:rankings' patch_steps)
 */
const MERGE_SLICE = 1 << 16;
/**
 * An order's placed rows are found by binary search when (placed + left) x this is below the order's length: a search
 * reads ~22 rows at random in an order of 2.8M, a merge reads every row's value at random (about as dear per row)
 */
const SEARCH_FACTOR = 32;
/** How an order's new and moved rows are placed: by the sizes (undefined), or one way (a test runs both) */
export type PlaceBy = 'search' | 'merge' | undefined;

export interface PatchFigures {
  rows: number;
  replaced: number;
  inserted: number;
  /**
   * delta rows placed anew in the metrics' orders, summed over the metrics: the new rows and the replaced rows whose
   * value or measured flag moved (a refresh whose only change for most wallets is a mark moves two metrics of ~19)
   */
  reordered: number;
  /** columns and orders taken over from the previous engine as they were (no row of theirs changed, none inserted) */
  reused: number;
  /** metrics whose rank keys the previous engine had computed and the new one took over with their order */
  rankKeys: number;
}

/** The engine of (previous rank base with `delta`'s rows replacing or joining it). */
export function patchEngine(prev: RankingEngine, delta: RankColumns, placeBy?: PlaceBy): { engine: RankingEngine; figures: PatchFigures } {
  return drain(patchSteps(prev, delta, placeBy));
}

/** Two doubles equal as stored values (NaN equals NaN; 0 and -0 are equal, as every order and comparison here takes them). */
const same = (x: number, y: number) => x === y || (x !== x && y !== y);

/**
 * patchEngine in steps (a column or a metric's order each), for a caller that lets the event loop run between them:
 * in one piece it held a full-scale service's loop 12 to 28 s per refresh on a slow day (bench/cpu-holds.ts).
 *
 * Whatever did not change is taken over, not copied: a column none of whose replaced rows moved, when no row is
 * inserted, is the previous engine's array itself (engines never write their columns or orders), and a metric's
 * order places only the rows whose value moved. A refresh that moves the marks of 1.9M wallets changes their P&L,
 * and so two metrics' values: the other orders then cost a pass each, not a sort of 1.9M rows (and ~40 arrays of the
 * cohort's length are not allocated again, which the garbage collector paid for in pauses).
 */
export function* patchSteps(prev: RankingEngine, delta: RankColumns, placeBy?: PlaceBy): Generator<void, { engine: RankingEngine; figures: PatchFigures }> {
  const old = prev.cols;
  // the merge of two wallet-ordered row sets: each new row comes from the old rows (fromOld >= 0) or the delta
  const fromOld = new Int32Array(old.n + delta.n);
  const fromDelta = new Int32Array(old.n + delta.n);
  // an old row's new row, or -2 - j when delta row j replaces it
  const oldToNew = new Int32Array(old.n);
  const deltaToNew = new Int32Array(delta.n);
  // the old row a delta row replaces, -1 for a new one
  const deltaToOld = new Int32Array(delta.n);
  let i = 0;
  let j = 0;
  let n = 0;
  let replaced = 0;
  while (i < old.n || j < delta.n) {
    const wo = i < old.n ? old.walletId[i]! : Number.POSITIVE_INFINITY;
    const wd = j < delta.n ? delta.walletId[j]! : Number.POSITIVE_INFINITY;
    if (wd <= wo) {
      deltaToOld[j] = -1;
      if (wd === wo) {
        deltaToOld[j] = i;
        oldToNew[i++] = -2 - j;
        replaced++;
      }
      fromOld[n] = -1;
      fromDelta[n] = j;
      deltaToNew[j++] = n++;
    } else {
      fromOld[n] = i;
      fromDelta[n] = -1;
      oldToNew[i++] = n++;
    }
  }
  const inserted = delta.n - replaced;
  let reused = 0;
  // the new rows, in order: old rows between two of them keep their order and are contiguous in both (a replaced
  // row keeps its slot), so a column is copied in runs, then the delta rows are written over their slots
  const insertedRows = deltaToNew.filter((_, d) => deltaToOld[d]! < 0);
  const merge = <T extends Column>(a: T, b: ArrayLike<number>): T => {
    if (inserted === 0) {
      let moved = false;
      for (let d = 0; d < delta.n && !moved; d++) moved = !same(a[deltaToOld[d]!]!, b[d]!);
      if (!moved) {
        reused++;
        return a;
      }
    }
    const out = columnLike(a, n);
    let i = 0;
    let r = 0;
    for (let k = 0; k < insertedRows.length; k++) {
      const to = insertedRows[k]!;
      out.set(a.subarray(i, i + to - r) as never, r);
      i += to - r;
      r = to + 1;
    }
    out.set(a.subarray(i) as never, r);
    for (let d = 0; d < delta.n; d++) out[deltaToNew[d]!] = b[d]!;
    return out;
  };
  // an old row's new number: its own plus the rows inserted before it, one figure for a block of 64 old rows unless a
  // row is inserted inside it (-1: then read the maps). Renumbering a whole order through the maps read them at
  // random rows, ~0.1 s per order of 2.8M rows
  const blockShift = new Int32Array((old.n >>> 6) + 1);
  const mapped = (r: number) => {
    const o = oldToNew[r]!;
    return o >= 0 ? o : deltaToNew[-2 - o]!;
  };
  for (let blk = 0, first = 0; first < old.n; blk++, first += 64) {
    const last = Math.min(old.n, first + 64) - 1;
    const shift = mapped(first) - first;
    blockShift[blk] = mapped(last) - last === shift ? shift : -1;
  }
  const renumber = (r: number) => {
    const shift = blockShift[r >>> 6]!;
    return shift >= 0 ? r + shift : mapped(r);
  };

  // best categories: codes into the union of both lists, then only the categories some row still has
  const union = [...new Set([...old.categories, ...delta.categories])].sort();
  const codeOf = new Map(union.map((c, k) => [c, k]));
  const oldCode = Int32Array.from(old.categories, (c) => codeOf.get(c)!);
  const deltaCode = Int32Array.from(delta.categories, (c) => codeOf.get(c)!);
  const bestCategory = columnLike(old.bestCategory, n);
  const used = new Uint8Array(union.length);
  for (let r = 0; r < n; r++) {
    const o = fromOld[r]!;
    const c = o >= 0 ? old.bestCategory[o]! : delta.bestCategory[fromDelta[r]!]!;
    const u = c < 0 ? -1 : o >= 0 ? oldCode[c]! : deltaCode[c]!;
    bestCategory[r] = u;
    if (u >= 0) used[u] = 1;
  }
  const categories = union.filter((_, k) => used[k]);
  const finalCode = new Int32Array(union.length).fill(-1);
  categories.forEach((c, k) => (finalCode[codeOf.get(c)!] = k));
  for (let r = 0; r < n; r++) if (bestCategory[r]! >= 0) bestCategory[r] = finalCode[bestCategory[r]!]!;

  yield;
  const walletId = merge(old.walletId, delta.walletId);
  const links = new Map(old.links);
  for (let k = 0; k < delta.n; k++) links.delete(delta.walletId[k]!);
  for (const [w, u] of delta.links) links.set(w, u);
  const userCode = userCodes(walletId, links);
  yield;
  // each column merged in a step of its own
  const merged = function* <T extends Column>(a: T, b: ArrayLike<number>): Generator<void, T> {
    const out = merge(a, b);
    yield;
    return out;
  };
  const tradeCount = yield* merged(old.tradeCount, delta.tradeCount);
  const lastTradeUs = yield* merged(old.lastTradeUs, delta.lastTradeUs);
  const volume = yield* merged(old.volume, delta.volume);
  const tagBits = yield* merged(old.tagBits, delta.tagBits);
  const clusterSize = yield* merged(old.clusterSize, delta.clusterSize);
  const measured = {} as Record<MetricId, Uint8Array>;
  const value = {} as Record<MetricId, Float64Array>;
  for (const id of METRIC_IDS) {
    measured[id] = yield* merged(old.measured[id], delta.measured[id]);
    value[id] = yield* merged(old.value[id], delta.value[id]);
  }
  const gate = {} as Record<GateField, Float64Array>;
  for (const g of Object.keys(old.gate) as GateField[]) gate[g] = yield* merged(old.gate[g], delta.gate[g]);
  const cols: RankColumns = { n, walletId, userCode, links, tradeCount, lastTradeUs, bestCategory, categories, volume, tagBits, clusterSize, measured, value, gate };

  // each order: the old rows that keep their place (renumbered, still in value order with ties in row order: the
  // renumbering keeps row order) merged with the delta rows placed anew (new, or moved: measured or value changed),
  // in their own order
  const prevOrders = prev.orders();
  const orders = {} as Record<MetricId, Int32Array>;
  let reordered = 0;
  for (const id of METRIC_IDS) {
    const a = prevOrders[id];
    const val = cols.value[id];
    const oldMeasured = old.measured[id];
    const oldValue = old.value[id];
    const newMeasured = delta.measured[id];
    const newValue = delta.value[id];
    // moved[d]: replaced row d left its place (it goes, and comes back in `placed` when still in the order)
    const moved = new Uint8Array(delta.n);
    const placed = new Uint8Array(delta.n);
    // the old rows that leave the previous order (moved, and in it before)
    const left: number[] = [];
    let nPlaced = 0;
    let nMoved = 0;
    for (let d = 0; d < delta.n; d++) {
      const o = deltaToOld[d]!;
      const isIn = inOrder(newMeasured, newValue, d);
      if (o >= 0) {
        const wasIn = inOrder(oldMeasured, oldValue, o);
        moved[d] = +(wasIn !== isIn || (isIn && oldValue[o] !== newValue[d]));
        nMoved += moved[d]!;
        if (moved[d] === 1 && wasIn) left.push(o);
      }
      placed[d] = +(isIn && (o < 0 || moved[d] === 1));
      nPlaced += placed[d]!;
    }
    reordered += nPlaced;
    if (inserted === 0 && nPlaced === 0 && nMoved === 0) {
      // every row in its place and numbered as before: the order itself
      orders[id] = a;
      reused++;
      yield;
      continue;
    }
    // in steps too: a refresh whose moved mids change most wallets' P&L places ~1.9M rows in the P&L metrics' orders,
    // whose sort in one piece took 1.5 s (bench:rankings' patch_steps)
    const b = yield* sortedMeasuredSteps(placed, newValue, MERGE_SLICE);
    // few rows placed (a refresh's usual case: a few thousand wallets in an order of millions): each found by a
    // binary search in the previous order, the rows between copied in runs. A merge comparing every row read values
    // at random rows, ~0.3 s per order at 2.8M rows (19 orders of ~2.8M rows each for a delta of 7k rows)
    let out: Int32Array;
    if (placeBy ? placeBy === 'search' : (b.length + left.length) * SEARCH_FACTOR < a.length) {
      out = yield* placedBySearch(a, b, left, oldValue, newValue, renumber, deltaToNew, inserted === 0);
    } else {
      // an old row's new row when it keeps its place (a replaced row that did not move), else -1
      const keptRow = (r: number) => {
        const o = oldToNew[r]!;
        return o < 0 && moved[-2 - o] === 1 ? -1 : renumber(r);
      };
      let kept = 0;
      for (let k = 0; k < a.length; k++) if (keptRow(a[k]!) >= 0) kept++;
      yield;
      out = columnLike(a, kept + b.length);
      let x = 0;
      let y = 0;
      let k = 0;
      let ra = -1;
      const nextA = () => {
        while (x < a.length && (ra = keptRow(a[x]!)) < 0) x++;
        if (x >= a.length) ra = -1;
      };
      nextA();
      while (ra >= 0 || y < b.length) {
        const rb = y < b.length ? deltaToNew[b[y]!]! : -1;
        // value ascending, ties by row (as sortedMeasured orders them)
        const takeA = rb < 0 || (ra >= 0 && (val[ra]! < val[rb]! || (val[ra] === val[rb] && ra < rb)));
        if (takeA) {
          out[k++] = ra;
          x++;
          nextA();
        } else {
          out[k++] = rb;
          y++;
        }
        // a step per slice of the merge (it reads values at random rows)
        if ((k & (MERGE_SLICE - 1)) === 0) yield;
      }
    }
    orders[id] = out;
    yield;
  }
  const engine = new RankingEngine(cols, orders);
  const rankKeys = engine.takeOverRankKeys(prev);
  return { engine, figures: { rows: n, replaced, inserted, reordered, reused, rankKeys } };
}

/**
 * An order's rows after a patch, when few rows move: the previous order `a` without the old rows `left`, with the
 * delta rows `b` (in their order) placed in it. Renumbered, the previous order is still in (value, row) order (a row's
 * number grows with its place), so each row's place is a binary search in it, and the rows between places are
 * copied in runs: as they are when no row was inserted (`sameNumbers`), else renumbered.
 */
function* placedBySearch(
  a: Int32Array,
  b: Int32Array,
  left: number[],
  oldValue: Float64Array,
  newValue: Float64Array,
  renumber: (oldRow: number) => number,
  deltaToNew: Int32Array,
  sameNumbers: boolean,
): Generator<void, Int32Array> {
  // the first place in a from `lo` whose (old value, new number) is not below (v, row)
  const firstNotBelow = (v: number, row: number, lo: number) => {
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const x = oldValue[a[mid]!]!;
      if (x < v || (x === v && renumber(a[mid]!) < row)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const gone = Int32Array.from(left, (o) => firstNotBelow(oldValue[o]!, renumber(o), 0)).sort();
  // b is in (value, row) order, so each place is at or after the one before
  const at = new Int32Array(b.length);
  for (let q = 0, lo = 0; q < b.length; q++) at[q] = lo = firstNotBelow(newValue[b[q]!]!, deltaToNew[b[q]!]!, lo);
  yield;
  const out = columnLike(a, a.length - gone.length + b.length);
  let k = 0;
  let x = 0;
  let g = 0;
  let q = 0;
  while (x < a.length || q < b.length) {
    const end = Math.min(q < b.length ? at[q]! : a.length, g < gone.length ? gone[g]! : a.length);
    if (sameNumbers) {
      out.set(a.subarray(x, end), k);
      k += end - x;
    } else {
      for (let i = x; i < end; i++) {
        out[k++] = renumber(a[i]!);
        if ((k & (MERGE_SLICE - 1)) === 0) yield;
      }
    }
    x = end;
    // a placed row goes before the previous order's row at its place
    if (q < b.length && at[q] === x) out[k++] = deltaToNew[b[q++]!]!;
    else if (g < gone.length && gone[g] === x) {
      x++;
      g++;
    }
  }
  return out;
}

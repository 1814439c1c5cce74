/**
 * Orders over the rank columns, computed without a comparator call per pair (typed-array sorts, then a binary search
 * per row): every metric's measured rows in value order, kept from one version to the next, and a board's rows in
 * board order. Each has a form in steps, so a service computes it between requests (core/steps.ts).
 *
 * A worker evaluates the source of sortedMeasured, sortedMeasuredSteps, sortSteps and lowerBound (jobs/analytics/rank-orders.ts):
 * they call each other by name, so they stay in this one module and call nothing imported (an import's name is
 * rewritten by a transpiler, and the worker would not find it).
 */
import { METRIC_IDS, type MetricId } from './rankings.ts';
import type { RankColumns } from './rank-columns.ts';
import { drain } from './steps.ts';

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

/** Rows per step of an order's placement (sortedMeasuredSteps: a binary search per row) */
export const ORDER_SLICE_ROWS = 1 << 19;

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
  // drained here, not by drain(): a worker runs this source with sortedMeasuredSteps' beside it (rank-orders.ts)
  const steps = sortedMeasuredSteps(measured, value, ORDER_SLICE_ROWS);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/** sortedMeasured in steps: the keys, their sort (sortSteps), the rows placed a slice at a time. */
export function* sortedMeasuredSteps(measured: Uint8Array, value: Float64Array, slice = ORDER_SLICE_ROWS): Generator<void, Int32Array> {
  const ok = (i: number) => measured[i] === 1 && !Number.isNaN(value[i]!);
  let n = 0;
  for (let i = 0; i < measured.length; i++) if (ok(i)) n++;
  let keys = new Float64Array(n);
  let k = 0;
  for (let i = 0; i < measured.length; i++) if (ok(i)) keys[k++] = value[i]!;
  yield;
  keys = yield* sortSteps(keys, slice);
  yield;
  const taken = new Int32Array(n);
  const idx = new Int32Array(n);
  for (let a = 0; a < measured.length; a += slice) {
    for (let i = a; i < Math.min(measured.length, a + slice); i++) {
      if (!ok(i)) continue;
      const lo = lowerBound(keys, value[i]!);
      idx[lo + taken[lo]!++] = i;
    }
    yield;
  }
  return idx;
}

/**
 * Keys (no NaN) sorted ascending in steps: runs of `slice` keys sorted natively, one step each, then merged pairwise
 * `slice` keys per step. One native sort of 1.85M keys held the loop 200-300 ms on a busy machine. Returns `keys`
 * sorted in place, or a new array. -0 and 0 may come out in another order than one native sort gives: lowerBound
 * finds the same first slot for both, so the orders built from the keys are the same.
 */
export function* sortSteps(keys: Float64Array<ArrayBuffer>, slice: number): Generator<void, Float64Array<ArrayBuffer>> {
  const n = keys.length;
  if (n <= slice) {
    keys.sort();
    return keys;
  }
  for (let a = 0; a < n; a += slice) {
    keys.subarray(a, Math.min(n, a + slice)).sort();
    yield;
  }
  let src = keys;
  let dst = new Float64Array(n);
  let budget = 0;
  for (let width = slice; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(n, lo + width);
      const hi = Math.min(n, lo + 2 * width);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        dst[k] = j >= hi || (i < mid && src[i]! <= src[j]!) ? src[i++]! : src[j++]!;
        if (++budget === slice) {
          budget = 0;
          yield;
        }
      }
    }
    const t = src;
    src = dst;
    dst = t;
  }
  return src;
}

/**
 * The rows whose composite is not NaN in board order (score's `before`: `key` best first, NaN keys last, ties by row,
 * which is wallet order), without a comparator call per pair: the keys (negated when descending) go through
 * sortedMeasured's native sort, then the NaN keys follow in row order. A comparator sort of 2.8M rows took seconds
 * per preset.
 */
export function boardOrder(composite: Float64Array, key: Float64Array, desc: boolean): Int32Array {
  return drain(boardOrderSteps(composite, key, desc));
}

/** boardOrder in steps (sortedMeasuredSteps' and the keys' own). */
export function* boardOrderSteps(composite: Float64Array, key: Float64Array, desc: boolean, slice = ORDER_SLICE_ROWS): Generator<void, Int32Array> {
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
  yield;
  out.set(yield* sortedMeasuredSteps(keyed, value, slice));
  let at = total - nulls;
  if (nulls) for (let i = 0; i < n; i++) if (!Number.isNaN(composite[i]!) && Number.isNaN(key[i]!)) out[at++] = i;
  return out;
}

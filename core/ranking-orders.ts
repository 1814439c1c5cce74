/**
 * Orders over the rank columns, computed without a comparator call per pair (a radix sort of the values' bits):
 * every metric's measured rows in value order, kept from one version to the next, and a board's rows in
 * board order. Each has a form in steps, so a service computes it between requests (core/steps.ts).
 *
 * A worker evaluates the source of sortedMeasured, sortedMeasuredSteps and inOrder (jobs/analytics/rank-orders.ts):
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

/** Rows per step of an order's radix sort (sortedMeasuredSteps: each pass over the rows in steps of this many) */
export const ORDER_SLICE_ROWS = 1 << 19;

/** Every metric's measured rows in value order (what a RankingEngine walks for percentiles). */
export function metricOrders(cols: RankColumns): Record<MetricId, Int32Array> {
  return Object.fromEntries(METRIC_IDS.map((id) => [id, sortedMeasured(cols.measured[id], cols.value[id])])) as Record<MetricId, Int32Array>;
}

/** Row i is in a metric's order: measured, with a value. */
export function inOrder(measured: Uint8Array, value: Float64Array, i: number): boolean {
  return measured[i] === 1 && !Number.isNaN(value[i]!);
}

/**
 * Indices of measured rows sorted by value ascending, ties in row order: a radix sort of the values' bits, so
 * O(n) without a comparator call per pair.
 */
export function sortedMeasured(measured: Uint8Array, value: Float64Array): Int32Array {
  // drained here, not by drain(): a worker runs this source with sortedMeasuredSteps' beside it (rank-orders.ts)
  const steps = sortedMeasuredSteps(measured, value, ORDER_SLICE_ROWS);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/**
 * sortedMeasured in steps of `slice` rows (of `among` alone when given: ascending rows, the others not looked at): each measured value becomes a 64-bit key in two unsigned halves whose order
 * is the values' (the sign bit flipped for a positive value, every bit for a negative one; -0 taken as 0, one value
 * as everywhere ties are compared), then an LSD radix sort, 16 bits a pass, carries the rows along. Each pass is
 * stable, so rows of one value stay in row order; a pass whose digit every key shares is skipped. It replaced a
 * native sort of the values and a binary search per row to place it, which took ~2 s for 1.8M rows at full scale
 * (the searches missing the cache at every level).
 */
export function* sortedMeasuredSteps(measured: Uint8Array, value: Float64Array, slice = ORDER_SLICE_ROWS, among?: Int32Array): Generator<void, Int32Array> {
  const ok = (i: number) => inOrder(measured, value, i);
  // the rows looked at: `among` (ascending), or every row
  const m = among ? among.length : measured.length;
  let n = 0;
  for (let x = 0; x < m; x++) if (ok(among ? among[x]! : x)) n++;
  const bits = new Float64Array(1);
  const half = new Uint32Array(bits.buffer);
  let hi = new Uint32Array(n);
  let lo = new Uint32Array(n);
  let rows = new Int32Array(n);
  let k = 0;
  for (let a = 0; a < m; a += slice) {
    for (let x = a; x < Math.min(m, a + slice); x++) {
      const i = among ? among[x]! : x;
      if (!ok(i)) continue;
      bits[0] = value[i]! + 0;
      // little-endian (x86 and ARM alike): the second word holds the sign and exponent
      const h = half[1]!;
      const l = half[0]!;
      const negative = h >>> 31 === 1;
      hi[k] = negative ? ~h >>> 0 : (h | 0x80000000) >>> 0;
      lo[k] = negative ? ~l >>> 0 : l;
      rows[k++] = i;
    }
    yield;
  }
  let hi2 = new Uint32Array(n);
  let lo2 = new Uint32Array(n);
  let rows2 = new Int32Array(n);
  const start = new Int32Array(1 << 16);
  for (let pass = 0; pass < 4 && n > 0; pass++) {
    const key = pass < 2 ? lo : hi;
    const shift = (pass & 1) * 16;
    start.fill(0);
    for (let j = 0; j < n; j++) start[(key[j]! >>> shift) & 0xffff]!++;
    if (start[(key[0]! >>> shift) & 0xffff] === n) continue;
    let sum = 0;
    for (let d = 0; d < start.length; d++) {
      const c = start[d]!;
      start[d] = sum;
      sum += c;
    }
    yield;
    for (let a = 0; a < n; a += slice) {
      for (let j = a; j < Math.min(n, a + slice); j++) {
        const at = start[(key[j]! >>> shift) & 0xffff]!++;
        hi2[at] = hi[j]!;
        lo2[at] = lo[j]!;
        rows2[at] = rows[j]!;
      }
      yield;
    }
    [hi, hi2] = [hi2, hi];
    [lo, lo2] = [lo2, lo];
    [rows, rows2] = [rows2, rows];
  }
  return rows;
}

/**
 * The rows whose composite is not NaN in board order (score's `before`: `key` best first, NaN keys last, ties by row,
 * which is wallet order), without a comparator call per pair: the keys (negated when descending) go through
 * sortedMeasured's native sort, then the NaN keys follow in row order. A comparator sort of 2.8M rows took seconds
 * per preset.
 */
export function boardOrder(composite: Float64Array, key: Float64Array, desc: boolean, among?: Int32Array): Int32Array {
  return drain(boardOrderSteps(composite, key, desc, ORDER_SLICE_ROWS, among));
}

/**
 * boardOrder in steps (sortedMeasuredSteps' and the keys' own). `among`: the only rows that may be scored, ascending
 * (a board's gated rows): the passes look at them alone. A preset gates 2–23% of 2.8M rows, and passes over every row
 * took 50 ms a board at full scale.
 */
export function* boardOrderSteps(composite: Float64Array, key: Float64Array, desc: boolean, slice = ORDER_SLICE_ROWS, among?: Int32Array): Generator<void, Int32Array> {
  const n = composite.length;
  const m = among ? among.length : n;
  const keyed = new Uint8Array(n);
  const value = new Float64Array(n);
  let total = 0;
  let nulls = 0;
  for (let x = 0; x < m; x++) {
    const i = among ? among[x]! : x;
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
  out.set(yield* sortedMeasuredSteps(keyed, value, slice, among));
  let at = total - nulls;
  if (nulls)
    for (let x = 0; x < m; x++) {
      const i = among ? among[x]! : x;
      if (!Number.isNaN(composite[i]!) && Number.isNaN(key[i]!)) out[at++] = i;
    }
  return out;
}

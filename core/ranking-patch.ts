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
import { userCodes, type RankColumns } from './rank-columns.ts';
import { sortedMeasuredSteps } from './ranking-orders.ts';
import { drain } from './steps.ts';

type Column = Int32Array | Float64Array | Uint8Array;
/**
 * Rows of an order merged or placed per step (a power of two): each reads values at random rows, so a slice of 512k
 * took 300-680 ms on a busy machine when a delta of 1.85M rows changed every order (bench:rankings' patch_steps)
 */
const MERGE_SLICE = 1 << 16;

/** An empty column like `like` (shared memory when `like` is shared: a worker may read it). */
function columnLike<T extends Column>(like: T, n: number): T {
  const C = like.constructor as new (x: number | SharedArrayBuffer) => T;
  return like.buffer instanceof SharedArrayBuffer ? new C(new SharedArrayBuffer(like.BYTES_PER_ELEMENT * n)) : new C(n);
}

export interface PatchFigures {
  rows: number;
  replaced: number;
  inserted: number;
}

/** The engine of (previous rank base with `delta`'s rows replacing or joining it). */
export function patchEngine(prev: RankingEngine, delta: RankColumns): { engine: RankingEngine; figures: PatchFigures } {
  return drain(patchSteps(prev, delta));
}

/**
 * patchEngine in steps (a column or a metric's order each), for a caller that lets the event loop run between them:
 * in one piece it held a full-scale service's loop 12 to 28 s per refresh on a slow day (bench/cpu-holds.ts).
 */
export function* patchSteps(prev: RankingEngine, delta: RankColumns): Generator<void, { engine: RankingEngine; figures: PatchFigures }> {
  const old = prev.cols;
  // the merge of two wallet-ordered row sets: each new row comes from the old rows (fromOld >= 0) or the delta
  const fromOld = new Int32Array(old.n + delta.n);
  const fromDelta = new Int32Array(old.n + delta.n);
  const oldToNew = new Int32Array(old.n).fill(-1); // -1: replaced by a delta row
  const deltaToNew = new Int32Array(delta.n);
  let i = 0;
  let j = 0;
  let n = 0;
  let replaced = 0;
  while (i < old.n || j < delta.n) {
    const wo = i < old.n ? old.walletId[i]! : Number.POSITIVE_INFINITY;
    const wd = j < delta.n ? delta.walletId[j]! : Number.POSITIVE_INFINITY;
    if (wd <= wo) {
      if (wd === wo) {
        i++;
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
  const merge = <T extends Column>(a: T, b: ArrayLike<number>): T => {
    const out = columnLike(a, n);
    for (let r = 0; r < n; r++) {
      const o = fromOld[r]!;
      out[r] = o >= 0 ? a[o]! : b[fromDelta[r]!]!;
    }
    return out;
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

  // each order: the kept old rows (renumbered, still in value order with ties in row order: the renumbering keeps
  // row order) merged with the delta's measured rows in their own order
  const prevOrders = prev.orders();
  const orders = {} as Record<MetricId, Int32Array>;
  for (const id of METRIC_IDS) {
    const a = prevOrders[id];
    // in steps too: a refresh whose moved mids change most wallets' P&L patches with a delta of ~1.9M rows, whose
    // order in one piece took 1.5 s (bench:rankings' patch_steps)
    const b = yield* sortedMeasuredSteps(delta.measured[id], delta.value[id], MERGE_SLICE);
    let kept = 0;
    for (let k = 0; k < a.length; k++) if (oldToNew[a[k]!]! >= 0) kept++;
    yield;
    const out = new Int32Array(kept + b.length);
    const val = cols.value[id];
    let x = 0;
    let y = 0;
    let k = 0;
    let ra = -1;
    const nextA = () => {
      while (x < a.length && oldToNew[a[x]!]! < 0) x++;
      ra = x < a.length ? oldToNew[a[x]!]! : -1;
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
    orders[id] = out;
    yield;
  }
  return { engine: new RankingEngine(cols, orders), figures: { rows: n, replaced, inserted: delta.n - replaced } };
}

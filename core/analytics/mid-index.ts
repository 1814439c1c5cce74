/**
 * Mid-price history held in memory for the analytics engine: per token (market_id * 2 + outcome_index) the mids
 * sorted by time, so that "the mid at t" (the latest mid stamped at or before t) is a binary search instead of an
 * ASOF join. Times are microseconds since the epoch as doubles (exact below 2^53). Among mids of one token stamped
 * at the same microsecond the larger mid wins, so every lookup is deterministic (SQL's arg_max(mid, ts) is not).
 *
 * 40M mids (the full-scale venue) take 640 MB. Appends in time order are O(1); a late mid (stamped before the
 * token's latest) is inserted in place.
 */

export const tokenOf = (marketId: number, outcome: number): number => marketId * 2 + outcome;

class Series {
  ts: Float64Array;
  mid: Float64Array;
  n = 0;
  constructor(capacity: number) {
    this.ts = new Float64Array(Math.max(4, capacity));
    this.mid = new Float64Array(Math.max(4, capacity));
  }
  private grow(): void {
    const ts = new Float64Array(this.ts.length * 2);
    const mid = new Float64Array(this.ts.length * 2);
    ts.set(this.ts.subarray(0, this.n));
    mid.set(this.mid.subarray(0, this.n));
    this.ts = ts;
    this.mid = mid;
  }
  /** Insert keeping (ts, mid) order; returns false when the very same (ts, mid) is already there. */
  insert(t: number, m: number): boolean {
    if (this.n === this.ts.length) this.grow();
    let i = this.n;
    if (i === 0 || this.ts[i - 1]! < t || (this.ts[i - 1] === t && this.mid[i - 1]! < m)) {
      this.ts[i] = t;
      this.mid[i] = m;
      this.n++;
      return true;
    }
    // late: the first position whose (ts, mid) is greater
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const k = (lo + hi) >> 1;
      if (this.ts[k]! < t || (this.ts[k] === t && this.mid[k]! <= m)) lo = k + 1;
      else hi = k;
    }
    if (lo > 0 && this.ts[lo - 1] === t && this.mid[lo - 1] === m) return false;
    i = lo;
    this.ts.copyWithin(i + 1, i, this.n);
    this.mid.copyWithin(i + 1, i, this.n);
    this.ts[i] = t;
    this.mid[i] = m;
    this.n++;
    return true;
  }
  /** Index of the latest mid stamped <= t, or -1. */
  indexAt(t: number): number {
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const k = (lo + hi) >> 1;
      if (this.ts[k]! <= t) lo = k + 1;
      else hi = k;
    }
    return lo - 1;
  }
}

export class MidIndex {
  private readonly series = new Map<number, Series>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(marketId: number, outcome: number, tsUs: number, mid: number): void {
    const k = tokenOf(marketId, outcome);
    let s = this.series.get(k);
    if (!s) this.series.set(k, (s = new Series(8)));
    if (s.insert(tsUs, mid)) this.count++;
  }

  /** The latest mid of the token stamped at or before t (µs), or NaN when there is none. */
  at(token: number, tUs: number): number {
    const s = this.series.get(token);
    if (!s) return Number.NaN;
    const i = s.indexAt(tUs);
    return i < 0 ? Number.NaN : s.mid[i]!;
  }

  /** Time (µs) of the earliest mid of the token, or NaN. */
  firstTs(token: number): number {
    const s = this.series.get(token);
    return s && s.n > 0 ? s.ts[0]! : Number.NaN;
  }

  /** Every token that has at least one mid. */
  tokens(): IterableIterator<number> {
    return this.series.keys();
  }

  /** A reader for many lookups on one token at non-decreasing times: amortized O(1) each. */
  cursor(token: number): MidCursor {
    return new MidCursor(this.series.get(token));
  }

  /** Point an existing cursor at another token (no allocation on a hot path). */
  retarget(c: MidCursor, token: number): void {
    c.reset(this.series.get(token));
  }
}

export class MidCursor {
  private i = -1;
  private lastT = Number.NEGATIVE_INFINITY;
  constructor(private s: Series | undefined) {}
  reset(s: Series | undefined): void {
    this.s = s;
    this.i = -1;
    this.lastT = Number.NEGATIVE_INFINITY;
  }
  /** The latest mid stamped <= t (NaN when none); t may go backwards (then it searches again). */
  at(t: number): number {
    const s = this.s;
    if (!s || s.n === 0) return Number.NaN;
    if (t < this.lastT) this.i = s.indexAt(t);
    else {
      // gallop forward: most calls move a few steps at most
      let i = this.i;
      while (i + 1 < s.n && s.ts[i + 1]! <= t) {
        i++;
        if (i + 8 < s.n && s.ts[i + 8]! <= t) {
          i = s.indexAt(t);
          break;
        }
      }
      this.i = i;
    }
    this.lastT = t;
    return this.i < 0 ? Number.NaN : s.mid[this.i]!;
  }
}

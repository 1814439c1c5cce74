/**
 * Mid-price history held in memory for the analytics engine: per token (market_id * 2 + outcome_index) the mids
 * sorted by time, so that "the mid at t" (the latest mid stamped at or before t) is a search in memory instead of an
 * ASOF join. Times are microseconds since the epoch as doubles (exact below 2^53). Among mids of one token stamped
 * at the same microsecond the larger mid wins, so every lookup is deterministic (SQL's arg_max(mid, ts) is not).
 *
 * 40M mids (the full-scale venue) take 640 MB. Appends in time order are O(1); a late mid (stamped before the
 * token's latest) is inserted in place.
 *
 * Why the layout: the position stream looks up a different token at nearly every position, so a lookup's cost is
 * its cache misses, not its comparisons (a binary search over a token's whole history, in separate time and mid
 * arrays reached through a Map: ~400 ns a lookup at full scale). A token's mids are one array, a table of where each
 * day's mids start ahead of its (time, mid) pairs, and tokens are found by index: a lookup reads the day's few
 * entries, next to each other (bench/mid-index.ts).
 */

export const tokenOf = (marketId: number, outcome: number): number => marketId * 2 + outcome;

const DAY_US = 86_400_000_000;
/** The day number of a time (µs): monotone in t, the only property the day table relies on. */
const dayOf = (tUs: number): number => Math.floor(tUs / DAY_US);

/**
 * One token's mids. `data` holds the day table at [0, days) and the pairs from `base` on: pair i's time at
 * data[base + 2i], its mid at data[base + 2i + 1]. Day table entry k is the first pair stamped on day day0 + k or
 * later (the last entry is n); it is rebuilt on the first lookup after a change (days = -1 until then).
 */
class Series {
  data: Float64Array;
  base: number;
  n = 0;
  days = -1;
  day0 = 0;
  constructor(capacity: number) {
    this.base = 8;
    this.data = new Float64Array(this.base + 2 * Math.max(4, capacity));
  }
  private tsAt(i: number): number {
    return this.data[this.base + 2 * i]!;
  }
  private midAt(i: number): number {
    return this.data[this.base + 2 * i + 1]!;
  }
  /** A larger array: room for `base` table entries and `pairs` pairs, the pairs copied over. */
  private reshape(base: number, pairs: number): void {
    const data = new Float64Array(base + 2 * pairs);
    data.set(this.data.subarray(this.base, this.base + 2 * this.n), base);
    this.data = data;
    this.base = base;
  }
  /** Insert keeping (ts, mid) order; returns false when the very same (ts, mid) is already there. */
  insert(t: number, m: number): boolean {
    if (this.base + 2 * (this.n + 1) > this.data.length) this.reshape(this.base, 2 * Math.max(4, this.n));
    let i = this.n;
    if (!(i === 0 || this.tsAt(i - 1) < t || (this.tsAt(i - 1) === t && this.midAt(i - 1) < m))) {
      // late: the first position whose (ts, mid) is greater
      let lo = 0;
      let hi = this.n;
      while (lo < hi) {
        const k = (lo + hi) >> 1;
        if (this.tsAt(k) < t || (this.tsAt(k) === t && this.midAt(k) <= m)) lo = k + 1;
        else hi = k;
      }
      if (lo > 0 && this.tsAt(lo - 1) === t && this.midAt(lo - 1) === m) return false;
      i = lo;
      this.data.copyWithin(this.base + 2 * (i + 1), this.base + 2 * i, this.base + 2 * this.n);
    }
    this.data[this.base + 2 * i] = t;
    this.data[this.base + 2 * i + 1] = m;
    this.n++;
    this.days = -1;
    return true;
  }
  /** The day table of the mids as they are now (n > 0). */
  private dayTable(): void {
    const d0 = dayOf(this.tsAt(0));
    const entries = dayOf(this.tsAt(this.n - 1)) - d0 + 2;
    // room for a few more days, so a table that grows with appended days rarely moves the pairs
    if (entries > this.base) this.reshape(entries + 8, Math.max(this.n, (this.data.length - this.base) / 2));
    let i = 0;
    for (let k = 0; k < entries; k++) {
      while (i < this.n && dayOf(this.tsAt(i)) < d0 + k) i++;
      this.data[k] = i;
    }
    this.day0 = d0;
    this.days = entries;
  }
  /** The latest mid stamped <= t, or NaN. */
  at(t: number): number {
    if (this.n === 0) return Number.NaN;
    if (this.days < 0) this.dayTable();
    const k = dayOf(t) - this.day0;
    if (k < 0) return Number.NaN; // every mid is stamped on a later day
    // every pair before lo is stamped on an earlier day than t (so before t), every one from hi on on a later day
    const d = this.data;
    const last = this.days - 1;
    let lo = k < last ? d[k]! : this.n;
    let hi = k < last ? d[k + 1]! : this.n;
    const base = this.base;
    while (lo < hi) {
      const j = (lo + hi) >> 1;
      if (d[base + 2 * j]! <= t) lo = j + 1;
      else hi = j;
    }
    return lo === 0 ? Number.NaN : d[base + 2 * lo - 1]!;
  }
}

export class MidIndex {
  /** by token (dense: market ids are small integers) */
  private readonly series: (Series | undefined)[] = [];
  private readonly tokenList: number[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(marketId: number, outcome: number, tsUs: number, mid: number): void {
    const k = tokenOf(marketId, outcome);
    let s = this.series[k];
    if (!s) {
      this.series[k] = s = new Series(8);
      this.tokenList.push(k);
    }
    if (s.insert(tsUs, mid)) this.count++;
  }

  /** The latest mid of the token stamped at or before t (µs), or NaN when there is none. */
  at(token: number, tUs: number): number {
    const s = token >= 0 ? this.series[token] : undefined;
    return s ? s.at(tUs) : Number.NaN;
  }

  /** Time (µs) of the earliest mid of the token, or NaN. */
  firstTs(token: number): number {
    const s = token >= 0 ? this.series[token] : undefined;
    return s && s.n > 0 ? s.data[s.base]! : Number.NaN;
  }

  /** Every token that has at least one mid. */
  tokens(): IterableIterator<number> {
    return this.tokenList.values();
  }

  /** A reader of one token's mids (the stream keeps a few and points them at each position's token). */
  cursor(token: number): MidCursor {
    return new MidCursor(token >= 0 ? this.series[token] : undefined);
  }

  /** Point an existing cursor at another token (no allocation on a hot path). */
  retarget(c: MidCursor, token: number): void {
    c.reset(token >= 0 ? this.series[token] : undefined);
  }
}

export class MidCursor {
  constructor(private s: Series | undefined) {}
  reset(s: Series | undefined): void {
    this.s = s;
  }
  /** The latest mid stamped <= t (NaN when none), at any t. */
  at(t: number): number {
    return this.s ? this.s.at(t) : Number.NaN;
  }
}

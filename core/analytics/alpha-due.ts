/**
 * Alpha horizons that fall due, without a restream. A fill enters its position's +1 h (+24 h) alpha sums once
 * ts + 1 h (24 h) <= T (position-stream.ts), with a term that depends on the fill and the mid (or payout) at that
 * moment only, never on the position's state. The fills included at T are a prefix of the position's fills in
 * stream order (ts <= T - horizon), so going from T_old to T_new appends exactly the fills with
 * ts + horizon in (T_old, T_new], in stream order: folding their terms onto the stored sums, one by one in that
 * order, gives the very doubles a restream would (the same additions in the same order).
 *
 * Valid for a position with no other change in (T_old, T_new] — no new or newly visible leg, no resolution that
 * became visible, no late mid on its token (refresh.ts restreams those) — which is every position the refresh's
 * horizon rule alone makes dirty. test/core/analytics-live.test.ts holds the result equal to a rebuild.
 */
import type { ScanBatch } from '../query.ts';
import type { MidIndex } from './mid-index.ts';
import { tokenOf } from './mid-index.ts';
import { ALPHA_HORIZON_US, type MarketFacts, type PositionOut } from './position-stream.ts';

/** The key and horizon-sum columns of a position (a_position_state's names), which a due horizon moves. */
export const ALPHA_SUM_KEYS = ['wallet_id', 'market_id', 'outcome_index', 'a1_num', 'a1_den', 'a1_n', 'a24_num', 'a24_den', 'a24_n'] as const;

/** One position's alpha sums after the horizons that fell due. */
export type AlphaSums = Pick<PositionOut, (typeof ALPHA_SUM_KEYS)[number]>;

/**
 * Folds due fills onto stored sums. Feed batches of the due fills in stream order (LEGS_ORDER) with columns
 * wallet_id, market_id, outcome_index, ts (µs), q, price, size and the position's stored a1_num, a1_den, a1_n,
 * a24_num, a24_den, a24_n; `finish` flushes the last position. Each position is emitted once, with its new sums.
 */
export class AlphaCatchUp {
  private cur: AlphaSums | null = null;
  private resolvedAt = Number.NaN;
  private payout = 0;
  private token = -1;
  constructor(
    private readonly mids: MidIndex,
    private readonly markets: MarketFacts,
    private readonly tOld: number,
    private readonly tNew: number,
    private readonly emit: (s: AlphaSums) => void,
  ) {}

  push(b: ScanBatch): void {
    const w = b.int('wallet_id');
    const m = b.int('market_id');
    const o = b.u8('outcome_index');
    const ts = b.f64('ts');
    const q = b.f64('q');
    const price = b.f64('price');
    const size = b.f64('size');
    const a1Num = b.f64('a1_num');
    const a1Den = b.f64('a1_den');
    const a1N = b.int('a1_n');
    const a24Num = b.f64('a24_num');
    const a24Den = b.f64('a24_den');
    const a24N = b.int('a24_n');
    for (let i = 0; i < b.n; i++) {
      let s = this.cur;
      if (!s || s.wallet_id !== w[i] || s.market_id !== m[i] || s.outcome_index !== o[i]) {
        if (s) this.emit(s);
        s = this.cur = {
          wallet_id: w[i]!,
          market_id: m[i]!,
          outcome_index: o[i]!,
          a1_num: a1Num[i]!,
          a1_den: a1Den[i]!,
          a1_n: a1N[i]!,
          a24_num: a24Num[i]!,
          a24_den: a24Den[i]!,
          a24_n: a24N[i]!,
        };
        const token = tokenOf(m[i]!, o[i]!);
        if (token !== this.token) {
          this.token = token;
          // as the stream: a resolution counts once it is stamped at or before T
          this.resolvedAt = this.markets.resolvedAt[m[i]!] ?? Number.NaN;
          if (!(this.resolvedAt <= this.tNew)) this.resolvedAt = Number.NaN;
          this.payout = this.markets.payout[token] ?? 0;
        }
      }
      const sign = q[i]! > 0 ? 1 : -1;
      const t1 = ts[i]! + ALPHA_HORIZON_US.h1;
      if (t1 > this.tOld && t1 <= this.tNew) {
        const v = this.valueAt(t1);
        if (!Number.isNaN(v)) {
          s.a1_num += size[i]! * sign * (v - price[i]!);
          s.a1_den += size[i]!;
          s.a1_n++;
        }
      }
      const t24 = ts[i]! + ALPHA_HORIZON_US.h24;
      if (t24 > this.tOld && t24 <= this.tNew) {
        const v = this.valueAt(t24);
        if (!Number.isNaN(v)) {
          s.a24_num += size[i]! * sign * (v - price[i]!);
          s.a24_den += size[i]!;
          s.a24_n++;
        }
      }
    }
  }

  /** The current token's value at t, as the stream reads it: the payout once resolved by t, else the mid (NaN: none). */
  private valueAt(t: number): number {
    return this.resolvedAt <= t ? this.payout : this.mids.at(this.token, t);
  }

  finish(): void {
    if (this.cur) this.emit(this.cur);
    this.cur = null;
  }
}

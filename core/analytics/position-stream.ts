/**
 * The position stream: one pass over the legs of a set of positions, in position order, computes everything the
 * analytics keep per position (wallet, token) as of T — the average-cost state, realized trading P&L, fill
 * statistics, alpha partial sums, contrarian entries, hold episodes — and, in a full build, every wallet's daily
 * mark-to-market returns over the risk window. The full build streams every position; a refresh streams only the
 * positions whose inputs changed. Both run this code on a position's complete history, so a refreshed position
 * equals a rebuilt one bit for bit.
 *
 * Input: legs sorted by (wallet, market, outcome, ts, log_index, fills after inventory, q descending), as columns
 * (LegBatch). Kinds: 0 split/merge/convert leg, 1 fill as taker, 2 fill as maker, 3 redemption. A fill leg's q is
 * +shares for a buy and -shares for a sell; px is the price per share the wallet effectively paid or got (fees
 * included); price is the fill's own price; size is its USDC notional. An inventory leg's px is its valuation per
 * share (data/analytics: value-conserving mids); usdc is the event's USDC (into the wallet +) on the event's first
 * leg only. Redemptions only count redeemed shares (and move tokens for risk).
 *
 * Pure: no I/O. The caller passes lookups (MidIndex, per-market resolution arrays) and sinks that copy each output
 * row synchronously (the output objects are reused).
 */
import { DUST_SHARES } from '../positions.ts';
import { MidIndex, tokenOf, type MidCursor } from './mid-index.ts';

export const HOUR_US = 3_600_000_000;
export const DAY_US = 86_400_000_000;
/** Alpha horizons (methodology "Alpha versus mid"): 1 h and 24 h after the fill. */
export const ALPHA_HORIZON_US = { h1: HOUR_US, h24: 24 * HOUR_US } as const;
/** A buy is contrarian when the mid fell at least this much over the 24 h before it. */
export const CONTRARIAN_DROP = 0.05;

export const KIND_INVENTORY = 0;
export const KIND_TAKER = 1;
export const KIND_MAKER = 2;
export const KIND_REDEEM = 3;

export interface LegBatch {
  n: number;
  wallet: Int32Array;
  market: Int32Array;
  outcome: Uint8Array;
  /** µs since the epoch */
  ts: Float64Array;
  kind: Uint8Array;
  q: Float64Array;
  px: Float64Array;
  price: Float64Array;
  size: Float64Array;
  fee: Float64Array;
  usdc: Float64Array;
}

/** What the stream needs to know of markets, as of T. */
export interface MarketFacts {
  /** resolution time (µs) by market id; NaN when unresolved as of T */
  resolvedAt: Float64Array;
  /** payout per share by token (market * 2 + outcome); read only when resolved */
  payout: Float64Array;
}

export interface RiskWindow {
  /** completed days in the window (default 90) */
  days: number;
}

export interface StreamOptions {
  /** as of T (µs): only legs stamped at or before it are passed in; horizons and resolutions are judged at T */
  T: number;
  mids: MidIndex;
  markets: MarketFacts;
  /** set in a full build: daily returns of every wallet over the completed days of the window */
  risk?: RiskWindow;
  /**
   * A position's stored state to continue from (a refresh whose new legs all follow the stored ones): the stream
   * starts the position from it instead of from nothing, so the legs passed in are only the new ones.
   */
  resume?: (wallet: number, market: number, outcome: number) => PositionOut | undefined;
}

/**
 * One position as the stream leaves it (a_position_state's columns): the figures rounded as a_positions shows them,
 * and the unrounded state the stream goes on from when a later refresh continues the position (raw_*, the current
 * hold episode, the last leg's time). A wallet that only redeemed a token (no other leg) has a row too, with
 * first_ts null (a_positions leaves it out): so a position without a row has no leg at all.
 */
export interface PositionOut {
  wallet_id: number;
  market_id: number;
  outcome_index: number;
  shares: number;
  cost_basis: number;
  trade_pnl: number;
  bought_shares: number;
  entry_price: number | null;
  volume_usdc: number;
  trades: number;
  n_taker: number;
  n_buys: number;
  n_contra: number;
  first_ts: number | null;
  last_ts: number | null;
  first_fill_ts: number | null;
  last_fill_ts: number | null;
  first_buy_ts: number | null;
  redeemed_shares: number;
  a1_num: number;
  a1_den: number;
  a1_n: number;
  a24_num: number;
  a24_den: number;
  a24_n: number;
  ares_num: number;
  ares_den: number;
  ares_n: number;
  raw_shares: number;
  raw_cost: number;
  raw_pnl: number;
  raw_bought: number;
  raw_buy_notional: number;
  raw_volume: number;
  /** the time of the last leg streamed (redemptions too): a continuation's legs must all come after it */
  last_leg_ts: number;
  /** the current hold episode (the position's last a_holds row), null when none */
  ep_start: number | null;
  ep_exit: number | null;
  ep_cost: number;
  /** hold episodes so far (the current one's a_holds.episode) */
  episodes: number;
}

/** One hold episode (starts with the event that finds the position empty, ends when it empties or resolves). */
export interface HoldOut {
  wallet_id: number;
  market_id: number;
  outcome_index: number;
  /** 1, 2, ... within the position */
  episode: number;
  start_ts: number;
  /** the first event of the episode that left it empty; null while held */
  exit_ts: number | null;
  cost_in: number;
  /** least(exit, resolution); null when neither happened by T */
  end_ts: number | null;
  to_resolution: boolean;
  hold_hours: number | null;
}

/** A wallet's daily rows over the risk window: day index 2..days+1 (1 is the fold day before the window). */
export interface RiskDaysOut {
  wallet_id: number;
  /** pnl[i], capital[i] for i in 0..days+1; only i >= 2 are window days */
  pnl: Float64Array;
  capital: Float64Array;
  /** days (index) on which the wallet moved tokens */
  moved: Uint8Array;
}

/** A position's shares at the end of the last completed day (what a day close continues from). */
export interface RiskPositionOut {
  wallet_id: number;
  market_id: number;
  outcome_index: number;
  /** shares held at the end of the window's last day (sum of every token movement before T's day) */
  shares: number;
  /** first day (µs, midnight) the position moved tokens */
  first_day: number;
}

export interface StreamSinks {
  position(p: PositionOut): void;
  hold(h: HoldOut): void;
  riskDays?(r: RiskDaysOut): void;
  riskPosition?(r: RiskPositionOut): void;
}

const round = (x: number, d: number): number => {
  const f = 10 ** d;
  return Math.round(x * f) / f;
};

/** Start of the UTC day of t (µs). */
export const dayOf = (tUs: number): number => Math.floor(tUs / DAY_US) * DAY_US;

export class PositionStream {
  private readonly T: number;
  private readonly mids: MidIndex;
  private readonly res: MarketFacts;
  private readonly sinks: StreamSinks;
  private readonly resume: StreamOptions['resume'];
  // current position
  private w = -1;
  private m = -1;
  private o = -1;
  private open = false;
  private h = 0;
  private c = 0;
  private pnl = 0;
  private bought = 0;
  private buyNotional = 0;
  private volume = 0;
  private trades = 0;
  private nTaker = 0;
  private nBuys = 0;
  private nContra = 0;
  private firstTs = 0;
  private lastTs = 0;
  private anyPos = false;
  private firstFill = Number.NaN;
  private lastFill = Number.NaN;
  private firstBuy = Number.NaN;
  private redeemed = 0;
  private anyLeg = false;
  private lastLeg = 0;
  private a1Num = 0;
  private a1Den = 0;
  private a1N = 0;
  private a24Num = 0;
  private a24Den = 0;
  private a24N = 0;
  private aresNum = 0;
  private aresDen = 0;
  private aresN = 0;
  // current hold episode
  private epStart = Number.NaN;
  private epExit = Number.NaN;
  private epCost = 0;
  private epNo = 0;
  // lookups for the current token
  private token = -1;
  private resolvedAt = Number.NaN;
  private payout = 0;
  private readonly cur1: MidCursor;
  private readonly cur24: MidCursor;
  private readonly curNow: MidCursor;
  private readonly curPrev: MidCursor;
  // risk (full builds)
  private readonly risk: { days: number; fold: number; d1: number } | null;
  private rW = -1;
  private rPnl!: Float64Array;
  private rCap!: Float64Array;
  private rMoved!: Uint8Array;
  private rAny = false;
  /** the current position's days with movements (ascending day index): movement, cash, USDC spent */
  private pDay!: Int32Array;
  private pDq!: Float64Array;
  private pCash!: Float64Array;
  private pSpent!: Float64Array;
  private pN = 0;
  private pFirstDay = Number.NaN;
  /** day-end values by token (dense: found by index, as the mids are) */
  private readonly values: (Float64Array | undefined)[] = [];
  private readonly posOut: PositionOut;
  private readonly holdOut: HoldOut;

  constructor(opts: StreamOptions, sinks: StreamSinks) {
    this.T = opts.T;
    this.mids = opts.mids;
    this.res = opts.markets;
    this.sinks = sinks;
    this.resume = opts.resume;
    if (opts.risk) {
      const d1 = dayOf(opts.T);
      const days = opts.risk.days;
      this.risk = { days, d1, fold: d1 - (days + 1) * DAY_US };
      const len = days + 2;
      this.rPnl = new Float64Array(len);
      this.rCap = new Float64Array(len);
      this.rMoved = new Uint8Array(len);
      this.pDay = new Int32Array(len);
      this.pDq = new Float64Array(len);
      this.pCash = new Float64Array(len);
      this.pSpent = new Float64Array(len);
    } else this.risk = null;
    this.cur1 = this.mids.cursor(-1);
    this.cur24 = this.mids.cursor(-1);
    this.curNow = this.mids.cursor(-1);
    this.curPrev = this.mids.cursor(-1);
    this.posOut = {} as PositionOut;
    this.holdOut = {} as HoldOut;
  }

  push(b: LegBatch): void {
    const T = this.T;
    for (let i = 0; i < b.n; i++) {
      const w = b.wallet[i]!;
      const m = b.market[i]!;
      const o = b.outcome[i]!;
      if (w !== this.w || m !== this.m || o !== this.o) {
        this.endPosition();
        if (w !== this.w) this.endWallet(w);
        this.startPosition(w, m, o);
      }
      const ts = b.ts[i]!;
      if (ts > T) continue;
      this.anyLeg = true;
      this.lastLeg = ts;
      const kind = b.kind[i]!;
      const q = b.q[i]!;
      if (this.risk) this.riskLeg(b, i, ts, kind, q);
      if (kind === KIND_REDEEM) {
        this.redeemed -= q;
        continue;
      }
      // --- average cost (an event that finds the position empty starts a new episode)
      const px = b.px[i]!;
      const before = this.h;
      if (before <= DUST_SHARES) {
        this.closeEpisode();
        this.c = 0;
        this.epStart = ts;
        this.epExit = Number.NaN;
        this.epCost = 0;
        this.epNo++;
      }
      if (q > 0) {
        this.c += q * px;
        this.h = before + q;
        this.epCost += q * px;
      } else {
        const avg = before > DUST_SHARES ? this.c / before : px;
        this.pnl += -q * (px - avg);
        const after = before + q;
        if (before > DUST_SHARES && after > DUST_SHARES) this.c *= after / before;
        this.h = after;
      }
      if (this.h <= DUST_SHARES) {
        this.c = 0;
        if (Number.isNaN(this.epExit)) this.epExit = ts;
      }
      if (!this.anyPos) {
        this.firstTs = ts;
        this.anyPos = true;
      }
      this.lastTs = ts;
      if (kind === KIND_INVENTORY) continue;
      // --- a fill
      const price = b.price[i]!;
      const size = b.size[i]!;
      const buy = q > 0;
      this.trades++;
      this.volume += size;
      if (kind === KIND_TAKER) this.nTaker++;
      if (Number.isNaN(this.firstFill)) this.firstFill = ts;
      this.lastFill = ts;
      const sign = buy ? 1 : -1;
      if (buy) {
        this.nBuys++;
        this.bought += q;
        this.buyNotional += price * q;
        if (Number.isNaN(this.firstBuy)) this.firstBuy = ts;
        const now = this.curNow.at(ts);
        const prev = this.curPrev.at(ts - ALPHA_HORIZON_US.h24);
        if (!Number.isNaN(now) && !Number.isNaN(prev) && prev - now >= CONTRARIAN_DROP) this.nContra++;
      }
      const resolved = !Number.isNaN(this.resolvedAt);
      const t1 = ts + ALPHA_HORIZON_US.h1;
      if (t1 <= T) {
        const v = resolved && this.resolvedAt <= t1 ? this.payout : this.cur1.at(t1);
        if (!Number.isNaN(v)) {
          this.a1Num += size * sign * (v - price);
          this.a1Den += size;
          this.a1N++;
        }
      }
      const t24 = ts + ALPHA_HORIZON_US.h24;
      if (t24 <= T) {
        const v = resolved && this.resolvedAt <= t24 ? this.payout : this.cur24.at(t24);
        if (!Number.isNaN(v)) {
          this.a24Num += size * sign * (v - price);
          this.a24Den += size;
          this.a24N++;
        }
      }
      if (resolved) {
        this.aresNum += size * sign * (this.payout - price);
        this.aresDen += size;
        this.aresN++;
      }
    }
  }

  /** Flush the last position and wallet. */
  finish(): void {
    this.endPosition();
    this.endWallet(-1);
  }

  private startPosition(w: number, m: number, o: number): void {
    this.w = w;
    this.m = m;
    this.o = o;
    this.open = true;
    this.h = 0;
    this.c = 0;
    this.pnl = 0;
    this.bought = 0;
    this.buyNotional = 0;
    this.volume = 0;
    this.trades = 0;
    this.nTaker = 0;
    this.nBuys = 0;
    this.nContra = 0;
    this.anyPos = false;
    this.firstFill = this.lastFill = this.firstBuy = Number.NaN;
    this.redeemed = 0;
    this.a1Num = this.a1Den = this.a1N = 0;
    this.a24Num = this.a24Den = this.a24N = 0;
    this.aresNum = this.aresDen = this.aresN = 0;
    this.epStart = this.epExit = Number.NaN;
    this.epCost = 0;
    this.epNo = 0;
    this.anyLeg = false;
    this.lastLeg = 0;
    const from = this.resume?.(w, m, o);
    if (from) this.resumeFrom(from);
    const token = tokenOf(m, o);
    if (token !== this.token) {
      this.token = token;
      this.resolvedAt = this.res.resolvedAt[m] ?? Number.NaN;
      if (!(this.resolvedAt <= this.T)) this.resolvedAt = Number.NaN;
      this.payout = this.res.payout[token] ?? 0;
    }
    this.mids.retarget(this.cur1, token);
    this.mids.retarget(this.cur24, token);
    this.mids.retarget(this.curNow, token);
    this.mids.retarget(this.curPrev, token);
    this.pN = 0;
    this.pFirstDay = Number.NaN;
  }

  /** Continue from a stored state (the fields endPosition wrote, unrounded). */
  private resumeFrom(p: PositionOut): void {
    const nan = (x: number | null) => (x === null ? Number.NaN : x);
    this.h = p.raw_shares;
    this.c = p.raw_cost;
    this.pnl = p.raw_pnl;
    this.bought = p.raw_bought;
    this.buyNotional = p.raw_buy_notional;
    this.volume = p.raw_volume;
    this.trades = p.trades;
    this.nTaker = p.n_taker;
    this.nBuys = p.n_buys;
    this.nContra = p.n_contra;
    this.anyPos = p.first_ts !== null;
    this.firstTs = p.first_ts ?? 0;
    this.lastTs = p.last_ts ?? 0;
    this.firstFill = nan(p.first_fill_ts);
    this.lastFill = nan(p.last_fill_ts);
    this.firstBuy = nan(p.first_buy_ts);
    this.redeemed = p.redeemed_shares;
    this.a1Num = p.a1_num;
    this.a1Den = p.a1_den;
    this.a1N = p.a1_n;
    this.a24Num = p.a24_num;
    this.a24Den = p.a24_den;
    this.a24N = p.a24_n;
    this.aresNum = p.ares_num;
    this.aresDen = p.ares_den;
    this.aresN = p.ares_n;
    this.epStart = nan(p.ep_start);
    this.epExit = nan(p.ep_exit);
    this.epCost = p.ep_cost;
    this.epNo = p.episodes;
    this.anyLeg = true;
    this.lastLeg = p.last_leg_ts;
  }

  private closeEpisode(): void {
    if (Number.isNaN(this.epStart)) return;
    const r = this.holdOut;
    const resolved = !Number.isNaN(this.resolvedAt);
    const exit = Number.isNaN(this.epExit) ? null : this.epExit;
    const end = exit === null ? (resolved ? this.resolvedAt : null) : resolved ? Math.min(exit, this.resolvedAt) : exit;
    r.wallet_id = this.w;
    r.market_id = this.m;
    r.outcome_index = this.o;
    r.episode = this.epNo;
    r.start_ts = this.epStart;
    r.exit_ts = exit;
    r.cost_in = this.epCost;
    r.end_ts = end;
    r.to_resolution = resolved && (exit === null || this.resolvedAt <= exit);
    r.hold_hours = end === null ? null : Math.max(0, end - this.epStart) / HOUR_US;
    this.sinks.hold(r);
    this.epStart = Number.NaN;
  }

  private endPosition(): void {
    if (!this.open) return;
    this.open = false;
    if (this.risk && this.pN > 0) this.riskPosition();
    if (!this.anyLeg) return;
    const p = this.posOut;
    // the current episode's row, and the state it is in (a continuation reopens it)
    p.ep_start = Number.isNaN(this.epStart) ? null : this.epStart;
    p.ep_exit = Number.isNaN(this.epExit) ? null : this.epExit;
    p.ep_cost = this.epCost;
    p.episodes = this.epNo;
    this.closeEpisode();
    p.wallet_id = this.w;
    p.market_id = this.m;
    p.outcome_index = this.o;
    p.shares = round(Math.max(this.h, 0), 6);
    p.cost_basis = round(this.c, 6);
    p.trade_pnl = round(this.pnl, 6);
    p.bought_shares = round(this.bought, 6);
    p.entry_price = this.bought > 0 ? round(this.buyNotional / this.bought, 9) : null;
    p.volume_usdc = round(this.volume, 6);
    p.trades = this.trades;
    p.n_taker = this.nTaker;
    p.n_buys = this.nBuys;
    p.n_contra = this.nContra;
    // only redemptions: a row of its own (first_ts null), not a position
    p.first_ts = this.anyPos ? this.firstTs : null;
    p.last_ts = this.anyPos ? this.lastTs : null;
    p.first_fill_ts = Number.isNaN(this.firstFill) ? null : this.firstFill;
    p.last_fill_ts = Number.isNaN(this.lastFill) ? null : this.lastFill;
    p.first_buy_ts = Number.isNaN(this.firstBuy) ? null : this.firstBuy;
    p.redeemed_shares = this.redeemed;
    p.a1_num = this.a1Num;
    p.a1_den = this.a1Den;
    p.a1_n = this.a1N;
    p.a24_num = this.a24Num;
    p.a24_den = this.a24Den;
    p.a24_n = this.a24N;
    p.ares_num = this.aresNum;
    p.ares_den = this.aresDen;
    p.ares_n = this.aresN;
    p.raw_shares = this.h;
    p.raw_cost = this.c;
    p.raw_pnl = this.pnl;
    p.raw_bought = this.bought;
    p.raw_buy_notional = this.buyNotional;
    p.raw_volume = this.volume;
    p.last_leg_ts = this.lastLeg;
    this.sinks.position(p);
  }

  // ------------------------------------------------------------------------------------------------------------
  // Risk: daily mark-to-market returns over the completed days of the window (core/analytics/risk.ts explains)

  private riskLeg(b: LegBatch, i: number, ts: number, kind: number, q: number): void {
    const r = this.risk!;
    if (ts >= r.d1) return; // today is not a completed day
    const k = ts < r.fold ? 1 : Math.floor((ts - r.fold) / DAY_US) + 1;
    if (Number.isNaN(this.pFirstDay)) this.pFirstDay = dayOf(ts);
    // legs come in time order, so day indexes never decrease: append a day or add to the last one
    let j = this.pN - 1;
    if (j < 0 || this.pDay[j] !== k) {
      j = this.pN++;
      this.pDay[j] = k;
      this.pDq[j] = 0;
      this.pCash[j] = 0;
      this.pSpent[j] = 0;
    }
    this.pDq[j]! += q;
    if (kind === KIND_TAKER || kind === KIND_MAKER) {
      const size = b.size[i]!;
      const fee = b.fee[i]!;
      if (q > 0) {
        this.pCash[j]! -= size + fee;
        this.pSpent[j]! += size + fee;
      } else this.pCash[j]! += size - fee;
    } else {
      const usdc = b.usdc[i]!;
      this.pCash[j]! += usdc;
      if (usdc < 0) this.pSpent[j]! += -usdc;
    }
    if (k >= 2) this.rMoved[k] = 1;
  }

  /** Day-end values of the current token over the window: payout once resolved by the day's end, else the mid. */
  private tokenValues(): Float64Array {
    let v = this.values[this.token];
    if (v) return v;
    const r = this.risk!;
    v = new Float64Array(r.days + 2);
    const cur = this.mids.cursor(this.token);
    for (let k = 1; k <= r.days + 1; k++) {
      const eod = r.fold + k * DAY_US;
      if (!Number.isNaN(this.resolvedAt) && this.resolvedAt <= eod) v[k] = this.payout;
      else {
        const mid = cur.at(eod);
        v[k] = Number.isNaN(mid) ? 0 : mid;
      }
    }
    this.values[this.token] = v;
    return v;
  }

  private riskPosition(): void {
    const r = this.risk!;
    const last = r.days + 1;
    const v = this.tokenValues();
    const n = this.pN;
    // the position counts from its first day to the day it resolves (or the window's last day)
    const first = this.pDay[0]!;
    let iLast = last;
    if (!Number.isNaN(this.resolvedAt)) {
      const kr = Math.floor((dayOf(this.resolvedAt) - r.fold) / DAY_US) + 1;
      iLast = Math.max(first, Math.min(last, kr));
    }
    this.rAny = true;
    let shares = 0;
    for (let j = 0; j < n; j++) {
      const k = this.pDay[j]!;
      if (k > iLast) break;
      // a segment: the movement day k, then held days until the next movement day
      shares += this.pDq[j]!;
      this.rPnl[k]! += this.pCash[j]! + this.pDq[j]! * v[k - 1]!;
      this.rCap[k]! += this.pSpent[j]!;
      const next = j + 1 < n ? this.pDay[j + 1]! : last + 1;
      const end = Math.min(next - 1, iLast);
      if (shares !== 0) {
        for (let d = k; d <= end; d++) {
          this.rPnl[d]! += shares * (v[d]! - v[d - 1]!);
          if (d < iLast) this.rCap[d + 1]! += Math.max(shares, 0) * v[d]!;
        }
      }
    }
    if (this.sinks.riskPosition) {
      // shares after every movement before T's day, even after the last live day: the next day close continues them
      let total = 0;
      for (let j = 0; j < n; j++) total += this.pDq[j]!;
      this.sinks.riskPosition({ wallet_id: this.w, market_id: this.m, outcome_index: this.o, shares: total, first_day: this.pFirstDay });
    }
  }

  private endWallet(next: number): void {
    if (this.risk && this.rW >= 0 && this.rAny && this.sinks.riskDays) {
      this.sinks.riskDays({ wallet_id: this.rW, pnl: this.rPnl, capital: this.rCap, moved: this.rMoved });
    }
    if (this.risk) {
      this.rPnl.fill(0);
      this.rCap.fill(0);
      this.rMoved.fill(0);
      this.rAny = false;
    }
    this.rW = next;
  }
}

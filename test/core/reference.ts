/**
 * A brute-force reference of position accounting (core/positions.ts), written from the methodology as a plain
 * event loop, independently of the SQL: no windows, no logarithms, one running (shares, cost) per position.
 *
 * The venue is held as plain objects (the same rows the tests insert into DuckDB); times are epoch milliseconds.
 *
 * Rules (docs + header of core/positions.ts):
 * - A position is (wallet, market, outcome). Its events, as of T (only ts <= T), are its fill legs and its
 *   inventory legs except REDEEM, in order (ts, log_index — a block's execution order on chain —, inventory
 *   before fills at equal (ts, log_index), and for the two legs of one self-matched fill, the buy before the sell).
 * - Fill legs: the taker's leg is the fill itself; the maker's follows match_type (direct: same token, other side,
 *   same price; mint: the complement, BUY at 1 - price; merge: the complement, SELL at 1 - price). The fee is the
 *   taker's: a buy's effective price is price + fee/shares, a sell's price - fee/shares; the maker pays none.
 * - Average cost: a buy of q at px adds q*px to cost and q to shares; a sell of q realizes q*(px - cost/shares)
 *   and scales cost by (shares - q)/shares. Shares at or below DUST close the position (cost 0), and the next
 *   buy starts afresh.
 * - Inventory legs are valued at the token's latest mid at or before the event (0.5 if none), scaled per event:
 *   SPLIT in-legs cost exactly the USDC paid, MERGE out-legs sell for exactly the USDC received, CONVERT out-legs
 *   (NO) leave at their mid and the in-legs (YES) share (out value - USDC received) in proportion to q*mid; when the
 *   USDC received exceeds the out value, or there is no in-leg, the out-legs leave for exactly the USDC received
 *   (shared by q*mid) and the in-legs cost 0, so that the wallet's total P&L stays exact.
 * - Resolution at or before T realizes the remaining shares at the payout; otherwise open shares are marked at
 *   the latest mid at or before T (at average cost if there is none).
 */
import type { PositionLabel, PositionRow, PositionStatus } from '../../core/positions.ts';

export const REF_DUST = 1e-6;
export const REF_BAND = 0.01;

export type Side = 'BUY' | 'SELL';
export type MatchType = 'direct' | 'mint' | 'merge';
export type InvKind = 'SPLIT' | 'MERGE' | 'CONVERT' | 'REDEEM';

export interface VMarket {
  market_id: number;
  /** neg-risk group id (null for a standard binary market) */
  group: string | null;
}
export interface VFill {
  tx_hash: string;
  log_index: number;
  ts: number;
  market_id: number;
  outcome_index: number;
  maker_id: number;
  taker_id: number;
  side: Side;
  match_type: MatchType;
  price: number;
  shares: number;
  fee_usdc: number;
}
export interface VLeg {
  market_id: number;
  outcome_index: number;
  shares_delta: number;
}
export interface VInventory {
  tx_hash: string;
  log_index: number;
  ts: number;
  wallet_id: number;
  kind: InvKind;
  market_id: number | null;
  group: string | null;
  amount: number;
  usdc_delta: number;
  legs: VLeg[];
}
export interface VResolution {
  market_id: number;
  winner: 'YES' | 'NO' | 'INVALID' | null;
  winner_index: number;
  payout_yes: number;
  payout_no: number;
  resolved_at: number;
}
export interface VMid {
  market_id: number;
  outcome_index: number;
  ts: number;
  mid: number;
}
export interface Venue {
  markets: VMarket[];
  wallets: number[];
  fills: VFill[];
  inventory: VInventory[];
  resolutions: VResolution[];
  mids: VMid[];
}

// The reference computes independently; only the row shape is shared with core/positions.ts.
export type RefLabel = PositionLabel;
export type RefStatus = PositionStatus;
export type RefPosition = PositionRow;

/** One leg applied to one position. */
interface Ev {
  ts: number;
  ord: number; // 0 inventory, 1 fill
  tx_hash: string;
  log_index: number;
  q: number; // signed shares
  px: number; // effective USDC per share
  fill?: { side: Side; price: number; size_usdc: number };
}

const key = (w: number, m: number, o: number) => `${w}|${m}|${o}`;

/** Latest mid of a token at or before t, or null. */
export function midAt(mids: readonly VMid[], market: number, outcome: number, t: number): number | null {
  let best: VMid | null = null;
  for (const x of mids) {
    if (x.market_id !== market || x.outcome_index !== outcome || x.ts > t) continue;
    if (!best || x.ts > best.ts) best = x;
  }
  return best ? best.mid : null;
}

export function refLabel(pnl: number, outcome: number, winnerIndex: number, isVoid: boolean): RefLabel {
  if (pnl > REF_BAND) return 'WON';
  if (pnl < -REF_BAND) return 'LOST';
  if (isVoid) return 'VOID';
  return outcome === winnerIndex ? 'WON' : 'LOST';
}

/** Every position of the venue as of T (epoch ms), sorted by (wallet, market, outcome). */
export function referencePositions(v: Venue, asOf: number): RefPosition[] {
  const events = new Map<string, Ev[]>();
  const push = (w: number, m: number, o: number, e: Ev) => {
    const k = key(w, m, o);
    const list = events.get(k);
    if (list) list.push(e);
    else events.set(k, [e]);
  };

  for (const f of v.fills) {
    if (f.ts > asOf) continue;
    const base = { ts: f.ts, ord: 1, tx_hash: f.tx_hash, log_index: f.log_index };
    // taker: pays the fee
    const takerPx = f.side === 'BUY' ? f.price + f.fee_usdc / f.shares : f.price - f.fee_usdc / f.shares;
    push(f.taker_id, f.market_id, f.outcome_index, {
      ...base,
      q: f.side === 'BUY' ? f.shares : -f.shares,
      px: takerPx,
      fill: { side: f.side, price: f.price, size_usdc: f.price * f.shares },
    });
    // maker: no fee
    let mo: number, mside: Side, mprice: number;
    if (f.match_type === 'direct') {
      mo = f.outcome_index;
      mside = f.side === 'BUY' ? 'SELL' : 'BUY';
      mprice = f.price;
    } else {
      mo = 1 - f.outcome_index;
      mside = f.match_type === 'mint' ? 'BUY' : 'SELL';
      mprice = 1 - f.price;
    }
    push(f.maker_id, f.market_id, mo, {
      ...base,
      q: mside === 'BUY' ? f.shares : -f.shares,
      px: mprice,
      fill: { side: mside, price: mprice, size_usdc: mprice * f.shares },
    });
  }

  for (const e of v.inventory) {
    if (e.ts > asOf || e.kind === 'REDEEM') continue;
    const legs = e.legs.map((l) => ({ ...l, mid: midAt(v.mids, l.market_id, l.outcome_index, e.ts) ?? 0.5 }));
    let outValue = 0;
    let inValue = 0;
    for (const l of legs) {
      if (l.shares_delta < 0) outValue += -l.shares_delta * l.mid;
      else inValue += l.shares_delta * l.mid;
    }
    for (const l of legs) {
      let px: number;
      if (e.kind === 'SPLIT') px = (l.mid * -e.usdc_delta) / inValue; // in-legs total = USDC paid
      else if (e.kind === 'MERGE') px = (l.mid * e.usdc_delta) / outValue; // out-legs total = USDC received
      // CONVERT: NO leaves at its mid, or for exactly the USDC received when that is worth more or is all there is
      else if (l.shares_delta < 0) px = inValue === 0 || outValue < e.usdc_delta ? (l.mid * e.usdc_delta) / outValue : l.mid;
      else px = (l.mid * Math.max(outValue - e.usdc_delta, 0)) / inValue; // YES carries what is left
      push(e.wallet_id, l.market_id, l.outcome_index, {
        ts: e.ts,
        ord: 0,
        tx_hash: e.tx_hash,
        log_index: e.log_index,
        q: l.shares_delta,
        px,
      });
    }
  }

  const redeemed = new Map<string, number>();
  for (const e of v.inventory) {
    if (e.ts > asOf || e.kind !== 'REDEEM') continue;
    for (const l of e.legs) {
      const k = key(e.wallet_id, l.market_id, l.outcome_index);
      redeemed.set(k, (redeemed.get(k) ?? 0) - l.shares_delta);
    }
  }

  const out: RefPosition[] = [];
  for (const [k, evs] of events) {
    const [w, m, o] = k.split('|').map(Number) as [number, number, number];
    evs.sort(
      (a, b) =>
        a.ts - b.ts ||
        a.log_index - b.log_index ||
        a.ord - b.ord ||
        b.q - a.q,
    );
    let shares = 0;
    let cost = 0;
    let realized = 0;
    let bought = 0;
    let boughtNotional = 0;
    let volume = 0;
    let trades = 0;
    for (const e of evs) {
      if (e.q > 0) {
        cost += e.q * e.px;
        shares += e.q;
      } else {
        const q = -e.q;
        if (shares > REF_DUST) {
          const avg = cost / shares;
          realized += q * (e.px - avg);
          cost *= (shares - q) / shares;
        }
        shares -= q;
      }
      if (shares <= REF_DUST) cost = 0; // closed: the next buy starts a new episode
      if (e.fill) {
        trades++;
        volume += e.fill.size_usdc;
        if (e.fill.side === 'BUY') {
          bought += e.q;
          boughtNotional += e.q * e.fill.price;
        }
      }
    }
    shares = Math.max(shares, 0);

    const res = v.resolutions.find((r) => r.market_id === m && r.resolved_at <= asOf);
    const mark = midAt(v.mids, m, o, asOf);
    const red = redeemed.get(k) ?? 0;
    let unrealized = 0;
    let payout: number | null = null;
    let isVoid = false;
    let label: RefLabel | null = null;
    let status: RefStatus = 'OPEN';
    if (res) {
      payout = o === 0 ? res.payout_yes : res.payout_no;
      realized += shares * payout - cost;
      isVoid = res.winner === null || res.winner === 'INVALID';
      label = refLabel(realized, o, res.winner_index, isVoid);
      status = payout > 0 && shares - red > REF_DUST ? 'REDEEMABLE' : label;
    } else {
      const markPx = mark ?? (shares > 0 ? cost / shares : 0);
      unrealized = shares * markPx - cost;
    }
    out.push({
      wallet_id: w,
      market_id: m,
      outcome_index: o,
      shares,
      cost_basis: cost,
      avg_price: shares !== 0 ? cost / shares : null,
      bought_shares: bought,
      entry_price: bought > 0 ? boughtNotional / bought : null,
      realized_pnl: realized,
      unrealized_pnl: unrealized,
      total_pnl: realized + unrealized,
      volume_usdc: volume,
      trades,
      resolved: !!res,
      winner_index: res ? res.winner_index : null,
      is_void: isVoid,
      payout,
      redeemed_shares: red,
      mark,
      pnl_label: label,
      status,
    });
  }
  out.sort((a, b) => a.wallet_id - b.wallet_id || a.market_id - b.market_id || a.outcome_index - b.outcome_index);
  return out;
}

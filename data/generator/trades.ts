/**
 * Wallet behaviour: each wallet's positions are a pure function of (seed, wallet id), so a copy-trader can replay
 * its leader and a sybil member its controller's plan on demand. Emission turns positions into fills against the
 * market makers, exits, neg-risk conversions and redemptions, keeping every wallet's token balance >= 0.
 */
import { ARCHETYPE_CODE, SECONDS_PER_DAY, SECONDS_PER_HOUR, STYLE, type Archetype, type Style } from './config.ts';
import { hourIndex, lastFillS, latentAt, midAt, type GenMarket, type VenueMarkets } from './markets.ts';
import { Rng, hashInts } from './rng.ts';
import { archetypeOf, type WalletPopulation } from './wallets.ts';

export const SIDE_BUY = 0;
export const SIDE_SELL = 1;
export const KIND_SPLIT = 0;
export const KIND_MERGE = 1;
export const KIND_CONVERT = 2;
export const KIND_REDEEM = 3;
/** Keys are wallet * KEY_STRIDE + sequence; they seed tx hashes and log indexes at export. */
export const KEY_STRIDE = 4_194_304;

export interface VenueSink {
  fill(key: number, ts: number, marketId: number, outcome: number, makerId: number, takerId: number, side: number, price: number, shares: number, fee: number): void;
  inventory(key: number, ts: number, walletId: number, kind: number, marketId: number, groupId: number, amount: number, usdc: number): void;
  leg(key: number, walletId: number, marketId: number, outcome: number, delta: number): void;
}

export interface Entry {
  marketId: number;
  outcome: number;
  t: number;
  /** probability the bought outcome wins given the wallet's information (its true edge is belief - price) */
  belief: number;
}

export interface WalletTruth {
  positions: number;
  fills: number;
  edgeSum: number;
  resolvedPositions: number;
  resolvedEdgeSum: number;
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const round3 = (x: number) => Math.round(x * 1000) / 1000;
const clampPrice = (p: number) => Math.min(0.999, Math.max(0.001, round3(p)));

/**
 * Which outcome token an archetype buys on market m at time t, or -1 to pass. Sharps (and informed whales) compare
 * what they know, latent(t + lead), with the ask; price-rule traders look only at the mid.
 */
export function decideOutcome(arch: Archetype, rng: Rng, lead: number, m: GenMarket, t: number): number {
  const midYes = midAt(m, 0, t);
  const midNo = midAt(m, 1, t);
  let outcome = -1;
  switch (arch) {
    case 'sharp':
    case 'whale': {
      if (lead > 0) {
        const b = latentAt(m, 0, t + lead * SECONDS_PER_HOUR);
        const need = arch === 'sharp' ? 0.03 : 0.01;
        if (b - (midYes + m.halfSpread) > need) outcome = 0;
        else if (1 - b - (midNo + m.halfSpread) > need) outcome = 1;
      } else outcome = rng.bool(midYes) ? 0 : 1;
      break;
    }
    case 'favourite_buyer':
      if (midYes >= 0.9 && midYes < 0.995) outcome = 0;
      else if (midNo >= 0.9 && midNo < 0.995) outcome = 1;
      break;
    case 'longshot_buyer':
      if (midYes <= 0.12 && midYes > 0.005) outcome = 0;
      else if (midNo <= 0.12 && midNo > 0.005) outcome = 1;
      break;
    case 'contrarian': {
      const before = m.mid[Math.max(0, hourIndex(m, t) - 24)] as number;
      if (midYes - before < -0.05) outcome = 0;
      else if (midYes - before > 0.05) outcome = 1;
      break;
    }
    default:
      // noise, early birds: mostly follow the crowd's favourite, sometimes not
      outcome = rng.bool(0.35 + 0.3 * midYes) ? 0 : 1;
  }
  return outcome;
}

export class VenueSimulator {
  private readonly planCache = new Map<number, Entry[]>();
  /** per (market, maker slot): sold YES, sold NO, bought YES, bought NO */
  readonly mmFlow: Float64Array;
  readonly mmFirst: Int32Array;
  readonly mmLast: Int32Array;

  constructor(
    readonly seed: number,
    readonly venue: VenueMarkets,
    readonly pop: WalletPopulation,
    readonly sink: VenueSink,
  ) {
    const slots = venue.markets.length * 3;
    this.mmFlow = new Float64Array(slots * 4);
    this.mmFirst = new Int32Array(slots).fill(2 ** 31 - 1);
    this.mmLast = new Int32Array(slots);
  }

  makerSlots(marketId: number): number {
    return 1 + (hashInts(this.seed, marketId, 77) % 3);
  }

  makerFor(marketId: number, slot: number): number {
    const mms = this.pop.marketMakers;
    return mms[hashInts(this.seed, marketId, slot, 91) % mms.length] as number;
  }

  private styleOf(w: number): Style {
    return STYLE[archetypeOf(this.pop, w)];
  }

  /** Entry decisions of a wallet (or of a sybil cluster's controller when `clusterId` >= 0). */
  plan(w: number, clusterId = -1): Entry[] {
    const cacheKey = clusterId >= 0 ? -1 - clusterId : w;
    const cached = this.planCache.get(cacheKey);
    if (cached) return cached;
    const arch: Archetype = clusterId >= 0 ? ((this.pop.clusterLead[clusterId] as number) > 0 ? 'sharp' : 'noise') : archetypeOf(this.pop, w);
    const rng = clusterId >= 0 ? new Rng(this.seed, 0x636c, clusterId) : new Rng(this.seed, 0x706c, w);
    const style = clusterId >= 0 ? STYLE.sybil : STYLE[arch];
    const lead = clusterId >= 0 ? (this.pop.clusterLead[clusterId] as number) : (this.pop.leadHours[w] as number);
    const anchor = clusterId >= 0 ? (this.pop.activeStartS[this.pop.clusters[clusterId]![0] as number] as number) : (this.pop.activeStartS[w] as number);
    const span = clusterId >= 0 ? (this.pop.activeSpanS[this.pop.clusters[clusterId]![0] as number] as number) : (this.pop.activeSpanS[w] as number);
    const [min, alpha, cap] = style.positions;
    const n = min > 0 ? rng.paretoInt(min, alpha, cap) : 0;
    const entries: Entry[] = [];
    const mask = clusterId >= 0 ? 0 : (this.pop.categoryMask[w] as number);
    for (let i = 0; i < n; i++) {
      const e = this.chooseEntry(arch, rng, lead, mask, anchor, span);
      if (e) entries.push(e);
    }
    entries.sort((a, b) => a.t - b.t);
    if (clusterId >= 0 || this.planCache.size < 4096) this.planCache.set(cacheKey, entries);
    return entries;
  }

  private chooseEntry(arch: Archetype, rng: Rng, lead: number, mask: number, anchor: number, span: number): Entry | null {
    const v = this.venue;
    for (let attempt = 0; attempt < 12; attempt++) {
      let t = Math.min(v.endS - 1, Math.max(v.startS, anchor + rng.int(Math.max(1, span))));
      const d = Math.min(v.days - 1, Math.floor((t - v.startS) / SECONDS_PER_DAY));
      let m: GenMarket | undefined;
      if (arch === 'early_bird') {
        const o = v.opening[d]!;
        if (!o.ids.length) continue;
        m = v.markets[o.ids[o.table.sample(rng)] as number];
        if (!m) continue;
        const life = m.closeS - m.openS;
        t = m.openS + rng.int(Math.max(60, Math.min(life * 0.1, 12 * SECONDS_PER_HOUR)));
      } else {
        let pool = v.day[d]!;
        if (mask !== 0 && !(arch === 'sharp' && rng.bool(0.15))) {
          const cats: number[] = [];
          for (let c = 0; c < v.categories.length && c < 31; c++) if (mask & (1 << c)) cats.push(c);
          const cp = v.dayCategory[d]![rng.pick(cats)];
          if (cp && cp.ids.length) pool = cp;
          else continue;
        }
        if (!pool.ids.length) continue;
        m = v.markets[pool.ids[pool.table.sample(rng)] as number];
        if (!m) continue;
        if (arch === 'favourite_buyer' || arch === 'longshot_buyer') {
          // extreme prices live late in a market's life
          t = m.openS + Math.floor((m.closeS - m.openS) * rng.uniform(0.5, 1));
        }
      }
      const hi = lastFillS(m, v.endS);
      // a minute after opening: market makers split before their first sale, at a strictly earlier time
      const lo = Math.max(m.openS + 60, v.startS);
      if (hi <= lo) continue;
      t = Math.min(hi, Math.max(lo, t));
      const outcome = decideOutcome(arch, rng, lead, m, t);
      if (outcome < 0) continue;
      return { marketId: m.marketId, outcome, t, belief: latentAt(m, outcome, t + lead * SECONDS_PER_HOUR) };
    }
    return null;
  }

  /** Generate everything a wallet does; market makers only trade as counterparties. */
  emitWallet(w: number, truth: WalletTruth): void {
    const arch = archetypeOf(this.pop, w);
    if (arch === 'market_maker') return;
    const rng = new Rng(this.seed, 0x656d, w);
    const style = this.styleOf(w);
    const seq = { n: 0 };
    if (arch === 'copy_trader') {
      const leader = this.pop.leaderId[w] as number;
      const leaderLead = this.pop.leadHours[leader] as number;
      for (const e of this.plan(leader)) {
        if (!rng.bool(0.7)) continue;
        const m = this.venue.markets[e.marketId] as GenMarket;
        const delay = Math.min(12 * SECONDS_PER_HOUR, Math.floor(rng.logNormal(20 * 60, 1.2)));
        const t = e.t + delay;
        if (t > lastFillS(m, this.venue.endS)) continue;
        const belief = latentAt(m, e.outcome, Math.max(t, e.t + leaderLead * SECONDS_PER_HOUR));
        this.emitPosition(w, { marketId: e.marketId, outcome: e.outcome, t, belief }, rng, style, seq, truth, 0, rng);
      }
      return;
    }
    const cluster = this.pop.clusterId[w] as number;
    if (cluster >= 0) {
      // Lockstep: members share the controller's clip schedule (own stream per entry); jitter and size are their own.
      this.plan(w, cluster).forEach((e, i) => this.emitPosition(w, e, rng, style, seq, truth, 15, new Rng(this.seed, 0x7363, cluster, i)));
    } else {
      for (const e of this.plan(w)) this.emitPosition(w, e, rng, style, seq, truth, 0, rng);
    }
  }

  price(m: GenMarket, outcome: number, t: number, side: number, taker: boolean, usd: number): number {
    const mid = midAt(m, outcome, t);
    const impact = taker ? Math.min(0.03, (0.25 * usd) / m.liquidity) : 0;
    const edge = (taker ? m.halfSpread : -m.halfSpread) + impact;
    return clampPrice(side === SIDE_BUY ? mid + edge : mid - edge);
  }

  private trade(w: number, m: GenMarket, outcome: number, t: number, side: number, usdOrShares: { usd?: number; shares?: number }, taker: boolean, rng: Rng, seq: { n: number }): { shares: number; price: number } {
    const usd = usdOrShares.usd ?? (usdOrShares.shares as number) * (midAt(m, outcome, t) || 0.5);
    const price = this.price(m, outcome, t, side, taker, usd);
    const shares = usdOrShares.shares ?? round2(usd / price);
    if (shares < 0.01) return { shares: 0, price };
    const slot = rng.int(this.makerSlots(m.marketId));
    const mm = this.makerFor(m.marketId, slot);
    // The market maker's side is the opposite of the wallet's.
    const mmSells = side === SIDE_BUY;
    const idx = (m.marketId * 3 + slot) * 4 + (mmSells ? 0 : 2) + outcome;
    this.mmFlow[idx] = (this.mmFlow[idx] as number) + shares;
    const s = m.marketId * 3 + slot;
    if (t < (this.mmFirst[s] as number)) this.mmFirst[s] = t;
    if (t > (this.mmLast[s] as number)) this.mmLast[s] = t;
    const key = w * KEY_STRIDE + seq.n++;
    const fee = Math.round(m.feeRate * Math.min(price, 1 - price) * shares * 1e6) / 1e6;
    if (taker) this.sink.fill(key, t, m.marketId, outcome, mm, w, side, price, shares, fee);
    else this.sink.fill(key, t, m.marketId, outcome, w, mm, side === SIDE_BUY ? SIDE_SELL : SIDE_BUY, price, shares, fee);
    return { shares, price };
  }

  /** `sched` drives timing and exit decisions (shared by a sybil cluster), `rng` the wallet's own choices. */
  private emitPosition(w: number, e: Entry, rng: Rng, style: Style, seq: { n: number }, truth: WalletTruth, jitterS: number, sched: Rng): void {
    const v = this.venue;
    const m = v.markets[e.marketId] as GenMarket;
    const last = lastFillS(m, v.endS);
    const sizeFactor = jitterS > 0 ? rng.uniform(0.8, 1.2) : 1;
    let clips = 1;
    while (clips < 20 && sched.bool(1 - 1 / style.clipsPerEntry)) clips++;
    const clipUsd = Math.max(1, rng.logNormal(style.clipMedianUsd, style.clipSigma) * sizeFactor);
    const jitter = () => (jitterS > 0 ? rng.int(jitterS + 1) : 0);
    let t = Math.min(last, e.t + jitter());
    let held = 0;
    let cost = 0;
    const arch = archetypeOf(this.pop, w);
    for (let c = 0; c < clips && t <= last; c++) {
      if (c > 0 && !this.stillWants(arch, m, e.outcome, t)) break;
      const taker = rng.bool(style.takerShare);
      const r = this.trade(w, m, e.outcome, t, SIDE_BUY, { usd: clipUsd * rng.uniform(0.6, 1.4) }, taker, rng, seq);
      held = round2(held + r.shares);
      cost += r.shares * r.price;
      truth.fills += r.shares > 0 ? 1 : 0;
      t = Math.min(last + 1, t + 30 + sched.int(1800) + jitter());
    }
    if (held <= 0) return;
    const avg = cost / held;
    truth.positions++;
    truth.edgeSum += e.belief - avg;
    if (m.resolvedS > 0 && m.winner >= 0) {
      truth.resolvedPositions++;
      truth.resolvedEdgeSum += e.belief - avg;
    }
    let busyUntil = Math.min(t, last);
    if (sched.bool(style.exitProb) && last - busyUntil > 120) {
      const te = Math.min(last, busyUntil + 60 + sched.int(last - busyUntil - 60) + jitter());
      const sell = sched.bool(0.7) ? held : round2(held / 2);
      const r = this.trade(w, m, e.outcome, te, SIDE_SELL, { shares: sell }, rng.bool(style.takerShare), rng, seq);
      held = round2(held - r.shares);
      truth.fills += r.shares > 0 ? 1 : 0;
      busyUntil = te;
    }
    if (held <= 0) return;
    const neverRedeems = this.pop.neverRedeems[w] === 1;
    let redeemMarket = m;
    let redeemOutcome = e.outcome;
    if (m.groupId >= 0 && e.outcome === 1 && !neverRedeems && rng.bool(0.15) && last - busyUntil > 120) {
      // neg-risk conversion: NO on this question becomes YES on every other question of the group
      const group = v.groups[m.groupId]!;
      const tc = busyUntil + 60 + rng.int(last - busyUntil - 60);
      const key = w * KEY_STRIDE + seq.n++;
      this.sink.inventory(key, tc, w, KIND_CONVERT, -1, m.groupId, held, 0);
      this.sink.leg(key, w, m.marketId, 1, -held);
      for (const other of group.marketIds) if (other !== m.marketId) this.sink.leg(key, w, other, 0, held);
      const winnerQ = group.marketIds.find((id) => v.markets[id]!.winner === 0);
      if (winnerQ === undefined || winnerQ === m.marketId) return; // converted YES tokens all lose
      redeemMarket = v.markets[winnerQ] as GenMarket;
      redeemOutcome = 0;
    }
    if (neverRedeems || redeemMarket.resolvedS === 0) return;
    const payout = redeemMarket.winner === -1 ? 0.5 : redeemMarket.winner === redeemOutcome ? 1 : 0;
    if (payout === 0) return;
    const tr = redeemMarket.resolvedS + 60 + Math.floor(rng.logNormal(6 * SECONDS_PER_HOUR, 1.5));
    if (tr >= v.endS) return;
    const key = w * KEY_STRIDE + seq.n++;
    this.sink.inventory(key, tr, w, KIND_REDEEM, redeemMarket.marketId, redeemMarket.groupId, held, round2(held * payout));
    this.sink.leg(key, w, redeemMarket.marketId, redeemOutcome, -held);
  }

  /** Price-rule traders stop adding clips once the price leaves their range. */
  private stillWants(arch: Archetype, m: GenMarket, outcome: number, t: number): boolean {
    const mid = midAt(m, outcome, t);
    if (arch === 'favourite_buyer') return mid >= 0.9;
    if (arch === 'longshot_buyer') return mid <= 0.12;
    return true;
  }

  /** Market makers' inventory: split before their first sale, merge pairs before close, redeem the rest. */
  emitMarketMakerInventory(): void {
    const v = this.venue;
    const seqs = new Map<number, number>();
    const nextKey = (mm: number) => {
      const s = seqs.get(mm) ?? 0;
      seqs.set(mm, s + 1);
      return mm * KEY_STRIDE + s;
    };
    for (const m of v.markets) {
      for (let slot = 0; slot < this.makerSlots(m.marketId); slot++) {
        const s = m.marketId * 3 + slot;
        const f = s * 4;
        const [soldYes, soldNo, boughtYes, boughtNo] = [this.mmFlow[f], this.mmFlow[f + 1], this.mmFlow[f + 2], this.mmFlow[f + 3]] as number[] as [number, number, number, number];
        if (soldYes + soldNo + boughtYes + boughtNo === 0) continue;
        const mm = this.makerFor(m.marketId, slot);
        const split = Math.ceil(Math.max(soldYes, soldNo) * 100) / 100;
        if (split > 0) {
          const key = nextKey(mm);
          const ts = (this.mmFirst[s] as number) - 30;
          this.sink.inventory(key, ts, mm, KIND_SPLIT, m.marketId, m.groupId, split, -split);
          this.sink.leg(key, mm, m.marketId, 0, split);
          this.sink.leg(key, mm, m.marketId, 1, split);
        }
        let yes = round2(split - soldYes + boughtYes);
        let no = round2(split - soldNo + boughtNo);
        if (m.closeS >= v.endS) continue;
        const merge = Math.min(yes, no);
        if (merge > 0) {
          const key = nextKey(mm);
          this.sink.inventory(key, m.closeS - 60, mm, KIND_MERGE, m.marketId, m.groupId, merge, merge);
          this.sink.leg(key, mm, m.marketId, 0, -merge);
          this.sink.leg(key, mm, m.marketId, 1, -merge);
          yes = round2(yes - merge);
          no = round2(no - merge);
        }
        if (m.resolvedS === 0 || m.resolvedS + 300 >= v.endS) continue;
        const py = m.winner === -1 ? 0.5 : m.winner === 0 ? 1 : 0;
        const usdc = round2(yes * py + no * (1 - py));
        if (yes + no <= 0) continue;
        const key = nextKey(mm);
        this.sink.inventory(key, m.resolvedS + 300, mm, KIND_REDEEM, m.marketId, m.groupId, round2(yes + no), usdc);
        if (yes > 0) this.sink.leg(key, mm, m.marketId, 0, -yes);
        if (no > 0) this.sink.leg(key, mm, m.marketId, 1, -no);
      }
    }
  }
}

export const ARCHETYPE_IS_COUNTERPARTY = ARCHETYPE_CODE.market_maker;
